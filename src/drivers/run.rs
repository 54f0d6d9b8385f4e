//! `run`: kvtest's run command on the measurement engine. Pre-flight checks
//! and everything that allocates happen before the timer; each timed run is
//! kvtest's sequence (open, loop, commit, close) with each phase timed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rand::{RngCore, SeedableRng};

use crate::engine::dataset::{blob_files, blob_name, detect, list_keys, open_kv};
use crate::engine::{blob_sizes, non_blob_values, BlobStore, DbSession, FileStore, SqliteStats};
use crate::measure::cold::{self, EvictionReport};
use crate::measure::Experiment;
use crate::measure::{self, Latency, LatencySink, NoLatency, Phases, RunOutcome, RunSample};
use crate::records::keys::{KeySequence, Order};
use crate::records::Plan;
use crate::records::{DbParams, FileParams, Layout, WorkloadParams};
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
    pub db: DbParams,
    pub files: FileParams,
    pub integrity_check: bool,
    pub stats: bool,
    pub plan: Plan,
    /// Seed of the pool that new blob content is taken from. Writing the
    /// same bytes again is nearly free in SQLite (unchanged pages are not
    /// written), so callers vary it between invocations ([`fresh_seed`]).
    pub seed: u64,
}

impl RunOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        RunOptions {
            path: path.into(),
            count: 1000,
            max_id: None,
            start: 1,
            order: Order::Asc,
            update: false,
            db: DbParams::default(),
            files: FileParams::default(),
            integrity_check: false,
            stats: false,
            plan: Plan::default(),
            seed: 1,
        }
    }
}

/// What a run measured, plus what kvtest prints beside the figures.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub experiment: Experiment,
    pub layout: Layout,
    pub max_id: u32,
    pub page_size: Option<i64>,
    pub cache_size: Option<i64>,
    pub journal_mode: Option<String>,
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

/// Bytes of random content beyond the largest blob: each operation takes its
/// content from a different offset in this window.
const POOL_WINDOW: usize = 64 * 1024;
const POOL_STEP: usize = 4099;

/// Random content made before any timer starts, so that neither the database
/// nor the files pay for random generation inside the loop.
struct Pool {
    bytes: Vec<u8>,
    blob_max: usize,
    /// Runs started so far: each run starts at another offset, so a repeated
    /// run writes different content than the one before it.
    runs: std::cell::Cell<usize>,
}

impl Pool {
    fn new(blob_max: usize, seed: u64) -> Self {
        let mut bytes = vec![0u8; blob_max + POOL_WINDOW];
        rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed_b10b).fill_bytes(&mut bytes);
        Pool { bytes, blob_max, runs: std::cell::Cell::new(0) }
    }
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
    let path = opts.path.as_path();
    let layout = detect(path)?;
    validate(opts)?;
    let pre = preflight(opts, layout)?;
    let pool = opts.update.then(|| Pool::new(pre.blob_max as usize, opts.seed));
    let mut evict_files: Option<Vec<PathBuf>> = None;
    let mut evict = || -> Result<EvictionReport> {
        let files = match &mut evict_files {
            Some(f) => f,
            none => none.insert(eviction_list(path, layout)?),
        };
        cold::evict(files)
    };
    let mut seen = Seen::default();
    let measured = measure::measure_observed(&opts.plan, Some(&mut evict), after_run, |ctx| {
        let latency = ctx.latency;
        match layout {
            Layout::Db => db_run(opts, &pre, pool.as_ref(), latency, ctx.timed, &mut seen),
            _ => files_run(opts, layout, &pre, pool.as_ref(), latency),
        }
    })?;
    if layout == Layout::Db && !opts.update {
        // Checked after the timed runs so the scan does not warm the cache
        // for the database only; a bad dataset still never yields figures.
        let n = non_blob_values(path)?;
        if n > 0 {
            return Err(Error::bad_input(
                path,
                format!("table kv holds {n} values that are not BLOBs; results discarded"),
            ));
        }
    }
    let integrity = if opts.integrity_check && layout == Layout::Db { integrity_check(path)? } else { Vec::new() };
    let max_id = opts.max_id.or(seen.max_key).or(pre.max_key).unwrap_or(0);
    let params = WorkloadParams {
        path: path.display().to_string(),
        layout,
        update: opts.update,
        count: opts.count,
        max_id,
        start: opts.start,
        order: opts.order,
        threads: 1,
        db: opts.db.clone(),
        files: opts.files,
        plan: opts.plan,
        seed: opts.update.then_some(opts.seed),
    };
    let interrupted = measured.interrupted;
    let experiment = Experiment::from_measured(id, label, params, measured);
    Ok(RunReport {
        experiment,
        layout,
        max_id,
        page_size: seen.page_size,
        cache_size: seen.cache_size,
        journal_mode: seen.journal_mode,
        integrity,
        sqlite_stats: seen.stats,
        interrupted,
    })
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn validate(opts: &RunOptions) -> Result<()> {
    if opts.count == 0 {
        return Err(Error::invalid("--count must be at least 1"));
    }
    if opts.start == 0 || opts.max_id == Some(0) {
        return Err(Error::invalid("keys start at 1: --start and --max-id must be at least 1"));
    }
    if opts.db.mmap_bytes < 0 {
        return Err(Error::invalid("--mmap must not be negative"));
    }
    Ok(())
}

