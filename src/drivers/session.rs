//! One timed session, written once: open (setup), the loop, commit, close.
//! `run`, `run --threads`, `suite` and `matrix` all measure through it, so
//! every engine and every command times the same phases the same way.

use std::time::Instant;

use rand::{RngCore, SeedableRng};

use crate::engine::{Engine, OpenMode, Session, SessionInfo};
use crate::measure::{self, Latency, LatencySink, NoLatency, Phases, RunOutcome};
use crate::records::keys::KeySequence;
use crate::records::EngineKind;
use crate::{Error, Result};

/// Bytes of random content beyond the largest blob: each operation takes its
/// content from a different offset in this window.
const POOL_WINDOW: usize = 64 * 1024;
const POOL_STEP: usize = 4099;

/// Random content made before any timer starts, so that no engine pays for
/// random generation inside the loop.
pub struct ContentPool {
    bytes: Vec<u8>,
    blob_max: usize,
    /// Runs started so far: each run starts at another offset, so a repeated
    /// run writes different content than the one before it.
    runs: std::cell::Cell<usize>,
}

impl ContentPool {
    pub fn new(blob_max: usize, seed: u64) -> Self {
        let mut bytes = vec![0u8; blob_max + POOL_WINDOW];
        rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed_b10b).fill_bytes(&mut bytes);
        ContentPool { bytes, blob_max, runs: std::cell::Cell::new(0) }
    }

    /// Where the next run starts in the window.
    fn next_run_offset(&self) -> usize {
        let run = self.runs.get();
        self.runs.set(run + 1);
        run * 7919 % POOL_WINDOW
    }
}

impl ContentPool {
    /// `len` bytes of content for the operation at `offset` in the window.
    #[inline]
    fn slice(&self, offset: usize, len: usize) -> &[u8] {
        &self.bytes[offset..offset + len]
    }

    /// The longest content the pool can give.
    pub fn blob_max(&self) -> usize {
        self.blob_max
    }
}

/// One operation of a [`Script`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptOp {
    Read,
    /// Same size, new content (kvtest's update).
    Overwrite,
    /// Replace (or insert) with new content of this many bytes.
    Put(u32),
    Delete,
}

/// Operations chosen before the timer (a mix of reads and writes, new
/// sizes for rewrites): the loop takes the next one in constant time and
/// allocates nothing. Op `i` of a run is `ops[i % ops.len()]`.
pub struct Script {
    pool: ContentPool,
    ops: Vec<ScriptOp>,
    /// Latency per class of operation (index [`ScriptOp::class`]), over the
    /// timed runs; locked once per session, never per op.
    classes: std::sync::Mutex<[Latency; 4]>,
}

impl ScriptOp {
    /// Names of the classes, by [`ScriptOp::class`].
    pub const CLASSES: [&'static str; 4] = ["read", "overwrite", "put", "delete"];

    #[inline]
    pub fn class(self) -> usize {
        match self {
            ScriptOp::Read => 0,
            ScriptOp::Overwrite => 1,
            ScriptOp::Put(_) => 2,
            ScriptOp::Delete => 3,
        }
    }
}

impl Script {
    /// A script of `ops` whose content pool covers every `Put` and blobs of
    /// up to `blob_max` bytes (for overwrites).
    pub fn new(ops: Vec<ScriptOp>, blob_max: u32, seed: u64) -> Result<Self> {
        if ops.is_empty() {
            return Err(Error::invalid("a workload script needs at least one operation"));
        }
        let longest = ops.iter().map(|op| if let ScriptOp::Put(n) = op { *n } else { 0 }).max().unwrap_or(0);
        let classes = std::sync::Mutex::new([Latency::new(), Latency::new(), Latency::new(), Latency::new()]);
        Ok(Script { pool: ContentPool::new(blob_max.max(longest) as usize, seed), ops, classes })
    }

    pub fn ops(&self) -> &[ScriptOp] {
        &self.ops
    }

