//! The advice at N clients (`advise --clients N`, or `--rate R`): the
//! recommendation at N (closed loop: the leader by throughput at the mix;
//! under a rate: the one that keeps up with the lowest p99), the ranking
//! at N with each row's configuration, per-client spread and p99s beside
//! it, the candidates the `--p99-write` need excludes, the client count at
//! which the leader changes, the chart of throughput against clients and
//! how each candidate's clients ran. All from the result file
//! (`studies::advise::clients`).

use crate::drivers::clients::{DUE_PER_CLIENT, KEEP_UP};
use crate::engine::sqlite;
use crate::records::{DbAccess, DbWriters};
use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Table};
use crate::report::format::fmt::{micros, thousands};
use crate::report::format::svg::{LineChart, Series};
use crate::report::study::advise::words::store_name;
use crate::results::ResultFile;
use crate::studies::advise::clients::{self, AtClients, ClientsAre, ClientsSection, RankingAt, Row, ROUNDS_ID};
use crate::studies::advise::Store;
use crate::studies::advise::{AdviseSection, Durability};

/// The chart of throughput against clients.
pub const SCALING_CHART: &str = "advise-clients";

/// The clients' section and round set, when the file has them.
fn parts(file: &ResultFile) -> Option<(&ClientsSection, &crate::measure::rounds::RoundSet)> {
    let section = file.advise.as_ref()?.clients.as_ref()?;
    let set = file.rounds.iter().find(|r| r.id == ROUNDS_ID)?;
    Some((section, set))
}

/// A row's name on the page: SQLite with its way of writing (its read
/// path is said where it matters), every other store as the one-client
/// ranking names it.
pub fn row_name(row: Row) -> String {
    match row.sqlite.map(|c| c.writers) {
        Some(w) => format!("SQLite, {}", sqlite::writers(w).title),
        None => store_name(row.store),
    }
}

/// SQLite's read path in a row, in words.
fn reads(row: Row) -> Option<&'static str> {
    row.sqlite.map(|c| match c.reads {
        DbAccess::BlobApi => "reads through the blob handle (opened and closed per read)",
        DbAccess::Sql => "reads through a prepared SELECT (reset after each read)",
    })
}

/// The recommendation at N in one sentence. Closed loop: the leader by
/// throughput at the mix, or a tie with those whose paired interval
/// against it holds 1. Under a rate: the one that keeps up with the
/// lowest p99, or that none does.
pub fn recommendation(at: &RankingAt, section: &ClientsSection) -> String {
    let how = section.are.name();
    let head = format!("Recommendation at {} clients ({how})", at.clients);
    if let Some(rate) = at.rate {
        return at_rate(at, &head, rate);
    }
    let Some(leader) = at.ranked.first() else {
        return format!("{head}: none; no candidate meets the need.");
    };
    let tied: Vec<String> = at.ranked[1..]
        .iter()
        .filter(|a| a.against_leader.as_ref().is_some_and(|r| r.low <= 1.0))
        .map(|a| row_name(a.row))
        .collect();
    let first = row_name(leader.row);
    let ops = thousands(leader.ops_per_s.round() as u64);
    let lead = match tied.split_last() {
        None => format!("{first} leads, {ops} ops/s"),
        Some((last, others)) => {
            let names: Vec<&str> = std::iter::once(first.as_str()).chain(others.iter().map(String::as_str)).collect();
            format!(
                "a tie between {} and {last} (the paired interval of each against {first} holds 1.0: this machine \
                 cannot tell them apart); {first} {ops} ops/s",
                names.join(", ")
            )
        }
    };
    let next = at.ranked.get(1).map_or_else(String::new, |n| {
        let vs = n.against_leader.as_ref().map_or_else(String::new, |r| {
            format!(" ({:.2}x its time per op, {:.2}-{:.2}, {} rounds)", r.value, r.low, r.high, r.rounds)
        });
        format!("; next {} at {} ops/s{vs}", row_name(n.row), thousands(n.ops_per_s.round() as u64))
    });
    format!("{head}, the concurrency asked for: {lead} over all clients at the mix{next}.")
}