/// What is learnt about the dataset before any run.
#[derive(Default)]
// pub(crate): shared with parallel_read (run --threads).
pub(crate) struct Preflight {
    /// Largest key present in a directory (kvtest's database runs ask the
    /// database inside the timer instead, as kvtest does).
    pub(crate) max_key: Option<u32>,
    blob_max: u32,
    sizes: Option<Arc<Vec<u32>>>,
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn preflight(opts: &RunOptions, layout: Layout) -> Result<Preflight> {
    let path = opts.path.as_path();
    if layout == Layout::Db {
        open_kv(path, false)?;
        if !opts.update {
            return Ok(Preflight::default());
        }
        check_writable(path)?;
        let (sizes, blob_max) = blob_sizes(path)?;
        return Ok(Preflight { max_key: None, blob_max, sizes: Some(sizes) });
    }
    let keys = list_keys(path, layout)?;
    let Some(&max_key) = keys.last() else {
        return Err(Error::bad_input(path, "holds no blob files (expected kvtest names like 000001 or 00/00/01)"));
    };
    let mut blob_max = 0u32;
    if opts.update {
        for &k in &keys {
            let f = path.join(blob_name(layout, k));
            let len = std::fs::metadata(&f).map_err(|e| Error::io(&f, "cannot stat", e))?.len();
            blob_max = blob_max.max(u32::try_from(len).unwrap_or(u32::MAX));
        }
    }
    Ok(Preflight { max_key: Some(max_key), blob_max, sizes: None })
}

fn check_writable(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "cannot stat", e))?;
    let c = crate::util::fsutil::cstring(path)?;
    // SAFETY: NUL-terminated path.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    if meta.permissions().readonly() || !writable {
        return Err(Error::bad_input(path, "is read-only; --update needs write access"));
    }
    Ok(())
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn eviction_list(path: &Path, layout: Layout) -> Result<Vec<PathBuf>> {
    if layout != Layout::Db {
        return blob_files(path, layout);
    }
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-wal", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        files.push(PathBuf::from(p));
    }
    Ok(files)
}

/// What the database said during the runs (kvtest prints it).
#[derive(Default)]
struct Seen {
    page_size: Option<i64>,
    cache_size: Option<i64>,
    journal_mode: Option<String>,
    max_key: Option<u32>,
    stats: Option<SqliteStats>,
}

fn db_run(
    opts: &RunOptions,
    pre: &Preflight,
    pool: Option<&Pool>,
    latency: Option<&mut Latency>,
    timed: bool,
    seen: &mut Seen,
) -> Result<RunOutcome> {
    let path = opts.path.as_path();
    let t0 = Instant::now();
    let mut session = DbSession::open(path, &opts.db, opts.update, opts.max_id.is_none(), pre.sizes.clone())?;
    let max_id = match opts.max_id.or(session.max_key) {
        Some(m) if m > 0 => m,
        _ => return Err(Error::bad_input(path, "table kv is empty")),
    };
    let keys = KeySequence::new(opts.order, opts.start, max_id);
    let t1 = Instant::now();
    let totals = drive(&mut session, keys, opts.count, max_id, pool, latency)?;
    if opts.stats && timed {
        seen.stats = Some(session.stats());
    }
    let t2 = Instant::now();
    session.commit()?;
    let t3 = Instant::now();
    seen.page_size = Some(session.page_size);
    seen.cache_size = Some(session.cache_size);
    seen.journal_mode = Some(session.journal_mode.clone());
    seen.max_key = session.max_key;
    session.close()?;
    let t4 = Instant::now();
    let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
    let end_of_timer = if opts.db.nocheckpoint { t3 } else { t4 };
    let phases = Phases {
        setup_ns: ns(t0, t1),
        loop_ns: ns(totals.start, totals.end),
        commit_ns: ns(t2, t3),
        close_ns: if opts.db.nocheckpoint { 0 } else { ns(t3, t4) },
        checkpoint_ns: if opts.db.nocheckpoint { ns(t3, t4) } else { 0 },
        kvtest_total_ns: ns(t0, end_of_timer),
    };
    Ok(RunOutcome { ops: totals.ops, misses: totals.misses, bytes: totals.bytes, phases })
}

