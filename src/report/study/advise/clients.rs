//! The advice at N clients (`advise --clients N`, or `--rate R`): the
//! recommendation at N (closed loop: the leader by throughput at the mix;
//! under a rate: the one that keeps up with the lowest p99, or a tie with
//! those whose paired interval on p99 holds 1), the ranking at N with each
//! row's configuration, per-client spread and p99s beside it, the
//! candidates the `--p99-write` need excludes, the client count at which
//! the leader changes, the chart against clients ([`super::clients_chart`])
//! and how each candidate's clients ran. All from the result file
//! (`studies::advise::clients`).

use super::clients_chart::{chart, rows};
use super::words::{access_path, row_name};
use crate::drivers::clients::{DUE_PER_CLIENT, KEEP_UP};
use crate::engine::sqlite;
use crate::measure::paired::PairedRatio;
use crate::records::DbWriters;
use crate::report::format::doc::{Block, ColumnKind, Figure, Table};
use crate::report::format::fmt::{micros, thousands};
use crate::results::ResultFile;
use crate::studies::advise::clients::{self, AtClients, ClientsAre, ClientsSection, RankingAt, Row, ROUNDS_ID};
use crate::studies::advise::Store;
use crate::studies::advise::{AdviseSection, Durability};

/// The clients' section and round set, when the file has them.
fn parts(file: &ResultFile) -> Option<(&ClientsSection, &crate::measure::rounds::RoundSet)> {
    let section = file.advise.as_ref()?.clients.as_ref()?;
    let set = file.rounds.iter().find(|r| r.id == ROUNDS_ID)?;
    Some((section, set))
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
    let tied = tied(at);
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

/// The names of those tied with the leader: their paired interval
/// against it holds 1.
fn tied(at: &RankingAt) -> Vec<String> {
    at.ranked.iter().skip(1).filter(|a| a.tied_with_leader()).map(|a| row_name(a.row)).collect()
}

/// A row's p99 at a rate as the ranking and the chart give it: the median
/// round's.
fn rate_p99(a: &AtClients) -> String {
    a.rate_p99_us().map_or_else(|| "-".into(), |v| format!("{} µs", micros(v)))
}

/// A paired ratio with its interval and rounds.
fn interval(r: &PairedRatio) -> String {
    format!("{:.2}x, {:.2}-{:.2}, {} rounds", r.value, r.low, r.high, r.rounds)
}

/// The recommendation under `--rate`: keeping up first, then the p99 at
/// R (the median round's, the figure the chart shows), a tie named as one.
fn at_rate(at: &RankingAt, head: &str, rate: f64) -> String {
    let r = thousands(rate.round() as u64);
    let done = |a: &AtClients| a.kept.map_or_else(|| "-".into(), |c| format!("{:.1}%", c * 100.0));
    match (at.leader(), at.ranked.first()) {
        (Some(l), _) => {
            let lead = match tied(at).split_last() {
                None => format!("{} keeps up with the lowest p99", row_name(l.row)),
                Some((last, others)) => {
                    let first = row_name(l.row);
                    let names: Vec<&str> =
                        std::iter::once(first.as_str()).chain(others.iter().map(String::as_str)).collect();
                    format!(
                        "a tie between {} and {last}, which keep up (the paired interval of each one's p99 against \
                         {first}'s holds 1.0: this machine cannot tell them apart); {first} keeps up with the lowest \
                         median",
                        names.join(", ")
                    )
                }
            };
            let next = at.ranked.iter().skip(1).find(|n| !n.tied_with_leader()).map_or_else(String::new, |n| {
                let vs = match (&n.against_leader, n.keeps_up()) {
                    (Some(ratio), _) => format!(" ({} the leader's p99, paired)", interval(ratio)),
                    (None, true) => String::new(),
                    (None, false) => format!(", and does not keep up ({} kept)", done(n)),
                };
                format!("; next {} at {}{vs}", row_name(n.row), rate_p99(n))
            });
            let which = if l.round_p99.is_some() { "the median round's" } else { "over every timed run" };
            format!(
                "{head}, at {r} ops/s over all clients (an open loop): {lead}, {} (every operation's p99 at {r} ops/s, \
                 {which}; its client furthest behind started {} of its operations due in time){next}.",
                rate_p99(l),
                done(l)
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

/// The page's headline chart when the file ran clients (N > 1), one line
/// per row with intervals: throughput against clients in a closed loop,
/// p99 at R under a rate.
pub fn headline_chart(file: &ResultFile, sfx: &str) -> Option<Figure> {
    let (section, set) = parts(file)?;
    (section.clients > 1).then(|| chart(section, set, sfx))
}

fn p99(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), micros)
}

/// How a row compares with the leader, paired by round: the leader
/// itself, a tie (the interval holds 1), or the ratio with its interval.
fn against_leader(a: &AtClients, leader: bool) -> String {
    match &a.against_leader {
        _ if leader => "leader".to_string(),
        Some(r) if a.tied_with_leader() => {
            format!("tied with the leader: {:.2}x ({:.2}-{:.2})", r.value, r.low, r.high)
        }
        Some(r) => format!("{:.2}x ({:.2}-{:.2})", r.value, r.low, r.high),
        None => "-".to_string(),
    }
}

fn row(a: &AtClients, rate: bool, leader: bool) -> Vec<String> {
    let spread = a.spread.map_or_else(|| "-".into(), |s| format!("{:.2} (lowest {:.2})", s.median, s.lowest));
    let mut cells = vec![row_name(a.row), thousands(a.ops_per_s.round() as u64)];
    if rate {
        let kept = a.kept.map_or_else(|| "-".into(), |c| format!("{:.1}% kept", c * 100.0));
        let vs = if a.keeps_up() { against_leader(a, leader) } else { "did not keep up".into() };
        cells.extend([kept, p99(a.rate_p99_us()), vs]);
    } else {
        cells.push(against_leader(a, leader));
    }
    cells.extend([spread, p99(a.write_p99_us), p99(a.read_p99_us), thousands(a.busy_waits)]);
    cells
}

/// The ranking at N: one row per candidate (SQLite one per way of
/// writing and access path), the excluded last.
pub fn table(at: &RankingAt, section: &ClientsSection) -> Table {
    let rate = at.rate;
    let leader = at.leader().map(|l| l.row);
    let mut rows: Vec<Vec<String>> = at.ranked.iter().map(|a| row(a, rate.is_some(), Some(a.row) == leader)).collect();
    for a in &at.over_p99 {
        let mut r = row(a, rate.is_some(), false);
        r[2] = "excluded: write p99 over --p99-write".into();
        rows.push(r);
    }
    let at_rate = rate.map(|r| format!("p99 at {} ops/s (µs, median round)", thousands(r.round() as u64)));
    let mut headers: Vec<&str> = vec!["candidate", "ops/s (all clients)"];
    let mut kinds = vec![ColumnKind::Text, ColumnKind::Figure];
    match &at_rate {
        Some(p99_at) => {
            headers.extend(["kept up? (due operations done)", p99_at, "p99 vs leader (paired by round)"]);
            kinds.extend([ColumnKind::Text, ColumnKind::Figure, ColumnKind::Text]);
        }
        None => {
            headers.push("time per op vs leader");
            kinds.push(ColumnKind::Text);
        }
    }
    headers.extend(["slowest / median client", "write p99 (µs)", "read p99 (µs)", "busy waits"]);
    kinds.extend([ColumnKind::Text, ColumnKind::Figure, ColumnKind::Figure, ColumnKind::Figure]);
    let mut t = Table::new(&headers, rows).with_kinds(&kinds);
    for e in &section.excluded {
        let name = row_name(e.candidate);
        t.notes.push(format!("{name}: not measured with client {}: {}.", section.are.name(), e.why));
    }
    if let Some(limit) = section.p99_write_us {
        t.notes.push(format!("--p99-write {}: a candidate whose write p99 exceeds it is excluded.", micros(limit)));
    }
    if rate.is_some() && at.ranked.iter().any(|a| a.round_p99.is_none()) {
        t.notes.push(
            "This file kept no round's p99: the p99 at the rate is over every timed run, with no interval against \
             the leader's."
                .into(),
        );
    }
    if rate.is_some() {
        t.notes.push(format!(
            "Under --rate a candidate keeps up when each client starts {:.0}% of its operations due at least one \
             interval before the deadline by then (the share kept is the client furthest behind's, pooled over the \
             runs; one keeping up is never a whole interval behind, one that is not falls further behind as the \
             window goes on); those that keep up rank first, by the p99 of all operations (each round's, the \
             median over the rounds), the others after them. Each one's p99 against the leader's is paired by \
             round; where that interval holds 1 it is tied with the leader, and the order between them is no \
             ranking. Each operation's latency counts from when it was due; an operation due and not started by \
             the deadline counts at its lateness then.",
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
        "Write and read p99: from the clients' histograms merged over every timed run; the intervals against the \
         leader are paired by round."
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
        let others: Vec<String> =
            leaders.iter().filter(|(_, l)| *l != first).map(|(c, l)| format!("{} at {c}", name(*l))).collect();
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
    let why = before.zip(after).map_or_else(String::new, |(b, a)| change_why(section, set, (b, a), n));
    let by_count: Vec<String> = leaders.iter().map(|(c, l)| format!("{} at {c}", name(*l))).collect();
    format!(
        "With clients the leader changes beyond the noise at {n} clients, from {} to {}{why}. The leader by {by} at \
         each count: {}.",
        name(before),
        name(after),
        by_count.join(", ")
    )
}

/// Why the one-client leader `before` lost its lead to `after` at `n`
/// clients, in brackets: its paired interval against the new leader there
/// (time per op in a closed loop, p99 under a rate), or under a rate that
/// it no longer keeps up.
fn change_why(
    section: &ClientsSection,
    set: &crate::measure::rounds::RoundSet,
    (before, after): (Row, Row),
    n: u32,
) -> String {
    let (old, new) = (row_name(before), row_name(after));
    if section.rate_ops_s.is_none() {
        return set.ratio(&clients::arm_id(before, n), &clients::arm_id(after, n)).map_or_else(String::new, |r| {
            format!(
                " ({old} takes {:.2}x {new}'s time per op there, {:.2}-{:.2}, paired over {} rounds)",
                r.value, r.low, r.high, r.rounds
            )
        });
    }
    let there = clients::at(section, set, n);
    if there.ranked.iter().chain(&there.over_p99).any(|a| a.row == before && !a.keeps_up()) {
        return format!(" ({old} no longer keeps up there)");
    }
    clients::p99_ratio(section, before, after, n).map_or_else(String::new, |r| {
        format!(
            " ({old}'s p99 is {:.2}x {new}'s there, {:.2}-{:.2}, paired over {} rounds)",
            r.value, r.low, r.high, r.rounds
        )
    })
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
    let with_access = |text: String| {
        let path = row.sqlite.map_or("", |c| access_path(c.access).1);
        format!(
            "{text}; access path: {path}; each read on the client's own connection, its own transaction (SQLite's \
             other access path is a row of its own)"
        )
    };
    match (row.store, row.sqlite.map(|c| c.writers)) {
        (Store::Sqlite, Some(w)) if !w.is_per_client() => {
            with_access(format!("{}: WAL; {}, each commit {commit}", row_name(row), sqlite::writers(w).how))
        }
        // The row's name says "client"; with processes each is one.
        (Store::Sqlite, _) => with_access(format!(
            "SQLite, a connection per {client}, {}: WAL; {}, committed {commit}",
            row.sqlite.map_or("", |c| access_path(c.access).0),
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
        rows_measured(section, s).into_iter().map(|r| configuration(r, s.workload.durability, section.are)).collect();
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

/// The rows measured, in order, each once; the candidates of an older
/// file without rows.
fn rows_measured(section: &ClientsSection, s: &AdviseSection) -> Vec<Row> {
    let rows = rows(section);
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
