//! The key-value engines' verdict questions (from a suite run with
//! `--engines`): reads and durable writes, the best engine against SQLite's
//! best.

use super::{COMMITTED_WRITE_CHART, DURABLE_WRITE_CHART, READ_CHART};
use crate::measure::Experiment;
use crate::records::EngineKind;
use crate::report::format::fmt::blob_size;
use crate::report::interval::{kvtest_ratio, time_ratio};
use crate::report::study::suite::per_op_us;
use crate::report::verdict::Answer;
use crate::results::ResultFile;
use crate::studies::suite::ids::{self, ArmId};

/// The fastest of `ids` present in `file`, by median per-op time (the
/// chart's figure: see `suite::per_op_us`).
fn fastest<'a>(file: &'a ResultFile, ids: &[ArmId]) -> Option<&'a Experiment> {
    ids.iter()
        .filter_map(|id| file.experiment(*id))
        .filter_map(|e| Some((e, per_op_us(e)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(e, _)| e)
}

/// The best key-value engine against SQLite's best of `sqlite` ids.
fn engines_vs_sqlite(
    file: &ResultFile,
    question: String,
    kv_id: fn(EngineKind) -> ArmId,
    sqlite: &[ArmId],
    chart: (&str, &str),
) -> Option<Answer> {
    let kv: Vec<ArmId> = EngineKind::KEY_VALUE.into_iter().map(kv_id).collect();
    let kv = fastest(file, &kv)?;
    let db = fastest(file, sqlite)?;
    let committed = ArmId::parse(&kv.id).is_some_and(ArmId::is_commit);
    let db_over_kv = if committed { time_ratio(file, &db.id, &kv.id)? } else { kvtest_ratio(file, &db.id, &kv.id)? };
    let (winner, loser, factor) = if db_over_kv.value >= 1.0 {
        (kv.label.clone(), db.label.clone(), db_over_kv)
    } else {
        (db.label.clone(), kv.label.clone(), db_over_kv.inverse())
    };
    Some(Answer {
        question,
        winner,
        loser,
        factor,
        better: "faster",
        chart_id: chart.0.into(),
        chart_title: chart.1.into(),
        statement: None,
    })
}

/// Reads: the fastest key-value engine against SQLite's fastest read.
pub fn engine_reads(files: &[ResultFile], index: usize) -> Option<Answer> {
    let file = &files[index];
    let size = file.dataset.as_ref().map_or_else(|| "blob".to_string(), |d| blob_size(d.size));
    engines_vs_sqlite(
        file,
        format!("{size} reads, key-value engines vs SQLite"),
        ids::engine_read,
        &[ids::READ_DB_SQL, ids::READ_DB_BLOB, ids::READ_DB_BLOB_MMAP],
        (READ_CHART, "Key-value engines: reads"),
    )
}

/// Durable writes: the fastest engine's durable commit against WAL + FULL,
/// each write committed as an application commits it; in a file from
/// before those arms, one transaction per run, said so.
pub fn engine_durable_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    let file = &files[index];
    if file.experiment(ids::COMMIT_DB_WAL_FULL).is_some() {
        return engines_vs_sqlite(
            file,
            "durable writes, each committed, key-value engines vs SQLite".into(),
            ids::engine_committed_durable_write,
            &[ids::COMMIT_DB_WAL_FULL],
            (COMMITTED_WRITE_CHART, "Key-value engines: durable writes, each committed"),
        );
    }
    engines_vs_sqlite(
        file,
        "durable writes, key-value engines vs SQLite (one commit per run: older file)".into(),
        ids::engine_durable_write,
        &[ids::WRITE_DB_WAL_FULL],
        (DURABLE_WRITE_CHART, "Key-value engines: durable writes, one transaction per run"),
    )
}
