//! Blobs under parallel readers: the "faster than the filesystem" article is
//! single-threaded, so this asks whether SQLite keeps its lead when 1, 2 and
//! 4 threads read a kvtest dataset at once (`run --threads` on a dataset
//! made here).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::blob_writer::WriterArm;
use super::comparison::Comparison as Ratio;
use super::ids::{self, StoreId};
use super::options::{Concurrency, Workload};
use crate::drivers::parallel_read::ParallelArm;
use crate::drivers::run::RunOptions;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsOutcome, StopReason};
use crate::measure::Experiment;
use crate::measure::{stop_requested, LatencySummary, Stat};
use crate::records::keys::Order;
use crate::records::DatasetSpec;
use crate::records::DbParams;
use crate::records::Plan;
use crate::util::progress::{Progress, Silent};
use crate::Result;

pub const BLOB_THREADS: [u32; 3] = [1, 2, 4];
/// kvtest's default blob size.
pub const BLOB_SIZE: u32 = 10_000;
/// Maps the whole dataset (kvtest's article uses --mmap with a large size).
const MMAP_BYTES: i64 = 1 << 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlobReaders {
    pub blobs: u32,
    pub blob_size: u32,
    /// Reads per timed run, all threads together, in kvtest's random order.
    pub reads_per_run: u64,
    pub points: Vec<BlobPoint>,
}

/// One store read by some threads; the full figures are the experiment
/// `experiment_id` of the same result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlobPoint {
    /// Which store: one of the readers' own, or an engine's.
    pub store: StoreId,
    pub label: String,
    pub threads: u32,
    pub experiment_id: String,
    /// Median over runs of blob bytes / wall time (kvtest's content rate).
    pub mb_per_s: f64,
    /// Median over runs of reads / wall time, all threads together.
    pub reads_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    pub noisy: bool,
    /// Median over runs of process CPU time per read, in microseconds: the
    /// cost of a read whatever share of the cores the machine gave us.
    pub cpu_us_per_read: f64,
    /// Median over runs of process CPU time over wall time.
    pub cores_used: f64,
    /// Stores read while one writer overwrites blobs ("db-wal-writer",
    /// "files-writer"): the writer's rate, median over the readers' timed
    /// runs (in older files, over all of them together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes_per_s: Option<f64>,
}

impl BlobReaders {
    fn rate(&self, store: StoreId, threads: u32) -> Option<f64> {
        self.points.iter().find(|p| p.store == store && p.threads == threads).map(|p| p.reads_per_s)
    }

    /// Per thread count: the faster database variant over the files, in
    /// throughput; paired by round when `rounds` hold both (the readers'
    /// rounds of this file), else the ratio of the medians.
    pub fn leads(&self, rounds: &[RoundSet]) -> Vec<Ratio> {
        BLOB_THREADS.into_iter().filter_map(|t| self.lead(rounds, t, &StoreId::DB_READERS, StoreId::Files)).collect()
    }

    /// Per thread count, the readers beside one writer: the database's over
    /// the files', in throughput; paired by round in files that ran them in
    /// rounds (`concurrency/blobs-writer/t<T>`), else (older files, whose
    /// stores with a writer ran one after the other) the ratio of the medians.
    pub fn writer_leads(&self, rounds: &[RoundSet]) -> Vec<Ratio> {
        BLOB_THREADS
            .into_iter()
            .filter_map(|t| self.lead(rounds, t, &[StoreId::DbWalWriter], StoreId::FilesWriter))
            .collect()
    }

    /// The fastest of `db_stores` over `files` at `t` threads.
    fn lead(&self, rounds: &[RoundSet], t: u32, db_stores: &[StoreId], files: StoreId) -> Option<Ratio> {
        let (db, store) =
            db_stores.iter().filter_map(|&s| self.rate(s, t).map(|r| (r, s))).max_by(|a, b| a.0.total_cmp(&b.0))?;
        let files_rate = self.rate(files, t).filter(|&r| r > 0.0)?;
        let (db_id, files_id) = (ids::reader_experiment(store, t), ids::reader_experiment(files, t));
        let paired = rounds
            .iter()
            .find(|s| s.arms.contains(&db_id) && s.arms.contains(&files_id))
            .and_then(|s| s.ratio(&files_id, &db_id));
        Some(Ratio {
            workload: Workload::Blobs,
            threads: t,
            a: store.to_string(),
            b: files.to_string(),
            ratio: paired.as_ref().map_or(db / files_rate, |p| p.value),
            paired,
        })
    }
}

