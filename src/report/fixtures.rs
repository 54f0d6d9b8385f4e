//! Result files built in code for the report's tests: known per-op times,
//! so every ratio and sentence the report computes can be checked exactly.

use crate::measure::busy::Load;
use crate::measure::envinfo::{Environment, StorageInfo};
use crate::measure::oscount::OsCounters;
use crate::measure::rounds::{Round, RoundSet, StopReason};
use crate::measure::Experiment;
use crate::measure::{Latency, LatencySink, Phases, RunSample, Summary};
use crate::records::keys::Order;
use crate::records::Plan;
use crate::records::{DatasetSpec, DiskUsage, EngineKind};
use crate::records::{DbParams, FileParams, WorkloadParams};
use crate::results::ResultFile;

/// An experiment whose three timed runs took `per_op_us` each (no spread).
pub fn experiment(id: &str, per_op_us: f64) -> Experiment {
    experiment_runs(id, &[per_op_us; 3])
}

pub fn experiment_runs(id: &str, per_op_us: &[f64]) -> Experiment {
    let write = id.starts_with("write/") || id.starts_with("commit/");
    let ops = if write { 100 } else { 1000 };
    let runs: Vec<RunSample> = per_op_us
        .iter()
        .enumerate()
        .map(|(i, us)| {
            let total = (us * 1000.0 * ops as f64) as u64;
            RunSample {
                index: i as u32,
                ops,
                misses: 0,
                bytes: ops * 10_000,
                phases: Phases {
                    loop_ns: total,
                    kvtest_total_ns: total,
                    checkpoint_ns: ops * 2_500,
                    ..Phases::default()
                },
                per_op_us: *us,
                loop_per_op_us: *us,
                steady_per_op_us: Some(*us),
                one_off_us: Some(0.0),
                mb_per_s: 10_000.0 / us,
                os: OsCounters::default(),
                cold: None,
                opened_handle: false,
            }
        })
        .collect();
    let layout = if id.contains("/db-") {
        crate::engine::sqlite::KIND
    } else if id.contains("/tree-") {
        crate::engine::files::TREE_KIND
    } else {
        crate::engine::files::FLAT_KIND
    };
    let latency = shaped_latency(per_op_us[0] * 0.9, 3 * ops);
    Experiment {
        id: id.to_string(),
        label: id.to_string(),
        params: WorkloadParams {
            path: "/data/test1".into(),
            layout,
            update: write,
            count: ops,
            max_id: 1000,
            start: 1,
            order: Order::Random,
            threads: 1,
            db: DbParams::default(),
            files: FileParams::default(),
            kv: Default::default(),
            // A committed arm commits every write; the article's once per run.
            commit_every: id.starts_with("commit/").then_some(1),
            plan: Plan::default(),
            seed: None,
            zipf_theta: None,
            mix: None,
            round_trip: false,
            server_info: None,
        },
        warmup_runs: 1,
        summary: Summary::of(&runs),
        runs,
        latency: Some(latency.summary()),
        latency_histogram: Some(latency.to_base64()),
        clock_cost_ns: 20.0,
        clock_overhead_pct: 0.2,
        warnings: Vec::new(),
        class_latency: Vec::new(),
        handle_open_ns: None,
    }
}

/// `count` latencies whose percentiles follow a fixed shape around `p50_us`:
/// p90 1.5x, p99 3x, p99.9 6x and max 20x the median.
pub fn shaped_latency(p50_us: f64, count: u64) -> Latency {
    const SHAPE: [(f64, f64); 6] = [(0.0, 0.5), (0.5, 1.0), (0.9, 1.5), (0.99, 3.0), (0.999, 6.0), (1.0, 20.0)];
    let mut lat = Latency::new();
    for i in 0..count {
        let q = (i as f64 + 0.5) / count as f64;
        let k = SHAPE.windows(2).position(|w| q <= w[1].0).unwrap_or(SHAPE.len() - 2);
        let ((q0, f0), (q1, f1)) = (SHAPE[k], SHAPE[k + 1]);
        let f = f0 * (f1 / f0).powf((q - q0) / (q1 - q0));
        lat.record((p50_us * f * 1000.0) as u64);
    }
    lat
}

/// A suite file from `host` with the given (id, per-op µs) experiments and
/// disk usage for the three layouts.
pub fn suite(host: &str, times: &[(&str, f64)]) -> ResultFile {
    let env = Environment {
        blobbench_version: "0.1.0".into(),
        sqlite_version: "3.46.0".into(),
        sqlite_compile_options: vec!["THREADSAFE=1".into(), "DIRECT_OVERFLOW_READ".into()],
        hostname: host.into(),
        os: "Linux".into(),
        kernel: "6.1.0".into(),
        arch: "x86_64".into(),
        cpu_model: "Test CPU @ 3.50GHz".into(),
        cores: 8,
        memory_bytes: 16 << 30,
        storage: Some(StorageInfo {
            path: "/data".into(),
            mount_point: "/".into(),
            device: "/dev/nvme0n1p2".into(),
            fs_type: "ext4".into(),
            mount_options: "rw,relatime".into(),
            block_size: 4096,
            total_bytes: 500_000_000_000,
            free_bytes: 100_000_000_000,
            rotational: Some(false),
            block_device: Some(crate::measure::blockdev::BlockDevice {
                name: "nvme0n1".into(),
                kind: "nvme".into(),
                is_virtual: false,
                model: "Test SSD".into(),
                backing_file: None,
            }),
        }),
        ..Environment::default()
    };
    let mut f = ResultFile::new("suite", env);
    f.created_unix = 1_496_671_380;
    f.dataset = Some(DatasetSpec { count: 1000, size: 10_000, variance: 2000, ..DatasetSpec::default() });
    f.experiments = times.iter().map(|(id, us)| experiment(id, *us)).collect();
    let usage = |layout: &str, allocated: u64| DiskUsage {
        layout: EngineKind::from_name(layout).expect("an engine's name"),
        path: format!("/data/test1.{layout}"),
        entries: 1000,
        content_bytes: 10_000_000,
        apparent_bytes: 10_000_000,
        allocated_bytes: allocated,
    };
    f.disk_usage = vec![usage("db", 10_245_120), usage("flat", 12_288_000), usage("tree", 12_400_000)];
    f
}

