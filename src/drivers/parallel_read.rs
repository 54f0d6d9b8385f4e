//! `run --threads T`: a kvtest dataset read by T threads at once. Each
//! thread has its own database connection (opened without SQLite's mutex,
//! never shared) or its own file handles, and its own key stream
//! (`KvtestRng::stream(i)`, or a staggered start for --asc/--desc); the
//! threads start together after all have opened. The per-op figures of a
//! run are wall time over all threads' operations, i.e. total throughput.

use std::sync::Barrier;
use std::time::Instant;

use super::clients::{outcome_of, ClientSpan};
use super::run::{self, RunOptions, RunReport};
use super::session::{timed_session, SessionRun, SessionSpec, Work};
use crate::engine::{self, Engine, OpenMode};
use crate::measure::cold::{self, EvictionReport};
use crate::measure::rounds::Arm;
use crate::measure::{self, Latency, RunOutcome};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::{Error, Result};

pub fn run(opts: &RunOptions, threads: u32, id: &str, label: &str) -> Result<RunReport> {
    let arm = std::cell::RefCell::new(ParallelArm::prepare(opts, threads)?);
    let mut evict = || arm.borrow_mut().evict_now();
    let measured = measure::measure(&opts.plan, Some(&mut evict), |ctx| arm.borrow_mut().one_run(ctx))?;
    arm.into_inner().finish(id, label, measured)
}

/// One store read by `threads` threads, prepared outside every timer, run
/// once at a time: alone by [`run`], or as one arm of interleaved rounds
/// ([`measure::rounds`]).
pub struct ParallelArm {
    engine: Box<dyn Engine>,
    opts: RunOptions,
    threads: u32,
    max_id: u32,
    info: Option<engine::SessionInfo>,
    cache_files: Option<Vec<std::path::PathBuf>>,
}

impl ParallelArm {
    /// Checks the options and finds the key range (before any timer; kvtest's
    /// single-thread run asks inside it).
    pub fn prepare(opts: &RunOptions, threads: u32) -> Result<ParallelArm> {
        if threads == 0 || threads > 1024 {
            return Err(Error::invalid("--threads must be from 1 to 1024"));
        }
        if opts.update {
            return Err(Error::invalid("--threads reads only; --update with several writers is not supported"));
        }
        if opts.stats {
            return Err(Error::invalid("--stats describes one connection; it cannot be used with --threads"));
        }
        if opts.count < u64::from(threads) {
            return Err(Error::invalid("--count must be at least --threads (each thread reads at least one blob)"));
        }
        run::validate(opts)?;
        let mut engine = engine::open(&opts.path, &opts.settings)?;
        let survey = engine.survey(false)?;
        let max_id = match opts.max_id.or(survey.max_key) {
            Some(m) => m,
            None => run::largest_key(engine.as_ref())?,
        };
        Ok(ParallelArm { engine, opts: opts.clone(), threads, max_id, info: None, cache_files: None })
    }

    /// Empties the page cache of the store's files (listed once).
    fn evict_now(&mut self) -> Result<EvictionReport> {
        let files = match &mut self.cache_files {
            Some(f) => f,
            none => none.insert(self.engine.cache_files()?),
        };
        cold::evict(files)
    }

    fn one_run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        let (outcome, first) = one_run(self.engine.as_ref(), &self.opts, self.threads, self.max_id, ctx.latency)?;
        self.info = Some(first);
        Ok(outcome)
    }

    /// The report of the runs `measured` took: the checks after reads and
    /// the experiment as stored.
    pub fn finish(self, id: &str, label: &str, measured: measure::Measured) -> Result<RunReport> {
        self.engine.verify_after_reads()?;
        let info = self.info.unwrap_or_default();
        run::report_of(self.engine.as_ref(), &self.opts, (self.threads, self.max_id), info, measured, (id, label))
    }
}

impl Arm for ParallelArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        self.opts.plan.cold.then(|| self.evict_now())
    }
    fn run(&mut self, ctx: measure::RunContext<'_>) -> Result<RunOutcome> {
        self.one_run(ctx)
    }
    fn warms_up(&self) -> bool {
        self.opts.plan.warmup > 0
    }
}

/// One of several threads' sessions that start together: each opens its
/// own, waits at `barrier` until all have, then runs the one timed loop,
/// with a latency histogram of its own when `latency` (merged after the
/// run: nothing is shared inside the loop).
pub fn session_in_step<K: FnOnce(u32) -> KeySequence>(
    engine: &dyn Engine,
    spec: SessionSpec<'_, K>,
    latency: bool,
    barrier: &Barrier,
) -> Result<(SessionRun, Option<Latency>)> {
    let mut hist = latency.then(Latency::new);
    let ready = || {
        barrier.wait();
    };
    let run = timed_session(engine, spec, hist.as_mut(), &ready, &mut |_| {})?;
    Ok((run, hist))
}

