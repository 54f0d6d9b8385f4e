//! Several clients at once against one store (`advise --clients N`,
//! `run --clients N`): each client is a thread with a session of its own
//! (its own connection, handle or temporary names: `OpenMode::client`), or
//! a process of its own ([`super::processes`]), running the same mix of
//! reads and overwrites on its own random keys.
//!
//! Every client of a run shares one window: all open their sessions
//! (outside every timer), wait at one barrier, start their first operation
//! at one start instant and stop at one deadline. A run's figure is the
//! operations that ended inside the window, over all clients, per second
//! of the window: what an application with N clients gets while all N
//! run. A store that starves a client does not stretch the run; it shows
//! in the per-client counts ([`WindowCount`]: the slowest client's
//! operations against the median client's) and in the tail (the operation
//! under way at the deadline is timed, not counted).
//!
//! Closed loop by default (the next operation when the last returns); with
//! `--rate`, an open loop whose due times are spread over the clients
//! ([`pace_of`]), so that N clients do not fire together. Each client
//! records its operations' latencies into per-class histograms of its own
//! (one clock read and one record per operation, no lock or atomic shared
//! with another client); they are merged after the run, never averaged.

use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub(crate) use super::client::lead;
pub use super::client::ClientSpan;
use super::client::{client_session, ClientDone, ClientTurn};
pub use super::plan::{check_plan, check_rate, check_window, due_in, pace_of, MAX_CLIENTS};
use super::processes::{ClientJob, ClientOrder, ClientProcesses, Launcher};
use super::session::{DueCounts, Script, ScriptOp, SessionRun};
use crate::engine::{Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::Arm;
use crate::measure::{self, Latency, Phases, RunOutcome};
use crate::records::{EngineSettings, Mix};
use crate::{Error, Result};

/// Operations each client should have due in a run at a rate, for its
/// percentiles and for the 1% a store may fall behind by and still keep up.
pub const DUE_PER_CLIENT: u64 = 200;

/// The share of its judged operations (those due at least one interval
/// before the deadline) that every client must have started by the
/// deadline for a store to keep up with a rate: a client keeping up is
/// never a whole interval behind; one that is not falls further behind
/// as the window goes on.
pub const KEEP_UP: f64 = 0.99;

/// What one timed run of N clients did over its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowCount {
    /// Operations that ended in the window, over all clients.
    pub ops: u64,
    /// The operations of the client that made fewest.
    pub slowest: u64,
    /// The median client's operations.
    pub median: u64,
    /// Under a rate, the operations due in the window over all clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<u64>,
    /// Under a rate, the due operations no client had started by the
    /// deadline (each recorded at its lateness, deadline - due). Absent in
    /// older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstarted: Option<u64>,
    /// Under a rate, the client furthest behind at the deadline. Absent
    /// in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub furthest_behind: Option<Behind>,
    /// How long after it was due the latest client began its first
    /// operation, in ns (a client whose thread or process was late; in a
    /// closed loop the first is due at the window's start). Absent in
    /// older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_start_ns: Option<u64>,
    /// The p99 of every operation of this run over all clients (their
    /// histograms merged), in ns: what a rate's ranking pairs by round.
    /// Absent in older files and in runs that timed no operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
}

/// One client's operations due at least one interval before the deadline
/// (judged), and how many of these it had not started by then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behind {
    pub judged: u64,
    pub behind: u64,
}

impl Behind {
    /// The share of its judged operations it had started.
    pub fn kept(&self) -> f64 {
        if self.judged == 0 {
            1.0
        } else {
            1.0 - self.behind as f64 / self.judged as f64
        }
    }
}

impl WindowCount {
    /// `clients`' operations in one window (and those due in it).
    pub fn of(clients: &[u64], due: Option<u64>) -> WindowCount {
        let mut sorted = clients.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let median = match n {
            0 => 0,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
        };
        let ops = sorted.iter().sum();
        WindowCount { ops, slowest: sorted.first().copied().unwrap_or(0), median, due, ..WindowCount::default() }
    }

