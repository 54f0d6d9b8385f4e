//! `run`: kvtest's run command on the measurement engine. Pre-flight checks
//! and everything that allocates happen before the timer; each timed run is
//! kvtest's sequence (open, loop, commit, close) with each phase timed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::session::{timed_session, ContentPool, Script, SessionSpec, Work};
use crate::engine::dataset::open_kv;
use crate::engine::{self, Engine, OpenMode, SqliteStats};
use crate::measure::cold::{self, EvictionReport};
use crate::measure::rounds::Arm;
use crate::measure::{self, ClassLatency, Experiment, RunSample};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::zipf::ZipfTable;
use crate::records::{EngineKind, EngineSettings, Mix, Plan, WorkloadParams};
use crate::{Error, Result};

/// A `run`, with kvtest's defaults.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub path: PathBuf,
    /// Operations that find a blob (misses add cycles, as in kvtest).
    pub count: u64,
    /// Largest key; by default the largest key present.
    pub max_id: Option<u32>,
    pub start: u32,
    pub order: Order,
    pub update: bool,
    /// Each engine's part of the options (it reads its own). PostgreSQL's
    /// connection (`--pg URL`) is never recorded: it may hold a password.
    pub settings: EngineSettings,
    pub integrity_check: bool,
    pub stats: bool,
    pub plan: Plan,
    /// Seed of the pool that new blob content is taken from. Writing the
    /// same bytes again is nearly free in SQLite (unchanged pages are not
    /// written), so callers vary it between invocations ([`fresh_seed`]).
    pub seed: u64,
    /// Hot keys: Zipf's theta (`--keys zipf:THETA`) instead of `order`.
    pub zipf: Option<f64>,
    /// Reads and overwrites mixed in this ratio (`--mix READ:WRITE`).
    pub mix: Option<Mix>,
    /// Time a server's round trip with no work per op instead of a read
    /// (the floor; PostgreSQL's `SELECT 1`).
    pub round_trip: bool,
}

impl RunOptions {
    /// The record of these options in a result file.
    pub(crate) fn params(&self, layout: EngineKind, max_id: u32, threads: u32) -> WorkloadParams {
        WorkloadParams {
            path: self.path.display().to_string(),
            layout,
            update: self.update,
            count: self.count,
            max_id,
            start: self.start,
            order: self.order,
            threads,
            db: self.settings.db.clone(),
            files: self.settings.files,
            kv: self.settings.kv,
            commit_every: self.settings.commit_every,
            plan: self.plan,
            seed: (self.update || self.mix.is_some()).then_some(self.seed),
            zipf_theta: self.zipf,
            mix: self.mix,
            round_trip: self.round_trip,
            server_info: None,
        }
    }

    pub fn new(path: impl Into<PathBuf>) -> Self {
        RunOptions {
            path: path.into(),
            count: 1000,
            max_id: None,
            start: 1,
            order: Order::Asc,
            update: false,
            settings: EngineSettings::default(),
            integrity_check: false,
            stats: false,
            plan: Plan::default(),
            seed: 1,
            zipf: None,
            mix: None,
            round_trip: false,
        }
    }

    /// Whether the runs write.
    fn writes(&self) -> bool {
        self.update || self.mix.is_some_and(|m| m.write > 0)
    }
}

/// What a run measured, plus what kvtest prints beside the figures.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub experiment: Experiment,
    pub layout: EngineKind,
    pub max_id: u32,
    pub page_size: Option<i64>,
    pub cache_size: Option<i64>,
    pub journal_mode: Option<crate::records::Journal>,
    /// `PRAGMA integrity_check` lines, when asked for.
    pub integrity: Vec<String>,
    /// SQLite's counters after the last timed run's loop (--stats).
    pub sqlite_stats: Option<SqliteStats>,
    pub interrupted: bool,
}

impl RunReport {
    /// The run kvtest-style output shows: the median one.
    pub fn median_run(&self) -> &RunSample {
        let i = self.experiment.summary.median_run;
        self.experiment.runs.iter().find(|r| r.index == i).unwrap_or(&self.experiment.runs[0])
    }
}

/// A seed that differs from one invocation to the next (clock and pid).
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

pub fn run(opts: &RunOptions, id: &str, label: &str) -> Result<RunReport> {
    run_observed(opts, id, label, &mut |_, _| {})
}

/// [`run`], calling `after_run(done, total)` after each run for progress.
pub fn run_observed(
    opts: &RunOptions,
    id: &str,
    label: &str,
    after_run: &mut dyn FnMut(u32, u32),
) -> Result<RunReport> {
    let engine = engine::open(&opts.path, &opts.settings)?;
    run_engine(engine, opts, id, label, after_run)
}