/// The recommendation under `--rate`: keeping up first, then the p99.
fn at_rate(at: &RankingAt, head: &str, rate: f64) -> String {
    let r = thousands(rate.round() as u64);
    let p99 = |a: &AtClients| a.p99_us.map_or_else(|| "-".into(), |v| format!("{} µs", micros(v)));
    let done = |a: &AtClients| a.kept.map_or_else(|| "-".into(), |c| format!("{:.1}%", c * 100.0));
    match (at.leader(), at.ranked.first()) {
        (Some(l), _) => {
            let next = at.ranked.get(1).map_or_else(String::new, |n| {
                let kept = if n.keeps_up() { "keeps up too" } else { "does not keep up" };
                format!("; next {}, which {kept} ({} kept), p99 {}", row_name(n.row), done(n), p99(n))
            });
            format!(
                "{head}, at {r} ops/s over all clients (an open loop): {} keeps up (its client furthest behind \
                 started {} of its operations due in time) with the lowest p99 of all operations, {}{next}.",
                row_name(l.row),
                done(l),
                p99(l)
            )
        }
        (None, Some(closest)) => format!(
            "{head}, at {r} ops/s over all clients (an open loop): none; no candidate keeps up (every client \
             starting {:.0}% of its operations due at least one interval before the deadline); the closest, {}, \
             kept {}.",
            KEEP_UP * 100.0,
            row_name(closest.row),
            done(closest)
        ),
        (None, None) => format!("{head}, at {r} ops/s: none; no candidate meets the need."),
    }
}

/// The recommendation at N for the top of the page and the terminal, when
/// the file ran clients (N > 1, or a rate): the answer at the user's
/// concurrency.
pub fn headline(file: &ResultFile) -> Option<String> {
    let (section, set) = parts(file)?;
    headlines(section).then(|| recommendation(&clients::at(section, set, section.clients), section))
}

/// Whether the answer at N is the page's answer.
fn headlines(section: &ClientsSection) -> bool {
    section.clients > 1 || section.rate_ops_s.is_some()
}

/// The page's headline chart when the file ran clients (N > 1):
/// throughput against clients, one line per candidate, with intervals.
pub fn headline_chart(file: &ResultFile, sfx: &str) -> Option<Figure> {
    let (section, set) = parts(file)?;
    (section.clients > 1).then(|| chart(section, set, sfx))
}

fn p99(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), micros)
}

fn row(a: &AtClients, rate: bool) -> Vec<String> {
    let vs = match (&a.against_leader, rate) {
        (_, true) => a.kept.map_or_else(|| "-".into(), |c| format!("{:.1}% kept", c * 100.0)),
        (Some(r), false) => format!("{:.2}x ({:.2}-{:.2})", r.value, r.low, r.high),
        (None, false) => "leader".to_string(),
    };
    let spread = a.spread.map_or_else(|| "-".into(), |s| format!("{:.2} (lowest {:.2})", s.median, s.lowest));
    vec![
        row_name(a.row),
        thousands(a.ops_per_s.round() as u64),
        vs,
        spread,
        p99(a.write_p99_us),
        p99(a.read_p99_us),
        thousands(a.busy_waits),
    ]
}

/// The ranking at N: one row per candidate (SQLite one per way of
/// writing), the excluded last.
pub fn table(at: &RankingAt, section: &ClientsSection) -> Table {
    let rate = at.rate.is_some();
    let mut rows: Vec<Vec<String>> = at.ranked.iter().map(|a| row(a, rate)).collect();
    for a in &at.over_p99 {
        let mut r = row(a, rate);
        r[2] = "excluded: write p99 over --p99-write".into();
        rows.push(r);
    }
    let third = if rate { "kept up? (due operations done)" } else { "time per op vs leader" };
    let mut t = Table::new(
        &[
            "candidate",
            "ops/s (all clients)",
            third,
            "slowest / median client",
            "write p99 (µs)",
            "read p99 (µs)",
            "busy waits",
        ],
        rows,
    )
    .with_kinds(&[
        ColumnKind::Text,
        ColumnKind::Figure,
        ColumnKind::Text,
        ColumnKind::Text,
        ColumnKind::Figure,
        ColumnKind::Figure,
        ColumnKind::Figure,
    ]);
    for a in at.ranked.iter().chain(&at.over_p99) {
        if let (Some(how), Some(other)) = (reads(a.row), a.other_read_ops_per_s) {
            t.notes.push(format!(
                "{}: {how}, the faster of its two read paths at {} clients; the other gave {} ops/s.",
                row_name(a.row),
                at.clients,
                thousands(other.round() as u64)
            ));
        }
    }
    for e in &section.excluded {
        let name = row_name(e.candidate);
        t.notes.push(format!("{name}: not measured with client {}: {}.", section.are.name(), e.why));
    }
    if let Some(limit) = section.p99_write_us {
        t.notes.push(format!("--p99-write {}: a candidate whose write p99 exceeds it is excluded.", micros(limit)));
    }
    if rate {
        t.notes.push(format!(
            "Under --rate a candidate keeps up when each client starts {:.0}% of its operations due at least one \
             interval before the deadline by then (the share kept is the client furthest behind's, pooled over the \
             runs; one keeping up is never a whole interval behind, one that is not falls further behind as the \
             window goes on); those that keep up rank first, by the p99 of all operations, the others after them. \
             Each operation's latency counts from when it was due; an operation due and not started by the \
             deadline counts at its lateness then.",
            KEEP_UP * 100.0
        ));
    }
    t.notes.push(
        "Slowest / median client: the operations of the client that made fewest in a run's window over the median \
         client's, in the median run (and the lowest run): a store that starves some clients shows here and in its \
         tail."
            .into(),
    );
    t.notes.push(
        "Percentiles from the clients' histograms merged, over every timed run; the interval is paired by round."
            .into(),
    );
    t.notes.push(
        "Every figure here, at 1 client too, is of one session per client running the mix (reads and writes \
         interleaved), in the clients' rounds; the ranking at one client combines the read and the write arms \
         measured apart, weighted by the mix. The two 1-client figures can differ."
            .into(),
    );
    t
}