    /// The clients' run over a window: their counts, and under a rate
    /// their due operations and the client furthest behind.
    pub fn of_spans(spans: &[ClientSpan], paced: bool) -> WindowCount {
        let ops: Vec<u64> = spans.iter().map(|s| s.ops).collect();
        let due = paced.then(|| spans.iter().map(|s| s.due.due).sum());
        let behind = |s: &ClientSpan| Behind { judged: s.due.judged, behind: s.due.behind };
        WindowCount {
            unstarted: paced.then(|| spans.iter().map(|s| s.due.unstarted).sum()),
            furthest_behind: paced
                .then(|| spans.iter().map(behind).min_by(|a, b| a.kept().total_cmp(&b.kept())))
                .flatten(),
            latest_start_ns: spans.iter().map(|s| s.due.first_late_ns).max(),
            ..WindowCount::of(&ops, due)
        }
    }
}

/// Under a rate, how much of its schedule the client furthest behind in
/// each of `runs` kept: the share of its judged operations it had started
/// by the deadline, pooled over the runs. In files from before this was
/// recorded, the operations that ended in the windows over those due.
/// None in a closed loop. A store keeps up when it is at least [`KEEP_UP`].
pub fn kept_up(runs: &[WindowCount]) -> Option<f64> {
    let behind: Vec<Behind> = runs.iter().filter_map(|r| r.furthest_behind).collect();
    if !behind.is_empty() {
        let judged: u64 = behind.iter().map(|b| b.judged).sum();
        let late: u64 = behind.iter().map(|b| b.behind).sum();
        return Some(Behind { judged, behind: late }.kept());
    }
    let due: u64 = runs.iter().filter_map(|r| r.due).sum();
    let ops: u64 = runs.iter().filter(|r| r.due.is_some()).map(|r| r.ops).sum();
    (due > 0).then(|| ops as f64 / due as f64)
}

/// What N clients did over the timed runs of an arm: each class's
/// latencies merged over clients and runs, the busy waits, and each run's
/// counts.
#[derive(Debug, Clone)]
pub struct ClientsTally {
    /// Latency by [`ScriptOp::class`] (read, overwrite, put, delete).
    pub classes: [Latency; 4],
    /// Times a client found the store locked by another and waited.
    pub busy_waits: u64,
    /// Operations of the timed runs in their windows, over all clients.
    pub ops: u64,
    /// Each timed run's counts.
    pub runs: Vec<WindowCount>,
    /// The clients' due operations and waits for them, over the timed runs.
    pub due: DueCounts,
}

impl ClientsTally {
    /// Every operation's latency, whatever its class: the classes merged.
    pub fn all(&self) -> Latency {
        let mut all = Latency::new();
        for c in &self.classes {
            all.merge(c);
        }
        all
    }

    /// The classes that ran, by name.
    pub fn by_class(&self) -> Vec<(&'static str, &Latency)> {
        ScriptOp::CLASSES.iter().copied().zip(self.classes.iter()).filter(|(_, l)| l.count() > 0).collect()
    }
}

/// How the clients of an arm run.
enum Clients {
    /// Threads of this process: one script per client, its own content
    /// pool and class histograms.
    Threads(Vec<Script>),
    /// Processes, each with its own engine and script.
    Processes(ClientProcesses),
}

/// One store used by `clients` clients at once, each running `mix`,
/// prepared outside every timer and run once at a time, as one arm of
/// interleaved rounds ([`measure::rounds`]).
/// The longest a closed loop's window grows to when no operation ended in
/// the one planned ([`ClientsArm`]'s runs).
const LONGEST_WINDOW: Duration = Duration::from_secs(10);

