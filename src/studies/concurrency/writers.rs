//! Concurrent durable writers, and readers beside them, for every engine
//! the study is given: the blog's question (several writers at once)
//! asked of every store. At each writer count N, N writers overwrite
//! random blobs of their own (new content, each write committed durably)
//! while N readers read random blobs, every client with its own
//! connection, session or handle; each engine in the configuration that
//! fits concurrency (see [`label`]). Every engine at every writer count is
//! an arm of one set of interleaved rounds sized by time, so the ratios
//! (an engine over another at N writers, an engine at N writers over
//! itself at one) pair by round.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::blobs;
use super::ids::{self, StoreId};
use super::options::ConcurrencyOptions;
use super::sqlite_writer::{self, WriterTally, WriterWork};
use crate::drivers::parallel_read::session_in_step;
use crate::drivers::run::largest_key;
use crate::drivers::session::{ContentPool, SessionSpec, Work};
use crate::engine::{self, Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::paired::paired_ratio;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan, StopReason};
use crate::measure::{self, Latency, LatencySummary, Phases, RunContext, RunOutcome, Stat};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::{DbParams, EngineKind, EngineSettings, FileParams, FileWrite, KvParams, KvSync};
use crate::util::progress::{Progress, Silent};
use crate::{Error, Result};

/// Writer counts (and as many readers beside them).
pub const WRITERS: [u32; 5] = [1, 2, 4, 8, 16];
/// Writer counts with `--quick`.
pub const QUICK_WRITERS: [u32; 3] = [1, 2, 4];
/// The engines written when `--engines` names none: the SQLite
/// against files, and LMDB, the other single-writer store.
pub const DEFAULT_ENGINES: [EngineKind; 3] = [EngineKind::Db, EngineKind::Flat, EngineKind::Lmdb];

/// The writers' section of the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Writers {
    pub blobs: u32,
    pub blob_size: u32,
    /// Each run's writes were sized to take about this long.
    pub run_time_s: f64,
    /// SQLite's busy timeout per write.
    pub busy_timeout_ms: u32,
    pub points: Vec<WriterPoint>,
}

/// One engine at one writer count; the full figures are the experiment
/// `experiment_id` of the same result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriterPoint {
    pub store: StoreId,
    /// What each writer does, in this engine's concurrent configuration.
    pub label: String,
    pub writers: u32,
    /// Readers beside the writers (as many).
    pub readers: u32,
    pub experiment_id: String,
    /// Median over the timed runs (one per round) of durable writes per
    /// second, all writers.
    pub writes_per_s: f64,
    /// The median's order-statistic interval over the rounds (min-max
    /// below 6 rounds).
    pub writes_per_s_low: f64,
    pub writes_per_s_high: f64,
    /// Timed runs (rounds) behind the figures.
    pub rounds: u32,
    /// Per committed write, all writers and runs merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_latency: Option<LatencySummary>,
    /// Median over the timed runs of reads per second beside the writers,
    /// all readers.
    pub reads_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<LatencySummary>,
    /// SQLite's busy-handler waits for the write lock, over the timed runs
    /// (0 for the other engines, whose writers queue inside the engine).
    pub busy_waits: u64,
    /// Writes still busy after the busy timeout (rolled back, not counted).
    pub failed_writes: u64,
}

impl Writers {
    pub fn point(&self, store: StoreId, writers: u32) -> Option<&WriterPoint> {
        self.points.iter().find(|p| p.store == store && p.writers == writers)
    }

    /// The engines measured, in the order they ran.
    pub fn stores(&self) -> Vec<StoreId> {
        ids::stores_in_order(self.points.iter().map(|p| p.store))
    }

