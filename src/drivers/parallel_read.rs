//! `run --threads T`: a kvtest dataset read by T threads at once. Each
//! thread has its own database connection (opened without SQLite's mutex,
//! never shared) or its own file handles, and its own key stream
//! (`KvtestRng::stream(i)`, or a staggered start for --asc/--desc); the
//! threads start together after all have opened. The per-op figures of a
//! run are wall time over all threads' operations, i.e. total throughput.

use std::path::Path;
use std::sync::Barrier;
use std::time::Instant;

use crate::drivers::run::{self, RunOptions, RunReport};
use crate::engine::dataset::{detect, open_kv};
use crate::engine::{non_blob_values, DbSession, FileStore};
use crate::measure::cold::{self, EvictionReport};
use crate::measure::Experiment;
use crate::measure::{self, Latency, Phases, RunOutcome};
use crate::records::keys::{KeySequence, KvtestRng, Order};
use crate::records::{Layout, WorkloadParams};
use crate::{Error, Result};

/// Page size, cache size and journal mode, as the database reports them.
type DbInfo = (i64, i64, String);

/// What one thread saw, with the instants the run's phases are made of.
struct ThreadRun {
    ops: u64,
    misses: u64,
    bytes: u64,
    opened_from: Instant,
    loop_start: Instant,
    loop_end: Instant,
    committed: Instant,
    closed: Instant,
    latency: Option<Latency>,
    /// What the database reported (page size, cache size, journal mode).
    db: Option<DbInfo>,
}

pub fn run(opts: &RunOptions, threads: u32, id: &str, label: &str) -> Result<RunReport> {
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
    let path = opts.path.as_path();
    let layout = detect(path)?;
    run::validate(opts)?;
    let pre = run::preflight(opts, layout)?;
    // Found before any timer (kvtest's single-thread run asks inside it).
    let max_id = match opts.max_id.or(pre.max_key) {
        Some(m) => m,
        None => max_key(path)?,
    };
    let mut evict_files = None;
    let mut evict = || -> Result<EvictionReport> {
        let files = match &mut evict_files {
            Some(f) => f,
            none => none.insert(run::eviction_list(path, layout)?),
        };
        cold::evict(files)
    };
    let mut db_info = None;
    let measured = measure::measure(&opts.plan, Some(&mut evict), |ctx| {
        let (outcome, info) = one_run(opts, layout, threads, max_id, ctx.latency)?;
        db_info = info.or(db_info.take());
        Ok(outcome)
    })?;
    if layout == Layout::Db {
        let n = non_blob_values(path)?;
        if n > 0 {
            return Err(Error::bad_input(
                path,
                format!("table kv holds {n} values that are not BLOBs; results discarded"),
            ));
        }
    }
    let integrity = if opts.integrity_check && layout == Layout::Db { run::integrity_check(path)? } else { Vec::new() };
    let params = WorkloadParams {
        path: path.display().to_string(),
        layout,
        update: false,
        count: opts.count,
        max_id,
        start: opts.start,
        order: opts.order,
        threads,
        db: opts.db.clone(),
        files: opts.files,
        plan: opts.plan,
        seed: None,
    };
    let (page_size, cache_size, journal_mode) = match db_info {
        Some((p, c, j)) => (Some(p), Some(c), Some(j)),
        None => (None, None, None),
    };
    let interrupted = measured.interrupted;
    Ok(RunReport {
        experiment: Experiment::from_measured(id, label, params, measured),
        layout,
        max_id,
        page_size,
        cache_size,
        journal_mode,
        integrity,
        sqlite_stats: None,
        interrupted,
    })
}

