//! The advice at N clients (`advise --clients N`): the recommendation at
//! N (the leader by throughput at the mix), the ranking at N with each
//! candidate's write p99 beside it, the candidates the `--p99-write` need
//! excludes, the client count at which the leader changes, the chart of
//! throughput against clients and how each candidate's clients ran. All
//! from the result file (`studies::advise::clients`).

use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Table};
use crate::report::format::fmt::{micros, thousands};
use crate::report::format::svg::{LineChart, Series};
use crate::report::study::advise::words::store_name;
use crate::results::ResultFile;
use crate::studies::advise::clients::{self, AtClients, ClientsSection, RankingAt, ROUNDS_ID};
use crate::studies::advise::rules::Store;
use crate::studies::advise::AdviseSection;

/// The chart of throughput against clients.
pub const SCALING_CHART: &str = "advise-clients";

/// The clients' section and round set, when the file has them.
fn parts(file: &ResultFile) -> Option<(&ClientsSection, &crate::measure::rounds::RoundSet)> {
    let section = file.advise.as_ref()?.clients.as_ref()?;
    let set = file.rounds.iter().find(|r| r.id == ROUNDS_ID)?;
    Some((section, set))
}

/// The recommendation at N in one sentence: the leader by throughput at
/// the mix, or a tie with those whose paired interval against it holds 1.
pub fn recommendation(at: &RankingAt, section: &ClientsSection) -> String {
    let how = section.are.name();
    let Some(leader) = at.ranked.first() else {
        return format!("Recommendation at {} clients ({how}): none; no candidate meets the need.", at.clients);
    };
    let tied: Vec<String> = at.ranked[1..]
        .iter()
        .filter(|a| a.against_leader.as_ref().is_some_and(|r| r.low <= 1.0))
        .map(|a| store_name(a.store))
        .collect();
    let first = store_name(leader.store);
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
        format!("; next {} at {} ops/s{vs}", store_name(n.store), thousands(n.ops_per_s.round() as u64))
    });
    format!(
        "Recommendation at {} clients ({how}), the concurrency asked for: {lead} over all clients at the mix{next}.",
        at.clients
    )
}

