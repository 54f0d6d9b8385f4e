//! `concurrency`: SQLite under many threads, as the shared-connection vs
//! connection-per-thread study measured it (reads, inserts, both at once;
//! WAL or DELETE; shared cache; read-only; synchronous), and kvtest blobs
//! under parallel readers. Each point is time-bounded; every run starts
//! from a fresh copy of the table; every write run is checked afterwards.

mod blobs;
mod conclusions;
mod driver;
mod options;
mod section;
mod sqlite;
mod table;
mod worker;

pub use blobs::{BlobPoint, BlobReaders, BLOB_SIZE, BLOB_THREADS};
pub use conclusions::{evaluate, Claim, Comparison, Conclusion, Verdict, TIE};
pub use driver::{run_once, RunSpec, RunTallies};
pub use options::{ConcurrencyOptions, Config, Journal, Modes, Sharing, Workload, MAX_THREADS, MODE_NAMES};
pub use section::{ConcurrencySection, Point, PointRun, Settings, SideRun, SideSummary, ERRORS_DOMINATE_PCT};

use std::path::Path;

use crate::measure::{clock_cost_ns, stop_requested, Latency};
use crate::oscount::OsCounters;
use crate::progress::Progress;
use crate::results::Experiment;
use crate::{Error, Result};

/// Everything measured: the section, and the blob readers' experiments
/// (which go into the result file's `experiments`).
#[derive(Debug, Clone)]
pub struct Measured {
    pub section: ConcurrencySection,
    pub experiments: Vec<Experiment>,
}

/// CPUs this process may use.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

pub fn run(opts: &ConcurrencyOptions, progress: &dyn Progress) -> Result<Measured> {
    opts.validate()?;
    if !opts.workdir.is_dir() {
        return Err(Error::bad_input(&opts.workdir, "no such directory"));
    }
    let work = tempfile::Builder::new()
        .prefix(".blobbench-concurrency-")
        .tempdir_in(&opts.workdir)
        .map_err(|e| Error::io(&opts.workdir, "cannot create a working directory", e))?;
    let plan = opts.plan();
    let blobs = opts.workloads.contains(&Workload::Blobs);
    let units = plan.len() * opts.threads.len() * opts.repeat as usize + if blobs { 9 } else { 0 };
    progress.start("concurrency", units as u64);
    let mut points = Vec::new();
    let mut interrupted = false;
    let mut templates = table::Templates::new(work.path(), opts.rows, opts.seed);
    'points: for &(workload, config) in &plan {
        for &threads in &opts.threads {
            let p = measure_point(opts, work.path(), &mut templates, workload, config, threads, progress)?;
            match p {
                Some(p) => points.push(p),
                None => {
                    interrupted = true;
                    break 'points;
                }
            }
        }
    }
    let (blob_readers, experiments) = if blobs && !interrupted {
        let (b, e) = blobs::measure(opts, work.path(), progress)?;
        interrupted = stop_requested();
        (Some(b), e)
    } else {
        (None, Vec::new())
    };
    progress.finish();
    let cores = cores();
    let section = ConcurrencySection {
        settings: Settings {
            threads: opts.threads.clone(),
            duration_s: opts.duration.as_secs_f64(),
            repeat: opts.repeat,
            rows: opts.rows,
            batch: opts.batch,
            busy_timeout_ms: opts.busy_timeout_ms,
            quick: opts.quick,
            workloads: opts.workloads.clone(),
            modes: opts.modes.clone(),
            cores,
            sqlite_version: rusqlite::version().to_string(),
            key_pool: table::KEY_POOL as u32,
            value_pool: table::VALUE_POOL as u32,
            clock_cost_ns: clock_cost_ns(),
            tie_pct: (TIE - 1.0) * 100.0,
        },
        conclusions: evaluate(&points, blob_readers.as_ref(), cores),
        points,
        blob_readers,
        interrupted,
    };
    Ok(Measured { section, experiments })
}

/// `repeat` runs of one point, each on a fresh copy of the table. None when
/// interrupted before a run completed (a partial run is not reported).
fn measure_point(
    opts: &ConcurrencyOptions,
    work: &Path,
    templates: &mut table::Templates,
    workload: Workload,
    config: Config,
    threads: u32,
    progress: &dyn Progress,
) -> Result<Option<Point>> {
    let db = work.join("run.db");
    let (mut read_lat, mut write_lat) = (Latency::new(), Latency::new());
    let mut runs = Vec::with_capacity(opts.repeat as usize);
    for _ in 0..opts.repeat {
        let rows_before = templates.fresh(config.journal, workload != Workload::Write, &db)?;
        let spec = RunSpec {
            db: &db,
            workload,
            config,
            threads,
            duration: opts.duration,
            batch: opts.batch,
            busy_timeout_ms: opts.busy_timeout_ms,
            rows: opts.rows,
            seed: opts.seed,
        };
        let before = OsCounters::now();
        let tallies = run_once(&spec)?;
        let os = OsCounters::now().since(&before);
        if stop_requested() {
            return Ok(None);
        }
        let check = if workload == Workload::Read { None } else { Some(table::check(&db)?) };
        runs.push(PointRun {
            elapsed_ns: tallies.elapsed.as_nanos() as u64,
            reads: section::side_run(&tallies, false, &mut read_lat),
            writes: section::side_run(&tallies, true, &mut write_lat),
            os,
            rows_before,
            rows_found: check.as_ref().map(|c| c.0),
            integrity: check.map(|c| c.1),
        });
        progress.advance(1);
    }
    table::remove_db(&db)?;
    Ok(Some(section::point(workload, config, threads, runs, (&read_lat, &write_lat), clock_cost_ns())))
}

#[cfg(test)]
mod tests;
