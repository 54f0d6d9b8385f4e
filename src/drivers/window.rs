//! One client's loop over the window every client of a run shares
//! (`drivers::clients`): closed (the next operation when the last
//! returns) or paced, an open loop as wrk2 and HdrHistogram's
//! coordinated-omission correction define it. Every operation has a due
//! time (paced: its place in the client's schedule; closed: the end of
//! the one before, the window's start for the first) and its latency runs
//! from it, so a late start, a late wake-up or a queue behind a slow store
//! is in the latencies. An operation counts when it ended by the
//! deadline; the one under way there is timed, not counted; one due in
//! the window but not started by the deadline is recorded at its lateness
//! (deadline - due) and counted as not done.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::session::{miss_limit, no_blob_found, LoopTotals, LoopWork, ScriptOps};
use crate::engine::Session;
use crate::measure::pace::Pacer;
use crate::records::keys::KeySequence;
use crate::Result;

/// The window every client of a run shares: each counts the operations
/// that end between `start` and `deadline`.
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
    pub offset: Duration,
    pub interval: Duration,
}

/// What one client's loop over a window did beyond its counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowTally {
    /// The operation under way at the deadline: when it began and ended.
    pub straddled: Option<(Instant, Instant)>,
    pub due: DueCounts,
}

/// One client's due operations in a window and its waits for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueCounts {
    /// Under a pace: the operations due in the window.
    pub due: u64,
    /// Under a pace: those due at least one interval before the deadline,
    /// which a client keeping up has started by then, and of these the
    /// ones it had not.
    pub judged: u64,
    pub behind: u64,
    /// Operations due in the window and not started by the deadline
    /// (each recorded at its lateness).
    pub unstarted: u64,
    /// Waits for a due time, and how late they woke: in all and the most,
    /// in ns. A wake-up's lateness is inside its operation's latency.
    pub wakes: u64,
    pub wake_late_ns: u64,
    pub wake_late_max_ns: u64,
}

/// The loop of one client over a shared window: each due operation (its
/// misses retried at once, in its time), one clock read after it, its
/// latency from its due time recorded in its class, the next key. The
/// client sleeps to each due time (never spins) and to the window's start.
#[inline(never)]
pub(super) fn window_loop<S: Session + ?Sized>(
    session: &mut S,
    mut keys: KeySequence,
    max_id: u32,
    mut work: ScriptOps<'_, '_>,
    w: Window,
) -> Result<(LoopTotals, WindowTally)> {
    let pacer = Pacer::new();
    let mut t = WindowTally::default();
    let mut slot = Slot::new(max_id);
    let mut due = w.start + w.pace.map_or(Duration::ZERO, |p| p.offset);
    let mut first = None;
    while due < w.deadline {
        if let Some(late) = pacer.sleep_until(due) {
            t.due.woke(late);
        }
        let began = Instant::now();
        if began > w.deadline {
            break;
        }
        first.get_or_insert(began);
        let (n, class) = slot.run(session, &mut keys, &mut work)?;
        let end = Instant::now();
        work.record_class(class, nanos(end, due));
        t.due.count(w, due);
        if end > w.deadline {
            // Started in time, ended after: timed, counted apart.
            t.straddled = Some((began, end));
            due = w.pace.map_or(w.deadline, |p| due + p.interval);
            break;
        }
        slot.done(n);
        due = match w.pace {
            Some(p) => due + p.interval,
            None => end,
        };
    }
    // The loop ends now: a client held up after its last operation (a
    // thread waiting for a core) spent that time in its loop.
    let totals = LoopTotals {
        ops: slot.ops,
        misses: slot.misses,
        bytes: slot.bytes,
        start: first.unwrap_or(w.deadline),
        end: Instant::now(),
    };
    t.due.record_unstarted(w, due, &mut work);
    Ok((totals, t))
}

fn nanos(end: Instant, from: Instant) -> u64 {
    end.saturating_duration_since(from).as_nanos() as u64
}

impl DueCounts {
    /// Adds another client's or run's.
    pub fn add(&mut self, other: &DueCounts) {
        self.due += other.due;
        self.judged += other.judged;
        self.behind += other.behind;
        self.unstarted += other.unstarted;
        self.wakes += other.wakes;
        self.wake_late_ns += other.wake_late_ns;
        self.wake_late_max_ns = self.wake_late_max_ns.max(other.wake_late_max_ns);
    }

    #[inline]
    fn woke(&mut self, late_ns: u64) {
        self.wakes += 1;
        self.wake_late_ns += late_ns;
        self.wake_late_max_ns = self.wake_late_max_ns.max(late_ns);
    }

    /// Counts a paced operation due at `due`, started.
    #[inline]
    fn count(&mut self, w: Window, due: Instant) {
        if let Some(p) = w.pace {
            self.due += 1;
            self.judged += u64::from(due + p.interval <= w.deadline);
        }
    }