    /// The per-class histograms recorded so far, by [`ScriptOp::class`],
    /// leaving empty ones in their place (to merge several clients').
    pub fn take_classes(&self) -> [Latency; 4] {
        let mut classes = self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *classes)
    }

    /// Per-class latency recorded so far (timed runs only), by class name;
    /// classes the script never ran are left out.
    pub fn class_latency(&self) -> Vec<(&'static str, crate::measure::LatencySummary)> {
        let classes = self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ScriptOp::CLASSES
            .iter()
            .zip(classes.iter())
            .filter(|(_, l)| l.count() > 0)
            .map(|(name, l)| (*name, l.summary()))
            .collect()
    }
}

/// What the loop does with each key.
#[derive(Clone, Copy)]
pub enum Work<'a> {
    /// Read the blob.
    Read,
    /// Overwrite it with new content of its own size (kvtest's --update).
    Overwrite(&'a ContentPool),
    /// What the script says, op by op.
    Script(&'a Script),
    /// The script, run by one of several clients over a shared window
    /// ([`Window`], which the function gives once the session is open and
    /// every client is ready): each op's latency recorded once, in its
    /// class's histogram only (the totals are the merge of the classes,
    /// made after the run), when a latency histogram is given; that one
    /// is left as it was.
    Window(&'a Script, &'a dyn Fn() -> Result<Window>),
    /// One round trip to the server with no work (PostgreSQL's `SELECT 1`)
    /// on the session's connection: the protocol and socket floor of a read.
    RoundTrip,
}

/// One session's loop: which keys, how many operations, what to do.
pub struct SessionSpec<'a, K: FnOnce(u32) -> KeySequence> {
    pub mode: OpenMode,
    /// Largest key, or None to take the one the session found at open
    /// (`mode.find_max`).
    pub max_id: Option<u32>,
    /// The key sequence, made once the largest key is known.
    pub keys: K,
    /// Operations that must find a blob.
    pub count: u64,
    pub work: Work<'a>,
}

/// When each phase of a session began and ended.
#[derive(Debug, Clone, Copy)]
pub struct SessionTimes {
    pub opened_from: Instant,
    pub loop_start: Instant,
    pub loop_end: Instant,
    pub committed: Instant,
    pub closed: Instant,
}

impl SessionTimes {
    /// The phases of one session. With `checkpoint_apart` the close of a
    /// checkpointing session is timed as the checkpoint, outside kvtest's
    /// total (kvtest's --nocheckpoint). A close that finishes the writes'
    /// deferred work (`SessionInfo::close_finishes_writes`) is also their
    /// `deferred_ns`, which the steady-state figure counts with the writes.
    pub fn phases(&self, info: &SessionInfo, checkpoint_apart: bool) -> Phases {
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as u64;
        let apart = checkpoint_apart && info.close_checkpoints;
        let close_ns = ns(self.committed, self.closed);
        Phases {
            setup_ns: ns(self.opened_from, self.loop_start),
            loop_ns: ns(self.loop_start, self.loop_end),
            commit_ns: ns(self.loop_end, self.committed),
            close_ns: if apart { 0 } else { close_ns },
            checkpoint_ns: if apart { close_ns } else { 0 },
            kvtest_total_ns: ns(self.opened_from, if apart { self.committed } else { self.closed }),
            deferred_ns: if info.close_finishes_writes { close_ns } else { 0 },
        }
    }
}

/// What one session did.
pub struct SessionRun {
    pub ops: u64,
    pub misses: u64,
    pub bytes: u64,
    pub times: SessionTimes,
    pub info: SessionInfo,
}

impl SessionRun {
    pub fn outcome(&self, checkpoint_apart: bool) -> RunOutcome {
        RunOutcome {
            ops: self.ops,
            misses: self.misses,
            bytes: self.bytes,
            phases: self.times.phases(&self.info, checkpoint_apart),
            opened_handle: self.info.opened_handle,
        }
    }
}

