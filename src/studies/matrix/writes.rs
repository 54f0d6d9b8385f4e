//! Writes across blob sizes: each cell also overwrites blobs (same size,
//! new content) in the database and in the files, two ways each:
//! fast (WAL + synchronous NORMAL vs files overwritten in place, no fsync)
//! and durable (WAL + synchronous FULL vs a new file fsynced and renamed
//! over the old one), plus grow-and-shrink (each op replaces a blob with one
//! of another size or deletes one) in the database and the files. The write
//! crossover is where files / database falls to 1.0, as for reads.
//!
//! Each database write is its own transaction (as each file write stands
//! alone), and the write figure is kvtest's per-op time, which includes the
//! closing WAL checkpoint: a loop-only figure would leave out the commits,
//! where SQLite does its fsync.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{crossover, CellSpec, Crossover, MatrixSection};
use crate::drivers::run::{self, RunOptions};
use crate::drivers::session::{timed_session, Script, ScriptOp, SessionSpec, Work};
use crate::engine::{self, OpenMode};
use crate::measure::{self, Experiment};
use crate::records::keys::{KeySequence, Order};
use crate::records::{DbAccess, DbParams, EngineSettings, FileParams, FileRead, FileWrite, Plan, SyncLevel};
use crate::Result;

/// Overwrites per timed run: a tenth of the cell's blobs (the article's
/// share), at least 20 and at most 500 (durable writes cost milliseconds).
fn writes_per_run(spec: &CellSpec) -> u64 {
    (u64::from(spec.count) / 10).clamp(20, 500).min(u64::from(spec.count))
}

/// One cell's write experiments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellWrites {
    pub fast_db: Experiment,
    pub fast_files: Experiment,
    pub durable_db: Experiment,
    pub durable_files: Experiment,
    /// Grow and shrink: puts of other sizes and deletes, database then files.
    pub churn_db: Experiment,
    pub churn_files: Experiment,
    /// files / database of the ratio figure; above 1.0 the database is faster.
    pub fast_ratio: f64,
    pub durable_ratio: f64,
    pub churn_ratio: f64,
}

/// Per page size, where files start to beat the database at writing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteCrossover {
    pub page_size: u32,
    pub fast: Crossover,
    pub durable: Crossover,
}

/// Measures the cell's writes on its database and its blob size's files.
/// `scratch` is the cell's own directory: grow-and-shrink runs on a copy of
/// the files made there, as it changes sizes and removes files that later
/// cells of the same blob size read.
pub(super) fn measure(
    spec: &CellSpec,
    db: &Path,
    files: &Path,
    scratch: &Path,
    plan: &Plan,
    seed: u64,
) -> Result<CellWrites> {
    let id = |what: &str| format!("matrix/p{}/{}/{what}", spec.page_size, spec.size);
    let plan = Plan { cold: false, ..*plan };
    let base = |path: &Path| RunOptions {
        count: writes_per_run(spec),
        max_id: Some(spec.count),
        order: Order::Random,
        update: true,
        plan,
        seed,
        ..RunOptions::new(path)
    };
    let db_run = |sync: SyncLevel, what: &str, label: &str| -> Result<Experiment> {
        let mut o = base(db);
        o.db = DbParams {
            access: DbAccess::Sql,
            cache_size: spec.cache_pages,
            journal_mode: Some("wal".into()),
            sync: Some(sync),
            multitrans: true,
            ..DbParams::default()
        };
        Ok(run::run(&o, &id(what), label)?.experiment)
    };
    let file_run = |write: FileWrite, fsync: bool, what: &str, label: &str| -> Result<Experiment> {
        let mut o = base(files);
        o.files = FileParams { read: FileRead::Posix, write, fsync };
        Ok(run::run(&o, &id(what), label)?.experiment)
    };
    let fast_db = db_run(SyncLevel::Normal, "write-fast-db", "overwrite in SQLite, WAL + synchronous NORMAL")?;
    let fast_files = file_run(FileWrite::Inplace, false, "write-fast-files", "overwrite a file in place, no fsync")?;
    let durable_db = db_run(SyncLevel::Full, "write-durable-db", "overwrite in SQLite, WAL + synchronous FULL")?;
    let durable_files =
        file_run(FileWrite::Replace, true, "write-durable-files", "new file, fsync, rename over the old one")?;
    let churn_copy = scratch.join("churn-files");
    crate::engine::dataset::export(db, &churn_copy, false, false, &crate::util::progress::Silent)?;
    let churn_files = churn(spec, &churn_copy, &id("churn-files"), &plan, seed, false)?;
    let churn_db = churn(spec, db, &id("churn-db"), &plan, seed, true)?;
    let ratio = |files: &Experiment, db: &Experiment| write_figure(files) / write_figure(db);
    Ok(CellWrites {
        fast_ratio: ratio(&fast_files, &fast_db),
        durable_ratio: ratio(&durable_files, &durable_db),
        churn_ratio: ratio(&churn_files, &churn_db),
        fast_db,
        fast_files,
        durable_db,
        durable_files,
        churn_db,
        churn_files,
    })
}

