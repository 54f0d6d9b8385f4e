//! Writes across blob sizes: each cell also overwrites blobs (same size,
//! new content) in the database and in the files, two ways each:
//! fast (WAL + synchronous NORMAL vs files overwritten in place, no fsync)
//! and durable (WAL + synchronous FULL vs a new file fsynced and renamed
//! over the old one), plus grow-and-shrink (each op replaces a blob with one
//! of another size or deletes one) in the database and the files, in rounds
//! of their own (`churn`). The write crossover is where files / database
//! falls to 1.0, as for reads.
//!
//! Each database write is its own transaction (as each file write stands
//! alone), and the write figure is kvtest's per-op time, which includes the
//! closing WAL checkpoint: a loop-only figure would leave out the commits,
//! where SQLite does its fsync. The engines' overwrites (`--engines`) join
//! the same rounds, one commit per write; their ratio against the files
//! leaves out the open or connect (see `engines::ENGINE_WRITE_FIGURE`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cells::{writes_per_run, CellSpec};
use super::crossover::Crossover;
use super::engines::{self, EngineWrites};
use super::options::Matrix;
use crate::drivers::run::{RunArm, RunOptions};
use crate::engine;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan, StopReason};
use crate::measure::Experiment;
use crate::records::keys::Order;
use crate::records::{
    DbAccess, DbParams, EngineKind, EngineSettings, FileParams, FileRead, FileWrite, Journal, KvSync, Plan, SyncLevel,
};
use crate::{Error, Result};

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
    /// The fast and durable writes' interleaved rounds (arms: the four
    /// experiments' ids); `fast_ratio` and `durable_ratio` are the paired
    /// medians over them. Absent in older files: unpaired ratios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<RoundSet>,
    /// Grow and shrink's rounds (arms: database, files); `churn_ratio` is
    /// the paired median over them. Absent in older files: unpaired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn_rounds: Option<RoundSet>,
}

/// Per page size, where files start to beat the database at writing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteCrossover {
    pub page_size: u32,
    pub fast: Crossover,
    pub durable: Crossover,
}

/// Measures the cell's writes on its database and its blob size's files,
/// and each engine's fast and durable overwrites in the same rounds.
/// `scratch` is the cell's own directory: grow-and-shrink runs on a copy of
/// the files made there, as it changes sizes and removes files that later
/// cells of the same blob size read.
pub(super) fn measure(
    spec: &CellSpec,
    db: &Path,
    files: &Path,
    scratch: &Path,
    engine_sets: &[(EngineKind, PathBuf)],
    opts: &Matrix,
) -> Result<(CellWrites, Vec<EngineWrites>)> {
    let id = |what: &str| format!("matrix/p{}/{}/{what}", spec.page_size, spec.label());
    let plan = Plan { cold: false, ..opts.plan };
    let arms = write_arms(spec, (db, files), engine_sets, plan, opts);
    let ids: Vec<String> = arms.iter().map(|(_, what, _)| id(what)).collect();
    let round_plan =
        RoundsPlan { warmup: plan.warmup > 0, max_rounds: plan.repeat, latency: plan.latency, ..opts.rounds };
    let (e, set) = write_rounds(&id("writes"), &ids, &arms, &round_plan)?;
    let mut e = e.into_iter();
    let mut next = || e.next().ok_or_else(|| Error::invalid("a write arm is missing from its rounds"));
    let (fast_db, fast_files, durable_db, durable_files) = (next()?, next()?, next()?, next()?);
    let mut engine_writes = Vec::with_capacity(engine_sets.len());
    for _ in engine_sets {
        engine_writes.push(engine_writes_of(next()?, next()?, &fast_files, &durable_files)?);
    }
    let churn_copy = scratch.join("churn-files");
    crate::engine::dataset::export(db, &churn_copy, false, false, &crate::util::progress::Silent)?;
    let churn_ids = [id("churn-db"), id("churn-files")];
    let (churn_db, churn_files, churn_set) =
        super::churn::churn_rounds(spec, (db, &churn_copy), churn_ids, &plan, &opts.rounds, opts.ctx.seed)?;
    let ratio = |files: &Experiment, db: &Experiment| write_figure(files) / write_figure(db);
    let paired = |set: &RoundSet, files: &Experiment, db: &Experiment| {
        set.ratio(&files.id, &db.id).map_or(ratio(files, db), |r| r.value)
    };
    let writes = CellWrites {
        fast_ratio: paired(&set, &fast_files, &fast_db),
        durable_ratio: paired(&set, &durable_files, &durable_db),
        churn_ratio: paired(&churn_set, &churn_files, &churn_db),
        fast_db,
        fast_files,
        durable_db,
        durable_files,
        churn_db,
        churn_files,
        rounds: Some(set),
        churn_rounds: Some(churn_set),
    };
    Ok((writes, engine_writes))
}