    /// The writer counts measured, ascending.
    pub fn counts(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.points.iter().map(|p| p.writers).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// What each engine's writer does when several write at once.
pub fn label(kind: EngineKind) -> String {
    match kind {
        EngineKind::Db => "SQLite WAL + FULL, a connection per writer, BEGIN IMMEDIATE under the busy timeout".into(),
        k if k.is_files() => {
            "files, a temporary file per writer (own keys) + fsync + rename + fsync of the directory".into()
        }
        EngineKind::Lmdb => "LMDB, one environment, a write transaction per write (writers queue on its lock)".into(),
        k if k.is_server() => format!("{}, a connection per client, a durable commit per write", k.title()),
        k => format!("{}, one database, a durable commit per write", k.title()),
    }
}

/// Durable writes, a commit per write, for every engine; the files
/// replaced by rename (a reader never sees half a blob).
fn durable_settings() -> EngineSettings {
    EngineSettings {
        db: DbParams::default(),
        files: FileParams { write: FileWrite::Replace, fsync: true, sync_dir: true, ..FileParams::default() },
        kv: KvParams { sync: KvSync::Durable },
        commit_every: Some(1),
        ..EngineSettings::default()
    }
}

/// Writes per writer and reads per reader before the runs are sized.
const FIRST_OPS: u64 = 32;

/// One engine written by `writers` writers beside as many readers, run once
/// per round.
struct WritersArm {
    kind: EngineKind,
    engine: Box<dyn Engine>,
    path: PathBuf,
    writers: u32,
    max_id: u32,
    blob: usize,
    /// Each writer's own keys, shuffled: no two writers touch one blob, so
    /// a temporary name (`KEY.tmp`) belongs to one writer.
    keys: Vec<Arc<[u32]>>,
    /// Each writer's content, its random bytes this arm's own.
    pools: Vec<ContentPool>,
    writes: u64,
    reads: u64,
    timeout_ms: u32,
    /// The last untimed run's rates, to size the readers to the writers.
    read_rate: f64,
    write_rate: f64,
    /// Over the timed runs.
    read_latency: Latency,
    read_rates: Vec<f64>,
    busy_waits: u64,
    failed: u64,
}

impl WritersArm {
    fn prepare(kind: EngineKind, path: &Path, writers: u32, opts: &ConcurrencyOptions) -> Result<WritersArm> {
        let mut engine = engine::open(path, &durable_settings())?;
        let survey = engine.survey(true)?;
        let max_id = match survey.max_key {
            Some(m) => m,
            // SQLite's survey leaves it to the session, as kvtest does.
            None => largest_key(engine.as_ref())?,
        };
        if max_id < writers {
            return Err(Error::bad_input(path, format!("holds {max_id} blobs: too few for {writers} writers")));
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(opts.seed ^ u64::from(writers));
        let keys: Vec<Arc<[u32]>> = (0..writers)
            .map(|w| {
                let mut own: Vec<u32> = (1..=max_id).filter(|k| (k - 1) % writers == w).collect();
                own.shuffle(&mut rng);
                Arc::from(own)
            })
            .collect();
        let blob = survey.blob_max as usize;
        if blob == 0 {
            return Err(Error::bad_input(path, "holds only empty blobs: nothing to overwrite"));
        }
        // Seeded per writer count too: the arms of one store write one
        // dataset, and no arm's content is another's.
        let seed = |w: u32| opts.seed.wrapping_add(u64::from(w)) ^ (u64::from(writers) << 32);
        let pools = (0..writers).map(|w| ContentPool::new(blob, seed(w))).collect();
        Ok(WritersArm {
            kind,
            engine,
            path: path.to_path_buf(),
            writers,
            max_id,
            blob,
            keys,
            pools,
            writes: FIRST_OPS,
            reads: FIRST_OPS,
            timeout_ms: opts.busy_timeout_ms,
            read_rate: 0.0,
            write_rate: 0.0,
            read_latency: Latency::new(),
            read_rates: Vec::new(),
            busy_waits: 0,
            failed: 0,
        })
    }

    /// One run: every writer and reader opens its own connection, they
    /// start together, the writers make their writes and the readers
    /// theirs (sized to last as long).
    fn one_run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let n = self.writers as usize;
        let barrier = Barrier::new(2 * n);
        let want_latency = ctx.latency.is_some();
        let (engine, keys, kind) = (self.engine.as_ref(), &self.keys, self.kind);
        let (path, max_id, blob) = (&self.path, self.max_id, self.blob);
        let (writes, reads, timeout_ms) = (self.writes, self.reads, self.timeout_ms);
        let mut pools = self.pools.iter_mut();
        let (written, read): (Vec<Result<WriterTally>>, Vec<Result<ReaderTally>>) = std::thread::scope(|s| {
            let barrier = &barrier;
            let writer_handles: Vec<_> = (0..n)
                .map(|w| {
                    let keys = &keys[w];
                    let pool = pools.next().expect("a content pool per writer");
                    s.spawn(move || {
                        if kind == EngineKind::Db {
                            let work = WriterWork { keys, count: writes, content: pool, timeout_ms };
                            sqlite_writer::run(path, &work, want_latency, barrier)
                        } else {
                            engine_writer(engine, keys, writes, pool, want_latency, barrier)
                        }
                    })
                })
                .collect();
            let reader_handles: Vec<_> =
                (0..n).map(|r| s.spawn(move || reader(engine, max_id, reads, r as u32, barrier))).collect();
            let panicked = || Error::invalid("a client thread panicked");
            (
                writer_handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(panicked()))).collect(),
                reader_handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(panicked()))).collect(),
            )
        });
        let written = written.into_iter().collect::<Result<Vec<_>>>()?;
        let read = read.into_iter().collect::<Result<Vec<_>>>()?;
        let span = |start: Option<Instant>, end: Option<Instant>| match (start, end) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        };
        let opened = written.iter().map(|t| t.opened_from).min();
        let (w0, w1) = (written.iter().map(|t| t.loop_start).min(), written.iter().map(|t| t.loop_end).max());
        let (r0, r1) = (read.iter().map(|t| t.start).min(), read.iter().map(|t| t.end).max());
        let ops: u64 = written.iter().map(|t| t.ops).sum();
        let reads_done: u64 = read.iter().map(|t| t.ops).sum();
        let per_s = |ops: u64, d: Duration| if d.is_zero() { 0.0 } else { ops as f64 / d.as_secs_f64() };
        let read_rate = per_s(reads_done, span(r0, r1));
        if ctx.timed {
            self.read_rates.push(read_rate);
            self.busy_waits += written.iter().map(|t| t.busy_waits).sum::<u64>();
            self.failed += written.iter().map(|t| t.failed).sum::<u64>();
            for l in read.iter().filter_map(|t| t.latency.as_ref()) {
                self.read_latency.merge(l);
            }
        } else {
            // Untimed runs size the readers to last as long as the writers.
            self.read_rate = read_rate / n as f64;
            self.write_rate = per_s(ops, span(w0, w1));
            self.reads = self.reads_for(self.writes);
        }
        if let Some(hist) = ctx.latency {
            for l in written.iter().filter_map(|t| t.latency.as_ref()) {
                hist.merge(l);
            }
        }
        let ns = |d: Duration| d.as_nanos() as u64;
        let loop_ns = ns(span(w0, w1));
        let setup_ns = ns(span(opened, w0));
        let phases = Phases {
            setup_ns,
            loop_ns,
            commit_ns: 0,
            close_ns: 0,
            checkpoint_ns: 0,
            kvtest_total_ns: setup_ns + loop_ns,
            deferred_ns: 0,
        };
        Ok(RunOutcome { ops, misses: 0, bytes: ops * blob as u64, phases, opened_handle: false })
    }

    /// Reads per reader that last as long as `writes` per writer, by the
    /// last untimed run's rates.
    fn reads_for(&self, writes: u64) -> u64 {
        if self.write_rate <= 0.0 || self.read_rate <= 0.0 {
            return FIRST_OPS;
        }
        let secs = (writes * u64::from(self.writers)) as f64 / self.write_rate;
        ((self.read_rate * secs) as u64).clamp(measure::rounds::MIN_SIZED_OPS, measure::rounds::MAX_SIZED_OPS)
    }
}

