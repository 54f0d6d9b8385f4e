//! Several clients at once against one store (`advise --clients N`): each
//! client is a thread with a session of its own (its own connection,
//! handle or temporary names: `OpenMode::client`), or a process of its own
//! ([`super::processes`]), running the same mix of reads and overwrites on
//! its own random keys, closed loop (the next operation when the last
//! returns). The clients start together once all have opened. Each records
//! its operations' latencies into per-class histograms of its own (one
//! clock read and one record per operation, no lock or atomic shared with
//! another client); they are merged after the run, never averaged. A run's
//! figure is its wall time over all clients' operations: the time per
//! operation of their summed throughput.

use std::sync::Barrier;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::processes::{ClientJob, ClientOrder, ClientProcesses, Launcher};
use super::session::{timed_session, Script, ScriptOp, SessionRun, SessionSpec, Work};
use crate::engine::{Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::Arm;
use crate::measure::{self, Latency, Phases, RunOutcome};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::{EngineSettings, Mix};
use crate::{Error, Result};

/// Most clients at once (`--clients`).
pub const MAX_CLIENTS: u32 = 1024;

/// Operations of each client per run, at least. A run spans the first
/// client's start to the last one's end: with a few operations each, the
/// skew of their wake-ups (16 clients on 2 cores) would weigh on it as
/// much as the store (a 16-process PostgreSQL run had 4 operations each).
pub const LEAST_OPS_PER_CLIENT: u64 = 32;

/// What N clients did over the timed runs of an arm: each class's
/// latencies merged over clients and runs, and the busy waits.
#[derive(Debug, Clone)]
pub struct ClientsTally {
    /// Latency by [`ScriptOp::class`] (read, overwrite, put, delete).
    pub classes: [Latency; 4],
    /// Times a client found the store locked by another and waited.
    pub busy_waits: u64,
    /// Operations of the timed runs, over all clients.
    pub ops: u64,
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
pub struct ClientsArm {
    /// Kept open for the arm's life (a throwaway server stays up while
    /// client processes come and go).
    engine: Box<dyn Engine>,
    clients: u32,
    how: Clients,
    mix: Mix,
    seed: u64,
    blob_max: u32,
    max_id: u32,
    /// Operations per run, over all clients.
    ops: u64,
    /// Writes per commit, so each client's run ends on a whole batch.
    batch: u64,
    tally: ClientsTally,
    timed_runs: u32,
    /// Each client's interval between operations' due times (`--rate`,
    /// an open loop); None: closed loop.
    pace: Option<std::time::Duration>,
}

/// What one client did in one run, on a clock all clients share.
pub(crate) struct ClientDone {
    pub span: ClientSpan,
    pub busy_waits: u64,
    /// By [`ScriptOp::class`]; empty when the run was not timed.
    pub classes: [Latency; 4],
}

impl ClientsArm {
    /// `clients` sessions' scripts for `mix` on `engine`, surveyed for its
    /// keys and largest blob; `ops` per run to start with (the rounds size
    /// it by time); with `rate`, operations per second over all clients,
    /// an open loop.
    pub fn prepare(
        mut engine: Box<dyn Engine>,
        clients: u32,
        mix: Mix,
        (ops, batch): (u64, u32),
        seed: u64,
        rate: Option<f64>,
    ) -> Result<ClientsArm> {
        if clients == 0 || clients > MAX_CLIENTS {
            return Err(Error::invalid(format!("--clients must be from 1 to {MAX_CLIENTS}")));
        }
        check_rate(rate)?;
        let pace = rate.map(|r| std::time::Duration::from_secs_f64(f64::from(clients) / r));
        let survey = engine.survey(mix.write > 0)?;
        let max_id = match survey.max_key {
            Some(m) if m > 0 => m,
            _ => largest_key(engine.as_ref())?,
        };
        let scripts = (0..clients)
            .map(|i| super::mix::mix_script(mix, survey.blob_max, seed.wrapping_add(u64::from(i))))
            .collect::<Result<Vec<_>>>()?;
        let none = ClientsTally { classes: Default::default(), busy_waits: 0, ops: 0 };
        let mut arm = ClientsArm {
            engine,
            clients,
            how: Clients::Threads(scripts),
            mix,
            seed,
            blob_max: survey.blob_max,
            max_id,
            ops: 0,
            batch: u64::from(batch.max(1)),
            tally: none,
            timed_runs: 0,
            pace,
        };
        arm.set_ops_per_run(ops);
        Ok(arm)
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
                pace_ns: self.pace.map(|p| p.as_nanos() as u64),
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

    fn one_run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        // Each timed run draws other keys, each client its own stream.
        let round = if ctx.timed { self.timed_runs + 1 } else { 0 };
        // The rounds time every op only when they keep latencies.
        let timed = ctx.timed && ctx.latency.is_some();
        let per_client = self.ops / u64::from(self.clients);
        let done = match &mut self.how {
            Clients::Threads(scripts) => {
                let how = (round, timed, self.pace);
                run_clients(self.engine.as_ref(), scripts, self.max_id, per_client, how)?
            }
            Clients::Processes(p) => p.run(ClientOrder { round, count: per_client, timed })?,
        };
        let outcome = outcome_of(&done.iter().map(|d| d.span).collect::<Vec<_>>(), false)?;
        if ctx.timed {
            self.timed_runs += 1;
            self.tally.ops += outcome.ops;
            self.tally.busy_waits += done.iter().map(|d| d.busy_waits).sum::<u64>();
            let mut all = ctx.latency;
            for d in &done {
                for (mine, theirs) in self.tally.classes.iter_mut().zip(&d.classes) {
                    mine.merge(theirs);
                    // The rounds' own histogram of the arm: every op.
                    if let Some(all) = all.as_deref_mut() {
                        all.merge(theirs);
                    }
                }
            }
        }
        Ok(outcome)
    }
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
    pub count: u64,
    /// Record each op's latency in the script's class histograms.
    pub timed: bool,
    pub pace: Option<std::time::Duration>,
}

/// One client's session of one run: opens, calls `ready` (the clients
/// start together there), runs `count` operations of its `script` on its
/// own key stream, closes. Returns the session and its busy waits. The
/// one body of a thread client and of a client process.
pub(crate) fn client_session(
    engine: &dyn Engine,
    script: &Script,
    turn: ClientTurn,
    ready: &dyn Fn(),
) -> Result<(SessionRun, u64)> {
    let ClientTurn { client, clients, max_id, round, count, timed, pace } = turn;
    // Only turns the clock reads on: the classes hold each op.
    let mut on = Latency::new();
    let spec = SessionSpec {
        mode: OpenMode { client: Some(client), ..OpenMode::measured(true, false) },
        max_id: Some(max_id),
        keys: |max| KeySequence::with_rng(Order::Random, 1, max, KvtestRng::stream(round * (clients + 1) + client + 1)),
        count,
        work: Work::PerClass(script, pace),
    };
    let mut busy = 0;
    let run = timed_session(engine, spec, timed.then_some(&mut on), ready, &mut |s| {
        busy = s.busy_waits();
    })?;
    Ok((run, busy))
}

/// What one client's thread gives back: what it did, and its script
/// (None when the thread panicked).
type ClientRun = (Result<(SessionRun, u64)>, Option<Script>);

/// One run of every client: each opens its session, waits for the others,
/// runs `per_client` operations of its own script (moved to its thread
/// and back) and closes. Returns what each client did.
fn run_clients(
    engine: &dyn Engine,
    scripts: &mut Vec<Script>,
    max_id: u32,
    per_client: u64,
    (round, timed, pace): (u32, bool, Option<std::time::Duration>),
) -> Result<Vec<ClientDone>> {
    let n = scripts.len() as u32;
    let barrier = Barrier::new(scripts.len());
    let origin = (Instant::now(), 0);
    let results: Vec<ClientRun> = std::thread::scope(|s| {
        let handles: Vec<_> = std::mem::take(scripts)
            .into_iter()
            .enumerate()
            .map(|(i, script)| {
                let barrier = &barrier;
                let turn = ClientTurn { client: i as u32, clients: n, max_id, round, count: per_client, timed, pace };
                s.spawn(move || {
                    let ready = || {
                        barrier.wait();
                    };
                    (client_session(engine, &script, turn, &ready), script)
                })
            })
            .collect();
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
            let span = ClientSpan::of(run, origin);
            runs.push(Ok(ClientDone { span, busy_waits: *busy_waits, classes: script.take_classes() }));
        } else if let Err(e) = run {
            runs.push(Err(e));
        }
        scripts.extend(script);
    }
    if scripts.len() != n as usize {
        return Err(Error::invalid("a client thread panicked; its script is lost"));
    }
    runs.into_iter().collect()
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
        }
    }
}

