//! Verdict questions of the studies beyond the article: the key-value
//! engines (from a suite run with `--engines`), storage aging and power
//! cuts. Each reads its own section; see [`super::verdict`].

use super::format::fmt::blob_size;
use super::interval::{time_ratio, Method as Interval, Ratio};
use super::study::{aging, crashtest, engines};
use super::verdict::Answer;
use crate::measure::Experiment;
use crate::records::EngineKind;
use crate::results::ResultFile;

/// The fastest of `ids` present in `file`, by median per-op time.
fn fastest<'a>(file: &'a ResultFile, ids: &[String]) -> Option<&'a Experiment> {
    ids.iter()
        .filter_map(|id| file.experiment(id))
        .filter(|e| e.summary.runs > 0 && e.summary.per_op_us.median > 0.0)
        .min_by(|a, b| a.summary.per_op_us.median.total_cmp(&b.summary.per_op_us.median))
}

/// The best key-value engine against SQLite's best of `sqlite` ids.
fn engines_vs_sqlite(
    file: &ResultFile,
    question: String,
    kv_id: fn(EngineKind) -> String,
    sqlite: &[&str],
    chart: (&str, &str),
) -> Option<Answer> {
    let kv: Vec<String> = EngineKind::KEY_VALUE.into_iter().map(kv_id).collect();
    let kv = fastest(file, &kv)?;
    let db = fastest(file, &sqlite.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    let db_over_kv = time_ratio(file, &db.id, &kv.id)?;
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
        |k| format!("read/{}", k.name()),
        &["read/db-sql", "read/db-blob", "read/db-blob-mmap"],
        (engines::READ_CHART, "Key-value engines: reads"),
    )
}

/// Durable writes: the fastest engine's durable commit against WAL + FULL.
pub fn engine_durable_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    engines_vs_sqlite(
        &files[index],
        "durable writes, key-value engines vs SQLite".into(),
        |k| format!("write/{}-durable", k.name()),
        &["write/db-wal-full"],
        (engines::DURABLE_WRITE_CHART, "Key-value engines: durable writes"),
    )
}

/// Warm reads at the last storage age: the fastest SQLite layout against
/// the fastest file layout, of the first size setting. The points keep a
/// median and a coefficient of variation, not every run, so the factor is
/// called clear only when it exceeds both sides' run-to-run spread.
pub fn after_aging(files: &[ResultFile], index: usize) -> Option<Answer> {
    let aging = files[index].aging.as_ref()?;
    let setting = aging.settings.first()?;
    let age = *aging.ages.last()?;
    let best = |files_side: bool| {
        setting
            .layouts
            .iter()
            .filter(|l| l.engine.is_files() == files_side && (files_side || l.engine == EngineKind::Db))
            .filter_map(|l| {
                let p = setting.points.iter().find(|p| p.layout == l.id && p.age == age && p.remedy.is_none())?;
                p.read_warm.map(|r| (l.title.clone(), r.per_op_us, r.cv_pct, r.runs))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let (db, f) = (best(false)?, best(true)?);
    let files_over_db = f.1 / db.1;
    let (winner, loser, value) =
        if files_over_db >= 1.0 { (db, f, files_over_db) } else { (f, db, 1.0 / files_over_db) };
    let spread = (winner.2 + loser.2) / 100.0;
    let runs = (loser.3 as usize, winner.3 as usize);
    let factor = Ratio {
        low: value / (1.0 + spread),
        high: value * (1.0 + spread),
        method: Interval::MinMax,
        runs,
        ..Ratio::exact(value)
    };
    let id = aging::chart_id(files, index, setting, aging::READ_WARM_CHART);
    Some(Answer {
        question: format!("reads after {age} rewrites of every blob ({})", setting.sizes.name),
        winner: winner.0,
        loser: loser.0,
        factor,
        better: "faster",
        chart_id: id,
        chart_title: "Warm reads by storage age".into(),
        statement: None,
    })
}

/// Power cuts: which durable methods kept every acknowledged write, and
/// which lost some. Counts, not a ratio.
pub fn after_power_cut(files: &[ResultFile], index: usize) -> Option<Answer> {
    let cut = files[index].power_cut.as_ref()?;
    let durable: Vec<_> = cut.methods.iter().filter(|m| m.acknowledges_durability).collect();
    if durable.is_empty() {
        return None;
    }
    let kept: Vec<&str> = durable
        .iter()
        .filter(|m| m.lost_after_ack == 0 && m.integrity_failures == 0 && m.torn == 0)
        .map(|m| m.method.as_str())
        .collect();
    let lost: Vec<String> = durable
        .iter()
        .filter(|m| m.lost_after_ack > 0 || m.integrity_failures > 0 || m.torn > 0)
        .map(|m| format!("{} ({} acknowledged writes lost, {} torn)", m.method, m.lost_after_ack, m.torn))
        .collect();
    let statement = format!(
        "kept every acknowledged write: {}; lost some: {}",
        if kept.is_empty() { "none".to_string() } else { kept.join(", ") },
        if lost.is_empty() { "none".to_string() } else { lost.join("; ") }
    );
    Some(Answer {
        question: format!("after a power cut ({} model)", cut.model),
        winner: kept.join(", "),
        loser: lost.join("; "),
        factor: Ratio::exact(1.0),
        better: "safer",
        chart_id: crashtest::lost_chart_id(files, index),
        chart_title: "Acknowledged writes lost in power cuts".into(),
        statement: Some((statement, format!("exact counts over {} cuts per method", cut.cuts_per_method))),
    })
}
