//! Concurrent durable writers, and readers beside them, for every engine
//! the study is given: the blog's question (several writers at once)
//! asked of every store, and for SQLite its other question (one writer
//! connection, or a connection per writer?). At each writer count N, N
//! writers overwrite random blobs of their own (new content, each write
//! committed durably) while N readers read random blobs; each store in
//! the configuration that fits concurrency (see [`label`]), SQLite in two
//! (`StoreId::writers_of`). Every store at every writer count is an arm
//! (`writer_arm.rs`) of one set of interleaved rounds sized by time, so
//! the ratios (a store over another at N writers, a store at N writers
//! over itself at one) pair by round.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::blobs;
use super::ids::{self, StoreId};
use super::options::Concurrency;
use super::sqlite_writer;
use super::writer_arm::{durable_settings, WritersArm};
use crate::measure::paired::paired_ratio;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan, StopReason};
use crate::measure::{Latency, LatencySummary, Measured as ArmMeasured, Stat};
use crate::records::keys::Order;
use crate::records::EngineKind;
use crate::util::progress::{Progress, Silent};
use crate::{Error, Result};

/// The writers' section of the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Writers {
    pub blobs: u32,
    pub blob_size: u32,
    /// Each run's writes were sized to take about this long.
    pub run_time_s: f64,
    /// SQLite's busy timeout per write.
    pub busy_timeout_ms: u32,
    pub points: Vec<WriterPoint>,
}

/// One engine at one writer count; the full figures are the experiment
/// `experiment_id` of the same result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriterPoint {
    pub store: StoreId,
    /// What each writer does, in this engine's concurrent configuration.
    pub label: String,
    pub writers: u32,
    /// Readers beside the writers (as many).
    pub readers: u32,
    pub experiment_id: String,
    /// Median over the timed runs (one per round) of durable writes per
    /// second, all writers.
    pub writes_per_s: f64,
    /// The median's order-statistic interval over the rounds (min-max
    /// below 6 rounds).
    pub writes_per_s_low: f64,
    pub writes_per_s_high: f64,
    /// Timed runs (rounds) behind the figures.
    pub rounds: u32,
    /// Per committed write, all writers and runs merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_latency: Option<LatencySummary>,
    /// Median over the timed runs of reads per second beside the writers,
    /// all readers.
    pub reads_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_latency: Option<LatencySummary>,
    /// SQLite's busy-handler waits for the write lock, over the timed runs
    /// (0 for the other engines, whose writers queue inside the engine).
    pub busy_waits: u64,
    /// Writes still busy after the busy timeout (rolled back, not counted).
    pub failed_writes: u64,
}

impl Writers {
    pub fn point(&self, store: StoreId, writers: u32) -> Option<&WriterPoint> {
        self.points.iter().find(|p| p.store == store && p.writers == writers)
    }

    /// The engines measured, in the order they ran.
    pub fn stores(&self) -> Vec<StoreId> {
        ids::stores_in_order(self.points.iter().map(|p| p.store))
    }

    /// The writer counts measured, ascending.
    pub fn counts(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.points.iter().map(|p| p.writers).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
impl WriterPoint {
    /// A point of `store` at `writers` writers taking `per_write_us` a
    /// write (all writers), over 6 rounds, for the tests of the
    /// conclusions and the report.
    pub fn fixture(store: StoreId, writers: u32, per_write_us: f64) -> WriterPoint {
        let rate = 1e6 / per_write_us;
        WriterPoint {
            store,
            label: store.to_string(),
            writers,
            readers: writers,
            experiment_id: ids::writer_experiment(store, writers),
            writes_per_s: rate,
            writes_per_s_low: rate,
            writes_per_s_high: rate,
            rounds: 6,
            write_latency: None,
            reads_per_s: 0.0,
            read_latency: None,
            busy_waits: 0,
            failed_writes: 0,
        }
    }
}

/// What each store's writer does when several write at once: SQLite's
/// way of writing's row, or its engine's fact.
pub fn label(store: StoreId) -> String {
    let text = match store.sqlite_writers() {
        Some(w) => Some(crate::engine::sqlite::writers(w).concurrent),
        None => store.engine().and_then(EngineKind::concurrent_writes),
    };
    text.map_or_else(|| store.to_string(), str::to_string)
}

/// What the writers' section measured.
pub struct Measured {
    pub writers: Writers,
    pub experiments: Vec<crate::measure::Experiment>,
    pub rounds: Vec<RoundSet>,
}

/// The rounds' plan: sized by time, and at least [`MIN_ROUNDS_95`]
/// rounds whatever the budget, so every ratio has its interval.
///
/// [`MIN_ROUNDS_95`]: crate::measure::paired::MIN_ROUNDS_95
pub fn plan(opts: &Concurrency) -> RoundsPlan {
    let least = (crate::measure::paired::MIN_ROUNDS_95 as u32).min(opts.rounds.max_rounds);
    RoundsPlan { run_time: Some(opts.writer_run_time), least_rounds: least, ..opts.rounds }
}

/// Builds each store's dataset in `work` from the blob readers' database
/// (made here when that section did not run), then writes every store at
/// every writer count as the arms of one set of rounds.
pub fn measure(opts: &Concurrency, work: &Path, progress: &dyn Progress) -> Result<Measured> {
    let sets = build_sets(opts, work)?;
    in_rounds(opts, &sets, progress)
}

/// Each store's dataset in `work`, built from the blob readers' database
/// (made here when that section did not run). SQLite's two rows each have
/// a copy in WAL of their own: the one-writer row keeps its connections
/// open between runs, and no arm's connection should sit on another's
/// file.
fn build_sets(opts: &Concurrency, work: &Path) -> Result<Vec<(StoreId, PathBuf)>> {
    let db = blobs::readers_db(opts, work)?;
    let stores = StoreId::writers_of(&opts.writer_engines());
    let mut sets: Vec<(StoreId, PathBuf)> = Vec::with_capacity(stores.len());
    for store in stores {
        let dir = work.join(format!("w-{store}"));
        match store.engine() {
            Some(EngineKind::Db) => {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, "cannot create a directory", e))?;
                let copy = dir.join("kv.db");
                std::fs::copy(&db, &copy).map_err(|e| Error::io(&copy, "cannot copy the database", e))?;
                sqlite_writer::to_wal(&copy)?;
                sets.push((store, copy));
            }
            Some(kind) => {
                crate::engine::registry::build_with(kind, &db, &dir, false, &opts.ctx.settings, &Silent)?;
                sets.push((store, dir));
            }
            None => return Err(Error::invalid(format!("{store} is not a writers' store"))),
        }
    }
    Ok(sets)
}