/// The write arms, in the order `write_rounds` pairs them: the database
/// fast, the files fast, the database durable, the files durable, then
/// each engine's fast and durable overwrites; each is its run's options,
/// its id's last part and its label.
fn write_arms(
    spec: &CellSpec,
    (db, files): (&Path, &Path),
    engine_sets: &[(EngineKind, PathBuf)],
    plan: Plan,
    opts: &Matrix,
) -> Vec<(RunOptions, String, String)> {
    let base = |path: &Path| RunOptions {
        count: writes_per_run(spec),
        max_id: Some(spec.count),
        order: Order::Random,
        update: true,
        plan,
        seed: opts.ctx.seed,
        // Each write its own commit (files: each their own write).
        settings: EngineSettings { commit_every: Some(1), ..opts.ctx.settings.clone() },
        ..RunOptions::new(path)
    };
    let db_opts = |sync: SyncLevel| {
        let mut o = base(db);
        o.settings.db = DbParams {
            access: DbAccess::Sql,
            cache_size: spec.cache_pages,
            journal_mode: Some(Journal::Wal),
            sync: Some(sync),
            ..DbParams::default()
        };
        o
    };
    let file_opts = |write: FileWrite, fsync: bool| {
        let mut o = base(files);
        o.settings.files = FileParams { read: FileRead::Posix, write, fsync, sync_dir: false };
        o
    };
    let mut arms = vec![
        (
            db_opts(SyncLevel::Normal),
            "write-fast-db".to_string(),
            "overwrite in SQLite, WAL + synchronous NORMAL".into(),
        ),
        (file_opts(FileWrite::Inplace, false), "write-fast-files".into(), "overwrite a file in place, no fsync".into()),
        (db_opts(SyncLevel::Full), "write-durable-db".into(), "overwrite in SQLite, WAL + synchronous FULL".into()),
        (
            file_opts(FileWrite::Replace, true),
            "write-durable-files".into(),
            "new file, fsync, rename over the old one".into(),
        ),
    ];
    for (kind, path) in engine_sets {
        for (sync, what) in [(KvSync::Fast, "fast"), (KvSync::Durable, "durable")] {
            let o = engines::write_options(base(path), sync);
            let label = format!("{}, overwrite, {what} commit per write", kind.title());
            arms.push((o, format!("write-{what}-{}", kind.name()), label));
        }
    }
    arms
}

/// One engine's fast and durable overwrites with their ratios against the
/// files' fast and durable writes of the same rounds.
fn engine_writes_of(
    fast: Experiment,
    durable: Experiment,
    fast_files: &Experiment,
    durable_files: &Experiment,
) -> Result<EngineWrites> {
    let pair = |files: &Experiment, engine: &Experiment| {
        engines::files_over(&engines::write_times(files), &engines::write_times(engine))
            .ok_or_else(|| Error::invalid(format!("{}: the writes do not pair by round", engine.id)))
    };
    let (fast_ratio, durable_ratio) = (pair(fast_files, &fast)?, pair(durable_files, &durable)?);
    Ok(EngineWrites { fast, durable, fast_ratio, durable_ratio })
}

/// The fast and durable writes (database, files, database, files, then
/// each engine's fast and durable) as the arms of interleaved rounds,
/// compared files against database, and files against each engine.
fn write_rounds(
    set_id: &str,
    ids: &[String],
    arms: &[(RunOptions, String, String)],
    plan: &RoundsPlan,
) -> Result<(Vec<Experiment>, RoundSet)> {
    let mut prepared = Vec::with_capacity(arms.len());
    for (o, _, _) in arms {
        prepared.push(RunArm::prepare(engine::open(&o.path, &o.settings)?, o)?);
    }
    let mut dyn_arms: Vec<&mut dyn Arm> = prepared.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let mut pairs = vec![Comparison { a: vec![1], b: vec![0] }, Comparison { a: vec![3], b: vec![2] }];
    for first in (4..arms.len()).step_by(2) {
        pairs.push(Comparison { a: vec![1], b: vec![first] });
        pairs.push(Comparison { a: vec![3], b: vec![first + 1] });
    }
    let out = run_rounds(set_id, ids, &mut dyn_arms, plan, &pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    let mut experiments = Vec::with_capacity(arms.len());
    for ((arm, m), (id, (_, _, label))) in prepared.into_iter().zip(out.measured).zip(ids.iter().zip(arms)) {
        experiments.push(arm.finish(id, label, m)?.experiment);
    }
    Ok((experiments, out.set))
}

/// The figure write ratios divide: kvtest's per-op time (for a database:
/// open, loop with a commit per write, close with its checkpoint), median
/// over the timed runs.
pub fn write_figure(e: &Experiment) -> f64 {
    e.summary.figure().median
}
