//! `concurrency`: SQLite under many threads, as the shared-connection vs
//! connection-per-thread study measured it (reads, inserts, both at once;
//! WAL or DELETE; shared cache; read-only; synchronous), kvtest blobs
//! under parallel readers, and durable blob writers with readers beside
//! them on every engine given. Each point is time-bounded; every run starts
//! from a fresh copy of the table; every write run is checked afterwards.
//!
//! Read from the top; every import in the folder points down this list:
//! - this file runs the study; `section.rs` is what it returns;
//! - `conclusions.rs` judges the measured workloads;
//! - the workloads: the writers (`writers.rs`, `writer_arm.rs`,
//!   `sqlite_writer.rs`), the server clients (`servers.rs`), the SQLite
//!   ones (`points.rs` from `driver.rs`, its threads in `worker.rs` over
//!   `table.rs`) and the blob readers (`blobs.rs`, `blob_writer.rs`), whose
//!   dataset the writers and the servers build theirs from;
//! - at the bottom what they share: `comparison.rs` (one ratio),
//!   `options.rs` (workloads, configurations, options) and `ids.rs`.

mod blob_writer;
mod blobs;
mod comparison;
mod conclusions;
mod driver;
pub mod ids;
mod options;
mod points;
mod section;
mod servers;
mod sqlite_writer;
mod table;
mod worker;
mod writer_arm;
mod writers;

pub use blobs::{BlobPoint, BlobReaders, BLOB_SIZE, BLOB_THREADS};
pub use comparison::Comparison;
pub use conclusions::{
    connection_answers, evaluate, Claim, Conclusion, ConnectionAnswer, ConnectionPick, Extensions, Interval, Verdict,
    TIE,
};
pub use driver::{run_once, RunSpec, RunTallies};
pub use ids::StoreId;
pub use options::{
    default_rounds, Concurrency, ConcurrencyOptions, Config, Journal, Modes, Sharing, Workload, DEFAULT_ENGINES,
    MAX_THREADS, MODE_NAMES, QUICK_WRITERS, WRITERS,
};
pub use points::{Point, PointRun, SideRun, SideSummary, ERRORS_DOMINATE_PCT};
pub use section::{ConcurrencySection, Settings};
pub use servers::{ServerClients, SERVER_CLIENTS};
pub use writers::{label as writer_label, WriterPoint, Writers};

use std::path::Path;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::measure::oscount::OsCounters;
use crate::measure::Experiment;
use crate::measure::{clock_cost_ns, stop_requested, Latency};
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Everything measured: the section, and the blob readers' experiments
/// (which go into the result file's `experiments`).
#[derive(Debug, Clone)]
pub struct Measured {
    pub section: ConcurrencySection,
    pub experiments: Vec<Experiment>,
    /// The blob readers' interleaved rounds: per thread count, one set of
    /// the stores alone and one of the stores beside a writer.
    pub rounds: Vec<crate::measure::rounds::RoundSet>,
}

pub fn run(ctx: &StudyContext, opts: &ConcurrencyOptions) -> Result<Measured> {
    let opts = &Concurrency::new(ctx, opts, default_rounds(ctx.quick));
    let progress = &ctx.progress();
    let work = prepare(opts)?;
    let plan = opts.plan(ctx.quick);
    let (blobs, write) = (opts.workloads.contains(&Workload::Blobs), opts.workloads.contains(&Workload::Writers));
    let units = plan.len() * opts.threads.len() * opts.repeat as usize
        + if blobs { 15 } else { 0 }
        + if opts.servers().is_empty() { 0 } else { SERVER_CLIENTS.len() }
        + usize::from(write);
    progress.start("concurrency", units as u64);
    let (points, rounds_order, interrupted) = database_points(opts, &plan, work.path(), progress)?;
    let more = extensions(opts, work.path(), progress, interrupted)?;
    progress.finish();
    let cores = crate::util::cores();
    let (blob_readers, writers, rounds) = (more.blob_readers, more.writers, more.rounds);
    let section = ConcurrencySection {
        settings: settings(opts, cores),
        rounds_order,
        conclusions: evaluate(
            &points,
            Extensions { blobs: blob_readers.as_ref(), writers: writers.as_ref(), rounds: &rounds },
            cores,
        ),
        points,
        blob_readers,
        server_clients: more.server_clients,
        writers,
        interrupted: more.interrupted,
    };
    Ok(Measured { section, experiments: more.experiments, rounds })
}