/// Where the leader changes with clients, in one sentence: the leader at
/// each count, and the first count where another beats the one-client
/// leader (beyond the noise in a closed loop), with its paired interval
/// there; or that it never changes, with the counts measured.
pub fn change(section: &ClientsSection, set: &crate::measure::rounds::RoundSet) -> String {
    let (leaders, at) = clients::leader_change(section, set);
    let name = |r: Option<Row>| r.map_or_else(|| "none".to_string(), row_name);
    let counts = section.levels.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let by = if section.rate_ops_s.is_some() { "keeping up, then p99," } else { "throughput" };
    let Some(n) = at else {
        let first = leaders.first().and_then(|l| l.1);
        let others: Vec<String> = leaders
            .iter()
            .filter(|(_, l)| l.map(Row::line) != first.map(Row::line))
            .map(|(c, l)| format!("{} at {c}", name(*l)))
            .collect();
        if others.is_empty() {
            return format!(
                "With clients the leader does not change: {} leads at every count measured ({counts} clients).",
                name(first)
            );
        }
        // Another leads somewhere, within the noise: say who, so the
        // sentence never names a store the table ranks low without why.
        return format!(
            "With clients the leader does not change beyond the noise: {} leads at {} client{}, and the leaders at \
             other counts ({}) do not beat it there beyond the noise (their paired intervals against it hold 1.0).",
            name(first),
            leaders[0].0,
            if leaders[0].0 == 1 { "" } else { "s" },
            others.join(", ")
        );
    };
    let before = leaders.first().and_then(|l| l.1);
    let after = leaders.iter().find(|l| l.0 == n).and_then(|l| l.1);
    let ratio = before
        .zip(after)
        .filter(|_| section.rate_ops_s.is_none())
        .and_then(|(b, a)| set.ratio(&clients::arm_id(b, n), &clients::arm_id(a, n)));
    let why = ratio.map_or_else(String::new, |r| {
        format!(
            " ({} takes {:.2}x {}'s time per op there, {:.2}-{:.2}, paired over {} rounds)",
            name(before),
            r.value,
            name(after),
            r.low,
            r.high,
            r.rounds
        )
    });
    let noise = if section.rate_ops_s.is_some() { "" } else { " beyond the noise" };
    let by_count: Vec<String> = leaders.iter().map(|(c, l)| format!("{} at {c}", name(*l))).collect();
    format!(
        "With clients the leader changes{noise} at {n} clients, from {} to {}{why}. The leader by {by} at each \
         count: {}.",
        name(before),
        name(after),
        by_count.join(", ")
    )
}

/// The harness's cost at N, as `run` reports it at one thread.
pub fn harness(section: &ClientsSection) -> Option<String> {
    let h = section.harness.as_ref()?;
    let who = row_name(h.candidate);
    Some(format!(
        "Harness at {} clients: one clock read and one histogram record per operation cost {:.0} ns of each \
         client's CPU ({} threads measured at once) = {:.3}% of the mean operation's latency at {} clients (at \
         most: {who}).",
        h.clients, h.cost_ns, h.clients, h.share_pct, h.clients
    ))
}

/// The machine the clients ran on: N clients on C cores.
pub fn machine(section: &ClientsSection) -> Option<String> {
    let cores = section.cores?;
    let n = section.clients;
    let more = if n > cores {
        format!(
            ": {n} clients take turns on {cores} cores, so what a store does while a client waits (a flush, a lock) \
             decides its throughput"
        )
    } else {
        String::new()
    };
    Some(format!("{n} clients on {cores} cores{more}."))
}