pub struct ClientsArm {
    /// Kept open for the arm's life, with whatever handle the engine
    /// keeps between sessions (a long-running application's), shared by
    /// the arms of the same store at other client counts ([`ClientsArm::at`]):
    /// an engine may allow one handle per process (LMDB's environment).
    engine: Arc<dyn Engine>,
    clients: u32,
    how: Clients,
    mix: Mix,
    seed: u64,
    blob_max: u32,
    max_id: u32,
    /// Each run's window.
    window: Duration,
    /// `--rate`: operations per second over all clients; None: closed loop.
    rate: Option<f64>,
    tally: ClientsTally,
    timed_runs: u32,
}

impl ClientsArm {
    /// `clients` sessions' scripts for `mix` on `engine`, surveyed for its
    /// keys and largest blob, each run over a `window`; with `rate`,
    /// operations per second over all clients, an open loop.
    pub fn prepare(
        mut engine: Box<dyn Engine>,
        clients: u32,
        mix: Mix,
        window: Duration,
        seed: u64,
        rate: Option<f64>,
    ) -> Result<ClientsArm> {
        check_plan(clients, window, rate)?;
        let survey = engine.survey(mix.write > 0)?;
        let max_id = match survey.max_key {
            Some(m) if m > 0 => m,
            _ => largest_key(engine.as_ref())?,
        };
        let engine: Arc<dyn Engine> = Arc::from(engine);
        arm(engine, (clients, mix, window), (survey.blob_max, max_id), seed, rate)
    }

    /// The same store, surveyed once, used by `clients` clients over
    /// `window` with scripts seeded from `seed`: another arm of the same
    /// rounds, sharing this one's engine and its kept handle.
    pub fn at(&self, clients: u32, window: Duration, seed: u64) -> Result<ClientsArm> {
        let shape = (clients, self.mix, window);
        arm(Arc::clone(&self.engine), shape, (self.blob_max, self.max_id), seed, self.rate)
    }

    /// The same clients as processes started by `launcher`, each opening
    /// the engine's store with `settings` itself (started here, one at a
    /// time, outside every timer; they end with the arm).
    pub fn in_processes(mut self, settings: &EngineSettings, launcher: &Launcher) -> Result<ClientsArm> {
        let jobs = (0..self.clients)
            .map(|i| ClientJob {
                path: self.engine.path().to_path_buf(),
                settings: settings.clone(),
                client: i,
                clients: self.clients,
                mix: self.mix,
                blob_max: self.blob_max,
                seed: self.seed.wrapping_add(u64::from(i)),
                max_id: self.max_id,
                rate: self.rate,
            })
            .collect();
        self.how = Clients::Processes(ClientProcesses::start(launcher, jobs)?);
        Ok(self)
    }

    /// What the timed runs did.
    pub fn tally(&self) -> &ClientsTally {
        &self.tally
    }

