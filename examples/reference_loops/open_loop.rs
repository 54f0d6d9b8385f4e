//! One client's open loop (issue 49's reference), as wrk2 and
//! HdrHistogram's coordinated-omission correction define it, written
//! from those definitions and not from blobbench's code:
//!
//! - `--rate R` over N clients: each client has an operation due every
//!   N / R seconds, client i's first at i/N of that interval after the
//!   window's start (so the N clients do not fire together);
//! - the client sleeps to each absolute due time on CLOCK_MONOTONIC
//!   (`clock_nanosleep` with `TIMER_ABSTIME`, timer slack 1 ns), never
//!   spinning; an operation already due starts at once;
//! - each operation's latency runs from its due time to its end, so a late
//!   wake-up or a queue behind a slow store is in it;
//! - an operation that ends by the deadline counts; the one under way at
//!   the deadline is recorded, not counted; every operation due in the
//!   window and not started by the deadline is recorded at its lateness
//!   (deadline - due) and counted as not started.

use crate::Res;

/// One client's due times: the first `offset_ns` after the window's
/// start, then one every `interval_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub offset_ns: u64,
    pub interval_ns: u64,
}

impl Pace {
    /// Client `index` of `clients` at `rate` operations per second over
    /// all of them.
    pub fn of(index: u32, clients: u32, rate: f64) -> Pace {
        let interval_ns = (f64::from(clients) / rate * 1e9).round().max(1.0) as u64;
        Pace { offset_ns: interval_ns * u64::from(index) / u64::from(clients), interval_ns }
    }
}

/// What one client's open loop did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Paced {
    /// Latencies from due time (ns) of reads and of writes: the counted
    /// operations, the one under way at the deadline, and the unstarted.
    pub reads: Vec<u64>,
    pub writes: Vec<u64>,
    /// Operations that ended by the deadline.
    pub done: u64,
    /// Operations due in the window, and of them those not started by
    /// the deadline.
    pub due: u64,
    pub unstarted: u64,
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock of every process here.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sets this thread's timer slack to 1 ns: by default Linux may wake a
/// sleeper up to 50 µs late to batch wake-ups.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Sleeps until `due_ns` on CLOCK_MONOTONIC (at once when it has passed).
pub fn sleep_until(due_ns: u64) {
    let ts =
        libc::timespec { tv_sec: (due_ns / 1_000_000_000) as libc::time_t, tv_nsec: (due_ns % 1_000_000_000) as _ };
    // SAFETY: clock_nanosleep reads the timespec; with TIMER_ABSTIME it
    // writes no remainder (null is allowed).
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
}

/// Where the loop reads the time and waits: CLOCK_MONOTONIC in ns, or in
/// tests a clock that moves only when the test's store or waits move it.
pub trait Clock {
    fn now(&self) -> u64;
    fn sleep_until(&self, due_ns: u64);
}

/// The machine's CLOCK_MONOTONIC.
pub struct Monotonic;

impl Clock for Monotonic {
    fn now(&self) -> u64 {
        now_ns()
    }

    fn sleep_until(&self, due_ns: u64) {
        sleep_until(due_ns);
    }
}

/// Runs one client's due operations from `start_ns` to `deadline_ns`.
/// `op(true)` draws the next operation and runs it, returning whether it
/// was a write; `op(false)` only draws its class (for an operation never
/// started).
pub fn run(
    pace: Pace,
    start_ns: u64,
    deadline_ns: u64,
    clock: &impl Clock,
    mut op: impl FnMut(bool) -> Res<bool>,
) -> Res<Paced> {
    let mut p = Paced { reads: Vec::with_capacity(1 << 14), writes: Vec::with_capacity(1 << 12), ..Paced::default() };
    let mut due = start_ns + pace.offset_ns;
    while due < deadline_ns {
        if clock.now() < due {
            clock.sleep_until(due);
        }
        if clock.now() > deadline_ns {
            break;
        }
        let write = op(true)?;
        let end = clock.now();
        p.due += 1;
        if write { &mut p.writes } else { &mut p.reads }.push(end - due);
        due += pace.interval_ns;
        if end > deadline_ns {
            break;
        }
        p.done += 1;
    }
    while due < deadline_ns {
        let write = op(false)?;
        if write { &mut p.writes } else { &mut p.reads }.push(deadline_ns - due);
        p.due += 1;
        p.unstarted += 1;
        due += pace.interval_ns;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    const MS: u64 = 1_000_000;

    /// A clock that moves only when a wait or the test's store moves it.
    struct Fake(Cell<u64>);

    impl Clock for Fake {
        fn now(&self) -> u64 {
            self.0.get()
        }

        fn sleep_until(&self, due_ns: u64) {
            self.0.set(self.0.get().max(due_ns));
        }
    }

    #[test]
    fn the_clients_first_due_times_are_spread_over_one_interval() {
        assert_eq!(Pace::of(0, 4, 2000.0), Pace { offset_ns: 0, interval_ns: 2 * MS });
        assert_eq!(Pace::of(3, 4, 2000.0), Pace { offset_ns: 3 * MS / 2, interval_ns: 2 * MS });
    }

    /// One due every ms over 10 ms; the 3rd operation stalls 6 ms, so
    /// the client falls behind: the ones due while it stalled start late
    /// and count from their due times, the one under way at the deadline
    /// is recorded but not counted, and those never started are recorded
    /// at their lateness.
    #[test]
    fn a_stalled_client_counts_its_late_and_unstarted_operations_from_their_due_times() {
        let clock = Fake(Cell::new(0));
        let pace = Pace { offset_ns: 0, interval_ns: MS };
        let mut n = 0;
        let p = run(pace, 0, 10 * MS, &clock, |go| {
            if go {
                n += 1;
                clock.0.set(clock.0.get() + if n == 3 { 6 * MS } else { MS / 2 });
            }
            Ok(false)
        })
        .unwrap();
        assert_eq!((p.due, p.done, p.unstarted), (10, 7, 2), "{p:?}");
        // Done: due at 0, 1, 2 (runs to 8), 3 (8-8.5), 4 (8.5-9),
        // 5 (9-9.5), 6 (9.5-10); due at 7, it runs 10-10.5, under way at
        // the deadline.
        let ms = |v: f64| (v * MS as f64) as u64;
        assert_eq!(p.reads[..8], [ms(0.5), ms(0.5), ms(6.0), ms(5.5), ms(5.0), ms(4.5), ms(4.0), ms(3.5)][..]);
        // Not started: due at 8 and 9, recorded at 2 and 1 ms.
        assert_eq!(p.reads[8..], [2 * MS, MS][..]);
    }
}
