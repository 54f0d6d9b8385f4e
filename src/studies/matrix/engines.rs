//! `matrix --engines`: key-value engines and database servers (LMDB, redb,
//! fjall, PostgreSQL bytea and large objects) beside the files, by blob
//! size, so each engine gets its own crossover: the blob size from which
//! files opened by key beat it.
//!
//! An engine's reads do not depend on SQLite's page size, so each engine is
//! measured once per blob size, in the cells of one page size (the one
//! nearest SQLite's default 4096, see [`engine_page_size`]). There its read
//! is one more arm of the cell's read rounds, and its fast and durable
//! overwrites are arms of the cell's write rounds, so every ratio against
//! the files is paired by round. Its dataset is built from the cell's
//! database (the same keys and bytes) in the cell's directory and removed
//! with it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::cells::CellSpec;
use super::crossover::Crossover;
use crate::drivers::run::RunOptions;
use crate::measure::paired::{paired_ratio, PairedRatio};
use crate::measure::Experiment;
use crate::records::{EngineKind, EngineSettings, KvParams, KvSync};
use crate::util::progress::Silent;
use crate::Result;

/// SQLite's default page size: the engines' row is the page size nearest it.
const SQLITE_DEFAULT_PAGE: u32 = 4096;

/// What the engines' ratios divide, stated in every output.
pub const ENGINE_READ_FIGURE: &str =
    "median over the rounds of files-by-key time / engine time per blob read (loop only: connect, open and close excluded)";
pub const ENGINE_WRITE_FIGURE: &str = "median over the rounds of files time / engine time per overwrite, each \
     its own transaction (commits and close included; opening or connecting excluded, as a kept connection would be)";

/// The page size whose cells also measure the engines: the listed one
/// nearest 4096 (the smaller of two equally near).
pub fn engine_page_size(page_sizes: &[u32]) -> Option<u32> {
    page_sizes.iter().copied().min_by_key(|&p| (p.abs_diff(SQLITE_DEFAULT_PAGE), p))
}

/// One engine in one cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineCell {
    pub engine: EngineKind,
    /// Blobs read from the engine: an arm of the cell's read rounds.
    pub read: Experiment,
    /// Files opened by key / engine, paired by round; above 1.0 the engine
    /// is faster (see [`ENGINE_READ_FIGURE`]).
    pub files_ratio: PairedRatio,
    /// Its overwrites beside the files' (absent with `--reads-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<EngineWrites>,
}

/// One engine's overwrites in a cell, arms of the cell's write rounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineWrites {
    /// The engine's fast commit (PostgreSQL: synchronous_commit off).
    pub fast: Experiment,
    /// Its durable commit (PostgreSQL: synchronous_commit on).
    pub durable: Experiment,
    /// File overwritten in place, no fsync / fast; above 1.0 the engine is
    /// faster (see [`ENGINE_WRITE_FIGURE`]).
    pub fast_ratio: PairedRatio,
    /// New file, fsync, rename / durable.
    pub durable_ratio: PairedRatio,
}

/// Per engine, the blob sizes from which files beat it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineCrossover {
    pub engine: EngineKind,
    pub page_size: u32,
    pub read: Crossover,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast: Option<Crossover>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<Crossover>,
}

/// Where a cell's `nth` engine dataset lives: a short name, as a server's
/// Unix socket path inside it must stay under 108 bytes.
pub(super) fn dataset_dir(cell_dir: &Path, nth: usize) -> PathBuf {
    cell_dir.join(format!("e{nth}"))
}

/// Builds each engine's dataset from the cell's database.
pub(super) fn build(
    db: &Path,
    cell_dir: &Path,
    kinds: &[EngineKind],
    settings: &EngineSettings,
) -> Result<Vec<(EngineKind, PathBuf)>> {
    let mut out = Vec::with_capacity(kinds.len());
    for (nth, &kind) in kinds.iter().enumerate() {
        let dir = dataset_dir(cell_dir, nth);
        crate::engine::registry::build_with(kind, db, &dir, false, settings, &Silent)?;
        out.push((kind, dir));
    }
    Ok(out)
}

/// An engine's write arms' settings: each overwrite its own transaction,
/// committed fast or durably.
pub(super) fn write_options(mut base: RunOptions, sync: KvSync) -> RunOptions {
    base.settings.kv = KvParams { sync };
    base.settings.commit_every = Some(1);
    base
}

/// Per run, the write figure of [`ENGINE_WRITE_FIGURE`]: kvtest's total
/// less the open (or connect), per op.
pub(super) fn write_times(e: &Experiment) -> Vec<f64> {
    e.runs
        .iter()
        .map(|r| r.phases.kvtest_total_ns.saturating_sub(r.phases.setup_ns) as f64 / 1000.0 / r.ops.max(1) as f64)
        .collect()
}

/// files / engine, paired by round; None when the runs do not pair.
pub(super) fn files_over(files: &[f64], engine: &[f64]) -> Option<PairedRatio> {
    paired_ratio(files, engine)
}

/// The cells that measure engines.
pub(super) fn measures_engines(spec: &CellSpec, engine_page: Option<u32>) -> bool {
    engine_page == Some(spec.page_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_row_is_the_page_size_nearest_sqlites_default() {
        assert_eq!(engine_page_size(&[1024, 4096, 16384]), Some(4096));
        assert_eq!(engine_page_size(&[1024, 8192]), Some(1024), "3072 away beats 4096 away");
        assert_eq!(engine_page_size(&[2048, 6144]), Some(2048), "a tie goes to the smaller");
        assert_eq!(engine_page_size(&[65536]), Some(65536));
        assert_eq!(engine_page_size(&[]), None);
    }
}