/// The pairs the rounds stop on: the first store against the others at
/// the most writers, and each store at the most writers against itself at
/// one. `at` holds each arm's store and writer count.
fn pairs_to_stop_on(stores: &[StoreId], at: &[(StoreId, u32)], most: u32) -> Vec<Comparison> {
    let index = |store: StoreId, w: u32| at.iter().position(|&x| x == (store, w));
    let mut pairs: Vec<Comparison> = Vec::new();
    if let Some(first) = stores.first().and_then(|&s| index(s, most)) {
        let others = stores[1..].iter().filter_map(|&s| index(s, most)).collect::<Vec<_>>();
        if !others.is_empty() {
            pairs.push(Comparison { a: vec![first], b: others });
        }
    }
    for &store in stores.iter().filter(|_| most > 1) {
        if let (Some(a), Some(b)) = (index(store, most), index(store, 1)) {
            pairs.push(Comparison { a: vec![a], b: vec![b] });
        }
    }
    pairs
}

/// Runs every store at every writer count as the arms of one set of
/// rounds.
fn in_rounds(opts: &Concurrency, sets: &[(StoreId, PathBuf)], progress: &dyn Progress) -> Result<Measured> {
    let mut arms = Vec::new();
    let mut arm_ids = Vec::new();
    let mut at: Vec<(StoreId, u32)> = Vec::new();
    for &writers in &opts.writer_counts {
        for &(store, ref path) in sets {
            arms.push(WritersArm::prepare(store, path, writers, opts)?);
            arm_ids.push(ids::writer_experiment(store, writers));
            at.push((store, writers));
        }
    }
    let stores: Vec<StoreId> = sets.iter().map(|s| s.0).collect();
    let most = opts.writer_counts.iter().copied().max().unwrap_or(1);
    let pairs = pairs_to_stop_on(&stores, &at, most);
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let mut tick = |_: u64, _: u64| {};
    let out = run_rounds(ids::WRITERS_ROUNDS, &arm_ids, &mut dyn_arms, &plan(opts), &pairs, &mut tick)?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    progress.advance(1);
    let mut points = Vec::with_capacity(arms.len());
    let mut experiments = Vec::with_capacity(arms.len());
    for ((arm, m), id) in arms.into_iter().zip(out.measured).zip(&arm_ids) {
        points.push(point_of(&arm, &m, id));
        let params = writer_params(&arm, opts);
        let title = format!("{}, {} writer(s) + {} reader(s)", label(arm.store), arm.writers, arm.writers);
        experiments.push(crate::measure::Experiment::from_measured(id, &title, params, m));
    }
    let writers = Writers {
        blobs: opts.blob_count,
        blob_size: blobs::BLOB_SIZE,
        run_time_s: opts.writer_run_time.as_secs_f64(),
        busy_timeout_ms: opts.busy_timeout_ms,
        points,
    };
    Ok(Measured { writers, experiments, rounds: vec![out.set] })
}

/// An arm's point: its durable writes/s over the timed runs (median and
/// interval), its write latency, and its readers' figures beside it.
fn point_of(arm: &WritersArm, m: &ArmMeasured, id: &str) -> WriterPoint {
    let rates: Vec<f64> = m.runs.iter().map(|r| 1e6 / r.figure()).collect();
    // The interval of a median: the paired machinery against a constant.
    let interval = paired_ratio(&rates, &vec![1.0; rates.len()]);
    WriterPoint {
        store: arm.store,
        label: label(arm.store),
        writers: arm.writers,
        readers: arm.writers,
        experiment_id: id.to_string(),
        writes_per_s: interval.as_ref().map_or(0.0, |i| i.value),
        writes_per_s_low: interval.as_ref().map_or(0.0, |i| i.low),
        writes_per_s_high: interval.as_ref().map_or(0.0, |i| i.high),
        rounds: rates.len() as u32,
        write_latency: m.latency.as_ref().filter(|l| l.count() > 0).map(Latency::summary),
        reads_per_s: Stat::of(&arm.read_rates).median,
        read_latency: Some(arm.read_latency.summary()).filter(|l| l.count > 0),
        busy_waits: arm.busy_waits,
        failed_writes: arm.failed,
    }
}

/// The experiment's record of an arm's runs.
fn writer_params(arm: &WritersArm, opts: &Concurrency) -> crate::records::WorkloadParams {
    let mut run = crate::drivers::run::RunOptions::new(&arm.path);
    run.update = true;
    run.count = arm.writes * u64::from(arm.writers);
    run.order = Order::Random;
    run.settings = durable_settings(arm.store, &opts.ctx.settings);
    run.seed = opts.ctx.seed;
    let kind = arm.store.engine().unwrap_or(EngineKind::Db);
    run.params(kind, arm.max_id, arm.writers)
}

#[cfg(test)]
#[path = "writers_tests.rs"]
mod tests;
