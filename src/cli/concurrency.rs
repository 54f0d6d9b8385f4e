//! `concurrency`: the shared-connection vs connection-per-thread study on
//! this machine, printed as tables and written as a report (results.json,
//! line charts, index.html).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use blobbench::results::ResultFile;
use blobbench::studies::concurrency::{
    self, ConcurrencyOptions, ConcurrencySection, Modes, Point, Workload, MAX_THREADS,
};
use blobbench::util::units::{self, UnitError};

use super::progress;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ConcurrencyArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Thread counts, comma-separated [default: 1,2,4,8,16,20; --quick: 1,2,4]. Mixed runs this many readers plus as many writers.
    #[arg(long, value_name = "LIST", value_parser = thread_list)]
    pub threads: Option<ThreadList>,
    /// Seconds per timed run of each point [default: 30, as the study; --quick: 1].
    #[arg(long, value_name = "SECS", value_parser = units::seconds)]
    pub duration: Option<f64>,
    /// Timed runs per point; the median is shown [default: 3; --quick: 1].
    #[arg(long, value_parser = repeat_count)]
    pub repeat: Option<u32>,
    /// Rows in the table that read and mixed runs read from.
    #[arg(long, default_value = "50000", value_parser = units::positive_u32)]
    pub rows: u32,
    /// Which workload to run (blobs: kvtest blobs under 1, 2 and 4 parallel readers).
    #[arg(long, value_enum, default_value = "all")]
    pub workload: WorkloadArg,
    /// Values of the parameters to combine, comma-separated: shared, per-thread, wal, delete, private-cache,
    /// shared-cache, rw, ro, sync-off, sync-normal, sync-full, sync-extra. A parameter none of whose values is
    /// named keeps all of them (synchronous: FULL only).
    #[arg(long, value_name = "LIST", value_parser = modes)]
    pub modes: Option<Modes>,
    /// Inserts per write transaction (1: each insert is its own transaction, as the study).
    #[arg(long, default_value = "1", value_parser = batch_size)]
    pub batch: u32,
    /// Milliseconds a connection waits for a lock before SQLITE_BUSY (counted as an error).
    #[arg(long, value_name = "MS", default_value = "5000", value_parser = busy_timeout)]
    pub busy_timeout: u32,
    /// Short points, one parameter varied at a time, threads 1,2,4: about a minute.
    #[arg(long)]
    pub quick: bool,
    /// Where to make the databases (a temporary subdirectory is made inside and removed).
    #[arg(long, default_value = ".")]
    pub workdir: PathBuf,
    /// Directory for results.json, the charts and index.html.
    #[arg(long, default_value = "blobbench-concurrency")]
    pub out: PathBuf,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Seed of the table's content and of the keys and values the threads use.
    #[arg(long, default_value = "1", value_parser = units::non_negative_u64)]
    pub seed: u64,
}

#[derive(Debug, Clone)]
pub struct ThreadList(Vec<u32>);

fn thread_list(s: &str) -> Result<ThreadList, UnitError> {
    let list = units::parse_list(s, |t| {
        let v: u32 = units::parse_at_least(t, 1, "a thread count")?;
        if v > MAX_THREADS {
            return Err(UnitError::from(format!("{v} threads is absurd (at most {MAX_THREADS})")));
        }
        Ok(v)
    })?;
    Ok(ThreadList(list))
}

fn modes(s: &str) -> Result<Modes, String> {
    Modes::parse(s).map_err(|e| e.to_string())
}

fn repeat_count(s: &str) -> Result<u32, UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--repeat")?;
    if v > 1000 {
        return Err(UnitError::from(format!("--repeat {v} is absurd (at most 1000)")));
    }
    Ok(v)
}

fn batch_size(s: &str) -> Result<u32, UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--batch")?;
    if v > 1_000_000 {
        return Err(UnitError::from(format!("--batch {v} is absurd (at most 1000000)")));
    }
    Ok(v)
}

