//! The durable writers with readers beside them, per engine and writer
//! count: the table both the terminal and the page show, and the page's
//! chart (writes/s against writers, one line per engine).

use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Table};
use crate::report::format::fmt::{micros, thousands};
use crate::report::format::svg::{LineChart, Series};
use crate::studies::concurrency::{WriterPoint, Writers};
use crate::util::units::plural;

/// "6.1k [5.8k-6.4k]": a median rate with its interval over the rounds.
pub(super) fn rate_interval(p: &WriterPoint) -> String {
    let r = |v: f64| super::terminal::rate(v);
    if p.rounds >= 2 {
        format!("{} [{}-{}]", r(p.writes_per_s), r(p.writes_per_s_low), r(p.writes_per_s_high))
    } else {
        r(p.writes_per_s)
    }
}

/// One row per engine and writer count: durable writes/s with their
/// interval, the writes' p50, p99 and p99.9, the readers' reads/s and p99
/// beside them, SQLite's busy waits.
pub fn table(w: &Writers) -> Table {
    let headers = [
        "store",
        "writers",
        "writes/s [interval]",
        "write p50 us",
        "write p99 us",
        "write p99.9 us",
        "reads/s beside",
        "read p99 us",
        "busy waits",
    ];
    let mut rows = Vec::new();
    for store in w.stores() {
        for n in w.counts() {
            let Some(p) = w.point(store, n) else { continue };
            let lat = |l: Option<crate::measure::LatencySummary>, f: fn(&crate::measure::LatencySummary) -> f64| {
                l.map_or("-".to_string(), |l| micros(f(&l)))
            };
            rows.push(vec![
                store.to_string(),
                n.to_string(),
                rate_interval(p),
                lat(p.write_latency, |l| l.p50_us),
                lat(p.write_latency, |l| l.p99_us),
                lat(p.write_latency, |l| l.p999_us),
                thousands(p.reads_per_s.round() as u64),
                lat(p.read_latency, |l| l.p99_us),
                if p.failed_writes > 0 {
                    format!("{} ({} failed)", p.busy_waits, p.failed_writes)
                } else {
                    p.busy_waits.to_string()
                },
            ]);
        }
    }
    let kinds = [ColumnKind::Text].into_iter().chain(headers.iter().skip(1).map(|_| ColumnKind::Figure)).collect();
    let notes: Vec<String> = w
        .stores()
        .into_iter()
        .filter_map(|s| w.points.iter().find(|p| p.store == s))
        .map(|p| format!("{}: {}", p.store, p.label))
        .collect();
    Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows, kinds, ..Table::default() }
        .with_notes(notes)
}

/// The page's blocks: the chart and the table.
pub fn blocks(w: &Writers, id: String, title_suffix: &str) -> Vec<Block> {
    let counts = w.counts();
    let x: Vec<f64> = counts.iter().map(|&n| f64::from(n)).collect();
    let series = w
        .stores()
        .into_iter()
        .map(|s| Series {
            intervals: Vec::new(),
            name: s.to_string(),
            values: counts.iter().map(|&n| w.point(s, n).map(|p| p.writes_per_s)).collect(),
        })
        .collect();
    let rounds = w.points.iter().map(|p| p.rounds).min().unwrap_or(0);
    let chart = LineChart {
        title: format!("Durable writers, readers beside them: writes/s{title_suffix}"),
        x_label: "writers (and as many readers)".into(),
        y_label: "durable writes per second".into(),
        x_log: false,
        y_log: false,
        x,
        series,
        reference: None,
        note: format!("median of {rounds} round{}", plural(rounds)),
    };
    let caption = vec![format!(
        "{} blobs of {} bytes; each writer overwrites random blobs of its own with new content, each write \
         committed durably; as many readers read random blobs beside them. Every engine at every writer count is an \
         arm of one set of interleaved rounds, each run sized to about {} s; intervals are the medians' \
         order-statistic intervals over the rounds, latency percentiles come from the clients' histograms merged.",
        thousands(u64::from(w.blobs)),
        thousands(u64::from(w.blob_size)),
        w.run_time_s
    )];
    let findings = w
        .stores()
        .into_iter()
        .filter_map(|s| {
            let (lo, hi) = (w.point(s, *counts.first()?)?, w.point(s, *counts.last()?)?);
            Some(format!(
                "{s}: {} durable writes/s at {} writer{}, {} at {} (p99 {} us to {} us).",
                rate_interval(lo),
                lo.writers,
                plural(lo.writers),
                rate_interval(hi),
                hi.writers,
                lo.write_latency.map_or("-".into(), |l| micros(l.p99_us)),
                hi.write_latency.map_or("-".into(), |l| micros(l.p99_us)),
            ))
        })
        .collect();
    vec![
        Block::Heading("Durable writers, readers beside them".into()),
        Block::Figure(Figure { id, chart: Chart::Lines(chart), caption, findings }),
        Block::Table(table(w)),
    ]
}
