//! The chart of the candidates against clients, which heads the page
//! when the file ran N > 1 clients: in a closed loop throughput at the
//! mix, under `--rate R` every operation's p99 at R (the throughput
//! there is R itself, one flat line, and the ranking is by p99). One line
//! per row of the ranking at N (SQLite one per way of writing and access
//! path), each point with its interval over the rounds.

use super::words::row_name;
use crate::measure::rounds::RoundSet;
use crate::report::format::doc::{Chart, Figure};
use crate::report::format::fmt::thousands;
use crate::report::format::svg::{LineChart, Series};
use crate::studies::advise::clients::{self, AtClients, ClientsSection, Row};

/// The chart's id.
pub const SCALING_CHART: &str = "advise-clients";

/// The rows measured, in the order of the section, each once.
pub fn rows(section: &ClientsSection) -> Vec<Row> {
    section.arms.iter().map(|a| a.row()).fold(Vec::new(), |mut v, r| {
        if !v.contains(&r) {
            v.push(r);
        }
        v
    })
}

/// One point of a line: its figure and the interval drawn through it.
type Point = (Option<f64>, Option<(f64, f64)>);

/// One line per row: at each count, `point` of the row as ranked there
/// (its figure and interval), none where it was not ranked.
fn series(section: &ClientsSection, set: &RoundSet, point: impl Fn(&AtClients, u32) -> Point) -> Vec<Series> {
    let rankings: Vec<(u32, Vec<AtClients>)> =
        section.levels.iter().map(|&n| (n, clients::at(section, set, n).ranked)).collect();
    rows(section)
        .into_iter()
        .map(|row| {
            let points: Vec<Point> = rankings
                .iter()
                .map(|(n, ranked)| ranked.iter().find(|a| a.row == row).map_or((None, None), |a| point(a, *n)))
                .collect();
            Series {
                name: row_name(row),
                values: points.iter().map(|p| p.0).collect(),
                intervals: points.iter().map(|p| p.1).collect(),
            }
        })
        .collect()
}

/// The chart against clients: throughput in a closed loop, p99 under a
/// rate.
pub fn chart(section: &ClientsSection, set: &RoundSet, sfx: &str) -> Figure {
    match section.rate_ops_s {
        None => throughput(section, set, sfx),
        Some(rate) => p99_at_rate(section, set, sfx, rate),
    }
}

/// Throughput against clients, one line per row.
fn throughput(section: &ClientsSection, set: &RoundSet, sfx: &str) -> Figure {
    let series = series(section, set, |a, n| (Some(a.ops_per_s), clients::spread(set, &clients::arm_id(a.row, n))));
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

/// Under a rate: every operation's p99 at R against clients, one line per
/// row; each point the median round's p99, its bar that median's
/// interval over the rounds.
fn p99_at_rate(section: &ClientsSection, set: &RoundSet, sfx: &str, rate: f64) -> Figure {
    let series = series(section, set, |a, _| {
        let interval = a.round_p99.filter(|r| r.rounds >= 2).map(|r| (r.low, r.high));
        (a.rate_p99_us(), interval)
    });
    let r = thousands(rate.round() as u64);
    let coverage = section
        .levels
        .iter()
        .flat_map(|&n| clients::at(section, set, n).ranked)
        .filter_map(|a| a.round_p99)
        .map(|r| r.coverage_pct)
        .reduce(f64::min);
    let bar = coverage.map_or_else(
        || "an older file kept no round's p99: each point is the p99 over every run, without a bar".to_string(),
        |c| format!("the bar through it covers that median with at least {c:.0}% (the rounds' order statistics)"),
    );
    Figure {
        id: format!("{SCALING_CHART}{sfx}"),
        chart: Chart::Lines(LineChart {
            title: format!("p99 at {r} ops/s against clients ({})", section.are.name()),
            x_label: "clients".into(),
            y_label: "p99 of every operation, µs".into(),
            x_log: true,
            y_log: true,
            x: section.levels.iter().map(|&n| f64::from(n)).collect(),
            series,
            reference: None,
            note: format!("median of {} rounds' p99 per point", set.rounds.len()),
        }),
        caption: vec![format!(
            "Each point: in each round, the p99 of every operation at {r} ops/s over all clients (reads and writes, \
             each timed from when it was due, the clients' histograms merged), and the median of the rounds'; {bar}. \
             Lower is better. The ranking at N (its section below) says which candidates kept up, and gives each \
             one's p99 against the leader's, paired by round."
        )],
        findings: Vec::new(),
    }
}
