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

/// Runs one client's due operations from `start_ns` to `deadline_ns`.
/// `op(true)` draws the next operation and runs it, returning whether it
/// was a write; `op(false)` only draws its class (for an operation never
/// started). `now` reads CLOCK_MONOTONIC in ns.
pub fn run(
    pace: Pace,
    start_ns: u64,
    deadline_ns: u64,
    now: impl Fn() -> u64,
    mut op: impl FnMut(bool) -> Res<bool>,
) -> Res<Paced> {
    let mut p = Paced { reads: Vec::with_capacity(1 << 14), writes: Vec::with_capacity(1 << 12), ..Paced::default() };
    let mut due = start_ns + pace.offset_ns;
    while due < deadline_ns {
        if now() < due {
            sleep_until(due);
        }
        if now() > deadline_ns {
            break;
        }
        let write = op(true)?;
        let end = now();
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