/// Opens a session on `engine`, calls `ready` (threads wait for each other
/// there, outside the loop's time), runs the loop, commits and closes,
/// noting when each phase ended. `inspect` sees the session after its loop
/// and before its commit (kvtest's --stats are read there).
pub fn timed_session<K: FnOnce(u32) -> KeySequence>(
    engine: &dyn Engine,
    spec: SessionSpec<'_, K>,
    latency: Option<&mut Latency>,
    ready: &dyn Fn(),
    inspect: &mut dyn FnMut(&dyn Session),
) -> Result<SessionRun> {
    // Outside the timer: every session starts with no freed heap kept
    // resident, whatever the survey or the previous session allocated.
    crate::util::heap::release_free_memory();
    let opened_from = Instant::now();
    let session = engine.open(spec.mode);
    ready();
    let mut session = session?;
    let info = session.info();
    let max_id = match spec.max_id.or(info.max_key) {
        Some(m) if m > 0 => m,
        _ => return Err(Error::bad_input(engine.path(), "holds no blobs (its largest key is 0 or absent)")),
    };
    let keys = (spec.keys)(max_id);
    let s = session.as_mut();
    let totals = match (spec.work, latency) {
        (Work::Read, Some(hist)) => timed_loop(s, keys, spec.count, max_id, ReadOps, hist)?,
        (Work::Read, None) => timed_loop(s, keys, spec.count, max_id, ReadOps, &mut NoLatency)?,
        (Work::RoundTrip, Some(hist)) => timed_loop(s, keys, spec.count, max_id, RoundTripOps, hist)?,
        (Work::RoundTrip, None) => timed_loop(s, keys, spec.count, max_id, RoundTripOps, &mut NoLatency)?,
        (Work::Overwrite(pool), Some(hist)) => timed_loop(s, keys, spec.count, max_id, pool.writes(), hist)?,
        (Work::Overwrite(pool), None) => timed_loop(s, keys, spec.count, max_id, pool.writes(), &mut NoLatency)?,
        (Work::Script(script), Some(hist)) => {
            let mut classes = script.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            timed_loop(s, keys, spec.count, max_id, ScriptOps::new(script, Some(&mut classes)), hist)?
        }
        (Work::Script(script), None) => {
            timed_loop(s, keys, spec.count, max_id, ScriptOps::new(script, None), &mut NoLatency)?
        }
        (Work::Window(script, window), latency) => {
            let window = window()?;
            let mut classes = script.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let classes = latency.map(|_| &mut *classes);
            window_loop(s, keys, max_id, ScriptOps::new(script, classes), window)?
        }
    };
    inspect(session.as_ref());
    session.commit()?;
    let committed = Instant::now();
    session.close()?;
    let closed = Instant::now();
    Ok(SessionRun {
        ops: totals.ops,
        misses: totals.misses,
        bytes: totals.bytes,
        times: SessionTimes { opened_from, loop_start: totals.start, loop_end: totals.end, committed, closed },
        info: SessionInfo { max_key: Some(max_id), ..info },
    })
}

/// What one timed loop did, and when it started and ended.
struct LoopTotals {
    ops: u64,
    misses: u64,
    bytes: u64,
    start: Instant,
    end: Instant,
}

/// Misses in a row after which a loop gives up: kvtest loops forever when
/// no key in range has a blob; blobbench stops with an error once every key
/// in range has been tried about four times without a hit.
fn miss_limit(max_id: u32) -> u64 {
    4 * u64::from(max_id) + 1000
}

#[cold]
fn no_blob_found(max_id: u32, tries: u64) -> Error {
    Error::invalid(format!(
        "no blob found among keys 1..={max_id} in {tries} tries in a row; stopped (kvtest would loop forever)"
    ))
}

/// What a timed loop does per key, monomorphised per kind of work so a
/// read-only loop carries nothing a script needs.
trait LoopWork {
    /// Does one operation on `key`; returns the bytes it moved (0: no blob)
    /// and its class for per-class latency.
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)>;

    /// Per-class latency of the operation just done (only scripts keep it).
    #[inline(always)]
    fn record_class(&mut self, _class: usize, _ns: u64) {}
}