/// How many runs the clients' rounds made, each run's window and how many
/// operations each held; under a rate, how many were due per client, and
/// where the windows held fewer than a rate's percentiles want.
pub fn runs_note(section: &ClientsSection, set: &crate::measure::rounds::RoundSet) -> String {
    let arms = section.arms.len();
    let rounds = set.rounds.len();
    let ops = section.arms.iter().map(|a| a.ops_per_run);
    let (least, most) = (ops.clone().min().unwrap_or(0), ops.max().unwrap_or(0));
    let windows: Vec<f64> = section.arms.iter().filter_map(|a| a.window_s).collect();
    let how = match (windows.iter().copied().reduce(f64::min), windows.iter().copied().reduce(f64::max)) {
        (Some(lo), Some(hi)) if (hi - lo).abs() < 1e-9 => format!(
            ", each run one window of {lo:.2} s shared by all its clients (all start at one instant after one \
             barrier; an operation counts when it ends by the deadline)"
        ),
        (Some(lo), Some(hi)) => {
            format!(", each run one window of {lo:.2} to {hi:.2} s shared by all its clients")
        }
        _ => String::new(),
    };
    let mut text = format!(
        "Runs: {arms} arms (each row at each client count), {rounds} interleaved rounds of each after one warm-up \
         run{how}: {} timed runs in all, {} to {} operations per run over all clients.",
        arms * rounds,
        thousands(least),
        thousands(most)
    );
    if let Some(rate) = section.rate_ops_s {
        let short: Vec<String> = section
            .levels
            .iter()
            .filter_map(|&n| {
                let a = section.arms.iter().find(|a| a.clients == n)?;
                let due = a.runs.first()?.due? / u64::from(n.max(1));
                (due < DUE_PER_CLIENT).then(|| format!("{due} at {n} clients"))
            })
            .collect();
        text.push_str(&format!(
            " At {} ops/s each client's due times are spread over one interval (client i of N at i/N of it), so the \
             clients do not fire together.",
            thousands(rate.round() as u64)
        ));
        if !short.is_empty() {
            text.push_str(&format!(
                " The budget held fewer than the {DUE_PER_CLIENT} operations due per client and run that a p99 \
                 wants: {} (a longer --budget, or a higher rate, gives more).",
                short.join(", ")
            ));
        }
    }
    text
}

/// How each row's clients write and read, as measured.
pub fn configuration(row: Row, need: Durability, are: ClientsAre) -> String {
    let commit = if need == Durability::Required { "durably" } else { "without waiting for the disk" };
    let client = if are == ClientsAre::Processes { "client process" } else { "client" };
    let with_reads = |text: String| {
        format!(
            "{text}; reads on the client's own connection, each its own transaction, measured both through the \
             blob handle (opened and closed per read) and through a prepared SELECT (reset after each read), the \
             faster ranked at each count"
        )
    };
    match (row.store, row.sqlite.map(|c| c.writers)) {
        (Store::Sqlite, Some(w)) if !w.is_per_client() => {
            let row = sqlite::writers(w);
            with_reads(format!("SQLite, {}: WAL; {}, each commit {commit}", row.title, row.how))
        }
        (Store::Sqlite, _) => with_reads(format!(
            "SQLite, a connection per {client}: WAL; {}, committed {commit}",
            sqlite::writers(DbWriters::PerClient).how
        )),
        (Store::FilesInPlace, _) => format!("files, overwrite in place: each {client} its own descriptors, {commit}"),
        (Store::FilesReplace, _) => {
            format!("files, temp + rename: each {client} its own temporary names (KEY.cI.tmp), {commit}")
        }
        (Store::Engine(kind), _) if kind.is_server() => {
            format!("{}: a connection per {client}, kept between runs, {commit}", kind.title())
        }
        (Store::Engine(kind), _) => match (are, kind.one_process_only()) {
            (ClientsAre::Processes, Some(why)) => {
                format!("{}: not measured with client processes: {why}", kind.title())
            }
            (ClientsAre::Processes, None) => format!(
                "{}: one environment per client process, kept between runs, a transaction per commit, {commit}",
                kind.title()
            ),
            (ClientsAre::Threads, _) => format!(
                "{}: one handle for the process, kept between runs, a transaction per client's commit, {commit}",
                kind.title()
            ),
        },
    }
}

/// The clients' part of "What would change it": where the leader changes.
pub fn what_would_change(file: &ResultFile) -> Option<String> {
    let (section, set) = parts(file)?;
    Some(change(section, set))
}