impl Arm for WritersArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        self.one_run(ctx)
    }
    fn ops_per_run(&self) -> Option<u64> {
        Some(self.writes * u64::from(self.writers))
    }
    fn set_ops_per_run(&mut self, ops: u64) {
        self.writes = (ops / u64::from(self.writers)).max(1);
        self.reads = self.reads_for(self.writes);
    }
}

/// One engine writer: its own session through the one timed loop, a
/// durable commit inside each overwrite.
fn engine_writer(
    engine: &dyn Engine,
    keys: &Arc<[u32]>,
    count: u64,
    pool: &mut ContentPool,
    latency: bool,
    barrier: &Barrier,
) -> Result<WriterTally> {
    let spec = SessionSpec {
        mode: OpenMode::measured(true, false),
        max_id: keys.iter().copied().max(),
        keys: |_| KeySequence::listed(Arc::clone(keys)),
        count,
        work: Work::Overwrite(pool),
    };
    let (run, hist) = session_in_step(engine, spec, latency, barrier)?;
    Ok(WriterTally {
        ops: run.ops,
        failed: 0,
        busy_waits: 0,
        opened_from: run.times.opened_from,
        loop_start: run.times.loop_start,
        loop_end: run.times.loop_end,
        latency: hist,
    })
}

/// What one reader did.
struct ReaderTally {
    ops: u64,
    start: Instant,
    end: Instant,
    latency: Option<Latency>,
}

