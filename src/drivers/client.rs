//! One client of several (`drivers::clients`): what it is given for a
//! run, its timed session over the run's shared window, and what it did,
//! on a clock every client reads alike. The one body of a thread client
//! and of a client process (`drivers::processes`).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::classes::Classes;
use super::plan::pace_of;
use super::session::{timed_session, DueCounts, Script, SessionRun, SessionSpec, Window, Work};
use crate::engine::{Engine, OpenMode};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::Result;

/// What one client did in one run, on a clock all clients share.
pub(crate) struct ClientDone {
    pub span: ClientSpan,
    pub busy_waits: u64,
    /// Its histograms by class, taken from its script; none when the run
    /// was not timed.
    pub classes: Classes,
}

/// Which run of which client, and how: what a thread client and a client
/// process are both given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientTurn {
    pub client: u32,
    pub clients: u32,
    pub max_id: u32,
    /// 0 for untimed runs, then 1, 2 ...: each timed run draws other keys.
    pub round: u32,
    /// Record each op's latency in the script's class histograms.
    pub timed: bool,
    pub rate: Option<f64>,
}

/// One client's session of one run: opens, calls `ready` (the clients
/// wait for each other there), takes the run's window from `window`, runs
/// its `script` on its own key stream over the window, closes. Returns
/// the session and its busy waits. The one body of a thread client and
/// of a client process.
pub(crate) fn client_session(
    engine: &dyn Engine,
    script: &Script,
    turn: ClientTurn,
    ready: &dyn Fn(),
    window: &dyn Fn() -> Result<(Instant, Instant)>,
) -> Result<(SessionRun, u64)> {
    let ClientTurn { client, clients, max_id, round, timed, rate } = turn;
    crate::measure::pace::tight_timer_slack();
    let pace = pace_of(client, clients, rate);
    let window = || window().map(|(start, deadline)| Window { start, deadline, pace });
    let spec = SessionSpec {
        // A client that only reads opens as a reader: it takes no write
        // lock, and a store may open read-only.
        mode: OpenMode { write: script.writes(), ..OpenMode::client(client) },
        max_id: Some(max_id),
        keys: |max| KeySequence::with_rng(Order::Random, 1, max, KvtestRng::stream(round * (clients + 1) + client + 1)),
        count: u64::MAX,
        work: Work::Window { script, window: &window, timed },
    };
    let mut busy = 0;
    let run = timed_session(engine, spec, None, ready, &mut |s| {
        busy = s.busy_waits();
    })?;
    Ok((run, busy))
}

/// The time from the moment every client is ready to the window's start:
/// long enough for each to be waiting when it comes (16 threads woken on
/// 2 cores take about a millisecond).
pub(crate) fn lead(clients: u32) -> Duration {
    Duration::from_micros(2_000 + 200 * u64::from(clients))
}

/// One client's session on a clock every client reads alike: its phases'
/// ends in nanoseconds from one origin (threads: an `Instant` of the
/// parent; processes: `CLOCK_MONOTONIC`, which every process on the
/// machine shares), and what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSpan {
    pub ops: u64,
    pub misses: u64,
    pub bytes: u64,
    pub opened_from_ns: u64,
    pub loop_start_ns: u64,
    pub loop_end_ns: u64,
    pub committed_ns: u64,
    pub closed_ns: u64,
    pub close_checkpoints: bool,
    pub close_finishes_writes: bool,
    pub opened_handle: bool,
    /// The operation under way at the deadline, when it began and ended;
    /// `loop_start_ns` is when its first began.
    pub straddled_ns: Option<(u64, u64)>,
    /// Its due operations and its waits for them.
    pub due: DueCounts,
    /// It wrote (its session was opened for writes).
    pub writes: bool,
}

impl ClientSpan {
    /// `run`'s phases on a clock that read `at_ns` when `at` was now.
    pub fn of(run: &SessionRun, (at, at_ns): (Instant, u64)) -> ClientSpan {
        let ns = |t: Instant| match t.checked_duration_since(at) {
            Some(d) => at_ns + d.as_nanos() as u64,
            None => at_ns.saturating_sub((at - t).as_nanos() as u64),
        };
        let t = &run.times;
        ClientSpan {
            ops: run.ops,
            misses: run.misses,
            bytes: run.bytes,
            opened_from_ns: ns(t.opened_from),
            loop_start_ns: ns(t.loop_start),
            loop_end_ns: ns(t.loop_end),
            committed_ns: ns(t.committed),
            closed_ns: ns(t.closed),
            close_checkpoints: run.info.close_checkpoints,
            close_finishes_writes: run.info.close_finishes_writes,
            opened_handle: run.info.opened_handle,
            straddled_ns: run.window.and_then(|w| w.straddled).map(|(a, b)| (ns(a), ns(b))),
            due: run.window.map(|w| w.due).unwrap_or_default(),
            writes: run.writes,
        }
    }
}
