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

use super::ops::{miss_limit, no_blob_found, LoopTotals, LoopWork, ScriptOps};
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
    /// How long after its due time the client began its first operation
    /// (a thread or process that was late), in ns; for one that began none,
    /// the deadline's lateness on its first due time. The most when added.
    #[serde(default)]
    pub first_late_ns: u64,
}

/// The loop of one client over a shared window: each due operation (its
/// misses retried at once, in its time), one clock read after it, its
/// latency from its due time recorded in its class, the next key. The
/// client sleeps to each due time (never spins) and to the window's start.
#[inline(never)]
pub(super) fn window_loop<S: Session + ?Sized, C: LoopClock>(
    session: &mut S,
    mut keys: KeySequence,
    max_id: u32,
    mut work: ScriptOps<'_, '_>,
    w: Window,
    clock: &C,
) -> Result<(LoopTotals, WindowTally)> {
    let mut t = WindowTally::default();
    let mut slot = Slot::new(max_id);
    let mut due = w.start + w.pace.map_or(Duration::ZERO, |p| p.offset);
    let first_due = due;
    let mut first = None;
    while due < w.deadline {
        // In a closed loop an operation starts where the one before ended:
        // no wait and no clock read of its own (one read per operation).
        let began = if w.pace.is_none() && first.is_some() {
            due
        } else {
            if let Some(late) = clock.sleep_until(due) {
                t.due.woke(late);
            }
            clock.now()
        };
        if began > w.deadline {
            break;
        }
        first.get_or_insert(began);
        let (n, class) = slot.run(session, &mut keys, &mut work)?;
        let end = clock.now();
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
        end: clock.now(),
    };
    t.due.first_late_ns = nanos(first.unwrap_or(w.deadline), first_due);
    t.due.record_unstarted(w, due, &mut work);
    Ok((totals, t))
}

/// Where a client's loop reads the time and waits for its due times: the
/// machine's clock ([`Pacer`]), or in tests one that moves only when the
/// test's store or waits move it, so that what a test of the loop asserts
/// holds however fast or busy the machine is. Monomorphised: the real
/// loop reads `Instant::now` directly.
pub(super) trait LoopClock {
    fn now(&self) -> Instant;
    /// Sleeps until `due`; how late it woke in ns, or None when `due` had
    /// passed and it did not sleep.
    fn sleep_until(&self, due: Instant) -> Option<u64>;
}

impl LoopClock for Pacer {
    #[inline]
    fn now(&self) -> Instant {
        Instant::now()
    }

    #[inline]
    fn sleep_until(&self, due: Instant) -> Option<u64> {
        Pacer::sleep_until(self, due)
    }
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
        self.first_late_ns = self.first_late_ns.max(other.first_late_ns);
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
    use crate::drivers::clients::{kept_up, ClientSpan, WindowCount, KEEP_UP};
    use crate::drivers::ops::{Script, ScriptOp};
    use crate::measure::clock::FakeClock;
    use crate::measure::Latency;
    use crate::records::keys::{KvtestRng, Order};

    const MS: Duration = Duration::from_millis(1);

    /// The fake clock as a loop's: a wait for a due time moves it there
    /// and wakes on time.
    impl LoopClock for &'static FakeClock {
        fn now(&self) -> Instant {
            self.clock().now()
        }