/// [`run_observed`] on an engine the caller opened (the matrix opens an
/// external store whose two parts live apart).
pub fn run_engine(
    engine: Box<dyn Engine>,
    opts: &RunOptions,
    id: &str,
    label: &str,
    after_run: &mut dyn FnMut(u32, u32),
) -> Result<RunReport> {
    // The eviction and the run take turns with the one arm.
    let arm = std::cell::RefCell::new(RunArm::prepare(engine, opts)?);
    let mut evict = || arm.borrow_mut().evict_now();
    let measured =
        measure::measure_observed(&opts.plan, Some(&mut evict), after_run, |ctx| arm.borrow_mut().one_run(ctx))?;
    arm.into_inner().finish(id, label, measured)
}

/// One `run` configuration, prepared outside every timer, that can be run
/// once at a time: alone by [`run_engine`], or as one arm of interleaved
/// rounds ([`measure::rounds`]).
pub struct RunArm {
    engine: Box<dyn Engine>,
    opts: RunOptions,
    pool: Option<ContentPool>,
    script: Option<Script>,
    max_id: Option<u32>,
    zipf: Option<Arc<ZipfTable>>,
    cache_files: Option<Vec<PathBuf>>,
    seen: Seen,
    /// Each timed run draws its random keys from its own stream (see
    /// [`RunArm::keys_by_round`]).
    keys_by_round: bool,
    /// Timed runs made so far.
    timed_runs: u32,
}

impl RunArm {
    /// Validates `opts`, surveys the engine and builds what the runs share
    /// (content pool, mix script, hot-key table).
    pub fn prepare(mut engine: Box<dyn Engine>, opts: &RunOptions) -> Result<RunArm> {
        validate(opts)?;
        let survey = engine.survey(opts.writes())?;
        let pool = opts.update.then(|| ContentPool::new(survey.blob_max as usize, opts.seed));
        let script = opts.mix.map(|m| super::mix::mix_script(m, survey.blob_max, opts.seed)).transpose()?;
        // A dataset that knows its largest key (directories, key-value stores)
        // is asked before the timer; SQLite is asked inside it, as kvtest does.
        let max_id = opts.max_id.or(survey.max_key);
        // Hot keys need the key range before any timer, to build their table.
        let max_id = match (opts.zipf, max_id) {
            (Some(_), None) => Some(largest_key(engine.as_ref())?),
            _ => max_id,
        };
        let zipf = opts.zipf.zip(max_id).map(|(theta, n)| Arc::new(ZipfTable::new(n, theta)));
        Ok(RunArm {
            engine,
            opts: opts.clone(),
            pool,
            script,
            max_id,
            zipf,
            cache_files: None,
            seen: Seen::default(),
            keys_by_round: false,
            timed_runs: 0,
        })
    }

    /// Random keys drawn anew for each round: the nth timed run draws from
    /// the nth stream of kvtest's generator (warm-ups from kvtest's own), so
    /// every arm of a round reads or writes the same keys and each round
    /// others, over the whole dataset, rather than the same sample of it
    /// every round. Changes nothing in ascending or descending order.
    pub fn keys_by_round(mut self) -> Self {
        self.keys_by_round = true;
        self
    }

    /// Empties the page cache of the engine's files (listed once).
    fn evict_now(&mut self) -> Result<EvictionReport> {
        self.engine.drop_own_caches()?;
        let files = match &mut self.cache_files {
            Some(f) => f,
            none => none.insert(self.engine.cache_files()?),
        };
        cold::evict(files)
    }

    /// One run: kvtest's open, loop, commit, close.
    fn one_run(&mut self, ctx: measure::RunContext<'_>) -> Result<measure::RunOutcome> {
        let RunArm { engine, opts, pool, script, max_id, zipf, seen, keys_by_round, timed_runs, .. } = self;
        let stream = if *keys_by_round && ctx.timed { *timed_runs + 1 } else { 0 };
        let work = match (script.as_ref(), pool.as_ref()) {
            (Some(script), _) => Work::Script(script),
            (None, Some(pool)) => Work::Overwrite(pool),
            (None, None) if opts.round_trip => Work::RoundTrip,
            (None, None) => Work::Read,
        };
        let spec = SessionSpec {
            mode: OpenMode::measured(opts.writes(), max_id.is_none()),
            max_id: *max_id,
            keys: |max| match &zipf {
                Some(table) => KeySequence::zipf(Arc::clone(table), KvtestRng::stream(stream)),
                None => KeySequence::with_rng(opts.order, opts.start, max, KvtestRng::stream(stream)),
            },
            count: opts.count,
            work,
        };
        let want_stats = opts.stats && ctx.timed && engine.kind() == crate::engine::sqlite::KIND;
        let mut inspect = |s: &dyn engine::Session| {
            if want_stats {
                seen.stats = s.sqlite_stats();
            }
        };
        let timed = ctx.timed;
        let run = timed_session(engine.as_ref(), spec, ctx.latency, &|| {}, &mut inspect)?;
        *timed_runs += u32::from(timed);
        seen.info = Some(run.info.clone());
        Ok(run.outcome(opts.settings.db.nocheckpoint))
    }

