//! Several clients at once against one store (`advise --clients N`): each
//! client is a thread with a session of its own (its own connection,
//! handle or temporary names: `OpenMode::client`), running the same mix of
//! reads and overwrites on its own random keys, closed loop (the next
//! operation when the last returns). The clients start together once all
//! have opened. Each records its operations' latencies into per-class
//! histograms of its own (one clock read and one record per operation, no
//! lock or atomic shared with another client); they are merged after the
//! run, never averaged. A run's figure is its wall time over all clients'
//! operations: the time per operation of their summed throughput.

use std::sync::Barrier;
use std::time::Instant;

use super::session::{timed_session, Script, ScriptOp, SessionRun, SessionSpec, Work};
use crate::engine::{Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::Arm;
use crate::measure::{self, Latency, Phases, RunOutcome};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::Mix;
use crate::{Error, Result};

/// Most clients at once (`--clients`).
pub const MAX_CLIENTS: u32 = 1024;

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

/// One store used by `clients` clients at once, each running `mix`,
/// prepared outside every timer and run once at a time, as one arm of
/// interleaved rounds ([`measure::rounds`]).
pub struct ClientsArm {
    engine: Box<dyn Engine>,
    clients: u32,
    /// One script per client: its own content pool and class histograms.
    scripts: Vec<Script>,
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
            scripts,
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
        let how = (round, timed, self.pace);
        let runs = run_clients(self.engine.as_ref(), &mut self.scripts, self.max_id, per_client, how)?;
        let outcome = outcome_of(&runs.iter().map(|(r, _)| r).collect::<Vec<_>>())?;
        if ctx.timed {
            self.timed_runs += 1;
            self.tally.ops += outcome.ops;
            self.tally.busy_waits += runs.iter().map(|(_, busy)| busy).sum::<u64>();
            let mut all = ctx.latency;
            for script in &self.scripts {
                for (mine, theirs) in self.tally.classes.iter_mut().zip(script.take_classes()) {
                    mine.merge(&theirs);
                    // The rounds' own histogram of the arm: every op.
                    if let Some(all) = all.as_deref_mut() {
                        all.merge(&theirs);
                    }
                }
            }
        }
        Ok(outcome)
    }
}

/// What one client's thread gives back: its session's run and busy
/// waits, and its script (None when the thread panicked).
type ClientRun = (Result<(SessionRun, u64)>, Option<Script>);

/// One run of every client: each opens its session, waits for the others,
/// runs `per_client` operations of its own script (moved to its thread
/// and back) and closes. Returns each client's session and busy waits.
fn run_clients(
    engine: &dyn Engine,
    scripts: &mut Vec<Script>,
    max_id: u32,
    per_client: u64,
    (round, timed, pace): (u32, bool, Option<std::time::Duration>),
) -> Result<Vec<(SessionRun, u64)>> {
    let n = scripts.len() as u32;
    let barrier = Barrier::new(scripts.len());
    let results: Vec<ClientRun> = std::thread::scope(|s| {
        let handles: Vec<_> = std::mem::take(scripts)
            .into_iter()
            .enumerate()
            .map(|(i, script)| {
                let barrier = &barrier;
                let i = i as u32;
                s.spawn(move || {
                    // Only turns the clock reads on: the classes hold each op.
                    let mut on = Latency::new();
                    let spec = SessionSpec {
                        mode: OpenMode { client: Some(i), ..OpenMode::measured(true, false) },
                        max_id: Some(max_id),
                        keys: |max| {
                            KeySequence::with_rng(Order::Random, 1, max, KvtestRng::stream(round * (n + 1) + i + 1))
                        },
                        count: per_client,
                        work: Work::PerClass(&script, pace),
                    };
                    let mut busy = 0;
                    let ready = || {
                        barrier.wait();
                    };
                    let run = timed_session(engine, spec, timed.then_some(&mut on), &ready, &mut |s| {
                        busy = s.busy_waits();
                    });
                    (run.map(|r| (r, busy)), script)
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
        scripts.extend(script);
        runs.push(run);
    }
    if scripts.len() != n as usize {
        return Err(Error::invalid("a client thread panicked; its script is lost"));
    }
    runs.into_iter().collect()
}

/// The run of all clients as one: setup from the first open to the first
/// loop, the loop from the first start to the last end, the commit and
/// the close (and the work it finishes for the writes) the longest of any
/// client; operations and bytes summed.
pub fn outcome_of(runs: &[&SessionRun]) -> Result<RunOutcome> {
    let first = |f: fn(&SessionRun) -> Instant| runs.iter().map(|r| f(r)).min();
    let last = |f: fn(&SessionRun) -> Instant| runs.iter().map(|r| f(r)).max();
    let (Some(t0), Some(l0), Some(l1), Some(end)) = (
        first(|r| r.times.opened_from),
        first(|r| r.times.loop_start),
        last(|r| r.times.loop_end),
        last(|r| r.times.closed),
    ) else {
        return Err(Error::invalid("no client ran"));
    };
    let ns = |d: std::time::Duration| d.as_nanos() as u64;
    let longest = |f: &dyn Fn(&SessionRun) -> u64| runs.iter().map(|r| f(r)).max().unwrap_or(0);
    let close_ns = longest(&|r| ns(r.times.closed - r.times.committed));
    let deferred_ns =
        longest(&|r| if r.info.close_finishes_writes { ns(r.times.closed - r.times.committed) } else { 0 });
    let phases = Phases {
        setup_ns: ns(l0 - t0),
        loop_ns: ns(l1 - l0),
        commit_ns: longest(&|r| ns(r.times.committed - r.times.loop_end)),
        close_ns,
        checkpoint_ns: 0,
        kvtest_total_ns: ns(end - t0),
        deferred_ns,
    };
    Ok(RunOutcome {
        ops: runs.iter().map(|r| r.ops).sum(),
        misses: runs.iter().map(|r| r.misses).sum(),
        bytes: runs.iter().map(|r| r.bytes).sum(),
        phases,
        opened_handle: runs.iter().any(|r| r.info.opened_handle),
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
    /// Whole batches per client, at least one each.
    fn set_ops_per_run(&mut self, ops: u64) {
        let step = u64::from(self.clients) * self.batch;
        self.ops = ops.max(1).div_ceil(step) * step;
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
            assert_eq!(per_run, 32, "30 asked, whole batches for 4 clients");
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
    /// due 1 ms after its op i-1, so a run of 32 ops cannot end before its
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
        assert_eq!(out.ops, 32);
        // 16 ops per client, the last due 15 ms after the first.
        assert!(out.phases.loop_ns >= 15_000_000, "{}", out.phases.loop_ns);
        assert_eq!(all.count(), 32);
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
