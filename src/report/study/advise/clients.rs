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

/// The recommendation at N in one sentence.
pub fn recommendation(at: &RankingAt, section: &ClientsSection) -> String {
    let how = section.are.name();
    match at.ranked.first() {
        None => format!("At {} clients ({how}) no candidate meets the need.", at.clients),
        Some(leader) => {
            let next = at.ranked.get(1).map_or_else(String::new, |n| {
                let vs = n.against_leader.as_ref().map_or_else(String::new, |r| {
                    format!(" ({:.2}x its time per op, {:.2}-{:.2}, {} rounds)", r.value, r.low, r.high, r.rounds)
                });
                format!("; next {} at {} ops/s{vs}", store_name(n.store), thousands(n.ops_per_s.round() as u64))
            });
            format!(
                "At {} clients ({how}): {} leads, {} ops/s over all clients at the mix{next}.",
                at.clients,
                store_name(leader.store),
                thousands(leader.ops_per_s.round() as u64)
            )
        }
    }
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
    t
}

/// Where the leader changes with clients, in one sentence.
pub fn change(section: &ClientsSection, set: &crate::measure::rounds::RoundSet) -> String {
    let (leaders, at) = clients::leader_change(section, set);
    let name = |s: Option<Store>| s.map_or_else(|| "none".to_string(), store_name);
    match at {
        Some(n) => {
            let before = leaders.first().and_then(|l| l.1);
            let after = leaders.iter().find(|l| l.0 == n).and_then(|l| l.1);
            format!(
                "With clients the leader changes at {n} clients: {} leads from there, {} before.",
                name(after),
                name(before)
            )
        }
        None => format!(
            "With clients the leader does not change beyond the noise: {} leads or ties at every count measured ({}).",
            name(leaders.first().and_then(|l| l.1)),
            section.levels.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
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
        caption: vec!["Each point: the median round's operations over all clients per second of wall time; the \
                       table above gives each candidate's paired interval against the leader at N."
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
    b.push(Block::List(
        s.candidates
            .iter()
            .filter_map(|c| Store::from_name(c))
            .map(|st| clients::configuration(st, s.workload.durability, section.are))
            .collect(),
    ));
    b.push(Block::Figure(chart(section, set, sfx)));
    b
}

/// The terminal's lines for the clients: the recommendation at N, its
/// ranking and where the leader changes.
pub fn terminal_blocks(file: &ResultFile) -> Vec<Block> {
    let Some((section, set)) = parts(file) else { return Vec::new() };
    let at = clients::at(section, set, section.clients);
    vec![
        Block::Paragraph(recommendation(&at, section)),
        Block::Table(table(&at, section)),
        Block::Paragraph(change(section, set)),
    ]
}