/// The run of all clients as one: setup from the first open to the first
/// loop, the loop from the first start to the last end, the commit and
/// the close (and the work it finishes for the writes) the longest of any
/// client; operations and bytes summed. With `checkpoint_apart` a close
/// that checkpoints is timed as the checkpoint, outside kvtest's total
/// (which then ends at the last commit), as one session's is.
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
    Ok(RunOutcome {
        ops: spans.iter().map(|s| s.ops).sum(),
        misses: spans.iter().map(|s| s.misses).sum(),
        bytes: spans.iter().map(|s| s.bytes).sum(),
        phases,
        opened_handle: spans.iter().any(|s| s.opened_handle),
    })
}

impl Arm for ClientsArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        self.one_run(ctx)
    }
    fn ops_per_run(&self) -> Option<u64> {
        Some(self.ops)
    }
    /// Whole batches per client, at least [`LEAST_OPS_PER_CLIENT`] each.
    fn set_ops_per_run(&mut self, ops: u64) {
        let step = u64::from(self.clients) * self.batch;
        let least = u64::from(self.clients) * LEAST_OPS_PER_CLIENT;
        self.ops = ops.max(least).div_ceil(step) * step;
    }
}

/// `--rate`: operations per second over all clients, above 0.
pub fn check_rate(rate: Option<f64>) -> Result<()> {
    match rate {
        Some(r) if !(r.is_finite() && r > 0.0) => Err(Error::invalid(format!("--rate {r}: must be above 0 ops/s"))),
        _ => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{DatasetSpec, DbAccess, EngineSettings, FileParams, FileWrite, SyncLevel};
    use crate::util::progress::Silent;

    /// A tiny dataset as a database and as files.
    fn dataset(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let (db, flat) = (dir.join("kv.db"), dir.join("flat"));
        let spec = DatasetSpec { count: 100, size: 1000, ..DatasetSpec::default() };
        crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
        crate::engine::dataset::export(&db, &flat, false, false, &Silent).unwrap();
        (db, flat)
    }

    /// One untimed and two timed runs of `clients` clients at 50:50.
    fn runs(
        path: &std::path::Path,
        settings: &EngineSettings,
        clients: u32,
        rate: Option<f64>,
    ) -> (ClientsTally, Latency, u64) {
        let engine = crate::engine::open(path, settings).unwrap();
        let mix = Mix { read: 50, write: 50 };
        let mut arm = ClientsArm::prepare(engine, clients, mix, (30, 1), 7, rate).unwrap();
        let per_run = arm.ops_per_run().unwrap();
        arm.run(measure::RunContext { latency: None, timed: false }).unwrap();
        let mut all = Latency::new();
        for _ in 0..2 {
            let out = arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap();
            assert_eq!(out.ops, per_run, "every client made its share");
        }
        (arm.tally().clone(), all, per_run)
    }

    #[test]
    fn every_clients_operations_are_counted_and_timed_once() {
        let d = tempfile::tempdir().unwrap();
        let (db, flat) = dataset(d.path());
        let mut sqlite = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
        sqlite.db.journal_mode = Some("wal".into());
        sqlite.db.sync = Some(SyncLevel::Full);
        sqlite.db.access = DbAccess::BlobApi;
        let files = EngineSettings {
            files: FileParams { write: FileWrite::Replace, fsync: true, sync_dir: true, ..FileParams::default() },
            commit_every: Some(1),
            ..EngineSettings::default()
        };
        for (path, settings) in [(&db, &sqlite), (&flat, &files)] {
            let (tally, all, per_run) = runs(path, settings, 4, None);
            assert_eq!(per_run, 128, "30 asked: at least 32 for each of 4 clients");
            assert_eq!(tally.ops, 2 * per_run);
            assert_eq!(tally.all().count(), 2 * per_run, "one record per op, in its class");
            assert_eq!(all.count(), 2 * per_run, "the rounds' histogram holds them all");
            let classes: Vec<&str> = tally.by_class().iter().map(|(c, _)| *c).collect();
            assert_eq!(classes, ["read", "overwrite"]);
        }
        // Four writers that each took the lock left a sound database,
        // and no temporary file is left beside the blobs.
        let kv = crate::engine::dataset::open_kv(&db, false).unwrap();
        let ok: String = kv.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
        let tmp = std::fs::read_dir(&flat)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().to_string_lossy().ends_with(".tmp"));
        assert_eq!(tmp.count(), 0);
    }

    /// An open loop at 2,000 ops/s over 2 clients: each client's op i is
    /// due 1 ms after its op i-1, so a run of 64 ops cannot end before its
    /// last op is due, and every op is timed from when it was due.
    #[test]
    fn an_open_loop_waits_for_each_due_time_and_times_from_it() {
        let d = tempfile::tempdir().unwrap();
        let (db, _) = dataset(d.path());
        let settings = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
        let engine = crate::engine::open(&db, &settings).unwrap();
        let mix = Mix { read: 1, write: 0 };
        let mut arm = ClientsArm::prepare(engine, 2, mix, (32, 1), 7, Some(2000.0)).unwrap();
        let mut all = Latency::new();
        let out = arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap();
        assert_eq!(out.ops, 64);
        // 32 ops per client (the least), the last due 31 ms after the first.
        assert!(out.phases.loop_ns >= 31_000_000, "{}", out.phases.loop_ns);
        assert_eq!(all.count(), 64);
    }

    #[test]
    fn bad_client_counts_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let (db, _) = dataset(d.path());
        let mix = Mix { read: 1, write: 1 };
        for n in [0, MAX_CLIENTS + 1] {
            let engine = crate::engine::open(&db, &EngineSettings::default()).unwrap();
            assert!(ClientsArm::prepare(engine, n, mix, (10, 1), 1, None).is_err(), "{n}");
        }
        for rate in [0.0, -5.0, f64::NAN] {
            let engine = crate::engine::open(&db, &EngineSettings::default()).unwrap();
            let e = ClientsArm::prepare(engine, 2, mix, (10, 1), 1, Some(rate)).err().unwrap().to_string();
            assert!(e.contains("--rate"), "{e}");
        }
    }
}