    /// Records every operation due from `due` on, before the deadline,
    /// that was not started: at its lateness (deadline - due), in the
    /// class of the script's next operation. A closed loop has at most
    /// one (its next operation, due when the last ended).
    fn record_unstarted(&mut self, w: Window, mut due: Instant, work: &mut ScriptOps<'_, '_>) {
        while due < w.deadline {
            work.skip(nanos(w.deadline, due));
            self.unstarted += 1;
            let Some(p) = w.pace else { break };
            self.due += 1;
            let judged = due + p.interval <= w.deadline;
            self.judged += u64::from(judged);
            self.behind += u64::from(judged);
            due += p.interval;
        }
    }
}

/// One due operation: tried on key after key until one holds a blob
/// (kvtest's misses, each an extra cycle), and the client's counts.
struct Slot {
    ops: u64,
    misses: u64,
    bytes: u64,
    misses_in_a_row: u64,
    limit: u64,
    max_id: u32,
}

impl Slot {
    fn new(max_id: u32) -> Slot {
        Slot { ops: 0, misses: 0, bytes: 0, misses_in_a_row: 0, limit: miss_limit(max_id), max_id }
    }

    /// Runs the operation, its misses retried on the next keys; returns
    /// the bytes it moved and its class.
    #[inline]
    fn run<S: Session + ?Sized>(
        &mut self,
        session: &mut S,
        keys: &mut KeySequence,
        work: &mut ScriptOps<'_, '_>,
    ) -> Result<(u64, usize)> {
        loop {
            let (n, class) = work.step(session, keys.current())?;
            keys.advance();
            if n > 0 {
                self.misses_in_a_row = 0;
                return Ok((n, class));
            }
            self.misses += 1;
            self.misses_in_a_row += 1;
            if self.misses_in_a_row > self.limit {
                return Err(no_blob_found(self.max_id, self.misses_in_a_row));
            }
        }
    }

    /// The operation ended in the window: it counts.
    #[inline]
    fn done(&mut self, bytes: u64) {
        self.ops += 1;
        self.bytes += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::session::{Script, ScriptOp};
    use crate::measure::Latency;
    use crate::records::keys::{KvtestRng, Order};

    /// A store whose every read takes no time.
    struct Instant0;

    impl Session for Instant0 {
        fn round_trip(&mut self) -> Result<Option<u64>> {
            Ok(None)
        }
        fn read(&mut self, _: u32) -> Result<u64> {
            Ok(10)
        }
        fn overwrite(&mut self, _: u32, _: &[u8]) -> Result<u64> {
            Ok(10)
        }
        fn put(&mut self, _: u32, _: &[u8]) -> Result<()> {
            Ok(())
        }
        fn delete(&mut self, _: u32) -> Result<bool> {
            Ok(true)
        }
        fn commit(&mut self) -> Result<()> {
            Ok(())
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }

    fn run(w: Window) -> (LoopTotals, WindowTally, Latency) {
        let script = Script::new(vec![ScriptOp::Read], 10, 1).unwrap();
        let mut classes: [Latency; 4] = Default::default();
        let keys = KeySequence::with_rng(Order::Random, 1, 10, KvtestRng::stream(1));
        let work = ScriptOps::new(&script, Some(&mut classes));
        let (totals, tally) = window_loop(&mut Instant0, keys, 10, work, w).unwrap();
        (totals, tally, classes[0].clone())
    }

    /// A client that starts 20 ms into its window (its thread was late):
    /// its loop's start says so, and its first operation's latency runs
    /// from the window's start, when it was due.
    #[test]
    fn a_client_that_starts_late_shows_it_and_its_first_operation_waited() {
        let now = Instant::now();
        let late = Duration::from_millis(20);
        let w = Window { start: now - late, deadline: now + Duration::from_millis(5), pace: None };
        let (totals, tally, reads) = run(w);
        assert!(totals.start >= w.start + late, "its first operation began late");
        assert!(reads.summary().max_us >= late.as_micros() as f64, "and waited from the start: {:?}", reads.summary());
        assert!(totals.ops > 0 && tally.due.due == 0, "a closed loop has no schedule: {} {:?}", totals.ops, tally);
    }

    /// A client whose window passed before it began: every operation due
    /// in it is timed at its lateness and counted as not started.
    #[test]
    fn a_client_that_never_started_records_every_due_operation_at_its_lateness() {
        let now = Instant::now();
        let pace = Pace { offset: Duration::ZERO, interval: Duration::from_millis(1) };
        let w = Window {
            start: now - Duration::from_millis(20),
            deadline: now - Duration::from_millis(10),
            pace: Some(pace),
        };
        let (totals, tally, reads) = run(w);
        assert_eq!(totals.ops, 0);
        assert_eq!((tally.due.due, tally.due.unstarted, tally.due.judged, tally.due.behind), (10, 10, 10, 10));
        assert_eq!(reads.count(), 10);
        let s = reads.summary();
        assert!(s.min_us >= 990.0 && s.max_us <= 10_010.0, "deadline - due, 1 to 10 ms: {s:?}");
    }
}