/// Checks the options and the work directory, what the servers and the
/// writers' engines need installed, reaps what killed runs left, and
/// makes the study's work directory.
fn prepare(opts: &Concurrency) -> Result<tempfile::TempDir> {
    opts.validate()?;
    opts.rounds.validate()?;
    let workdir = &opts.ctx.workdir;
    if !workdir.is_dir() {
        let why = if workdir.exists() { "is not a directory" } else { "no such directory" };
        return Err(Error::bad_input(workdir, why));
    }
    let settings = &opts.ctx.settings;
    servers::preflight(&opts.servers(), settings)?;
    if opts.workloads.contains(&Workload::Writers) {
        for &kind in &opts.writer_engines() {
            crate::engine::registry::backend(kind).preflight(settings, None)?;
        }
    }
    crate::engine::registry::reap_killed(workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    tempfile::Builder::new()
        .prefix(".blobbench-concurrency-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(workdir)
        .map_err(|e| Error::io(workdir, "cannot create a working directory", e))
}

/// The database workloads' points of `plan` at every thread count, their
/// runs interleaved in rounds: every point's first run, then every
/// point's second... so the ratios pair by round. Within a round the
/// points of one workload and thread count follow each other (the pairs
/// compared are close in time), in an order shuffled per round from the
/// seed and recorded. Returns the points, each round's order and whether
/// Ctrl-C stopped them.
fn database_points(
    opts: &Concurrency,
    plan: &[(Workload, Config)],
    work: &Path,
    progress: &dyn Progress,
) -> Result<(Vec<Point>, Vec<Vec<u32>>, bool)> {
    let mut templates = table::Templates::new(work, opts.rows, opts.ctx.seed);
    let mut order: Vec<(Workload, u32, Config)> = Vec::new();
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for &w in &opts.workloads {
        for &t in &opts.threads {
            let start = order.len();
            order.extend(plan.iter().filter(|(pw, _)| *pw == w).map(|&(_, c)| (w, t, c)));
            groups.push(start..order.len());
        }
    }
    let mut rng = SmallRng::seed_from_u64(opts.ctx.seed ^ crate::measure::rounds::DEFAULT_SEED);
    let mut acc: Vec<Acc> = order.iter().map(|_| Acc::default()).collect();
    let mut round_orders: Vec<Vec<usize>> = Vec::new();
    let mut interrupted = false;
    'rounds: for _ in 0..opts.repeat {
        let mut this_round: Vec<usize> = Vec::with_capacity(order.len());
        for g in &groups {
            let mut within: Vec<usize> = g.clone().collect();
            within.shuffle(&mut rng);
            this_round.extend(within);
        }
        round_orders.push(this_round.clone());
        for i in this_round {
            let (workload, threads, config) = order[i];
            match measure_run(opts, work, &mut templates, workload, config, threads, &mut acc[i])? {
                true => progress.advance(1),
                false => {
                    interrupted = true;
                    break 'rounds;
                }
            }
        }
    }
    table::remove_db(&work.join("run.db"))?;
    let clock = clock_cost_ns();
    // Points by their index in `order`; a point with no run (interrupted
    // in the first round) is left out, and from the recorded orders too.
    let kept: Vec<Option<u32>> = acc
        .iter()
        .scan(0u32, |next, a| {
            Some((!a.runs.is_empty()).then(|| {
                *next += 1;
                *next - 1
            }))
        })
        .collect();
    let rounds_order: Vec<Vec<u32>> =
        round_orders.iter().map(|r| r.iter().filter_map(|&i| kept[i]).collect()).collect();
    let points: Vec<Point> = order
        .iter()
        .zip(acc)
        .filter(|(_, a)| !a.runs.is_empty())
        .map(|(&(w, t, c), a)| points::point(w, c, t, a.runs, (&a.reads, &a.writes), clock))
        .collect();
    Ok((points, rounds_order, interrupted))
}

/// What the sections beyond the database workloads measured, and whether
/// Ctrl-C stopped the study.
struct More {
    blob_readers: Option<BlobReaders>,
    server_clients: Option<ServerClients>,
    writers: Option<Writers>,
    experiments: Vec<Experiment>,
    rounds: Vec<crate::measure::rounds::RoundSet>,
    interrupted: bool,
}

/// The blob readers, the servers' clients and the writers, each when asked
/// and not `interrupted` before it (Ctrl-C keeps what was measured before).
fn extensions(opts: &Concurrency, work: &Path, progress: &dyn Progress, interrupted: bool) -> Result<More> {
    let mut more = More {
        blob_readers: None,
        server_clients: None,
        writers: None,
        experiments: Vec::new(),
        rounds: Vec::new(),
        interrupted,
    };
    if opts.workloads.contains(&Workload::Blobs) && !more.interrupted {
        match blobs::measure(opts, work, progress) {
            Ok(m) => {
                more.interrupted = stop_requested();
                more.blob_readers = Some(m.readers);
                more.experiments = m.experiments;
                more.rounds = m.rounds;
            }
            Err(Error::Interrupted) => more.interrupted = true,
            Err(e) => return Err(e),
        }
    }
    if !opts.servers().is_empty() && !more.interrupted {
        let m = servers::measure(opts, work, progress)?;
        more.interrupted = stop_requested();
        more.server_clients = Some(m.clients);
        more.experiments.extend(m.experiments);
        more.rounds.extend(m.rounds);
    }
    if opts.workloads.contains(&Workload::Writers) && !more.interrupted {
        match writers::measure(opts, work, progress) {
            Ok(m) => {
                more.interrupted = stop_requested();
                more.writers = Some(m.writers);
                more.experiments.extend(m.experiments);
                more.rounds.extend(m.rounds);
            }
            Err(Error::Interrupted) => more.interrupted = true,
            Err(e) => return Err(e),
        }
    }
    Ok(more)
}

/// The section's record of how the study ran.
fn settings(opts: &Concurrency, cores: u32) -> Settings {
    Settings {
        threads: opts.threads.clone(),
        duration_s: opts.duration.as_secs_f64(),
        repeat: opts.repeat,
        rows: opts.rows,
        batch: opts.batch,
        busy_timeout_ms: opts.busy_timeout_ms,
        quick: opts.ctx.quick,
        workloads: opts.workloads.clone(),
        modes: opts.modes.clone(),
        cores,
        sqlite_version: rusqlite::version().to_string(),
        key_pool: table::KEY_POOL as u32,
        value_pool: table::VALUE_POOL as u32,
        clock_cost_ns: clock_cost_ns(),
        tie_pct: (TIE - 1.0) * 100.0,
    }
}

/// The runs of one point so far, and their latencies merged.
#[derive(Default)]
struct Acc {
    runs: Vec<PointRun>,
    reads: Latency,
    writes: Latency,
}

/// One timed run of one point, on a fresh copy of the table, added to
/// `acc`. False when interrupted (a partial run is not reported).
fn measure_run(
    opts: &Concurrency,
    work: &Path,
    templates: &mut table::Templates,
    workload: Workload,
    config: Config,
    threads: u32,
    acc: &mut Acc,
) -> Result<bool> {
    let db = work.join("run.db");
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
        seed: opts.ctx.seed,
    };
    let before = OsCounters::now();
    let tallies = run_once(&spec)?;
    let os = OsCounters::now().since(&before);
    if stop_requested() {
        return Ok(false);
    }
    let check = if workload == Workload::Read { None } else { Some(table::check(&db)?) };
    acc.runs.push(PointRun {
        elapsed_ns: tallies.elapsed.as_nanos() as u64,
        reads: points::side_run(&tallies, false, &mut acc.reads),
        writes: points::side_run(&tallies, true, &mut acc.writes),
        os,
        rows_before,
        rows_found: check.as_ref().map(|c| c.0),
        integrity: check.map(|c| c.1),
    });
    Ok(true)
}

#[cfg(test)]
mod tests;