    pub fn clients(&self) -> u32 {
        self.clients
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// The latency histograms the arm holds between runs: its tally's, and
    /// any its clients' scripts still hold (none once a run is merged).
    pub fn histograms_held(&self) -> usize {
        let scripts = match &self.how {
            Clients::Threads(scripts) => scripts.iter().map(Script::histograms_held).sum(),
            Clients::Processes(_) => 0,
        };
        self.tally.classes.len() + scripts
    }

    /// Operations due in one window over all clients, under a rate.
    pub fn due_per_run(&self) -> Option<u64> {
        self.rate.map(|r| {
            (0..self.clients).filter_map(|i| pace_of(i, self.clients, Some(r))).map(|p| due_in(self.window, p)).sum()
        })
    }

    fn one_run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        // Each timed run draws other keys, each client its own stream.
        let round = if ctx.timed { self.timed_runs + 1 } else { 0 };
        // The rounds time every op only when they keep latencies.
        let timed = ctx.timed && ctx.latency.is_some();
        let (done, window) = loop {
            let (done, window) = match &mut self.how {
                Clients::Threads(scripts) => {
                    let turn = RunTurn { max_id: self.max_id, round, timed, rate: self.rate };
                    run_clients(self.engine.as_ref(), scripts, turn, self.window)?
                }
                Clients::Processes(p) => p.run(ClientOrder { round, timed }, self.window)?,
            };
            // A closed loop whose window no operation outlasted has no
            // figure: the window this machine's store needs is longer than
            // the one planned (a durable write behind a loaded disk), so
            // the arm's window is doubled for this run and the next, up to
            // a bound (the window each record states is the arm's last).
            let none_ended = done.iter().all(|d| d.span.ops == 0);
            if none_ended && self.rate.is_none() && self.window < LONGEST_WINDOW {
                self.window = (self.window * 2).min(LONGEST_WINDOW);
                continue;
            }
            break (done, window);
        };
        let spans: Vec<ClientSpan> = done.iter().map(|d| d.span).collect();
        let outcome = window_outcome(&spans, window, self.rate)?;
        if ctx.timed {
            self.timed_runs += 1;
            self.tally.ops += outcome.ops;
            self.tally.busy_waits += done.iter().map(|d| d.busy_waits).sum::<u64>();
            for s in &spans {
                self.tally.due.add(&s.due);
            }
            // Each client's histograms into the run's, then given up: the
            // arm keeps four whatever its number of clients.
            let mut run: [Latency; 4] = Default::default();
            for d in done {
                d.classes.merge_into(&mut run);
            }
            let p99_ns = super::classes::p99_ns(&run);
            self.tally.runs.push(WindowCount { p99_ns, ..WindowCount::of_spans(&spans, self.rate.is_some()) });
            let mut all = ctx.latency;
            for (mine, theirs) in self.tally.classes.iter_mut().zip(&run) {
                mine.merge(theirs);
                // The rounds' own histogram of the arm: every op.
                if let Some(all) = all.as_deref_mut() {
                    all.merge(theirs);
                }
            }
        }
        Ok(outcome)
    }
}

/// An arm of `clients` clients running `mix` over `window` on `engine`,
/// whose largest blob and key are known.
fn arm(
    engine: Arc<dyn Engine>,
    (clients, mix, window): (u32, Mix, Duration),
    (blob_max, max_id): (u32, u32),
    seed: u64,
    rate: Option<f64>,
) -> Result<ClientsArm> {
    check_plan(clients, window, rate)?;
    let scripts = (0..clients)
        .map(|i| super::mix::mix_script(mix, blob_max, seed.wrapping_add(u64::from(i))))
        .collect::<Result<Vec<_>>>()?;
    let none = ClientsTally {
        classes: Default::default(),
        busy_waits: 0,
        ops: 0,
        runs: Vec::new(),
        due: DueCounts::default(),
    };
    Ok(ClientsArm {
        engine,
        clients,
        how: Clients::Threads(scripts),
        mix,
        seed,
        blob_max,
        max_id,
        window,
        rate,
        tally: none,
        timed_runs: 0,
    })
}

/// Which run, and how: what every thread client of a run is given.
#[derive(Debug, Clone, Copy)]
struct RunTurn {
    max_id: u32,
    /// 0 for untimed runs, then 1, 2 ...: each timed run draws other keys.
    round: u32,
    /// Record each op's latency in the script's class histograms.
    timed: bool,
    rate: Option<f64>,
}

/// What one client's thread gives back: what it did, and its script
/// (None when the thread panicked).
type ClientRun = (Result<(SessionRun, u64)>, Option<Script>);