struct ReadOps;

impl LoopWork for ReadOps {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        Ok((session.read(key)?, 0))
    }
}

/// A round trip with no work per key (PostgreSQL's `SELECT 1`); each
/// counts the bytes its answer carried (PostgreSQL's int4: 4).
struct RoundTripOps;

impl LoopWork for RoundTripOps {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, _key: u32) -> Result<(u64, usize)> {
        match session.round_trip()? {
            Some(bytes) => Ok((bytes, 0)),
            None => Err(no_server()),
        }
    }
}

#[cold]
fn no_server() -> Error {
    let servers: Vec<&str> = EngineKind::ALL.into_iter().filter(|k| k.is_server()).map(EngineKind::name).collect();
    Error::invalid(format!(
        "--round-trip measures a server's round trip with no work; this engine has no server (use {})",
        servers.join(" or ")
    ))
}

/// Where the next operation's content starts in the pool's window: one
/// run's content, each operation's from a new offset.
pub struct PoolCursor<'a> {
    pool: &'a ContentPool,
    offset: usize,
}

impl<'a> PoolCursor<'a> {
    /// `len` bytes of content for the next operation.
    #[inline(always)]
    pub fn next(&mut self, len: usize) -> &'a [u8] {
        let at = self.offset;
        self.offset += POOL_STEP;
        if self.offset >= POOL_WINDOW {
            self.offset -= POOL_WINDOW;
        }
        self.pool.slice(at, len)
    }
}

impl ContentPool {
    /// The content of one run's writes. Each run starts at another offset,
    /// so a run that writes the keys of the run before it, in the same
    /// order, writes new content: a write of the bytes a blob already
    /// holds is a commit with nothing to write (SQLite leaves an equal page
    /// clean, and syncs nothing).
    pub fn writes(&self) -> PoolCursor<'_> {
        PoolCursor { pool: self, offset: self.next_run_offset() }
    }
}

impl LoopWork for PoolCursor<'_> {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        let content = self.next(self.pool.blob_max);
        Ok((session.overwrite(key, content)?, 1))
    }
}

struct ScriptOps<'a, 'c> {
    ops: &'a [ScriptOp],
    step: usize,
    content: PoolCursor<'a>,
    /// None when latency is off (warm-up runs).
    classes: Option<&'c mut [Latency; 4]>,
}

impl<'a, 'c> ScriptOps<'a, 'c> {
    fn new(script: &'a Script, classes: Option<&'c mut [Latency; 4]>) -> Self {
        ScriptOps { ops: &script.ops, step: 0, content: script.pool.writes(), classes }
    }
}

impl LoopWork for ScriptOps<'_, '_> {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        let op = self.ops[self.step];
        self.step += 1;
        if self.step == self.ops.len() {
            self.step = 0;
        }
        let n = match op {
            ScriptOp::Read => session.read(key)?,
            ScriptOp::Overwrite => session.overwrite(key, self.content.next(self.content.pool.blob_max))?,
            ScriptOp::Put(len) => {
                session.put(key, self.content.next(len as usize))?;
                u64::from(len.max(1))
            }
            ScriptOp::Delete => u64::from(session.delete(key)?),
        };
        Ok((n, op.class()))
    }

    #[inline(always)]
    fn record_class(&mut self, class: usize, ns: u64) {
        if let Some(classes) = self.classes.as_mut() {
            classes[class].record(ns);
        }
    }
}