fn busy_timeout(s: &str) -> Result<u32, UnitError> {
    let v: u32 = units::parse_at_least(s, 0, "--busy-timeout")?;
    if v > 600_000 {
        return Err(UnitError::from(format!("--busy-timeout {v} ms is absurd (at most 600000)")));
    }
    Ok(v)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WorkloadArg {
    Read,
    Write,
    Mixed,
    Blobs,
    All,
}

impl ConcurrencyArgs {
    fn options(&self) -> ConcurrencyOptions {
        let mut o = if self.quick {
            ConcurrencyOptions::quick(self.workdir.clone())
        } else {
            ConcurrencyOptions::new(self.workdir.clone())
        };
        if let Some(t) = &self.threads {
            o.threads = t.0.clone();
        }
        if let Some(d) = self.duration {
            o.duration = Duration::from_secs_f64(d);
        }
        o.repeat = self.repeat.unwrap_or(o.repeat);
        o.rows = self.rows;
        o.workloads = match self.workload {
            WorkloadArg::Read => vec![Workload::Read],
            WorkloadArg::Write => vec![Workload::Write],
            WorkloadArg::Mixed => vec![Workload::Mixed],
            WorkloadArg::Blobs => vec![Workload::Blobs],
            WorkloadArg::All => Workload::ALL.to_vec(),
        };
        if let Some(m) = &self.modes {
            o.modes = m.clone();
        }
        o.batch = self.batch;
        o.busy_timeout_ms = self.busy_timeout;
        o.seed = self.seed;
        o
    }
}

pub fn run(args: ConcurrencyArgs) -> anyhow::Result<()> {
    super::output::prepare_report_dir(&args.out, args.force)?;
    let opts = args.options();
    opts.validate()?;
    let points = opts.plan().len() * opts.threads.len();
    // On stdout: a failure must leave exactly one line, the error, on stderr.
    println!(
        "concurrency: {points} points x {} run(s) x {:.1} s, plus setup and checks{}",
        opts.repeat,
        opts.duration.as_secs_f64(),
        if opts.workloads.contains(&Workload::Blobs) { ", plus the blob readers" } else { "" }
    );
    let bar = progress::for_terminal();
    let measured = concurrency::run(&opts, bar.as_ref())?;
    print!("{}", text(&measured.section));
    let mut results = ResultFile::from_concurrency(measured, &opts);
    args.label.apply(&mut results);
    super::output::write_report(&args.out, &[results], args.force)?;
    println!("report in {}: results.json, charts/*.svg, index.html", args.out.display());
    Ok(())
}

/// 1234 -> "1.23k", 1234567 -> "1.23M".
/// Readers while one writer overwrites blobs: their p50/p99 latency and
/// reads/s beside the same readers alone, and the writer's rate.
fn blob_writer_lines(o: &mut String, b: &concurrency::BlobReaders) {
    if !b.points.iter().any(|p| p.writes_per_s.is_some()) {
        return;
    }
    let _ = writeln!(
        o,
        "  readers while one writer overwrites random blobs (latency us p50 / p99; reads/s; writer's writes/s):"
    );
    for (alone, busy) in [("db", "db-wal-writer"), ("files", "files-writer")] {
        for t in concurrency::BLOB_THREADS {
            let find = |s: &str| b.points.iter().find(|p| p.store == s && p.threads == t);
            let (Some(a), Some(w)) = (find(alone), find(busy)) else { continue };
            let lat = |p: &concurrency::BlobPoint| {
                p.latency.map_or("-".into(), |l| format!("{:.1} / {:.1}", l.p50_us, l.p99_us))
            };
            let _ = writeln!(
                o,
                "    {:<48} {t} thr: alone {:>14}, with writer {:>14}; {} vs {} reads/s; {:.0} writes/s",
                w.label,
                lat(a),
                lat(w),
                rate(a.reads_per_s),
                rate(w.reads_per_s),
                w.writes_per_s.unwrap_or(0.0)
            );
        }
    }
}

fn rate(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// The terminal summary: one table per workload (median throughput per
/// configuration and thread count), the blob readers, the conclusions.
pub fn text(c: &ConcurrencySection) -> String {
    let mut o = String::new();
    let s = &c.settings;
    let _ = writeln!(
        o,
        "SQLite {} on {} cores; {} s per run, median of {} run{}; busy timeout {} ms; {} insert{} per transaction",
        s.sqlite_version,
        s.cores,
        s.duration_s,
        s.repeat,
        if s.repeat == 1 { "" } else { "s" },
        s.busy_timeout_ms,
        s.batch,
        if s.batch == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "throughput = successful operations / run wall time, all threads; ! = over half the attempts failed busy/locked; \
         X = rows lost or integrity_check failed"
    );
    for (w, title) in [
        (Workload::Read, "read: rows read/s"),
        (Workload::Write, "write: rows inserted/s"),
        (Workload::Mixed, "mixed (T readers + T writers): rows read/s | rows inserted/s"),
    ] {
        table(&mut o, c, w, title);
    }
    if let Some(b) = &c.blob_readers {
        let _ = writeln!(
            o,
            "\nblobs under parallel readers: {} blobs of {} bytes, {} random reads per run, reads/s (median)",
            b.blobs, b.blob_size, b.reads_per_run
        );
        let _ = write!(o, "  {:<44}", "");
        for t in concurrency::BLOB_THREADS {
            let _ = write!(o, "{:>12}", format!("{t} thr"));
        }
        let _ = writeln!(o);
        for store in ["db", "db-mmap", "files"] {
            let name = b.points.iter().find(|p| p.store == store).map_or(store, |p| p.label.as_str());
            let _ = write!(o, "  {name:<44}");
            for t in concurrency::BLOB_THREADS {
                let cell = b.points.iter().find(|p| p.store == store && p.threads == t);
                let _ = write!(o, "{:>12}", cell.map_or("-".into(), |p| rate(p.reads_per_s)));
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o, "  CPU time per read (us, median; independent of the share of cores obtained):");
        for store in ["db", "db-mmap", "files"] {
            let _ = write!(o, "    {store:<42}");
            for t in concurrency::BLOB_THREADS {
                let cell = b.points.iter().find(|p| p.store == store && p.threads == t);
                let _ = write!(o, "{:>12}", cell.map_or("-".into(), |p| format!("{:.2}", p.cpu_us_per_read)));
            }
            let _ = writeln!(o);
        }
        let _ = write!(o, "  {:<44}", "best database / files (reads/s)");
        for l in b.leads() {
            let _ = write!(o, "{:>12}", format!("{:.2}x", l.ratio));
        }
        let _ = writeln!(o);
        blob_writer_lines(&mut o, b);
    }
    let _ = writeln!(
        o,
        "\nthe study's conclusions on this machine (ratios of points differing in one parameter; within {:.0}% of 1 = no difference)",
        s.tie_pct
    );
    let _ = writeln!(o, "  {:<70} {:<22} factor (geometric mean, range)", "conclusion", "verdict");
    for k in &c.conclusions {
        let _ = writeln!(
            o,
            "  {:<70} {:<22} {}",
            k.claim,
            blobbench::report::study::concurrency::verdict_text(k),
            blobbench::report::study::concurrency::factor_text(k)
        );
    }
    if c.interrupted {
        let _ = writeln!(o, "warning: interrupted; only the points that finished are shown");
    }
    o
}

fn table(o: &mut String, c: &ConcurrencySection, w: Workload, title: &str) {
    let points: Vec<&Point> = c.points.iter().filter(|p| p.workload == w).collect();
    if points.is_empty() {
        return;
    }
    let mut threads: Vec<u32> = points.iter().map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let width = if w == Workload::Mixed { 18 } else { 10 };
    let _ = write!(o, "\n{title}\n  {:<44}", "");
    for t in &threads {
        let _ = write!(o, "{:>width$}", format!("{t} thr"));
    }
    let _ = writeln!(o);
    let mut seen = Vec::new();
    for p in &points {
        if seen.contains(&p.config) {
            continue;
        }
        seen.push(p.config);
        let _ = write!(o, "  {:<44}", p.label);
        for t in &threads {
            let cell = points.iter().find(|q| q.config == p.config && q.threads == *t).map_or("-".to_string(), |q| {
                let r = |writes: bool| q.side(writes).map_or("-".to_string(), |s| rate(s.ops_per_s.median));
                let mark = if !q.consistent {
                    "X"
                } else if q.errors_dominate {
                    "!"
                } else {
                    ""
                };
                match w {
                    Workload::Mixed => format!("{} | {}{mark}", r(false), r(true)),
                    _ => format!("{}{mark}", r(w == Workload::Write)),
                }
            });
            let _ = write!(o, "{cell:>width$}");
        }
        let _ = writeln!(o);
    }
    // How many cores the machine really gave this process: on a shared
    // machine, fewer than the threads could use, which caps throughput.
    let _ = write!(o, "  {:<44}", "cores used (CPU time / wall, median)");
    for t in &threads {
        let mut used: Vec<f64> = points.iter().filter(|p| p.threads == *t).map(|p| p.cores_used.median).collect();
        used.sort_by(f64::total_cmp);
        let cell = used.get(used.len() / 2).map_or("-".to_string(), |u| format!("{u:.2}"));
        let _ = write!(o, "{cell:>width$}");
    }
    let _ = writeln!(o);
    for p in points.iter().filter(|p| p.reads.iter().chain(p.writes.iter()).any(|s| s.failed_ops > 0)) {
        let sides = p.reads.iter().map(|s| ("readers", s)).chain(p.writes.iter().map(|s| ("writers", s)));
        for (who, s) in sides.filter(|(_, s)| s.failed_ops > 0) {
            let _ = writeln!(
                o,
                "  errors: {} {} thr, {who}: {} busy, {} locked calls; {:.1}% of attempts failed",
                p.label, p.threads, s.busy_errors, s.locked_errors, s.error_pct
            );
        }
    }
}