/// One run of every client: each opens its session and waits at a
/// barrier; once all have, this thread sets the window (from a start
/// [`lead`] ahead, `window` long) and lets them go; each runs its own
/// script (moved to its thread and back) over the window and closes.
/// Returns what each client did and the window, in nanoseconds from an
/// origin taken before the run.
fn run_clients(
    engine: &dyn Engine,
    scripts: &mut Vec<Script>,
    turn: RunTurn,
    window: Duration,
) -> Result<(Vec<ClientDone>, (u64, u64))> {
    let n = scripts.len() as u32;
    let opened = Barrier::new(scripts.len() + 1);
    let go = Barrier::new(scripts.len() + 1);
    let set: OnceLock<(Instant, Instant)> = OnceLock::new();
    let origin = Instant::now();
    let results: Vec<ClientRun> = std::thread::scope(|s| {
        let handles: Vec<_> = std::mem::take(scripts)
            .into_iter()
            .enumerate()
            .map(|(i, script)| {
                let (opened, go, set) = (&opened, &go, &set);
                let RunTurn { max_id, round, timed, rate } = turn;
                let turn = ClientTurn { client: i as u32, clients: n, max_id, round, timed, rate };
                s.spawn(move || {
                    let ready = || {
                        opened.wait();
                        go.wait();
                    };
                    let window = || set.get().copied().ok_or_else(|| Error::invalid("the clients' window was not set"));
                    (client_session(engine, &script, turn, &ready, &window), script)
                })
            })
            .collect();
        opened.wait();
        let start = Instant::now() + lead(n);
        let _ = set.set((start, start + window));
        go.wait();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok((run, script)) => (run, Some(script)),
                Err(_) => (Err(Error::invalid("a client thread panicked")), None),
            })
            .collect()
    });
    let mut runs = Vec::with_capacity(results.len());
    for (run, script) in results {
        if let (Ok((run, busy_waits)), Some(script)) = (&run, &script) {
            let span = ClientSpan::of(run, (origin, 0));
            runs.push(Ok(ClientDone { span, busy_waits: *busy_waits, classes: script.take_classes() }));
        } else if let Err(e) = run {
            runs.push(Err(e));
        }
        scripts.extend(script);
    }
    if scripts.len() != n as usize {
        return Err(Error::invalid("a client thread panicked; its script is lost"));
    }
    let ns = |t: Instant| t.saturating_duration_since(origin).as_nanos() as u64;
    let (start, deadline) = set.get().copied().ok_or_else(|| Error::invalid("the clients' window was not set"))?;
    Ok((runs.into_iter().collect::<Result<Vec<_>>>()?, (ns(start), ns(deadline))))
}

/// A run of clients over one window (`start_ns` to `deadline_ns` on their
/// spans' clock), at `rate` or in a closed loop. The operations are those
/// that ended in the window, summed, and the window is the loop; the
/// operation under way at the deadline counts for the share of it that
/// lay in the window (so that no client loses the part of the window it
/// spent on it, which a slow operation makes large): the loop is the
/// window shortened in that proportion. As at one client, the steady
/// figure holds the commit of the writes left open at the deadline and
/// the work a close finishes for them (the slowest writing client's of
/// each: they run at once). The setup runs from the first open to the
/// start; what else comes after the deadline (the rest of the operation
/// under way there, the closes up to the last client's) is a one-off,
/// reported apart. A window in which no operation ended is an error
/// naming the window and the rate.
pub fn window_outcome(
    spans: &[ClientSpan],
    (start_ns, deadline_ns): (u64, u64),
    rate: Option<f64>,
) -> Result<RunOutcome> {
    let (Some(t0), Some(end)) = (spans.iter().map(|s| s.opened_from_ns).min(), spans.iter().map(|s| s.closed_ns).max())
    else {
        return Err(Error::invalid("no client ran"));
    };
    let window_ns = deadline_ns.saturating_sub(start_ns);
    let ops: u64 = spans.iter().map(|s| s.ops).sum();
    if ops == 0 {
        let pace = rate.map_or_else(|| "in a closed loop".to_string(), |r| format!("at {r} ops/s"));
        return Err(Error::invalid(format!(
            "no operation of {} client(s) ended in the window of {:.3} s {pace}: the store took longer than the \
             window (lengthen it)",
            spans.len(),
            window_ns as f64 / 1e9
        )));
    }
    let in_window = |(began, ended): (u64, u64)| {
        deadline_ns.saturating_sub(began) as f64 / ended.saturating_sub(began).max(1) as f64
    };
    let parts: f64 = spans.iter().filter_map(|s| s.straddled_ns.map(in_window)).sum();
    let loop_ns = ((window_ns as f64 * ops as f64 / (ops as f64 + parts)).round() as u64).max(1);
    let longest = |f: &dyn Fn(&ClientSpan) -> u64| spans.iter().map(f).max().unwrap_or(0);
    let commit_ns = longest(&|s| if s.writes { s.committed_ns.saturating_sub(s.loop_end_ns) } else { 0 });
    let deferred_ns =
        longest(&|s| if s.close_finishes_writes { s.closed_ns.saturating_sub(s.committed_ns) } else { 0 });
    let phases = Phases {
        setup_ns: start_ns.saturating_sub(t0),
        loop_ns,
        commit_ns,
        close_ns: end.saturating_sub(deadline_ns).saturating_sub(commit_ns),
        checkpoint_ns: 0,
        kvtest_total_ns: end.saturating_sub(t0),
        deferred_ns,
    };
    Ok(summed(spans, phases))
}