/// The lines of the chart: each row once, SQLite once per way of writing.
fn lines(section: &ClientsSection) -> Vec<Row> {
    section.arms.iter().map(|a| a.row().line()).fold(Vec::new(), |mut v, r| {
        if !v.contains(&r) {
            v.push(r);
        }
        v
    })
}

/// Throughput against clients, one line per candidate (SQLite per way of
/// writing, at each count with its faster read path).
fn chart(section: &ClientsSection, set: &crate::measure::rounds::RoundSet, sfx: &str) -> Figure {
    let series = lines(section)
        .into_iter()
        .map(|line| {
            let at_n: Vec<Option<AtClients>> = section
                .levels
                .iter()
                .map(|&n| clients::at(section, set, n).ranked.into_iter().find(|a| a.row.line() == line))
                .collect();
            Series {
                name: row_name(line),
                values: at_n.iter().map(|a| a.as_ref().map(|a| a.ops_per_s)).collect(),
                intervals: section
                    .levels
                    .iter()
                    .zip(&at_n)
                    .map(|(&n, a)| a.as_ref().and_then(|a| clients::spread(set, &clients::arm_id(a.row, n))))
                    .collect(),
            }
        })
        .collect();
    Figure {
        id: format!("{SCALING_CHART}{sfx}"),
        chart: Chart::Lines(LineChart {
            title: format!("Throughput at the mix against clients ({})", section.are.name()),
            x_label: "clients".into(),
            y_label: "operations per second, all clients".into(),
            x_log: true,
            y_log: false,
            x: section.levels.iter().map(|&n| f64::from(n)).collect(),
            series,
            reference: None,
            note: format!("median of {} paired rounds per point", set.rounds.len()),
        }),
        caption: vec!["Each point: the median round's operations that ended in its window, over all clients, per \
                       second of the window; the bar through it runs from its slowest round to its fastest. The \
                       ranking at N (its section below) gives each candidate's paired interval against the leader."
            .into()],
        findings: Vec::new(),
    }
}

/// The page's blocks for the clients, after the ranking at one client.
/// The recommendation at N heads the page when it is the answer, and is
/// not said again here.
pub fn blocks(file: &ResultFile, s: &AdviseSection, sfx: &str) -> Vec<Block> {
    let Some((section, set)) = parts(file) else { return Vec::new() };
    let at = clients::at(section, set, section.clients);
    let mut b = vec![Block::Heading(format!("At {} clients ({})", section.clients, section.are.name()))];
    if !headlines(section) {
        b.push(Block::Paragraph(recommendation(&at, section)));
    }
    b.push(Block::Table(table(&at, section)));
    b.push(Block::Paragraph(change(section, set)));
    b.extend(machine(section).map(Block::Note));
    b.extend(harness(section).map(Block::Note));
    b.push(Block::Note(runs_note(section, set)));
    let mut how: Vec<String> =
        lines_measured(section, s).into_iter().map(|r| configuration(r, s.workload.durability, section.are)).collect();
    if section.are == ClientsAre::Processes && s.candidates.contains(&Store::Sqlite) {
        let threads_only = sqlite::WRITERS.iter().filter_map(|w| Some((w.id.row_word(), w.threads_only?)));
        how.extend(threads_only.map(|(w, why)| format!("SQLite has no {w} row with client processes: its {why}.")));
    }
    b.push(Block::List(how));
    // With N > 1 the chart heads the page (`headline_chart`).
    if section.clients <= 1 {
        b.push(Block::Figure(chart(section, set, sfx)));
    }
    b
}

/// The rows measured, in order, each once (SQLite once per way of
/// writing); the candidates of an older file without rows.
fn lines_measured(section: &ClientsSection, s: &AdviseSection) -> Vec<Row> {
    let rows: Vec<Row> = section.arms.iter().map(|a| a.row().line()).fold(Vec::new(), |mut v, r| {
        if !v.contains(&r) {
            v.push(r);
        }
        v
    });
    if rows.is_empty() {
        return s.candidates.iter().map(|&c| Row::of_record(c, None)).collect();
    }
    rows
}

/// The terminal's lines for the clients: the recommendation at N, its
/// ranking and where the leader changes.
pub fn terminal_blocks(file: &ResultFile) -> Vec<Block> {
    let Some((section, set)) = parts(file) else { return Vec::new() };
    let at = clients::at(section, set, section.clients);
    let mut b = vec![
        Block::Paragraph(recommendation(&at, section)),
        Block::Table(table(&at, section)),
        Block::Paragraph(change(section, set)),
    ];
    b.extend(machine(section).map(Block::Note));
    b.extend(harness(section).map(Block::Note));
    b
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
