//! The durable writers with readers beside them, per store and writer
//! count: the table both the terminal and the page show, the page's chart
//! (writes/s against writers, one line per store), and SQLite's answer to
//! the blog's question for blobs (one writer connection or a connection
//! per writer?) at each writer count.

use crate::measure::paired::MIN_ROUNDS_95;
use crate::measure::rounds::RoundSet;
use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Table};
use crate::report::format::fmt::{micros, rate, thousands};
use crate::report::format::svg::{LineChart, Series};
use crate::report::interval::Ratio;
use crate::studies::concurrency::{connection_answers, ConnectionAnswer, ConnectionPick, WriterPoint, Writers, TIE};
use crate::util::units::plural;

/// What a write's latency covers, for the page and the terminal.
pub const WRITE_LATENCY_COVERS: &str = "a write's latency runs from the end of its writer's previous write to the \
     return of this write's commit: for SQLite, BEGIN IMMEDIATE with its busy waits (or the wait for the one writer \
     connection's mutex), the UPDATE, and the COMMIT with its fsync of the WAL";

/// The question SQLite's two rows answer.
pub const CONNECTION_QUESTION: &str = "One writer connection or a connection per writer?";

/// SQLite's answer at each writer count, one sentence each: the faster
/// configuration, by how much, and over how many paired rounds (saying so
/// when they were fewer than a 95% interval needs). Empty for files
/// without the one-writer row.
pub fn connection_lines(w: &Writers, rounds: &[RoundSet]) -> Vec<String> {
    connection_answers(w, rounds).iter().map(connection_line).collect()
}

fn connection_line(a: &ConnectionAnswer) -> String {
    let (n, r) = (a.writers, a.comparison.ratio);
    let tie = (TIE - 1.0) * 100.0;
    let what = match a.pick {
        ConnectionPick::OneWriter => {
            format!("one writer connection, {} the durable writes/s of a connection per writer", super::times(r))
        }
        ConnectionPick::PerWriter => {
            format!("a connection per writer, {} the durable writes/s of one writer connection", super::times(1.0 / r))
        }
        ConnectionPick::Either => format!(
            "either: one writer connection makes {} the durable writes/s of a connection per writer, within the \
             {tie:.0}% tie band",
            super::times(r)
        ),
    };
    let interval = a.comparison.paired.as_ref().map_or_else(
        || "unpaired: the ratio of the medians, no interval".to_string(),
        |p| format!("one writer / per writer {}", Ratio::paired(p).describe()),
    );
    let caveat = match a.rounds {
        0 => String::new(),
        k if !a.enough_rounds() => format!(
            "; only {k} paired round{}, fewer than the {MIN_ROUNDS_95} a 95% interval needs: a leaning, not an answer",
            plural(k)
        ),
        _ if !a.firm => "; the interval reaches past the tie band: a leaning, not an answer".to_string(),
        _ => String::new(),
    };
    format!("{n} writer{}: {what} ({interval}){caveat}.", plural(n))
}

/// "6.1k [5.8k-6.4k]": a median rate with its interval over the rounds.
pub(super) fn rate_interval(p: &WriterPoint) -> String {
    let r = rate;
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

/// The page's blocks: the chart, the table, and SQLite's answer.
pub fn blocks(w: &Writers, rounds: &[RoundSet], id: String, title_suffix: &str) -> Vec<Block> {
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
    let fewest = w.points.iter().map(|p| p.rounds).min().unwrap_or(0);
    let chart = LineChart {
        title: format!("Durable writers, readers beside them: writes/s{title_suffix}"),
        x_label: "writers (and as many readers)".into(),
        y_label: "durable writes per second".into(),
        x_log: false,
        y_log: false,
        x,
        series,
        reference: None,
        note: format!("median of {fewest} round{}", plural(fewest)),
    };
    let caption = vec![format!(
        "{} blobs of {} bytes; each writer overwrites random blobs of its own with new content, each write \
         committed durably; as many readers read random blobs beside them. Every store at every writer count is an \
         arm of one set of interleaved rounds, each run sized to about {} s; intervals are the medians' \
         order-statistic intervals over the rounds, latency percentiles come from the clients' histograms merged; \
         {WRITE_LATENCY_COVERS}.",
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
    let mut blocks = vec![
        Block::Heading("Durable writers, readers beside them".into()),
        Block::Figure(Figure { id, chart: Chart::Lines(chart), caption, findings }),
        Block::Table(table(w)),
    ];
    let answers = connection_lines(w, rounds);
    if !answers.is_empty() {
        blocks.push(Block::Heading(format!("SQLite, writing blobs: {}", CONNECTION_QUESTION.to_lowercase())));
        blocks.push(Block::Paragraph(
            "The blog's question for writes, asked of blobs: SQLite with one writer connection that the writers \
             share behind a mutex in the process (readers on their own connections), against a connection per \
             writer taking the lock with BEGIN IMMEDIATE. Both write in WAL with synchronous FULL, a commit per \
             write; at each writer count, their durable writes/s are compared round by round."
                .into(),
        ));
        blocks.push(Block::List(answers));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EngineKind;
    use crate::studies::concurrency::{ids, StoreId};

    fn point(store: StoreId, writers: u32, per_write_us: f64) -> WriterPoint {
        WriterPoint::fixture(store, writers, per_write_us)
    }

    /// SQLite's two rows at 1 writer (a tie) and 2 (one writer connection
    /// 1.5x), over `rounds` identical rounds.
    fn answered(rounds: usize) -> Vec<String> {
        let (per, one) = (StoreId::Engine(EngineKind::Db), StoreId::SqliteWriters(crate::records::DbWriters::One));
        let points = vec![point(per, 1, 100.0), point(one, 1, 100.0), point(per, 2, 150.0), point(one, 2, 100.0)];
        let arms: Vec<String> = points.iter().map(|p| p.experiment_id.clone()).collect();
        let arms: Vec<&str> = arms.iter().map(String::as_str).collect();
        let rows = vec![vec![100.0, 100.0, 150.0, 100.0]; rounds];
        let set = crate::measure::rounds::synthetic(ids::WRITERS_ROUNDS, &arms, &rows);
        let w = Writers { blobs: 10, blob_size: 100, run_time_s: 0.2, busy_timeout_ms: 5000, points };
        connection_lines(&w, std::slice::from_ref(&set))
    }

    #[test]
    fn the_answer_names_the_faster_configuration_at_each_writer_count() {
        assert_eq!(
            answered(6),
            [
                "1 writer: either: one writer connection makes 1.00x the durable writes/s of a connection per writer, \
                 within the 10% tie band (one writer / per writer 1.00-1.00 (95% paired, 6 rounds)).",
                "2 writers: one writer connection, 1.50x the durable writes/s of a connection per writer (one writer \
                 / per writer 1.50-1.50 (95% paired, 6 rounds))."
            ]
        );
    }

    #[test]
    fn an_answer_over_fewer_than_six_rounds_is_a_leaning() {
        let few = answered(3);
        assert!(few[1].starts_with("2 writers: one writer connection, 1.50x"), "{few:?}");
        assert!(
            few[1].ends_with("only 3 paired rounds, fewer than the 6 a 95% interval needs: a leaning, not an answer.")
        );
    }
}
