//! One timed session, written once: open (setup), the loop, commit, close.
//! `run`, `run --threads`, `suite` and `matrix` all measure through it, so
//! every engine and every command times the same phases the same way.

use std::time::Instant;

use super::ops::{miss_limit, no_blob_found, LoopTotals, LoopWork, ReadOps, RoundTripOps, ScriptOps};
pub use super::ops::{ContentPool, PoolCursor, Script, ScriptOp};
pub use super::window::{DueCounts, Pace, Window, WindowTally};
use crate::engine::{Engine, OpenMode, Session, SessionInfo};
use crate::measure::{self, Latency, LatencySink, NoLatency, Phases, RunOutcome};
use crate::records::keys::KeySequence;
use crate::{Error, Result};

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
    /// (which `window` gives once the session is open and every client is
    /// ready): when `timed`, each due op's latency recorded once, in its
    /// class's histogram only (the totals are the merge of the classes,
    /// made after the run); a latency histogram given is left as it was.
    Window { script: &'a Script, window: &'a dyn Fn() -> Result<Window>, timed: bool },
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
    /// A client's loop over a shared window: what it did beyond its counts.
    pub window: Option<WindowTally>,
    /// The session was opened for writes.
    pub writes: bool,
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
    // Outside the timer: the histograms a timed script records into, and
    // no freed heap kept resident, whatever the survey or the previous
    // session allocated.
    match spec.work {
        Work::Script(script) if latency.is_some() => script.arm_classes(),
        Work::Window { script, timed: true, .. } => script.arm_classes(),
        _ => {}
    }
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
    let mut in_window = None;
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
        (Work::Window { script, window, timed }, _) => {
            let window = window()?;
            let mut classes = script.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let classes = timed.then_some(&mut *classes);
            let work = ScriptOps::new(script, classes);
            let pacer = crate::measure::pace::Pacer::new();
            let (totals, tally) = super::window::window_loop(s, keys, max_id, work, window, &pacer)?;
            in_window = Some(tally);
            totals
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
        window: in_window,
        writes: spec.mode.write,
    })
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

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