/// Where thread `i` of `n` starts: its own random stream, or an even share
/// of the key range apart from its neighbours so they do not read in step.
fn keys_for(opts: &RunOptions, i: u32, n: u32, max_id: u32) -> KeySequence {
    let start = opts.start.min(max_id);
    match opts.order {
        Order::Random => KeySequence::with_rng(Order::Random, start, max_id, KvtestRng::stream(i)),
        order => {
            let offset = (u64::from(i) * u64::from(max_id) / u64::from(n)) as u32;
            KeySequence::new(order, (start - 1 + offset) % max_id + 1, max_id)
        }
    }
}

/// One timed run: every thread opens its own session, waits for the others,
/// reads its share through the same timed session as a single-threaded run,
/// commits and closes. The run's phases span all threads, as several
/// clients' do ([`outcome_of`]).
fn one_run(
    engine: &dyn Engine,
    opts: &RunOptions,
    threads: u32,
    max_id: u32,
    latency: Option<&mut Latency>,
) -> Result<(RunOutcome, engine::SessionInfo)> {
    let barrier = Barrier::new(threads as usize);
    let origin = (Instant::now(), 0);
    let want_latency = latency.is_some();
    let results: Vec<Result<(SessionRun, Option<Latency>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let count = opts.count / u64::from(threads) + u64::from(u64::from(i) < opts.count % u64::from(threads));
                let barrier = &barrier;
                s.spawn(move || {
                    let spec = SessionSpec {
                        mode: OpenMode::measured(false, false),
                        max_id: Some(max_id),
                        keys: |max| keys_for(opts, i, threads, max),
                        count,
                        work: Work::Read,
                    };
                    session_in_step(engine, spec, want_latency, barrier)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::invalid("a reader thread panicked"))))
            .collect()
    });
    let runs = results.into_iter().collect::<Result<Vec<_>>>()?;
    let Some(info) = runs.first().map(|(r, _)| r.info.clone()) else {
        return Err(Error::invalid("no reader thread ran"));
    };
    let spans: Vec<ClientSpan> = runs.iter().map(|(r, _)| ClientSpan::of(r, origin)).collect();
    let outcome = outcome_of(&spans, opts.settings.db.nocheckpoint)?;
    if let Some(hist) = latency {
        for l in runs.iter().filter_map(|(_, l)| l.as_ref()) {
            hist.merge(l);
        }
    }
    Ok((outcome, info))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::DatasetSpec;
    use crate::records::Plan;
    use crate::util::progress::Silent;

    #[test]
    fn several_readers_read_every_blob_they_were_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kv.db");
        let spec = DatasetSpec { count: 200, size: 1000, ..DatasetSpec::default() };
        crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
        crate::engine::dataset::export(&db, &dir.path().join("flat"), false, false, &Silent).unwrap();
        for path in [db.clone(), dir.path().join("flat")] {
            for order in [Order::Random, Order::Asc] {
                let mut opts = RunOptions::new(&path);
                opts.count = 301;
                opts.order = order;
                opts.plan = Plan { repeat: 2, warmup: 0, cold: false, latency: true };
                let r = run(&opts, 3, "t", "t").unwrap();
                let e = &r.experiment;
                assert_eq!(e.params.threads, 3);
                assert!(e.runs.iter().all(|x| x.ops == 301 && x.bytes == 301 * 1000), "{:?}", e.runs);
                assert_eq!(e.latency.unwrap().count, 602, "every read of both runs timed once");
                assert_eq!(r.max_id, 200);
            }
        }
    }

    #[test]
    fn threads_get_different_keys() {
        let opts = RunOptions { order: Order::Asc, ..RunOptions::new("x") };
        assert_eq!(keys_for(&opts, 0, 4, 100).current(), 1);
        assert_eq!(keys_for(&opts, 1, 4, 100).current(), 26);
        let r = RunOptions { order: Order::Random, ..opts.clone() };
        let (mut a, mut b) = (keys_for(&r, 0, 2, 1000), keys_for(&r, 1, 2, 1000));
        a.advance();
        b.advance();
        assert_ne!(a.current(), b.current());
    }

    #[test]
    fn writes_and_bad_counts_are_refused() {
        let opts = RunOptions { update: true, ..RunOptions::new("x") };
        assert!(run(&opts, 2, "t", "t").unwrap_err().to_string().contains("reads only"));
        let opts = RunOptions { count: 1, ..RunOptions::new("x") };
        assert!(run(&opts, 2, "t", "t").is_err());
    }
}
