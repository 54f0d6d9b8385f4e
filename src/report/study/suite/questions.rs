//! The suite's verdict questions: reads (warm or cold cache), fast and
//! durable writes, each SQLite's best against the files' best, and disk
//! space. Each is a function of the result files and the index of the one
//! it asks, returning None when that file does not answer it.

use super::{
    per_op_us, ratio_interval, suite_files, Method, Spec, ARTICLE, COMMITTED, DISK_CHART, DURABLE_WRITE_CHART, FAIR,
};
use crate::measure::Experiment;
use crate::records::EngineKind;
use crate::report::format::fmt::blob_size;
use crate::report::interval::Ratio;
use crate::report::verdict::Answer;
use crate::report::verdict::Question;
use crate::results::ResultFile;
use crate::studies::suite::ArmId;

/// The suite's questions, in the order the verdict lists them.
pub const QUESTIONS: &[Question] = &[warm_reads, fast_writes, durable_writes, disk_space, cold_reads];

/// The fastest of `methods` measured in `file`, by median per-op time.
fn fastest<'a>(file: &'a ResultFile, methods: &[Method]) -> Option<(Method, &'a Experiment)> {
    methods
        .iter()
        .filter_map(|m| file.experiment(m.id).filter(|e| per_op_us(e).is_some()).map(|e| (*m, e)))
        .min_by(|a, b| per_op_us(a.1).unwrap_or(f64::MAX).total_cmp(&per_op_us(b.1).unwrap_or(f64::MAX)))
}

/// SQLite's best against the files' best among the methods of `charts`;
/// the chart linked is the one drawing the two winners side by side.
fn duel(file: &ResultFile, question: String, charts: &[&Spec]) -> Option<Answer> {
    let dbs: Vec<Method> = charts.iter().map(|s| s.db).collect();
    let fs: Vec<Method> = charts.iter().flat_map(|s| s.files.iter().copied()).collect();
    let (db, db_e) = fastest(file, &dbs)?;
    let (f, f_e) = fastest(file, &fs)?;
    let spec = charts.iter().find(|s| s.db.id == db.id && s.files.iter().any(|m| m.id == f.id)).or(charts.first())?;
    let files_over_db = ratio_interval(file, &db_e.id, &f_e.id)?;
    let (db_name, f_name) = (db.name.to_string(), f.name.to_string());
    let (winner, loser, factor) = if files_over_db.value >= 1.0 {
        (db_name, f_name, files_over_db)
    } else {
        (f_name, db_name, files_over_db.inverse())
    };
    Some(Answer {
        question,
        winner,
        loser,
        factor,
        better: "faster",
        chart_id: spec.id.to_string(),
        chart_title: spec.title.to_string(),

        statement: None,
    })
}

fn is_suite(files: &[ResultFile], index: usize) -> bool {
    suite_files(files).iter().any(|(_, f)| std::ptr::eq(*f, &files[index]))
}

fn reads(files: &[ResultFile], index: usize, cold: bool) -> Option<Answer> {
    let file = &files[index];
    if !is_suite(files, index) {
        return None;
    }
    let read = |id: &str| ArmId::parse(id).and_then(ArmId::read).is_some();
    let was_cold = file.experiments.iter().any(|e| read(&e.id) && e.params.plan.cold);
    if was_cold != cold {
        return None;
    }
    let size = file.dataset.as_ref().map_or_else(|| "blob".to_string(), |d| blob_size(d.size));
    let question = if cold { format!("{size} reads, cold cache") } else { format!("{size} reads") };
    let charts: Vec<&Spec> = ARTICLE.iter().chain(FAIR.iter()).filter(|s| !s.write).collect();
    duel(file, question, &charts)
}

/// Reads with the page cache warm (kvtest's default).
pub fn warm_reads(files: &[ResultFile], index: usize) -> Option<Answer> {
    reads(files, index, false)
}

/// Reads after the page cache was dropped before each run (`--cold`).
pub fn cold_reads(files: &[ResultFile], index: usize) -> Option<Answer> {
    reads(files, index, true)
}

/// Writes without waiting for the disk: SQLite's WAL/NORMAL or journal OFF
/// against plain file writes.
pub fn fast_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    if !is_suite(files, index) {
        return None;
    }
    let charts: Vec<&Spec> = FAIR.iter().filter(|s| s.write && s.id != DURABLE_WRITE_CHART).collect();
    duel(&files[index], "fast writes (no fsync)".into(), &charts)
}

/// Writes that survive a power cut: WAL/FULL against files with fsync,
/// each write committed as an application commits it (the arms
/// `commit/...`). A file from before them compares the article's one
/// transaction per run, and says so.
pub fn durable_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    if !is_suite(files, index) {
        return None;
    }
    let file = &files[index];
    let committed: Vec<&Spec> = COMMITTED.iter().collect();
    if let Some(n) = file.experiment(COMMITTED[0].db.id).map(|e| e.params.commit_every.unwrap_or(1)) {
        let per = if n == 1 { "each committed".to_string() } else { format!("a commit every {n}") };
        return duel(file, format!("durable writes (fsync, {per})"), &committed);
    }
    let charts: Vec<&Spec> = FAIR.iter().filter(|s| s.id == DURABLE_WRITE_CHART).collect();
    let question = if file.schema_version < 4 {
        "durable writes (fsync, one commit per run: older file)"
    } else {
        "durable writes (fsync, one transaction per run)"
    };
    duel(file, question.into(), &charts)
}

/// Allocated bytes of the database against the smaller file layout.
pub fn disk_space(files: &[ResultFile], index: usize) -> Option<Answer> {
    let file = &files[index];
    let allocated = |layout: EngineKind| {
        file.disk_usage.iter().find(|d| d.layout == layout).map(|d| d.allocated_bytes).filter(|b| *b > 0)
    };
    let db = allocated(EngineKind::Db)? as f64;
    let (layout, fs) = [EngineKind::Flat, EngineKind::Tree]
        .into_iter()
        .filter_map(|l| allocated(l).map(|b| (l, b as f64)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let fs_name = if layout == EngineKind::Flat { "files, one directory" } else { "files, tree" };
    let (winner, loser, factor) =
        if fs >= db { ("SQLite database", fs_name, fs / db) } else { (fs_name, "SQLite database", db / fs) };
    Some(Answer {
        question: "disk space".into(),
        winner: winner.into(),
        loser: loser.into(),
        factor: Ratio::exact(factor),
        better: "smaller",
        chart_id: DISK_CHART.into(),
        chart_title: "Disk space relative to the database".into(),

        statement: None,
    })
}
