//! The key-value engines beside SQLite and files: reads, writes without
//! sync and durable writes, in µs per op, drawn only when the suite ran
//! with `--engines`.

pub mod questions;

use crate::records::EngineKind;
use crate::report::format::doc::{Block, Chart, Figure, Section};
use crate::report::format::svg::BarChart;
use crate::report::study::suite::{per_op_stat, per_op_us, suite_files};
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::suite::ids::{self, ArmId};

/// One chart: its id, title, and the SQLite and files experiments it sets
/// the engines beside, and each engine's experiment id.
struct Spec {
    id: &'static str,
    title: &'static str,
    references: [(ArmId, &'static str); 2],
    engine_id: fn(EngineKind) -> ArmId,
}

/// The chart of reads, engines beside SQLite and files.
pub const READ_CHART: &str = "engines-read";
/// The chart of durable writes, one transaction per run (the article's way).
pub const DURABLE_WRITE_CHART: &str = "engines-write-durable";
/// The chart of durable writes committed as an application commits them.
pub const COMMITTED_WRITE_CHART: &str = "engines-write-committed";

const SPECS: [Spec; 4] = [
    Spec {
        id: READ_CHART,
        title: "Reads: key-value engines beside SQLite and files",
        references: [(ids::READ_DB_BLOB, "SQLite, blob API"), (ids::READ_FLAT_POSIX, "files, open/read")],
        engine_id: ids::engine_read,
    },
    Spec {
        id: "engines-write-fast",
        title: "Writes without sync",
        references: [
            (ids::WRITE_DB_OFF, "SQLite, journal OFF + sync OFF"),
            (ids::WRITE_FLAT_INPLACE, "files, in place"),
        ],
        engine_id: ids::engine_fast_write,
    },
    Spec {
        id: DURABLE_WRITE_CHART,
        title: "Durable writes, one transaction per run",
        references: [
            (ids::WRITE_DB_WAL_FULL, "SQLite, WAL + sync FULL"),
            (ids::WRITE_FLAT_INPLACE_FSYNC, "files, in place + fsync"),
        ],
        engine_id: ids::engine_durable_write,
    },
    Spec {
        id: COMMITTED_WRITE_CHART,
        title: "Durable writes, each committed (steady state: the loop with its commits)",
        references: [
            (ids::COMMIT_DB_WAL_FULL, "SQLite, WAL + sync FULL"),
            (ids::COMMIT_FLAT_INPLACE_FSYNC, "files, in place + fsync"),
        ],
        engine_id: ids::engine_committed_durable_write,
    },
];

/// The engines section, when any file holds an engine's suite experiment.
/// The key-value engines' part of the report (from `suite --engines`).
pub const REPORT: StudyReport = StudyReport {
    sections,
    questions: &[questions::engine_reads, questions::engine_durable_writes],
    terminal: None,
    redraws: None,
    leads: false,
};

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let machines = suite_files(files);
    let present: Vec<EngineKind> = EngineKind::KEY_VALUE
        .into_iter()
        .filter(|k| machines.iter().any(|(_, f)| f.experiment(ids::engine_read(*k)).is_some()))
        .collect();
    if present.is_empty() {
        return Vec::new();
    }
    let note = Block::Note(
        "Median µs per operation over the timed runs (lower is faster), on the suite's dataset: opening and \
         committing included (kvtest's total) for the article's arms, the steady state (the loop with every \
         commit inside it, opening and closing left out) for writes each committed as an application commits them."
            .to_string(),
    );
    // Advise runs a few of the suite's arms: its pages show only those.
    let selective = machines.iter().all(|(_, f)| f.advise.is_some());
    let figures = SPECS.iter().filter_map(|s| figure(s, &present, &machines, selective)).map(Block::Figure);
    vec![Section {
        id: "engines".into(),
        title: "Key-value engines".into(),
        in_summary: true,
        blocks: std::iter::once(note).chain(figures).collect(),
    }]
}

/// One chart; `selective` leaves out the series no machine measured (None
/// when that leaves none).
fn figure(spec: &Spec, present: &[EngineKind], machines: &[(String, &ResultFile)], selective: bool) -> Option<Figure> {
    let mut series: Vec<(ArmId, String)> = spec.references.iter().map(|(id, name)| (*id, name.to_string())).collect();
    series.extend(present.iter().map(|k| ((spec.engine_id)(*k), k.title().to_string())));
    if spec.id == READ_CHART {
        // Beside the reads, each server's round trip with no work: how
        // much of a read is the protocol and the socket.
        let floors = present.iter().filter_map(|k| Some((*k, k.round_trip_call()?)));
        series.extend(floors.map(|(k, call)| (ids::engine_round_trip(k), format!("{}: {call} round trip", k.title()))));
    }
    if selective {
        series.retain(|(id, _)| machines.iter().any(|(_, f)| f.experiment(*id).and_then(per_op_us).is_some()));
        if series.is_empty() {
            return None;
        }
    }
    let values: Vec<Vec<Option<f64>>> = machines
        .iter()
        .map(|(_, f)| series.iter().map(|(id, _)| f.experiment(*id).and_then(per_op_us)).collect())
        .collect();
    // Whiskers: the fastest and slowest timed run of each bar.
    let errors: Vec<Vec<Option<(f64, f64)>>> = machines
        .iter()
        .map(|(_, f)| {
            series.iter().map(|(id, _)| f.experiment(*id).map(|e| (per_op_stat(e).min, per_op_stat(e).max))).collect()
        })
        .collect();
    let runs = machines
        .iter()
        .flat_map(|(_, f)| series.iter().filter_map(|(id, _)| f.experiment(*id).map(|e| e.summary.runs)))
        .min()
        .unwrap_or(0);
    let single = machines.len() == 1;
    let findings = machines
        .iter()
        .zip(&values)
        .map(|((label, _), row)| {
            let on = if single { "On this machine".to_string() } else { format!("On {label}") };
            let best = series
                .iter()
                .zip(row)
                .filter_map(|((_, name), v)| Some((name, (*v)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((name, us)) => format!("{on} the fastest is {name}, at {us:.1} µs per op."),
                None => format!("{on} none of these was measured."),
            }
        })
        .collect();
    let chart = BarChart {
        title: spec.title.to_string(),
        y_label: "µs per op (median)".to_string(),
        groups: machines.iter().map(|(l, _)| l.clone()).collect(),
        series: series.into_iter().map(|(_, name)| name).collect(),
        values,
        reference: None,
        errors,
        note: format!("at least {runs} timed runs per bar; whiskers: fastest to slowest run"),
    };
    Some(Figure { id: spec.id.to_string(), chart: Chart::Bars(chart), caption: Vec::new(), findings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::suite;

    #[test]
    fn a_servers_round_trip_stands_beside_the_reads() {
        let read = ids::engine_read(EngineKind::Postgres);
        let floor = ids::engine_round_trip(EngineKind::Postgres);
        let (blob, read, floor) = (ids::READ_DB_BLOB.to_string(), read.to_string(), floor.to_string());
        let f = suite("host-a", &[(&blob, 10.0), (&read, 90.0), (&floor, 40.0)]);
        let s = sections(&[f]);
        let Some(Block::Figure(fig)) = s[0].blocks.iter().find(|b| matches!(b, Block::Figure(f) if f.id == READ_CHART))
        else {
            panic!("no read chart")
        };
        let Chart::Bars(chart) = &fig.chart else { panic!("not bars") };
        let at = chart.series.iter().position(|n| n.contains("SELECT 1 round trip")).expect("the floor's bar");
        assert_eq!(chart.values[0][at], Some(40.0));
        let lmdb = suite("host-a", &[(&ids::engine_read(EngineKind::Lmdb).to_string(), 5.0)]);
        assert!(!format!("{:?}", sections(&[lmdb])).contains("round trip"), "no floor without a server");
    }
}