/// The recommendation at N for the top of the page and the terminal, when
/// the file ran clients (N > 1): the answer at the user's concurrency.
pub fn headline(file: &ResultFile) -> Option<String> {
    let (section, set) = parts(file)?;
    (section.clients > 1).then(|| recommendation(&clients::at(section, set, section.clients), section))
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

fn row(a: &AtClients) -> Vec<String> {
    let vs = a
        .against_leader
        .as_ref()
        .map_or_else(|| "leader".to_string(), |r| format!("{:.2}x ({:.2}-{:.2})", r.value, r.low, r.high));
    vec![
        store_name(a.store),
        thousands(a.ops_per_s.round() as u64),
        vs,
        p99(a.write_p99_us),
        p99(a.read_p99_us),
        thousands(a.busy_waits),
    ]
}

/// The ranking at N: one row per candidate, the excluded last.
pub fn table(at: &RankingAt, section: &ClientsSection) -> Table {
    let mut rows: Vec<Vec<String>> = at.ranked.iter().map(row).collect();
    for a in &at.over_p99 {
        let mut r = row(a);
        r[2] = "excluded: write p99 over --p99-write".into();
        rows.push(r);
    }
    let mut t = Table::new(
        &["candidate", "ops/s (all clients)", "time per op vs leader", "write p99", "read p99", "busy waits"],
        rows,
    )
    .with_kinds(&[
        ColumnKind::Text,
        ColumnKind::Figure,
        ColumnKind::Text,
        ColumnKind::Figure,
        ColumnKind::Figure,
        ColumnKind::Figure,
    ]);
    for e in &section.excluded {
        let name = Store::from_name(&e.candidate).map_or_else(|| e.candidate.clone(), store_name);
        t.notes.push(format!("{name}: not measured with client {}: {}.", section.are.name(), e.why));
    }
    if let Some(limit) = section.p99_write_us {
        t.notes.push(format!("--p99-write {}: a candidate whose write p99 exceeds it is excluded.", micros(limit)));
    }
    t.notes.push(
        "Percentiles from the clients' histograms merged, over every timed run; the interval is paired by round."
            .into(),
    );
    t.notes.push(
        "Every figure here, at 1 client too, is of one session per client running the mix (reads and writes \
         interleaved), in the clients' rounds; the ranking at one client above combines the read and the write arms \
         measured apart, weighted by the mix. The two 1-client figures can differ."
            .into(),
    );
    t
}

/// Where the leader changes with clients, in one sentence: the leader at
/// each count, and the first count where another beats the one-client
/// leader beyond the noise, with its paired interval there; or that it
/// never changes, with the counts measured.
pub fn change(section: &ClientsSection, set: &crate::measure::rounds::RoundSet) -> String {
    let (leaders, at) = clients::leader_change(section, set);
    let name = |s: Option<Store>| s.map_or_else(|| "none".to_string(), store_name);
    let counts = section.levels.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let Some(n) = at else {
        return format!(
            "With clients the leader does not change beyond the noise: {} leads or ties at every count measured \
             ({counts} clients).",
            name(leaders.first().and_then(|l| l.1)),
        );
    };
    let before = leaders.first().and_then(|l| l.1);
    let after = leaders.iter().find(|l| l.0 == n).and_then(|l| l.1);
    let ratio = before.zip(after).and_then(|(b, a)| set.ratio(&clients::arm_id(b, n), &clients::arm_id(a, n)));
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
    let by_count: Vec<String> = leaders.iter().map(|(c, l)| format!("{} at {c}", name(*l))).collect();
    format!(
        "With clients the leader changes beyond the noise at {n} clients, from {} to {}{why}. The leader by \
         throughput at each count: {}.",
        name(before),
        name(after),
        by_count.join(", ")
    )
}

/// The harness's cost at N, as `run` reports it at one thread.
pub fn harness(section: &ClientsSection) -> Option<String> {
    let h = section.harness.as_ref()?;
    let who = Store::from_name(&h.candidate).map_or_else(|| h.candidate.clone(), store_name);
    Some(format!(
        "Harness at {} clients: one clock read and one histogram record per operation cost {:.0} ns of each \
         client's CPU ({} threads measured at once) = {:.3}% of the mean operation's latency at {} clients (at \
         most: {who}).",
        h.clients, h.cost_ns, h.clients, h.share_pct, h.clients
    ))
}

/// How many runs the clients' rounds made, how long each was sized to
/// take and how many operations each held.
pub fn runs_note(section: &ClientsSection, set: &crate::measure::rounds::RoundSet) -> String {
    let arms = section.arms.len();
    let rounds = set.rounds.len();
    let ops = section.arms.iter().map(|a| a.ops_per_run);
    let (least, most) = (ops.clone().min().unwrap_or(0), ops.max().unwrap_or(0));
    let sized = set.run_time_s.map_or_else(String::new, |t| {
        format!(", each run sized to about {:.2} s from an untimed run after one warm-up run", t)
    });
    format!(
        "Runs: {arms} arms (each candidate at each client count), {rounds} interleaved rounds of each{sized}: {} \
         timed runs in all, {} to {} operations per run over all clients.",
        arms * rounds,
        thousands(least),
        thousands(most)
    )
}

/// The clients' part of "What would change it": where the leader changes.
pub fn what_would_change(file: &ResultFile) -> Option<String> {
    let (section, set) = parts(file)?;
    Some(change(section, set))
}

/// Throughput against clients, one line per candidate.
fn chart(section: &ClientsSection, set: &crate::measure::rounds::RoundSet, sfx: &str) -> Figure {
    let stores: Vec<Store> =
        section.arms.iter().filter_map(|a| Store::from_name(&a.candidate)).fold(Vec::new(), |mut v, s| {
            if !v.contains(&s) {
                v.push(s);
            }
            v
        });
    let series = stores
        .iter()
        .map(|&s| Series {
            name: store_name(s),
            values: section
                .levels
                .iter()
                .map(|&n| clients::at(section, set, n).ranked.iter().find(|a| a.store == s).map(|a| a.ops_per_s))
                .collect(),
            intervals: section.levels.iter().map(|&n| clients::spread(set, &clients::arm_id(s, n))).collect(),
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
        caption: vec!["Each point: the median round's operations over all clients per second of wall time; the bar \
                       through it runs from its slowest round to its fastest. The ranking at N (its section below) \
                       gives each candidate's paired interval against the leader."
            .into()],
        findings: Vec::new(),
    }
}

/// The page's blocks for the clients, after the ranking at one client.
pub fn blocks(file: &ResultFile, s: &AdviseSection, sfx: &str) -> Vec<Block> {
    let Some((section, set)) = parts(file) else { return Vec::new() };
    let at = clients::at(section, set, section.clients);
    let mut b = vec![
        Block::Heading(format!("At {} clients ({})", section.clients, section.are.name())),
        Block::Paragraph(recommendation(&at, section)),
        Block::Table(table(&at, section)),
        Block::Paragraph(change(section, set)),
    ];
    b.extend(harness(section).map(Block::Note));
    b.push(Block::Note(runs_note(section, set)));
    b.push(Block::List(
        s.candidates
            .iter()
            .filter_map(|c| Store::from_name(c))
            .map(|st| clients::configuration(st, s.workload.durability, section.are))
            .collect(),
    ));
    // With N > 1 the chart heads the page (`headline_chart`).
    if section.clients <= 1 {
        b.push(Block::Figure(chart(section, set, sfx)));
    }
    b
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
    b.extend(harness(section).map(Block::Note));
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rounds::{synthetic, RoundSet};
    use crate::studies::advise::clients::{arm_id, ClientsArmRecord, Harness};

    /// SQLite and files at 1, 2 and 4 clients, six rounds; µs per op over
    /// all clients by arm (SQLite, files at each count); round 3 is busy.
    fn fixed(files_at_4: f64) -> (ClientsSection, RoundSet) {
        let stores = [Store::Sqlite, Store::FilesReplace];
        let arms: Vec<ClientsArmRecord> = [1, 2, 4]
            .into_iter()
            .flat_map(|n| stores.map(|s| (s, n)))
            .map(|(s, n)| ClientsArmRecord {
                id: arm_id(s, n),
                candidate: s.name().into(),
                clients: n,
                ops_per_run: 100 * u64::from(n),
                busy_waits: 0,
                classes: Vec::new(),
            })
            .collect();
        let ids: Vec<&str> = arms.iter().map(|a| a.id.as_str()).collect();
        let rows: Vec<Vec<f64>> = [1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
            .into_iter()
            .map(|load| [10.0, 20.0, 10.0, 15.0, 10.0, files_at_4].map(|x| x * load).to_vec())
            .collect();
        let set = synthetic(ROUNDS_ID, &ids, &rows);
        let section = ClientsSection::threads_up_to_4(arms);
        (section, set)
    }

    #[test]
    fn the_leader_change_names_the_count_and_its_paired_interval() {
        let (section, set) = fixed(5.0);
        let text = change(&section, &set);
        assert!(text.contains("the leader changes beyond the noise at 4 clients, from SQLite to files, temp + rename"));
        assert!(text.ends_with("at each count: SQLite at 1, SQLite at 2, files, temp + rename at 4."), "{text}");
        // The busy round slowed both alike: the paired ratio is exact.
        assert!(
            text.contains(
                "SQLite takes 2.00x files, temp + rename's time per op there, 2.00-2.00, paired over 6 \
                               rounds"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_recommendation_at_n_is_the_leader_there_or_a_tie_within_the_interval() {
        let (section, set) = fixed(5.0);
        let text = recommendation(&clients::at(&section, &set, 4), &section);
        assert!(
            text.starts_with(
                "Recommendation at 4 clients (threads), the concurrency asked for: files, temp + rename leads, \
                 200,000 ops/s"
            ),
            "{text}"
        );
        // Files at SQLite's time per op at 4 clients: a ratio of exactly 1,
        // its interval holding 1.0.
        let (section, set) = fixed(10.0);
        let text = recommendation(&clients::at(&section, &set, 4), &section);
        assert!(
            text.contains(
                "the concurrency asked for: a tie between SQLite and files, temp + rename (the paired interval of \
                 each against SQLite holds 1.0"
            ) || text
                .contains("a tie between files, temp + rename and SQLite (the paired interval of each against files"),
            "{text}"
        );
    }

    #[test]
    fn a_leader_that_never_changes_is_said_with_the_counts_measured() {
        let (section, set) = fixed(12.0);
        let text = change(&section, &set);
        assert_eq!(
            text,
            "With clients the leader does not change beyond the noise: SQLite leads or ties at every count measured \
             (1, 2, 4 clients)."
        );
    }

    #[test]
    fn the_scaling_chart_draws_each_points_spread_over_the_rounds() {
        let (section, set) = fixed(5.0);
        let figure = chart(&section, &set, "");
        let Chart::Lines(lines) = &figure.chart else { panic!("a line chart") };
        let files = lines.series.iter().find(|s| s.name == "files, temp + rename").unwrap();
        // At 4 clients: 5 µs per op in five rounds, 10 in the busy one.
        assert_eq!(files.values[2], Some(200_000.0));
        assert_eq!(files.intervals[2], Some((100_000.0, 200_000.0)));
        assert_eq!(files.intervals.len(), section.levels.len());
        let svg = lines.to_svg();
        assert_eq!(svg.matches(r#"class="interval""#).count(), 6, "one bar per point");
        assert!(figure.caption[0].contains("slowest round to its fastest"));
    }

    #[test]
    fn the_harness_cost_at_n_is_stated_as_run_states_it() {
        let (mut section, set) = fixed(5.0);
        assert_eq!(harness(&section), None, "an older file says nothing");
        section.harness = Some(Harness { clients: 16, cost_ns: 31.0, share_pct: 0.25, candidate: "sqlite".into() });
        let text = harness(&section).unwrap();
        assert!(
            text.starts_with("Harness at 16 clients: one clock read and one histogram record per operation cost 31 ns")
        );
        assert!(text.contains("(16 threads measured at once) = 0.250% of the mean operation's latency"), "{text}");
        assert!(text.ends_with("(at most: SQLite)."), "{text}");
        assert!(
            runs_note(&section, &set).contains("6 arms (each candidate at each client count), 6 interleaved rounds")
        );
    }
}