/// The blob readers' database in the study's work directory, which the
/// other sections build their stores from.
const READERS_DB: &str = "blobs.db";

fn readers_spec(opts: &Concurrency) -> DatasetSpec {
    DatasetSpec { count: opts.blob_count, size: BLOB_SIZE, seed: opts.ctx.seed, ..DatasetSpec::default() }
}

/// The blob readers' database in `work`, made here when that section did
/// not run: the writers' and the servers' datasets are built from it.
pub(super) fn readers_db(opts: &Concurrency, work: &Path) -> Result<PathBuf> {
    let db = work.join(READERS_DB);
    if !db.exists() {
        crate::engine::dataset::init(&db, &readers_spec(opts), true, &Silent)?;
    }
    Ok(db)
}

/// The run options of one store read by `threads` readers.
pub(super) fn run_options(opts: &Concurrency, path: &Path, mmap: i64) -> RunOptions {
    let mut run = RunOptions::new(path);
    run.count = opts.blob_reads;
    run.order = Order::Random;
    run.settings.db = DbParams { mmap_bytes: mmap, ..DbParams::default() };
    run.plan = Plan { repeat: opts.repeat, warmup: 1, cold: false, latency: true };
    run
}

/// A store read in rounds.
struct Store<'a> {
    id: StoreId,
    label: &'static str,
    path: &'a Path,
    /// The mmap size its readers use (0: none).
    mmap: i64,
}

