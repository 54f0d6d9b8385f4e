//! `run --clients N`: the mix with N clients at once over one window per
//! run, through the same driver as `advise --clients` (one candidate in
//! one configuration, the flags' settings), for a user's own check at N
//! and for `bench/reference-loops.sh clients`, which pairs it with an
//! independent loop round by round.

use std::fmt::Write as _;
use std::time::Duration;

use blobbench::drivers::clients::{kept_up, ClientsArm, ClientsTally, WindowCount, KEEP_UP};
use blobbench::drivers::run::RunOptions;
use blobbench::engine::sqlite;
use blobbench::measure::rounds::Arm;
use blobbench::measure::LatencySummary;
use blobbench::records::Mix;
use blobbench::report::{table_text, Table};

/// Each run's window when `--window` is not given.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(1);

/// What `run --clients` is asked, beside the run's own options.
pub struct ClientsRun {
    pub clients: u32,
    pub processes: bool,
    pub window: Duration,
    pub rate: Option<f64>,
}

/// Runs `opts`' mix (or its reads, or `--update`'s writes) with the
/// clients, `opts.plan`'s warm-ups and timed runs, and returns the text.
pub fn run(opts: &RunOptions, c: &ClientsRun) -> anyhow::Result<String> {
    let writers = opts.settings.db.writers;
    let row = sqlite::writers(writers);
    if let Some(why) = row.threads_only.filter(|_| c.processes) {
        anyhow::bail!(
            "--sqlite-writers {} with --clients-are processes: {why} (use --clients-are threads)",
            writers.name()
        );
    }
    if row.needs_commit_every && opts.settings.commit_every.is_none() {
        anyhow::bail!(
            "--sqlite-writers {}: SQLite's {} commits every N writes of all its clients: give --commit-every N",
            writers.name(),
            row.title
        );
    }
    // The plan first: a rate or window in which nothing can be done is
    // refused before the store is opened.
    blobbench::drivers::clients::check_plan(c.clients, c.window, c.rate)?;
    let mix = opts.mix.unwrap_or(if opts.update { Mix { read: 0, write: 1 } } else { Mix { read: 1, write: 0 } });
    let engine = blobbench::engine::open(&opts.path, &opts.settings)?;
    if let Some(why) = engine.kind().one_process_only().filter(|_| c.processes) {
        anyhow::bail!("--clients-are processes: {why} (use --clients-are threads)");
    }
    let arm = ClientsArm::prepare(engine, c.clients, mix, c.window, opts.seed, c.rate)?;
    let mut arm = if c.processes { arm.in_processes(&opts.settings, &super::args::launcher()?)? } else { arm };
    let plan = blobbench::records::Plan { cold: false, ..opts.plan };
    let measured = blobbench::measure::measure(&plan, None, |ctx| arm.run(ctx))?;
    let per_s: Vec<f64> = measured.runs.iter().map(|r| 1e6 / r.figure()).collect();
    let commits = (mix.write > 0).then_some(opts.settings.commit_every.unwrap_or(1));
    let mut o = header(c, mix, commits, &per_s, arm.tally(), arm.window());
    schedule(&mut o, &arm);
    latencies(&mut o, arm.tally(), &per_s);
    for w in &measured.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    Ok(o)
}

/// What ran, and its throughput: the median run's and the range.
fn header(
    c: &ClientsRun,
    mix: Mix,
    commits: Option<u32>,
    per_s: &[f64],
    tally: &ClientsTally,
    window: Duration,
) -> String {
    let mut o = String::new();
    let (median, lo, hi) = median_and_range(per_s);
    let how = if c.processes { "processes" } else { "threads" };
    let pace = c.rate.map_or_else(|| "closed loop".to_string(), |r| format!("open loop at {r:.0} ops/s"));
    let _ = writeln!(
        o,
        "{} clients ({how}), mix {}:{}, {pace}: {} timed runs, each one window of {:.3} s shared by all clients",
        c.clients,
        mix.read,
        mix.write,
        per_s.len(),
        window.as_secs_f64()
    );
    if window != c.window {
        let _ = writeln!(
            o,
            "the window grew from the {:.3} s asked: no operation ended in it (a closed loop doubles it until one does)",
            c.window.as_secs_f64()
        );
    }
    if let Some(n) = commits {
        let _ = writeln!(o, "each client's writes committed every {n} (--commit-every; 1 unless given)");
    }
    let _ = writeln!(o, "ops/s over all clients: median {median:.0}, min {lo:.0}, max {hi:.0}");
    let share = |w: &WindowCount| if w.median == 0 { 1.0 } else { w.slowest as f64 / w.median as f64 };
    let shares: Vec<String> = tally.runs.iter().map(|w| format!("{:.2}", share(w))).collect();
    let _ = writeln!(o, "slowest / median client, each run: {}", shares.join(", "));
    let late = tally.runs.iter().filter_map(|w| w.latest_start_ns).max().unwrap_or(0);
    let _ = writeln!(
        o,
        "the latest client began its first operation {:.0} µs after it was due (at most, over the runs)",
        late as f64 / 1e3
    );
    o
}

