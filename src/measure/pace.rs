//! An open loop's waits, as wrk2 makes them: each client sleeps to the
//! absolute due time of its next operation on `CLOCK_MONOTONIC` (the
//! clock `Instant` reads on Linux), with `clock_nanosleep(TIMER_ABSTIME)`
//! and never a spin, so that clients that outnumber the cores leave the
//! cores to the operations. How late a wait wakes is measured, and counts
//! in the operation's latency (which runs from its due time); what one
//! wait costs a core on this machine is measured once per process, and
//! the rate check reads it ([`wait_cost`]).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process on the
/// machine.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An `Instant` and `CLOCK_MONOTONIC` read together (the `Instant`
/// between two readings of the latter), to put `Instant`s on the clock
/// every process shares.
pub fn clock_pair() -> (Instant, u64) {
    let before = monotonic_ns();
    let now = Instant::now();
    let after = monotonic_ns();
    (now, before + (after - before) / 2)
}

/// Sets the calling thread's timer slack to 1 ns. Linux lets a sleeping
/// thread wake up to 50 µs after its time by default (to batch
/// wake-ups); an open loop's due times want it woken on time. Outside
/// every timer, once per client thread or process.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Sleeps to due times given as `Instant`s, on `CLOCK_MONOTONIC`.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    /// An `Instant` and `CLOCK_MONOTONIC` read together.
    at: Instant,
    at_ns: u64,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Pacer {
        let (at, at_ns) = clock_pair();
        Pacer { at, at_ns }
    }

    /// `t` on `CLOCK_MONOTONIC`, in nanoseconds.
    fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.at) {
            Some(d) => self.at_ns + d.as_nanos() as u64,
            None => self.at_ns.saturating_sub((self.at - t).as_nanos() as u64),
        }
    }

    /// Sleeps until `due`, without spinning. Returns how late it woke, in
    /// nanoseconds, or None when `due` had passed and it did not sleep.
    #[inline]
    pub fn sleep_until(&self, due: Instant) -> Option<u64> {
        if Instant::now() >= due {
            return None;
        }
        let due_ns = self.ns(due);
        let ts =
            libc::timespec { tv_sec: (due_ns / 1_000_000_000) as libc::time_t, tv_nsec: (due_ns % 1_000_000_000) as _ };
        // SAFETY: clock_nanosleep reads the timespec it is given; with
        // TIMER_ABSTIME it writes no remainder (null is allowed).
        while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
            == libc::EINTR
        {}
        Some(Instant::now().saturating_duration_since(due).as_nanos() as u64)
    }
}

/// What one wait for a due time costs on this machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitCost {
    /// CPU time of one wait and its wake-up (the thread's own), in ns.
    pub cpu_ns: f64,
    /// How late a wait wakes, the median, in ns.
    pub late_ns: f64,
}

/// Waits timed to measure [`wait_cost`], and the time between them.
const COST_WAITS: u32 = 200;
const COST_GAP: Duration = Duration::from_micros(200);

/// One wait's cost on this machine, measured once per process (about 40
/// ms): [`COST_WAITS`] waits [`COST_GAP`] apart on a thread of its own,
/// as a client waits. On a machine busy with other work both figures
/// grow; the check of a rate then refuses less than it could on a quiet
/// one, never more than the machine can pace now.
pub fn wait_cost() -> WaitCost {
    static COST: OnceLock<WaitCost> = OnceLock::new();
    *COST.get_or_init(|| std::thread::scope(|s| s.spawn(measure_wait_cost).join()).unwrap_or(FALLBACK))
}

/// The cost used should the measuring thread fail: a wait's cost on a
/// loaded 2-core VM.
const FALLBACK: WaitCost = WaitCost { cpu_ns: 20_000.0, late_ns: 100_000.0 };

fn measure_wait_cost() -> WaitCost {
    tight_timer_slack();
    let pacer = Pacer::new();
    let mut late = Vec::with_capacity(COST_WAITS as usize);
    let cpu = super::latency::thread_cpu_ns();
    let mut due = Instant::now() + COST_GAP;
    for _ in 0..COST_WAITS {
        late.push(pacer.sleep_until(due).unwrap_or(0) as f64);
        due = Instant::now().max(due) + COST_GAP;
    }
    let cpu_ns = super::latency::thread_cpu_ns().saturating_sub(cpu) as f64 / f64::from(COST_WAITS);
    late.sort_by(f64::total_cmp);
    WaitCost { cpu_ns, late_ns: late[late.len() / 2] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_sleeps_to_its_due_time_and_says_how_late_it_woke() {
        let pacer = Pacer::new();
        let due = Instant::now() + Duration::from_millis(2);
        let late = pacer.sleep_until(due).expect("it slept");
        let woke = Instant::now();
        assert!(woke >= due, "never before its due time");
        assert!(Duration::from_nanos(late) <= woke - due, "its lateness is within what passed");
        assert_eq!(pacer.sleep_until(due), None, "a due time passed: no wait");
        let cost = wait_cost();
        assert!(cost.cpu_ns > 0.0 && cost.late_ns >= 0.0, "{cost:?}");
    }

    #[test]
    fn both_clocks_are_one() {
        let pacer = Pacer::new();
        let now = Instant::now();
        let (a, b) = (pacer.ns(now), monotonic_ns());
        assert!(a <= b, "{a} {b}");
        assert!(pacer.ns(now - Duration::from_millis(1)) + 1_000_000 == a, "earlier instants too");
    }
}