/// The stores without a writer, read by `threads` readers, as the arms of
/// one set of interleaved rounds (paired by round: database over files).
fn measure_rounds(
    opts: &Concurrency,
    stores: &[Store<'_>],
    threads: u32,
) -> Result<(Vec<(BlobPoint, Experiment)>, RoundSet)> {
    let mut arms = Vec::with_capacity(stores.len());
    for s in stores {
        arms.push(ParallelArm::prepare(&reader_options(opts, s.path, s.mmap, threads), threads)?);
    }
    let (out, ids) = in_rounds(opts, &ids::readers_rounds(threads), stores, threads, &mut arms)?;
    let mut measured = Vec::with_capacity(stores.len());
    for ((s, arm), (m, id)) in stores.iter().zip(arms).zip(out.measured.into_iter().zip(&ids)) {
        let e = arm.finish(id, &format!("{}, {threads} thread(s)", s.label), m)?.experiment;
        measured.push((point_of(s.id, s.label, threads, &e), e));
    }
    Ok((measured, out.set))
}

/// The stores read beside one writer (a writer per run), by `threads`
/// readers, as the arms of their own set of rounds: after the stores
/// without a writer, since the writer turns the database to WAL and
/// changes content.
fn measure_writer_rounds(
    opts: &Concurrency,
    stores: &[Store<'_>],
    threads: u32,
) -> Result<(Vec<(BlobPoint, Experiment)>, RoundSet)> {
    let mut arms = Vec::with_capacity(stores.len());
    for s in stores {
        arms.push(WriterArm::prepare(&reader_options(opts, s.path, s.mmap, threads), threads, opts.ctx.seed)?);
    }
    let (out, ids) = in_rounds(opts, &ids::writer_beside_rounds(threads), stores, threads, &mut arms)?;
    let mut measured = Vec::with_capacity(stores.len());
    for ((s, arm), (m, id)) in stores.iter().zip(arms).zip(out.measured.into_iter().zip(&ids)) {
        let (report, writes_per_s) = arm.finish(id, &format!("{}, {threads} thread(s)", s.label), m)?;
        let mut point = point_of(s.id, s.label, threads, &report.experiment);
        point.writes_per_s = Some(writes_per_s);
        measured.push((point, report.experiment));
    }
    Ok((measured, out.set))
}

/// The run options of one store read by `threads` readers.
fn reader_options(opts: &Concurrency, path: &Path, mmap: i64, threads: u32) -> RunOptions {
    let mut run = run_options(opts, path, mmap);
    run.count = run.count.max(u64::from(threads));
    run
}

/// `arms` (one per store) as the rounds `id`, stopping on the files
/// against the database stores; the outcome and the arms' experiment ids.
fn in_rounds<A: Arm>(
    opts: &Concurrency,
    id: &str,
    stores: &[Store<'_>],
    threads: u32,
    arms: &mut [A],
) -> Result<(RoundsOutcome, Vec<String>)> {
    let ids: Vec<String> = stores.iter().map(|s| ids::reader_experiment(s.id, threads)).collect();
    let side =
        |files: bool| -> Vec<usize> { (0..stores.len()).filter(|&i| stores[i].id.is_files() == files).collect() };
    let pairs = [Comparison { a: side(true), b: side(false) }];
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let out = run_rounds(id, &ids, &mut dyn_arms, &opts.rounds, &pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(crate::Error::Interrupted);
    }
    Ok((out, ids))
}

/// A store's point from its experiment's figures.
pub(super) fn point_of(store: StoreId, label: &str, threads: u32, e: &Experiment) -> BlobPoint {
    let per_op = e.summary.per_op_us.median;
    let cpu = |r: &crate::measure::RunSample| (r.os.user_cpu_us + r.os.system_cpu_us) as f64;
    let per_read: Vec<f64> = e.runs.iter().filter(|r| r.ops > 0).map(|r| cpu(r) / r.ops as f64).collect();
    let cores: Vec<f64> = e
        .runs
        .iter()
        .filter(|r| r.phases.kvtest_total_ns > 0)
        .map(|r| cpu(r) * 1000.0 / r.phases.kvtest_total_ns as f64)
        .collect();
    BlobPoint {
        store,
        label: label.to_string(),
        threads,
        experiment_id: e.id.clone(),
        mb_per_s: e.summary.mb_per_s.median,
        reads_per_s: if per_op > 0.0 { 1e6 / per_op } else { 0.0 },
        latency: e.latency,
        noisy: e.summary.noisy,
        cpu_us_per_read: Stat::of(&per_read).median,
        cores_used: Stat::of(&cores).median,
        writes_per_s: None,
    }
}

/// What the blob readers measured: the summary, the experiments and the
/// rounds (one set per thread count), for the result file.
pub struct Measured {
    pub readers: BlobReaders,
    pub experiments: Vec<Experiment>,
    pub rounds: Vec<RoundSet>,
}

/// Runs the section in `work` (which it fills with a dataset and its
/// export). At each thread count the stores without a writer are the arms
/// of one set of interleaved rounds; then, at each thread count, the stores
/// read beside a writer are the arms of another (the writer turns the
/// database to WAL and changes content, so these come last).
pub fn measure(opts: &Concurrency, work: &Path, progress: &dyn Progress) -> Result<Measured> {
    let db = work.join(READERS_DB);
    let dir = work.join("blobs-flat");
    crate::engine::dataset::init(&db, &readers_spec(opts), true, &Silent)?;
    crate::engine::dataset::export(&db, &dir, false, true, &Silent)?;
    let stores = [
        Store { id: StoreId::Db, label: "SQLite, a connection per thread", path: &db, mmap: 0 },
        Store { id: StoreId::DbMmap, label: "SQLite + mmap, a connection per thread", path: &db, mmap: MMAP_BYTES },
        Store { id: StoreId::Files, label: "files (fopen/fread), each thread its own", path: &dir, mmap: 0 },
    ];
    let mut out = Measured {
        readers: BlobReaders {
            blobs: opts.blob_count,
            blob_size: BLOB_SIZE,
            reads_per_run: opts.blob_reads,
            points: vec![],
        },
        experiments: Vec::new(),
        rounds: Vec::new(),
    };
    out.each_thread_count(progress, stores.len(), |t| measure_rounds(opts, &stores, t))?;
    // Readers while one writer overwrites blobs: last, since the writer
    // turns the database to WAL and changes content.
    let with_writer = [
        Store { id: StoreId::DbWalWriter, label: "SQLite WAL, readers + one writer", path: &db, mmap: 0 },
        Store {
            id: StoreId::FilesWriter,
            label: "files, readers + one writer (new file + rename)",
            path: &dir,
            mmap: 0,
        },
    ];
    out.each_thread_count(progress, with_writer.len(), |t| measure_writer_rounds(opts, &with_writer, t))?;
    Ok(out)
}

impl Measured {
    /// One set of rounds per thread count from `measure_one`, added here;
    /// Ctrl-C stops them, keeping the sets measured before.
    fn each_thread_count(
        &mut self,
        progress: &dyn Progress,
        stores: usize,
        measure_one: impl Fn(u32) -> Result<(Vec<(BlobPoint, Experiment)>, RoundSet)>,
    ) -> Result<()> {
        for threads in BLOB_THREADS {
            if stop_requested() {
                break;
            }
            let (measured, set) = match measure_one(threads) {
                Err(crate::Error::Interrupted) => break,
                other => other?,
            };
            progress.advance(stores as u64);
            for (point, e) in measured {
                self.readers.points.push(point);
                self.experiments.push(e);
            }
            self.rounds.push(set);
        }
        Ok(())
    }
}