    /// The report of the runs `measured` took: checks after reads, the
    /// integrity check, and the experiment as stored.
    pub fn finish(self, id: &str, label: &str, measured: measure::Measured) -> Result<RunReport> {
        let RunArm { engine, opts, script, max_id, seen, .. } = self;
        if !opts.writes() {
            // Checked after the timed runs so a scan does not warm the cache for
            // one engine only; a bad dataset still never yields figures.
            engine.verify_after_reads()?;
        }
        let info = seen.info.unwrap_or_default();
        let max_id = max_id.or(info.max_key).unwrap_or(0);
        let mut report = report_of(engine.as_ref(), &opts, (1, max_id), info, measured, (id, label))?;
        report.sqlite_stats = seen.stats;
        if let Some(script) = &script {
            report.experiment.class_latency = script
                .class_latency()
                .into_iter()
                .map(|(class, latency)| ClassLatency { class: class.to_string(), latency })
                .collect();
        }
        Ok(report)
    }
}

/// The report of `measured`, the runs of `engine` under `opts` by
/// `(threads, max_id)`: the integrity check (when asked) and the experiment
/// `(id, label)` as stored. Shared with `run --threads`.
pub(crate) fn report_of(
    engine: &dyn Engine,
    opts: &RunOptions,
    (threads, max_id): (u32, u32),
    info: engine::SessionInfo,
    measured: measure::Measured,
    (id, label): (&str, &str),
) -> Result<RunReport> {
    let layout = engine.kind();
    let integrity = if opts.integrity_check && layout == crate::engine::sqlite::KIND {
        integrity_check(&opts.path)?
    } else {
        Vec::new()
    };
    let interrupted = measured.interrupted;
    let mut params = WorkloadParams { server_info: engine.server_info(), ..opts.params(layout, max_id, threads) };
    params.plan.repeat = measured.runs.len() as u32;
    Ok(RunReport {
        experiment: Experiment::from_measured(id, label, params, measured),
        layout,
        max_id,
        page_size: info.page_size,
        cache_size: info.cache_size,
        journal_mode: info.journal_mode,
        integrity,
        sqlite_stats: None,
        interrupted,
    })
}

impl Arm for RunArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        self.opts.plan.cold.then(|| self.evict_now())
    }
    fn run(&mut self, ctx: measure::RunContext<'_>) -> Result<measure::RunOutcome> {
        self.one_run(ctx)
    }
    fn warms_up(&self) -> bool {
        self.opts.plan.warmup > 0
    }
    fn ops_per_run(&self) -> Option<u64> {
        Some(self.opts.count)
    }
    /// Whole batches of `commit_every` writes, so that no write is left
    /// uncommitted at the end of the loop.
    fn set_ops_per_run(&mut self, ops: u64) {
        let batch = u64::from(self.opts.settings.commit_every.unwrap_or(1).max(1));
        self.opts.count = ops.max(1).div_ceil(batch) * batch;
    }
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn validate(opts: &RunOptions) -> Result<()> {
    if opts.count == 0 {
        return Err(Error::invalid("--count must be at least 1"));
    }
    if opts.start == 0 || opts.max_id == Some(0) {
        return Err(Error::invalid("keys start at 1: --start and --max-id must be at least 1"));
    }
    if let Some(theta) = opts.zipf {
        if !(theta > 0.0 && theta <= crate::records::zipf::MAX_THETA) {
            return Err(Error::invalid(format!("--keys zipf:{theta}: theta must be above 0 and at most 10")));
        }
    }
    if let Some(m) = opts.mix {
        m.validate().map_err(Error::invalid)?;
        if opts.update {
            return Err(Error::invalid("--mix and --update do not go together (--mix 0:1 writes only)"));
        }
    }
    if opts.round_trip && (opts.update || opts.mix.is_some()) {
        return Err(Error::invalid(
            "--round-trip times a server's round trip with no work instead of reads; it takes no --update or --mix",
        ));
    }
    if opts.settings.db.mmap_bytes < 0 {
        return Err(Error::invalid("--mmap must not be negative"));
    }
    if let Some(n) = opts.settings.commit_every {
        crate::records::check_commit_every(n).map_err(Error::invalid)?;
    }
    Ok(())
}

/// The largest key, asked of a session opened outside every timer (SQLite
/// otherwise finds it inside its timed setup, as kvtest does).
pub(crate) fn largest_key(engine: &dyn Engine) -> Result<u32> {
    let session = engine.open(OpenMode { find_max: true, ..OpenMode::READ })?;
    let max = session.info().max_key;
    session.close()?;
    max.filter(|&m| m > 0)
        .ok_or_else(|| Error::bad_input(engine.path(), "holds no blobs (its largest key is 0 or absent)"))
}

/// What the engine said during the runs (kvtest prints it).
#[derive(Default)]
struct Seen {
    info: Option<engine::SessionInfo>,
    stats: Option<SqliteStats>,
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn integrity_check(path: &Path) -> Result<Vec<String>> {
    let kv = open_kv(path, false)?;
    let err = |e| crate::engine::dataset::db_error(path, "integrity check failed", e);
    let mut stmt = kv.conn.prepare("PRAGMA integrity_check").map_err(err)?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
    rows.collect::<std::result::Result<Vec<_>, _>>().map_err(err)
}
