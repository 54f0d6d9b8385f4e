//! One writers' arm: a store written by N durable writers while N readers
//! read beside them, every client with its own connection, session or
//! handle (SQLite's one-writer row: its own read connection, and the
//! process's one writer connection), all starting together, run once per
//! round.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::ids::StoreId;
use super::options::Concurrency;
use super::sqlite_writer::{self, WriterTally, WriterWork};
use crate::drivers::parallel_read::session_in_step;
use crate::drivers::run::largest_key;
use crate::drivers::session::{ContentPool, SessionSpec, Work};
use crate::engine::{self, Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::Arm;
use crate::measure::{self, Latency, Phases, RunContext, RunOutcome};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::{
    DbParams, EngineKind, EngineSettings, FileParams, FileWrite, Journal, KvParams, KvSync, SyncLevel,
};
use crate::{Error, Result};

/// Durable writes, a commit per write, for every store; the files
/// replaced by rename (a reader never sees half a blob). SQLite's other
/// ways of writing (its one-writer row) are the engine's in WAL with
/// synchronous FULL, the pragmas the per-writer loop sets on its
/// connections. Every other part is the study's `base`.
pub(super) fn durable_settings(store: StoreId, base: &EngineSettings) -> EngineSettings {
    let db = match store {
        StoreId::SqliteWriters(writers) => {
            DbParams { journal_mode: Some(Journal::Wal), sync: Some(SyncLevel::Full), writers, ..DbParams::default() }
        }
        _ => DbParams::default(),
    };
    EngineSettings {
        db,
        files: FileParams { write: FileWrite::Replace, fsync: true, sync_dir: true, ..FileParams::default() },
        kv: KvParams { sync: KvSync::Durable },
        commit_every: Some(1),
        ..base.clone()
    }
}

/// Writes per writer and reads per reader before the runs are sized.
const FIRST_OPS: u64 = 32;

/// One store written by `writers` writers beside as many readers, run once
/// per round.
pub(super) struct WritersArm {
    pub store: StoreId,
    engine: Box<dyn Engine>,
    pub path: PathBuf,
    pub writers: u32,
    pub max_id: u32,
    blob: usize,
    /// Each writer's own keys, shuffled: no two writers touch one blob, so
    /// a temporary name (`KEY.tmp`) belongs to one writer.
    keys: Vec<Arc<[u32]>>,
    /// Each writer's content, its random bytes this arm's own.
    pools: Vec<ContentPool>,
    /// SQLite's connection per writer, kept between runs (`connect`);
    /// none for the other stores, whose engine keeps their handles.
    conns: Vec<rusqlite::Connection>,
    pub writes: u64,
    reads: u64,
    /// The last untimed run's rates, to size the readers to the writers.
    read_rate: f64,
    write_rate: f64,
    /// Over the timed runs.
    pub read_latency: Latency,
    pub read_rates: Vec<f64>,
    pub busy_waits: u64,
    pub failed: u64,
}

impl WritersArm {
    /// `store`'s dataset at `path`, opened for `writers` writers: their
    /// keys (each writer its own) and content, made before any run.
    pub fn prepare(store: StoreId, path: &Path, writers: u32, opts: &Concurrency) -> Result<WritersArm> {
        let mut engine = engine::open(path, &durable_settings(store, &opts.ctx.settings))?;
        let survey = engine.survey(true)?;
        let max_id = match survey.max_key {
            Some(m) => m,
            // SQLite's survey leaves it to the session, as kvtest does.
            None => largest_key(engine.as_ref())?,
        };
        if max_id < writers {
            return Err(Error::bad_input(path, format!("holds {max_id} blobs: too few for {writers} writers")));
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(opts.ctx.seed ^ u64::from(writers));
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
        let seed = |w: u32| opts.ctx.seed.wrapping_add(u64::from(w)) ^ (u64::from(writers) << 32);
        let pools = (0..writers).map(|w| ContentPool::new(blob, seed(w))).collect();
        let conns = if store == StoreId::Engine(EngineKind::Db) {
            (0..writers).map(|_| sqlite_writer::connect(path, opts.busy_timeout_ms)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        Ok(WritersArm {
            store,
            engine,
            path: path.to_path_buf(),
            writers,
            max_id,
            blob,
            keys,
            pools,
            conns,
            writes: FIRST_OPS,
            reads: FIRST_OPS,
            read_rate: 0.0,
            write_rate: 0.0,
            read_latency: Latency::new(),
            read_rates: Vec::new(),
            busy_waits: 0,
            failed: 0,
        })
    }

    /// Every writer and reader of one run, each in a thread of its own:
    /// each opens its session (SQLite's per-writer row: takes its kept
    /// connection), they start together at a barrier, the writers make
    /// their writes and the readers theirs (sized to last as long).
    fn clients(&mut self, want_latency: bool) -> Result<(Vec<WriterTally>, Vec<ReaderTally>)> {
        let n = self.writers as usize;
        let barrier = Barrier::new(2 * n);
        let (engine, store, path, max_id) = (self.engine.as_ref(), self.store, &self.path, self.max_id);
        let (writes, reads) = (self.writes, self.reads);
        let mut conns = self.conns.iter_mut();
        let (written, read): (Vec<Result<WriterTally>>, Vec<Result<ReaderTally>>) = std::thread::scope(|s| {
            let barrier = &barrier;
            let writer_handles: Vec<_> = (self.pools.iter_mut().zip(&self.keys).enumerate())
                .map(|(w, (pool, keys))| {
                    let conn = conns.next();
                    s.spawn(move || match conn {
                        Some(conn) => {
                            let work = WriterWork { keys, count: writes, content: pool };
                            sqlite_writer::run(conn, path, &work, want_latency, barrier)
                        }
                        None => {
                            let mode = engine_mode(store, w as u32);
                            engine_writer(engine, (mode, keys), writes, pool, want_latency, barrier)
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
        Ok((written.into_iter().collect::<Result<_>>()?, read.into_iter().collect::<Result<_>>()?))
    }

    /// One run of every client ([`WritersArm::clients`]): the writers'
    /// operations over the writers' span, the readers' rate kept (timed
    /// runs) or used to size the readers (untimed ones).
    fn one_run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let (n, blob) = (self.writers as usize, self.blob);
        let (written, read) = self.clients(ctx.latency.is_some())?;
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

/// How writer `w` of a store written through its engine opens its
/// session: SQLite's one-writer row as client `w` of the engine, whose
/// writes go through the engine's one writer connection. (SQLite's
/// connection per writer is the study's own loop, `sqlite_writer.rs`.)
fn engine_mode(store: StoreId, w: u32) -> OpenMode {
    match store {
        StoreId::SqliteWriters(_) => OpenMode::client(w),
        _ => OpenMode::measured(true, false),
    }
}

/// One engine writer: its own session, opened as `mode`, through the one
/// timed loop, a durable commit inside each overwrite.
fn engine_writer(
    engine: &dyn Engine,
    (mode, keys): (OpenMode, &Arc<[u32]>),
    count: u64,
    pool: &mut ContentPool,
    latency: bool,
    barrier: &Barrier,
) -> Result<WriterTally> {
    let spec = SessionSpec {
        mode,
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