/// The figure write ratios divide: kvtest's per-op time (for a database:
/// open, loop with a commit per write, close with its checkpoint), median
/// over the timed runs.
pub fn write_figure(e: &Experiment) -> f64 {
    e.summary.per_op_us.median
}

/// Grow and shrink: a third of the ops replace a blob with one twice its
/// size, a third with one half its size, a third delete a blob (a miss when
/// it is already gone, which the loop counts as kvtest does). Fast settings
/// (WAL + NORMAL; files replaced without fsync).
fn churn(spec: &CellSpec, path: &Path, id: &str, plan: &Plan, seed: u64, db: bool) -> Result<Experiment> {
    let (grow, shrink) = (spec.size.saturating_mul(2).min(crate::records::sizes::MAX_BLOB), (spec.size / 2).max(1));
    let ops = [ScriptOp::Put(grow), ScriptOp::Put(shrink), ScriptOp::Delete].repeat(64);
    let script = Script::new(ops, spec.size, seed)?;
    let settings = EngineSettings {
        db: DbParams {
            cache_size: spec.cache_pages,
            journal_mode: Some("wal".into()),
            sync: Some(SyncLevel::Normal),
            multitrans: true,
            ..DbParams::default()
        },
        files: FileParams { read: FileRead::Posix, write: FileWrite::Replace, fsync: false },
        ..EngineSettings::default()
    };
    let mut engine = engine::open(path, &settings)?;
    engine.survey(true)?;
    let count = writes_per_run(spec);
    let measured = measure::measure_observed(plan, None, &mut |_, _| {}, |ctx| {
        let spec = SessionSpec {
            mode: OpenMode::WRITE,
            max_id: Some(spec.count),
            keys: |max| KeySequence::new(Order::Random, 1, max),
            count,
            work: Work::Script(&script),
        };
        let r = timed_session(engine.as_ref(), spec, ctx.latency, &|| {}, &mut |_| {})?;
        Ok(r.outcome(false))
    })?;
    let label = if db { "grow/shrink in SQLite (WAL + NORMAL)" } else { "grow/shrink files (new file + rename)" };
    let mut o = RunOptions::new(path);
    o.count = count;
    o.update = true;
    o.plan = *plan;
    let mut params = o.params(engine.kind(), spec.count, 1);
    params.db = settings.db;
    params.files = settings.files;
    Ok(Experiment::from_measured(id, label, params, measured))
}

impl MatrixSection {
    /// Per page size, the write crossovers (fast and durable).
    pub fn write_crossovers(&self) -> Vec<WriteCrossover> {
        let mut out = Vec::new();
        for &page_size in &super::sorted(&self.params.page_sizes) {
            let points = |f: fn(&CellWrites) -> f64| -> Vec<(f64, f64)> {
                let mut p: Vec<(f64, f64)> = self
                    .cells
                    .iter()
                    .filter(|c| c.page_size == page_size)
                    .filter_map(|c| c.writes.as_ref().map(|w| (f64::from(c.size_bytes), f(w))))
                    .collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                p
            };
            if let (Some(fast), Some(durable)) =
                (crossover(&points(|w| w.fast_ratio)), crossover(&points(|w| w.durable_ratio)))
            {
                out.push(WriteCrossover { page_size, fast, durable });
            }
        }
        out
    }
}