fn max_key(path: &Path) -> Result<u32> {
    let kv = open_kv(path, false)?;
    let m: Option<i64> = kv
        .conn
        .query_row("SELECT max(k) FROM kv", [], |r| r.get(0))
        .map_err(|e| crate::engine::dataset::db_error(path, "cannot read kv", e))?;
    match m {
        Some(m) if m > 0 => Ok(m.min(i64::from(i32::MAX)) as u32),
        _ => Err(Error::bad_input(path, "table kv is empty")),
    }
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

fn one_run(
    opts: &RunOptions,
    layout: Layout,
    threads: u32,
    max_id: u32,
    latency: Option<&mut Latency>,
) -> Result<(RunOutcome, Option<DbInfo>)> {
    let barrier = Barrier::new(threads as usize);
    let want_latency = latency.is_some();
    let results: Vec<Result<ThreadRun>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let count = opts.count / u64::from(threads) + u64::from(u64::from(i) < opts.count % u64::from(threads));
                let keys = keys_for(opts, i, threads, max_id);
                let barrier = &barrier;
                s.spawn(move || thread_run(opts, layout, keys, count, max_id, want_latency, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::invalid("a reader thread panicked"))))
            .collect()
    });
    let runs = results.into_iter().collect::<Result<Vec<_>>>()?;
    let first = |f: fn(&ThreadRun) -> Instant| runs.iter().map(f).min();
    let last = |f: fn(&ThreadRun) -> Instant| runs.iter().map(f).max();
    let (Some(t0), Some(l0), Some(l1), Some(end)) =
        (first(|r| r.opened_from), first(|r| r.loop_start), last(|r| r.loop_end), last(|r| r.closed))
    else {
        return Err(Error::invalid("no reader thread ran"));
    };
    let ns = |d: std::time::Duration| d.as_nanos() as u64;
    let longest = |f: fn(&ThreadRun) -> std::time::Duration| runs.iter().map(|r| ns(f(r))).max().unwrap_or(0);
    let loop_ns = ns(l1 - l0);
    let phases = if layout == Layout::Db {
        let (commit_ns, close_ns) = (longest(|r| r.committed - r.loop_end), longest(|r| r.closed - r.committed));
        let nocheckpoint = opts.db.nocheckpoint;
        Phases {
            setup_ns: ns(l0 - t0),
            loop_ns,
            commit_ns,
            close_ns: if nocheckpoint { 0 } else { close_ns },
            checkpoint_ns: if nocheckpoint { close_ns } else { 0 },
            kvtest_total_ns: if nocheckpoint { ns(last(|r| r.committed).unwrap_or(end) - t0) } else { ns(end - t0) },
        }
    } else {
        Phases { loop_ns, kvtest_total_ns: loop_ns, ..Phases::default() }
    };
    if let Some(hist) = latency {
        for r in &runs {
            if let Some(l) = &r.latency {
                hist.merge(l);
            }
        }
    }
    let sum = |f: fn(&ThreadRun) -> u64| runs.iter().map(f).sum::<u64>();
    let outcome = RunOutcome { ops: sum(|r| r.ops), misses: sum(|r| r.misses), bytes: sum(|r| r.bytes), phases };
    let info = runs.into_iter().next().and_then(|r| r.db);
    Ok((outcome, info))
}

/// One reader: open (connection or file store), wait for the others, read
/// `count` blobs with the same timed loop as a single-threaded run, commit
/// and close. A thread whose open fails still reaches the barrier.
fn thread_run(
    opts: &RunOptions,
    layout: Layout,
    keys: KeySequence,
    count: u64,
    max_id: u32,
    want_latency: bool,
    barrier: &Barrier,
) -> Result<ThreadRun> {
    let mut latency = want_latency.then(Latency::new);
    let opened_from = Instant::now();
    if layout == Layout::Db {
        let session = DbSession::open(&opts.path, &opts.db, false, false, None);
        barrier.wait();
        let mut session = session?;
        let totals = run::read_loop(&mut session, keys, count, max_id, latency.as_mut())?;
        session.commit()?;
        let committed = Instant::now();
        let db = Some((session.page_size, session.cache_size, session.journal_mode.clone()));
        session.close()?;
        let closed = Instant::now();
        return Ok(ThreadRun {
            ops: totals.ops,
            misses: totals.misses,
            bytes: totals.bytes,
            opened_from,
            loop_start: totals.start,
            loop_end: totals.end,
            committed,
            closed,
            latency,
            db,
        });
    }
    let store = FileStore::new(&opts.path, layout, opts.files);
    barrier.wait();
    let mut store = store?;
    let totals = run::read_loop(&mut store, keys, count, max_id, latency.as_mut())?;
    Ok(ThreadRun {
        ops: totals.ops,
        misses: totals.misses,
        bytes: totals.bytes,
        opened_from,
        loop_start: totals.start,
        loop_end: totals.end,
        committed: totals.end,
        closed: totals.end,
        latency,
        db: None,
    })
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
