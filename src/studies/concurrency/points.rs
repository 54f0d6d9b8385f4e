//! The SQLite workloads' measured points (workload x configuration x
//! thread count): each timed run's tallies per side, and a point's
//! summary over its runs.

use serde::{Deserialize, Serialize};

use super::driver::RunTallies;
use super::options::{Config, Workload};
use crate::measure::oscount::OsCounters;
use crate::measure::{Latency, LatencySummary, Stat};

/// A point is marked when more than this share of its attempts failed
/// with SQLITE_BUSY or SQLITE_LOCKED: its throughput says little.
pub const ERRORS_DOMINATE_PCT: f64 = 50.0;

/// One workload, configuration and thread count, measured `repeat` times.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// "read/per-thread+wal+private+rw+full/t4".
    pub id: String,
    pub workload: Workload,
    pub config: Config,
    pub label: String,
    /// Threads; for mixed, readers (and as many writers).
    pub threads: u32,
    pub runs: Vec<PointRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<SideSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<SideSummary>,
    /// More than ERRORS_DOMINATE_PCT of some side's attempts failed.
    pub errors_dominate: bool,
    /// Every run's inserted rows were all found and integrity_check said ok.
    pub consistent: bool,
    /// One clock read as a share of the mean time per operation.
    pub clock_overhead_pct: f64,
    /// Process CPU time over wall time, per run: the cores this process
    /// really got. Below the thread count (and the core count) on a machine
    /// busy with other work, which then caps throughput.
    pub cores_used: Stat,
    /// Process CPU time per successful operation (all sides), per run, in
    /// microseconds: what an operation costs, whatever else the machine does.
    pub cpu_us_per_op: Stat,
}

impl Point {
    pub fn side(&self, writes: bool) -> Option<&SideSummary> {
        if writes {
            self.writes.as_ref()
        } else {
            self.reads.as_ref()
        }
    }
}

/// One timed run of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRun {
    /// First thread's start to last thread's end.
    pub elapsed_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<SideRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<SideRun>,
    /// Process counters over the run (threads' setup included): CPU time,
    /// I/O, context switches.
    pub os: OsCounters,
    /// Rows in the table when the run started.
    pub rows_before: u64,
    /// After a run with writers: rows counted, and integrity_check's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_found: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

impl PointRun {
    pub fn consistent(&self) -> bool {
        let inserted = self.writes.as_ref().map_or(0, |w| w.ops);
        match (&self.rows_found, &self.integrity) {
            (Some(found), Some(ok)) => *found == self.rows_before + inserted && ok == "ok",
            _ => self.writes.is_none(),
        }
    }
}

/// Readers or writers of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideRun {
    pub threads: u32,
    pub ops: u64,
    pub failed_ops: u64,
    pub busy_errors: u64,
    pub locked_errors: u64,
    /// All threads' operations over the run's elapsed time.
    pub ops_per_s: f64,
    /// Each thread's operations over its own time.
    pub per_thread_ops_per_s: Vec<f64>,
}

/// Readers or writers of a point, over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSummary {
    pub threads: u32,
    /// Total operations per second, across runs (use the median).
    pub ops_per_s: Stat,
    /// One value per thread per run.
    pub per_thread_ops_per_s: Stat,
    pub ops: u64,
    pub failed_ops: u64,
    pub busy_errors: u64,
    pub locked_errors: u64,
    /// failed / (successful + failed) operations, in percent.
    pub error_pct: f64,
    /// Per successful read, or per committed write transaction; all threads
    /// and runs merged.
    pub latency: LatencySummary,
}