/// Under a rate: the due operations, what was done of them, whether the
/// store kept up, and the waits for due times.
fn schedule(o: &mut String, arm: &ClientsArm) {
    let Some(due) = arm.due_per_run() else { return };
    let tally = arm.tally();
    let runs = tally.runs.len().max(1) as u64;
    let done: u64 = tally.runs.iter().map(|w| w.ops).sum();
    let unstarted: u64 = tally.runs.iter().filter_map(|w| w.unstarted).sum();
    let _ = writeln!(
        o,
        "due per run: {due}; done: {:.1}% of the due operations; not started by the deadline: {unstarted} (each timed \
         at its lateness)",
        done as f64 * 100.0 / (due * runs) as f64
    );
    if let Some(kept) = kept_up(&tally.runs) {
        let verdict = if kept >= KEEP_UP { "keeps up" } else { "does not keep up" };
        let _ = writeln!(
            o,
            "the client furthest behind started {:.1}% of its operations due at least one interval before the \
             deadline: the store {verdict} (at least {:.0}%)",
            kept * 100.0,
            KEEP_UP * 100.0
        );
    }
    let d = &tally.due;
    if d.wakes > 0 {
        let _ = writeln!(
            o,
            "waits for a due time: {}, woken {:.1} µs late on average, {:.1} µs at most (inside the latencies)",
            d.wakes,
            d.wake_late_ns as f64 / d.wakes as f64 / 1e3,
            d.wake_late_max_ns as f64 / 1e3
        );
    }
}

/// Each class's latencies, the busy waits, and the same figures in the
/// reference loops' words, one per line, for scripts
/// (`bench/reference-loops.sh clients`): medians over the runs.
fn latencies(o: &mut String, tally: &ClientsTally, per_s: &[f64]) {
    let rows = tally.by_class().into_iter().map(|(class, l)| {
        let s = l.summary();
        let figures = [s.p50_us, s.p90_us, s.p99_us, s.p999_us, s.max_us].map(|v| format!("{v:.1}"));
        [class.to_string(), s.count.to_string()].into_iter().chain(figures).collect()
    });
    let headers = ["latency (us)", "ops", "p50", "p90", "p99", "p99.9", "max"];
    o.push_str(&table_text(&Table::new(&headers, rows.collect()), false));
    let _ = writeln!(o, "busy waits: {}", tally.busy_waits);
    let med = |v: Vec<f64>| median_and_range(&v).0;
    let class =
        |name: &str, q: Quantile| tally.by_class().into_iter().find(|(c, _)| *c == name).map(|(_, l)| q(&l.summary()));
    let _ = writeln!(o, "ops_per_s {:.0}", median_and_range(per_s).0);
    let _ = writeln!(o, "client_ops_min {:.0}", med(tally.runs.iter().map(|w| w.slowest as f64).collect()));
    let _ = writeln!(o, "client_ops_median {:.0}", med(tally.runs.iter().map(|w| w.median as f64).collect()));
    let lines: [(&str, &str, Quantile); 5] = [
        ("read_p50_us", "read", |l| l.p50_us),
        ("read_p99_us", "read", |l| l.p99_us),
        ("write_p50_us", "overwrite", |l| l.p50_us),
        ("write_p99_us", "overwrite", |l| l.p99_us),
        ("p99_us", "all", |l| l.p99_us),
    ];
    for (line, name, q) in lines {
        let v = if name == "all" { Some(q(&tally.all().summary())) } else { class(name, q) };
        if let Some(v) = v {
            let _ = writeln!(o, "{line} {v:.0}");
        }
    }
}

/// One figure of a latency summary.
type Quantile = fn(&LatencySummary) -> f64;

/// The median of `v` and its least and greatest.
fn median_and_range(v: &[f64]) -> (f64, f64, f64) {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = blobbench::measure::paired::median_sorted(&sorted);
    (median, sorted.first().copied().unwrap_or(0.0), sorted.last().copied().unwrap_or(0.0))
}