fn files_run(
    opts: &RunOptions,
    layout: Layout,
    pre: &Preflight,
    pool: Option<&Pool>,
    latency: Option<&mut Latency>,
) -> Result<RunOutcome> {
    let max_id = opts.max_id.or(pre.max_key).unwrap_or(1);
    let mut store = FileStore::new(&opts.path, layout, opts.files)?;
    let keys = KeySequence::new(opts.order, opts.start, max_id);
    let totals = drive(&mut store, keys, opts.count, max_id, pool, latency)?;
    let loop_ns = (totals.end - totals.start).as_nanos() as u64;
    let phases = Phases { loop_ns, kvtest_total_ns: loop_ns, ..Phases::default() };
    Ok(RunOutcome { ops: totals.ops, misses: totals.misses, bytes: totals.bytes, phases })
}

/// What one timed loop did, and when it started and ended.
pub struct LoopTotals {
    pub ops: u64,
    pub misses: u64,
    pub bytes: u64,
    pub start: Instant,
    pub end: Instant,
}

/// The read loop of `run`, for commands that bring their own store (matrix):
/// `count` reads that find a blob, keys from `keys`, latency recorded when
/// given. Exposed rather than copied so every command times the same loop.
pub fn read_loop<S: BlobStore>(
    store: &mut S,
    keys: KeySequence,
    count: u64,
    max_id: u32,
    latency: Option<&mut Latency>,
) -> Result<LoopTotals> {
    drive(store, keys, count, max_id, None, latency)
}

fn drive<S: BlobStore>(
    store: &mut S,
    keys: KeySequence,
    count: u64,
    max_id: u32,
    pool: Option<&Pool>,
    latency: Option<&mut Latency>,
) -> Result<LoopTotals> {
    match latency {
        Some(hist) => timed_loop(store, keys, count, max_id, pool, hist),
        None => timed_loop(store, keys, count, max_id, pool, &mut NoLatency),
    }
}

/// The measured loop: one operation, one clock read when latency is on, the
/// next key. Everything else was prepared before it.
#[inline(never)]
fn timed_loop<S: BlobStore, L: LatencySink>(
    store: &mut S,
    mut keys: KeySequence,
    count: u64,
    max_id: u32,
    pool: Option<&Pool>,
    lat: &mut L,
) -> Result<LoopTotals> {
    let (mut ops, mut misses, mut bytes) = (0u64, 0u64, 0u64);
    let miss_limit = 4 * u64::from(max_id) + 1000;
    let mut offset = pool.map_or(0, |p| {
        let run = p.runs.get();
        p.runs.set(run + 1);
        run * 7919 % POOL_WINDOW
    });
    let clock = measure::op_clock();
    let start = Instant::now();
    let mut prev = clock.raw();
    while ops < count {
        let n = match pool {
            None => store.read(keys.current())?,
            Some(pool) => {
                let content = &pool.bytes[offset..offset + pool.blob_max];
                offset += POOL_STEP;
                if offset >= POOL_WINDOW {
                    offset -= POOL_WINDOW;
                }
                store.overwrite(keys.current(), content)?
            }
        };
        if L::ENABLED {
            let now = clock.raw();
            lat.record(clock.delta_as_nanos(prev, now));
            prev = now;
        }
        keys.advance();
        if n == 0 {
            misses += 1;
            if ops == 0 && misses > miss_limit {
                return Err(Error::invalid(format!("no blob found among keys 1..={max_id}")));
            }
        } else {
            ops += 1;
            bytes += n;
        }
    }
    let end = Instant::now();
    Ok(LoopTotals { ops, misses, bytes, start, end })
}

// pub(crate): shared with parallel_read (run --threads).
pub(crate) fn integrity_check(path: &Path) -> Result<Vec<String>> {
    let kv = open_kv(path, false)?;
    let err = |e| crate::engine::dataset::db_error(path, "integrity check failed", e);
    let mut stmt = kv.conn.prepare("PRAGMA integrity_check").map_err(err)?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
    rows.collect::<std::result::Result<Vec<_>, _>>().map_err(err)
}