/// The run of several sessions that each made a fixed count (`run
/// --threads`) as one: setup from the first open to the first loop, the
/// loop from the first start to the last end, the commit and the close
/// (and the work it finishes for the writes) the longest of any session;
/// operations and bytes summed. With `checkpoint_apart` a close that
/// checkpoints is timed as the checkpoint, outside kvtest's total (which
/// then ends at the last commit), as one session's is.
pub fn outcome_of(spans: &[ClientSpan], checkpoint_apart: bool) -> Result<RunOutcome> {
    let first = |f: fn(&ClientSpan) -> u64| spans.iter().map(f).min();
    let last = |f: fn(&ClientSpan) -> u64| spans.iter().map(f).max();
    let (Some(t0), Some(l0), Some(l1), Some(committed), Some(end)) = (
        first(|s| s.opened_from_ns),
        first(|s| s.loop_start_ns),
        last(|s| s.loop_end_ns),
        last(|s| s.committed_ns),
        last(|s| s.closed_ns),
    ) else {
        return Err(Error::invalid("no client ran"));
    };
    let longest = |f: &dyn Fn(&ClientSpan) -> u64| spans.iter().map(f).max().unwrap_or(0);
    let apart = checkpoint_apart && spans.iter().any(|s| s.close_checkpoints);
    let close_ns = longest(&|s| s.closed_ns.saturating_sub(s.committed_ns));
    let deferred_ns =
        longest(&|s| if s.close_finishes_writes { s.closed_ns.saturating_sub(s.committed_ns) } else { 0 });
    let phases = Phases {
        setup_ns: l0.saturating_sub(t0),
        loop_ns: l1.saturating_sub(l0),
        commit_ns: longest(&|s| s.committed_ns.saturating_sub(s.loop_end_ns)),
        close_ns: if apart { 0 } else { close_ns },
        checkpoint_ns: if apart { close_ns } else { 0 },
        kvtest_total_ns: (if apart { committed } else { end }).saturating_sub(t0),
        deferred_ns,
    };
    Ok(summed(spans, phases))
}

impl Arm for ClientsArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        self.one_run(ctx)
    }
}

/// The largest key, from one untimed session that asks for it.
fn largest_key(engine: &dyn Engine) -> Result<u32> {
    let session = engine.open(OpenMode { find_max: true, ..OpenMode::READ })?;
    let max = session.info().max_key;
    session.close()?;
    match max {
        Some(m) if m > 0 => Ok(m),
        _ => Err(Error::bad_input(engine.path(), "holds no blobs")),
    }
}

/// The clients' operations, misses and bytes summed, with `phases`.
fn summed(spans: &[ClientSpan], phases: Phases) -> RunOutcome {
    RunOutcome {
        ops: spans.iter().map(|s| s.ops).sum(),
        misses: spans.iter().map(|s| s.misses).sum(),
        bytes: spans.iter().map(|s| s.bytes).sum(),
        phases,
        opened_handle: spans.iter().any(|s| s.opened_handle),
    }
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