/// One reader beside the writers: its own session, kvtest's random order
/// on a stream of its own, each read its own transaction. It keeps no
/// handle after the run: each writer count has an engine of its own on the
/// same dataset, and LMDB allows one open environment per process.
fn reader(engine: &dyn Engine, max_id: u32, count: u64, index: u32, barrier: &Barrier) -> Result<ReaderTally> {
    let spec = SessionSpec {
        mode: OpenMode::READ,
        max_id: Some(max_id),
        keys: |max| KeySequence::with_rng(Order::Random, 1, max, KvtestRng::stream(1000 + index)),
        count,
        work: Work::Read,
    };
    let (run, latency) = session_in_step(engine, spec, true, barrier)?;
    Ok(ReaderTally { ops: run.ops, start: run.times.loop_start, end: run.times.loop_end, latency })
}

/// What the writers' section measured.
pub struct Measured {
    pub writers: Writers,
    pub experiments: Vec<crate::measure::Experiment>,
    pub rounds: Vec<RoundSet>,
}

/// The rounds' plan: sized by time, and at least [`MIN_ROUNDS_95`]
/// rounds whatever the budget, so every ratio has its interval.
///
/// [`MIN_ROUNDS_95`]: crate::measure::paired::MIN_ROUNDS_95
pub fn plan(opts: &ConcurrencyOptions) -> RoundsPlan {
    let least = (crate::measure::paired::MIN_ROUNDS_95 as u32).min(opts.rounds.max_rounds);
    RoundsPlan { run_time: Some(opts.writer_run_time), least_rounds: least, ..opts.rounds }
}

/// Builds each engine's dataset in `work` from the blob readers' database
/// (made here when that section did not run), then writes every engine at
/// every writer count as the arms of one set of rounds.
pub fn measure(opts: &ConcurrencyOptions, work: &Path, progress: &dyn Progress) -> Result<Measured> {
    let sets = build_sets(opts, work)?;
    in_rounds(opts, &sets, progress)
}

/// Each engine's dataset in `work`, built from the blob readers' database
/// (made here when that section did not run); SQLite's is a copy in WAL.
fn build_sets(opts: &ConcurrencyOptions, work: &Path) -> Result<Vec<(EngineKind, PathBuf)>> {
    let db = blobs::readers_db(opts, work)?;
    let mut sets: Vec<(EngineKind, PathBuf)> = Vec::with_capacity(opts.writer_engines.len());
    for &kind in &opts.writer_engines {
        let dir = work.join(format!("w-{}", kind.name()));
        if kind == EngineKind::Db {
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "cannot create a directory", e))?;
            let copy = dir.join("kv.db");
            std::fs::copy(&db, &copy).map_err(|e| Error::io(&copy, "cannot copy the database", e))?;
            sqlite_writer::to_wal(&copy)?;
            sets.push((kind, copy));
        } else {
            crate::engine::registry::build(kind, &db, &dir, false, &Silent)?;
            sets.push((kind, dir));
        }
    }
    Ok(sets)
}