/// Every suite experiment, SQLite at 10 µs per read and 100 µs per write,
/// files slower by known factors.
pub fn full_suite(host: &str) -> ResultFile {
    suite(
        host,
        &[
            ("read/db-sql", 10.0),
            ("read/db-blob", 8.0),
            ("read/db-blob-mmap", 5.0),
            ("read/flat-stdio", 19.0),
            ("read/tree-stdio", 20.0),
            ("read/flat-posix", 13.0),
            ("read/tree-posix", 14.0),
            ("write/db-wal-normal", 100.0),
            ("write/db-wal-full", 300.0),
            ("write/db-off", 50.0),
            ("write/flat-truncate", 140.0),
            ("write/flat-inplace", 90.0),
            ("write/flat-replace", 160.0),
            ("write/flat-truncate-fsync", 3000.0),
            ("write/flat-inplace-fsync", 2400.0),
            ("write/flat-replace-fsync", 6000.0),
        ],
    )
}

/// Makes `f` a file written before schema version 4: no steady-state
/// figures anywhere, so comparisons fall back to kvtest's totals.
pub fn as_older(f: &mut ResultFile) {
    f.schema_version = 3;
    for e in &mut f.experiments {
        for r in &mut e.runs {
            r.steady_per_op_us = None;
            r.one_off_us = None;
        }
        e.summary.steady_per_op_us = None;
        e.summary.one_off_us = None;
    }
    for set in &mut f.rounds {
        for r in &mut set.rounds {
            r.steady_per_op_us.clear();
        }
    }
}

pub fn exp_mut<'a>(file: &'a mut ResultFile, id: &str) -> &'a mut Experiment {
    file.experiments.iter_mut().find(|e| e.id == id).unwrap_or_else(|| panic!("no {id}"))
}

/// A consistent round set: every arm in every round, in order, each round
/// given as (per-arm figures, load).
pub fn round_set(id: &str, arms: &[&str], rounds: Vec<(Vec<f64>, Load)>) -> RoundSet {
    RoundSet {
        id: id.into(),
        arms: arms.iter().map(|a| a.to_string()).collect(),
        seed: 1,
        warmup: true,
        target_pct: 5.0,
        budget_s: None,
        max_rounds: 30,
        stop: StopReason::Precise,
        rounds: rounds
            .into_iter()
            .map(|(per_op_us, load)| Round {
                order: (0..arms.len() as u32).collect(),
                steady_per_op_us: per_op_us.clone(),
                per_op_us,
                elapsed_ms: 10.0,
                load,
            })
            .collect(),
        warnings: vec![],
        run_time_s: None,
        ops_per_run: vec![],
    }
}

/// An advise section over `stores` for a workload of 1,000 blobs of 10 KB
/// at `mix` and `durability`, judged by the documented crash table, as a
/// quick run that kept to its budget.
pub fn advise_section(
    stores: &[crate::studies::advise::Store],
    mix: (u32, u32),
    durability: crate::studies::advise::Durability,
    commit_every: Option<u32>,
) -> crate::studies::advise::AdviseSection {
    use crate::studies::advise::{rules, AdviseSection, CrashFacts, CrashSource, Workload};
    AdviseSection {
        workload: Workload {
            count: 1000,
            mean_bytes: 10_000,
            from_dir: None,
            mix_reads: mix.0,
            mix_writes: mix.1,
            durability,
            commit_every,
        },
        candidates: stores.to_vec(),
        crash: CrashFacts {
            source: CrashSource::Documented,
            model: "torn-4k".into(),
            why: "no power-cut run was asked for".into(),
            methods: rules::documented(),
        },
        budget_s: 100.0,
        elapsed_s: 90.0,
        quick: true,
        over_budget: None,
        clients: None,
        stages: None,
        flush: None,
    }
}

/// A crash or power-cut run of `blobs` blobs of 512 B to 64 KiB, seed 1,
/// a commit per write: what the crash sections' tests share.
pub fn crash_run(blobs: u32) -> crate::studies::crashtest::CrashRun {
    crate::studies::crashtest::CrashRun {
        blobs,
        blob_min_bytes: 512,
        blob_max_bytes: 65_536,
        max_delay_us: 50_000,
        seed: 1,
        workdir: "/tmp".into(),
        commit_every: 1,
    }
}