/// The measured loop: one operation, one clock read when latency is on, the
/// next key. Everything else was prepared before it. With latency on, the
/// loop starts at the first op's "previous" timestamp and ends at the last
/// op's, so its time is exactly the sum of the latencies: no stretch of it
/// (a preemption between two clock reads, the last op's record) lies outside
/// every op's latency. Without latency, it ends after the last op's
/// bookkeeping.
#[inline(never)]
fn timed_loop<S: Session + ?Sized, W: LoopWork, L: LatencySink>(
    session: &mut S,
    mut keys: KeySequence,
    count: u64,
    max_id: u32,
    mut work: W,
    lat: &mut L,
) -> Result<LoopTotals> {
    let (mut ops, mut misses, mut bytes) = (0u64, 0u64, 0u64);
    let limit = miss_limit(max_id);
    let mut misses_in_a_row = 0u64;
    let clock = measure::op_clock();
    let start = clock.raw();
    let mut prev = start;
    while ops < count {
        let (n, class) = work.step(session, keys.current())?;
        if L::ENABLED {
            let now = clock.raw();
            let ns = clock.delta_as_nanos(prev, now);
            lat.record(ns);
            work.record_class(class, ns);
            prev = now;
        }
        keys.advance();
        if n == 0 {
            misses += 1;
            misses_in_a_row += 1;
            if misses_in_a_row > limit {
                return Err(no_blob_found(max_id, misses_in_a_row));
            }
        } else {
            misses_in_a_row = 0;
            ops += 1;
            bytes += n;
        }
    }
    let end = if L::ENABLED { prev } else { Instant::now() };
    Ok(LoopTotals { ops, misses, bytes, start, end })
}

/// The window every client of a run shares (`drivers::clients`): each
/// starts its first operation at `start` and counts the operations that
/// end by `deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: Instant,
    pub deadline: Instant,
    /// `--rate`: this client's due times; None: a closed loop (the next
    /// operation when the last returns).
    pub pace: Option<Pace>,
}

/// An open loop's due times: the first at `offset` after the window's
/// start, then one every `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub offset: std::time::Duration,
    pub interval: std::time::Duration,
}

/// The loop of one client over a shared window: one operation, one clock
/// read after it, its latency recorded in its class, the next key. An
/// operation counts when it ended by the deadline; the one under way at
/// the deadline ends the loop, its latency recorded (a client starved for
/// the whole window shows it in the tail) but not counted. Closed loop:
/// latency from the end of the operation before. With a pace, an open
/// loop: op i is due at its offset plus i intervals, waits for it when
/// early, and its latency counts from when it was due, so a store that
/// falls behind shows its queue in the latencies (no coordinated
/// omission); nothing is started that is due after the deadline.
#[inline(never)]
fn window_loop<S: Session + ?Sized>(
    session: &mut S,
    mut keys: KeySequence,
    max_id: u32,
    mut work: ScriptOps<'_, '_>,
    w: Window,
) -> Result<LoopTotals> {
    let (mut ops, mut misses, mut bytes) = (0u64, 0u64, 0u64);
    let limit = miss_limit(max_id);
    let mut misses_in_a_row = 0u64;
    let mut due = w.start + w.pace.map_or(std::time::Duration::ZERO, |p| p.offset);
    wait_until(due, Instant::now());
    let mut began = Instant::now();
    let mut end = began;
    while due < w.deadline {
        let (n, class) = work.step(session, keys.current())?;
        end = Instant::now();
        let from = if w.pace.is_some() { due } else { began };
        work.record_class(class, end.saturating_duration_since(from).as_nanos() as u64);
        keys.advance();
        if end > w.deadline {
            break;
        }
        began = end;
        if n == 0 {
            misses += 1;
            misses_in_a_row += 1;
            if misses_in_a_row > limit {
                return Err(no_blob_found(max_id, misses_in_a_row));
            }
            continue;
        }
        misses_in_a_row = 0;
        ops += 1;
        bytes += n;
        if let Some(pace) = w.pace {
            due += pace.interval;
            if due < w.deadline {
                wait_until(due, end);
            }
        }
    }
    Ok(LoopTotals { ops, misses, bytes, start: w.start, end })
}

/// Waits shorter than this are spun (a sleep overshoots by tens of µs).
const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

/// Sleeps, then spins, until `due`; returns at once when `now` is past it.
#[inline]
fn wait_until(due: Instant, now: Instant) {
    let left = due.saturating_duration_since(now);
    if left > SPIN {
        std::thread::sleep(left - SPIN);
    }
    while !left.is_zero() && Instant::now() < due {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