/// Runs every engine at every writer count as the arms of one set of
/// rounds.
fn in_rounds(opts: &ConcurrencyOptions, sets: &[(EngineKind, PathBuf)], progress: &dyn Progress) -> Result<Measured> {
    let mut arms = Vec::new();
    let mut arm_ids = Vec::new();
    let mut at: Vec<(EngineKind, u32)> = Vec::new();
    for &writers in &opts.writer_counts {
        for (kind, path) in sets {
            arms.push(WritersArm::prepare(*kind, path, writers, opts)?);
            arm_ids.push(ids::writer_experiment(StoreId::Engine(*kind), writers));
            at.push((*kind, writers));
        }
    }
    let index = |kind: EngineKind, w: u32| at.iter().position(|&x| x == (kind, w));
    // Stop on the engines against each other at the most writers, and on
    // each engine at the most writers against itself at one.
    let most = opts.writer_counts.iter().copied().max().unwrap_or(1);
    let mut pairs: Vec<Comparison> = Vec::new();
    if let Some(first) = index(opts.writer_engines[0], most) {
        let others = opts.writer_engines[1..].iter().filter_map(|&k| index(k, most)).collect::<Vec<_>>();
        if !others.is_empty() {
            pairs.push(Comparison { a: vec![first], b: others });
        }
    }
    for &kind in opts.writer_engines.iter().filter(|_| most > 1) {
        if let (Some(a), Some(b)) = (index(kind, most), index(kind, 1)) {
            pairs.push(Comparison { a: vec![a], b: vec![b] });
        }
    }
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let mut tick = |_: u64, _: u64| {};
    let out = run_rounds(ids::WRITERS_ROUNDS, &arm_ids, &mut dyn_arms, &plan(opts), &pairs, &mut tick)?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    progress.advance(1);
    let mut points = Vec::with_capacity(arms.len());
    let mut experiments = Vec::with_capacity(arms.len());
    for ((arm, m), id) in arms.into_iter().zip(out.measured).zip(&arm_ids) {
        let store = StoreId::Engine(arm.kind);
        let rates: Vec<f64> = m.runs.iter().map(|r| 1e6 / r.figure()).collect();
        // The interval of a median: the paired machinery against a constant.
        let interval = paired_ratio(&rates, &vec![1.0; rates.len()]);
        let label = label(arm.kind);
        points.push(WriterPoint {
            store,
            label: label.clone(),
            writers: arm.writers,
            readers: arm.writers,
            experiment_id: id.clone(),
            writes_per_s: interval.as_ref().map_or(0.0, |i| i.value),
            writes_per_s_low: interval.as_ref().map_or(0.0, |i| i.low),
            writes_per_s_high: interval.as_ref().map_or(0.0, |i| i.high),
            rounds: rates.len() as u32,
            write_latency: m.latency.as_ref().filter(|l| l.count() > 0).map(Latency::summary),
            reads_per_s: Stat::of(&arm.read_rates).median,
            read_latency: Some(arm.read_latency.summary()).filter(|l| l.count > 0),
            busy_waits: arm.busy_waits,
            failed_writes: arm.failed,
        });
        let params = writer_params(&arm, opts);
        let title = format!("{label}, {} writer(s) + {} reader(s)", arm.writers, arm.writers);
        experiments.push(crate::measure::Experiment::from_measured(id, &title, params, m));
    }
    let writers = Writers {
        blobs: opts.blob_count,
        blob_size: super::BLOB_SIZE,
        run_time_s: opts.writer_run_time.as_secs_f64(),
        busy_timeout_ms: opts.busy_timeout_ms,
        points,
    };
    Ok(Measured { writers, experiments, rounds: vec![out.set] })
}

/// The experiment's record of an arm's runs.
fn writer_params(arm: &WritersArm, opts: &ConcurrencyOptions) -> crate::records::WorkloadParams {
    let mut run = crate::drivers::run::RunOptions::new(&arm.path);
    run.update = true;
    run.count = arm.writes * u64::from(arm.writers);
    run.order = Order::Random;
    run.settings = durable_settings();
    run.seed = opts.seed;
    run.params(arm.kind, arm.max_id, arm.writers)
}

#[cfg(test)]
#[path = "writers_tests.rs"]
mod tests;