        fn sleep_until(&self, due: Instant) -> Option<u64> {
            let now = LoopClock::now(self);
            (now < due).then(|| {
                self.advance(due - now);
                0
            })
        }
    }

    /// A store on a fake clock: each read takes `cost` of it, and the
    /// `pause_at`-th read `pause` more.
    struct FakeStore {
        clock: &'static FakeClock,
        cost: Duration,
        reads: u32,
        pause_at: u32,
        pause: Duration,
    }

    impl FakeStore {
        fn new(clock: &'static FakeClock, cost: Duration) -> FakeStore {
            FakeStore { clock, cost, reads: 0, pause_at: 0, pause: Duration::ZERO }
        }
    }

    impl Session for FakeStore {
        fn round_trip(&mut self) -> Result<Option<u64>> {
            Ok(None)
        }
        fn read(&mut self, _: u32) -> Result<u64> {
            self.reads += 1;
            let pause = if self.reads == self.pause_at { self.pause } else { Duration::ZERO };
            self.clock.advance(self.cost + pause);
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

    /// One client's loop over `w` on `store`'s fake clock, reads only.
    fn run(store: &mut FakeStore, w: Window) -> (LoopTotals, WindowTally, Latency) {
        let script = Script::new(vec![ScriptOp::Read], 10, 1).unwrap();
        let mut classes = crate::drivers::classes::Classes::default();
        classes.arm([ScriptOp::Read.class()]);
        let keys = KeySequence::with_rng(Order::Random, 1, 10, KvtestRng::stream(1));
        let work = ScriptOps::new(&script, Some(&mut classes));
        let clock = store.clock;
        let (totals, tally) = window_loop(store, keys, 10, work, w, &clock).unwrap();
        (totals, tally, classes.get(0).unwrap().clone())
    }

    fn paced(start: Instant, window: Duration, offset: Duration, interval: Duration) -> Window {
        Window { start, deadline: start + window, pace: Some(Pace { offset, interval }) }
    }

    /// A client that starts 20 ms into its 50 ms window (its thread was
    /// late), on a store whose reads take 1 ms: its loop's start says so,
    /// its first operation's latency runs from the window's start, when it
    /// was due, and the 30 that ended by the deadline count.
    #[test]
    fn a_client_that_starts_late_shows_it_and_its_first_operation_waited() {
        let fake = FakeClock::new();
        let start = fake.clock().now();
        let w = Window { start, deadline: start + 50 * MS, pace: None };
        fake.advance(20 * MS);
        let (totals, tally, reads) = run(&mut FakeStore::new(fake, MS), w);
        assert_eq!(totals.start, start + 20 * MS, "its first operation began late");
        assert_eq!(totals.ops, 30);
        assert_eq!(reads.count(), 30);
        assert!(reads.summary().max_us >= 20_900.0, "it waited from the start: {:?}", reads.summary());
        assert_eq!(tally.due.first_late_ns, (20 * MS).as_nanos() as u64, "it says how late it began");
        let on_time =
            WindowTally { due: DueCounts { first_late_ns: tally.due.first_late_ns, ..DueCounts::default() }, ..tally };
        assert_eq!(tally, on_time, "nothing under way at the deadline, no schedule");
    }

    /// A client whose window passed before it began: every operation due
    /// in it is timed at its lateness (deadline - due) and counted as not
    /// started, and behind.
    #[test]
    fn a_client_that_never_started_records_every_due_operation_at_its_lateness() {
        let fake = FakeClock::new();
        let w = paced(fake.clock().now(), 10 * MS, Duration::ZERO, MS);
        fake.advance(20 * MS);
        let (totals, tally, reads) = run(&mut FakeStore::new(fake, MS), w);
        assert_eq!(totals.ops, 0);
        assert_eq!((tally.due.due, tally.due.unstarted, tally.due.judged, tally.due.behind), (10, 10, 10, 10));
        assert_eq!(reads.count(), 10);
        let s = reads.summary();
        assert!(s.min_us >= 990.0 && s.min_us <= 1010.0 && s.max_us >= 9_990.0 && s.max_us <= 10_010.0, "{s:?}");
    }

    /// A store with spare capacity (reads of 100 µs, one due every ms)
    /// keeps every client on its schedule to the end; a client that waits
    /// for each due time wakes on it.
    #[test]
    fn a_store_with_spare_capacity_keeps_each_client_on_its_schedule() {
        let fake = FakeClock::new();
        let w = paced(fake.clock().now(), 100 * MS, MS / 2, MS);
        let (totals, tally, reads) = run(&mut FakeStore::new(fake, MS / 10), w);
        assert_eq!(
            (totals.ops, tally.due.due, tally.due.judged, tally.due.behind, tally.due.unstarted),
            (100, 100, 99, 0, 0)
        );
        assert_eq!((tally.due.wakes, tally.straddled), (100, None));
        assert_eq!(tally.due.first_late_ns, 0, "its first op began when due, half an interval in");
        assert_eq!(reads.count(), 100);
        assert!(reads.summary().max_us <= 101.0, "each from its due time: {:?}", reads.summary());
    }

    /// Operations of 8 ms due every 10 ms in a 95 ms window: the last due
    /// (at 90 ms) cannot end by the deadline, and 1 in 10 did not end in
    /// the window, but no client was ever behind its schedule: judged on
    /// the operations due at least one interval before the deadline, the
    /// slow store keeps up (ended over due would have failed it at 90%).
    #[test]
    fn a_slow_store_with_spare_capacity_is_not_failed_for_the_operation_the_deadline_cuts() {
        let fake = FakeClock::new();
        let w = paced(fake.clock().now(), 95 * MS, Duration::ZERO, 10 * MS);
        let (totals, tally, _) = run(&mut FakeStore::new(fake, 8 * MS), w);
        assert_eq!((totals.ops, tally.due.due, tally.due.judged, tally.due.behind), (9, 10, 9, 0));
        assert!(tally.straddled.is_some(), "the one due at 90 ms is under way at the deadline");
        let count = WindowCount::of_spans(&[span(&totals, &tally)], true);
        assert_eq!(kept_up(&[count]), Some(1.0));
    }

    /// A store that keeps one client from 5% of its due operations: two
    /// clients with one due every ms over 100 ms; client 0's 95th read
    /// stalls 20 ms, past the deadline, so its last 5 are never started.
    /// Pooled over both clients 97.5% were started; judged on the client
    /// furthest behind, the store does not keep up. Each unstarted one is
    /// timed at its lateness, none lost.
    #[test]
    fn a_store_missing_five_percent_of_one_clients_due_operations_fails_keeping_up() {
        let fake = FakeClock::new();
        let start = fake.clock().now();
        let starved = FakeStore { pause_at: 95, pause: 20 * MS, ..FakeStore::new(fake, MS / 10) };
        let (t0, tally0, reads0) = run(&mut { starved }, paced(start, 100 * MS, Duration::ZERO, MS));
        assert_eq!(
            (t0.ops, tally0.due.due, tally0.due.judged, tally0.due.behind, tally0.due.unstarted),
            (94, 100, 100, 5, 5)
        );
        assert_eq!(reads0.count(), 100, "94 done, 1 under way at the deadline, 5 not started");
        // The other client, on its own clock over the same window.
        let other = FakeClock::new();
        let shift = |t: Instant| other.clock().now() + (t - start);
        let w1 = paced(shift(start), 100 * MS, MS / 2, MS);
        let (t1, tally1, _) = run(&mut FakeStore::new(other, MS / 10), w1);
        assert_eq!((t1.ops, tally1.due.behind), (100, 0));
        let count = WindowCount::of_spans(&[span(&t0, &tally0), span(&t1, &tally1)], true);
        assert_eq!((count.due, count.unstarted), (Some(200), Some(5)));
        assert!(count.ops as f64 / 200.0 > KEEP_UP - 0.03, "pooled, it nearly kept up: {count:?}");
        let kept = kept_up(&[count]).unwrap();
        assert_eq!(kept, 0.95);
        assert!(kept < KEEP_UP);
    }

    /// A client's span as the driver makes it, from its loop alone.
    fn span(totals: &LoopTotals, tally: &WindowTally) -> ClientSpan {
        ClientSpan {
            ops: totals.ops,
            misses: totals.misses,
            bytes: totals.bytes,
            opened_from_ns: 0,
            loop_start_ns: 0,
            loop_end_ns: 0,
            committed_ns: 0,
            closed_ns: 0,
            close_checkpoints: false,
            close_finishes_writes: false,
            opened_handle: false,
            straddled_ns: None,
            due: tally.due,
            writes: false,
        }
    }
}