/// A side's figures for one run, and its latencies merged into `lat`.
pub fn side_run(t: &RunTallies, writers: bool, lat: &mut Latency) -> Option<SideRun> {
    let tallies = if writers { &t.writers } else { &t.readers };
    if tallies.is_empty() {
        return None;
    }
    let secs = t.elapsed.as_secs_f64();
    let per_sec = |ops: u64, s: f64| if s > 0.0 { ops as f64 / s } else { 0.0 };
    let mut r = SideRun {
        threads: tallies.len() as u32,
        ops: 0,
        failed_ops: 0,
        busy_errors: 0,
        locked_errors: 0,
        ops_per_s: 0.0,
        per_thread_ops_per_s: Vec::with_capacity(tallies.len()),
    };
    for x in tallies {
        r.ops += x.ops;
        r.failed_ops += x.failed_ops;
        r.busy_errors += x.busy;
        r.locked_errors += x.locked;
        r.per_thread_ops_per_s.push(per_sec(x.ops, (x.end - x.start).as_secs_f64()));
        lat.merge(&x.latency);
    }
    r.ops_per_s = per_sec(r.ops, secs);
    Some(r)
}

pub fn summarize(runs: &[&SideRun], lat: &Latency) -> Option<SideSummary> {
    let first = runs.first()?;
    let totals: Vec<f64> = runs.iter().map(|r| r.ops_per_s).collect();
    let per_thread: Vec<f64> = runs.iter().flat_map(|r| r.per_thread_ops_per_s.iter().copied()).collect();
    let sum = |f: fn(&SideRun) -> u64| runs.iter().map(|r| f(r)).sum::<u64>();
    let (ops, failed_ops) = (sum(|r| r.ops), sum(|r| r.failed_ops));
    let attempts = ops + failed_ops;
    Some(SideSummary {
        threads: first.threads,
        ops_per_s: Stat::of(&totals),
        per_thread_ops_per_s: Stat::of(&per_thread),
        ops,
        failed_ops,
        busy_errors: sum(|r| r.busy_errors),
        locked_errors: sum(|r| r.locked_errors),
        error_pct: if attempts > 0 { failed_ops as f64 / attempts as f64 * 100.0 } else { 0.0 },
        latency: lat.summary(),
    })
}

/// A point from its runs and their merged latencies.
pub fn point(
    workload: Workload,
    config: Config,
    threads: u32,
    runs: Vec<PointRun>,
    lat: (&Latency, &Latency),
    clock_cost_ns: f64,
) -> Point {
    let reads = summarize(&runs.iter().filter_map(|r| r.reads.as_ref()).collect::<Vec<_>>(), lat.0);
    let writes = summarize(&runs.iter().filter_map(|r| r.writes.as_ref()).collect::<Vec<_>>(), lat.1);
    let sides = || reads.iter().chain(writes.iter());
    let errors_dominate = sides().any(|s| s.error_pct > ERRORS_DOMINATE_PCT);
    let clock_overhead_pct = sides()
        .filter(|s| s.latency.mean_us > 0.0)
        .map(|s| clock_cost_ns / (s.latency.mean_us * 1000.0) * 100.0)
        .fold(0.0, f64::max);
    let cpu_us = |r: &PointRun| (r.os.user_cpu_us + r.os.system_cpu_us) as f64;
    let cores: Vec<f64> =
        runs.iter().filter(|r| r.elapsed_ns > 0).map(|r| cpu_us(r) * 1000.0 / r.elapsed_ns as f64).collect();
    let per_op: Vec<f64> = runs
        .iter()
        .filter_map(|r| {
            let ops = r.reads.as_ref().map_or(0, |s| s.ops) + r.writes.as_ref().map_or(0, |s| s.ops);
            (ops > 0).then(|| cpu_us(r) / ops as f64)
        })
        .collect();
    Point {
        id: format!("{}/{}/t{threads}", workload.name(), config.id()),
        workload,
        config,
        label: config.label(),
        threads,
        consistent: runs.iter().all(PointRun::consistent),
        runs,
        reads,
        writes,
        errors_dominate,
        clock_overhead_pct,
        cores_used: Stat::of(&cores),
        cpu_us_per_op: Stat::of(&per_op),
    }
}
