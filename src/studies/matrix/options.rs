//! What `matrix` is asked ([`MatrixOptions`], the study's own knobs and
//! its defaults: the 2011 study's matrix) and the matrix as it runs in its
//! context ([`Matrix`]).

use std::path::PathBuf;
use std::time::Duration;

use super::cells::{sorted, CellSpec};
use super::db_read::DbRead;
use super::yours;
use crate::measure::rounds::RoundsPlan;
use crate::records::{Plan, SizeSource, SizesFrom};
use crate::studies::context::StudyRun;
use crate::Result;

/// Blob sizes of the study's columns, in bytes (10k = 10,000: 100 MB of
/// content is 10000 blobs of 10k and 100 blobs of 1m).
pub const STUDY_SIZES: [u32; 7] = [10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];
pub const STUDY_PAGE_SIZES: [u32; 7] = [1024, 2048, 4096, 8192, 16384, 32768, 65536];
/// The study's blob content per cell.
pub const STUDY_TOTAL_BYTES: u64 = 100_000_000;
/// The study's cache: 2000 pages of 1024 bytes ("about 2MB"; 31 pages of 65536).
pub const STUDY_CACHE_BYTES: u64 = 2000 * 1024;

#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// Blob sizes in bytes (columns).
    pub sizes: Vec<u32>,
    /// Database page sizes (rows).
    pub page_sizes: Vec<u32>,
    /// Blob content per cell; each cell holds total / size blobs.
    pub total_bytes: u64,
    /// Page cache of each database, in bytes (cache_size = this / page size).
    pub cache_bytes: u64,
    /// The writes' runs (a block per method).
    pub plan: Plan,
    /// Also measure writes in each cell (overwrites fast and durable, grow
    /// and shrink).
    pub writes: bool,
    /// The user's blobs (`--from`, `--size-dist`): one more cell per page
    /// size, "your data", with up to `total_bytes` of them (an evenly
    /// spaced sample of the files when they hold more). With it, `sizes`
    /// may be empty (only your data is measured).
    pub yours: Option<SizeSource>,
    /// How the cells read blobs out of SQLite (the study's SQL by default).
    pub db_read: DbRead,
}

/// The matrix as it runs: its context (the work directory, the seed of the
/// blobs' content, the engines measured beside the files in the cells of
/// one page size ([`engine_page_size`]), the settings), its options and
/// the reads' interleaved rounds per cell.
pub type Matrix<'a> = StudyRun<'a, MatrixOptions>;

/// The reads' rounds per cell unless asked otherwise: at most 20 within
/// 20 s, 2 s with `--quick`.
pub fn default_rounds(quick: bool) -> RoundsPlan {
    RoundsPlan::new(20, Some(Duration::from_secs(if quick { 2 } else { 20 })))
}

impl Default for MatrixOptions {
    /// The study's matrix: 7 sizes x 7 page sizes, 100 MB per cell, ~2 MB cache.
    fn default() -> Self {
        MatrixOptions {
            sizes: STUDY_SIZES.to_vec(),
            page_sizes: STUDY_PAGE_SIZES.to_vec(),
            total_bytes: STUDY_TOTAL_BYTES,
            cache_bytes: STUDY_CACHE_BYTES,
            plan: Plan { repeat: 5, warmup: 1, cold: false, latency: true },
            writes: true,
            yours: None,
            db_read: DbRead::Sql,
        }
    }
}

impl MatrixOptions {
    /// A smaller matrix for a first look: 4 x 4 cells of 20 MB, 3 runs each.
    pub fn quick() -> Self {
        MatrixOptions {
            sizes: vec![10_000, 50_000, 200_000, 1_000_000],
            page_sizes: vec![1024, 4096, 16384, 65536],
            total_bytes: 20_000_000,
            plan: Plan { repeat: 3, ..MatrixOptions::default().plan },
            ..MatrixOptions::default()
        }
    }

    /// Cells measured: the fixed sizes' and, with `yours`, one per page size.
    pub fn cell_count(&self) -> usize {
        self.cells().len() + self.yours.as_ref().map_or(0, |_| sorted(&self.page_sizes).len())
    }

    /// What the result file will say of the user's blobs (the files are
    /// scanned, not read), for a caller to state before the run.
    pub fn sizes_from(&self) -> Result<Option<SizesFrom>> {
        Ok(self.your_data()?.map(|y| y.from))
    }

    /// The user's blobs, checked and sampled (None without `yours`).
    pub(super) fn your_data(&self) -> Result<Option<yours::Yours>> {
        self.yours.as_ref().map(|s| yours::resolve(s, self.total_bytes)).transpose()
    }

    /// Every cell in the order measured, the fixed sizes' then yours.
    pub(super) fn planned(&self, yours: Option<&yours::Yours>) -> Vec<(CellSpec, yours::Content)> {
        let mut cells: Vec<_> = self.cells().into_iter().map(|c| (c, yours::Content::Fixed)).collect();
        if let Some(y) = yours {
            for page_size in sorted(&self.page_sizes) {
                let cache_pages = (self.cache_bytes / u64::from(page_size)) as i64;
                let spec = CellSpec { size: y.mean, page_size, count: y.count, cache_pages, yours: true };
                cells.push((spec, y.content.clone()));
            }
        }
        cells
    }

    /// The cells in the order they are measured: by blob size, then page
    /// size, both ascending and without repeats. The cells of one blob size
    /// share its files, so each size's files are made and removed once.
    pub fn cells(&self) -> Vec<CellSpec> {
        let (sizes, pages) = (sorted(&self.sizes), sorted(&self.page_sizes));
        let mut cells = Vec::with_capacity(sizes.len() * pages.len());
        for &size in &sizes {
            for &page_size in &pages {
                let count = (self.total_bytes / u64::from(size.max(1))).min(u64::from(u32::MAX)) as u32;
                let cache_pages = (self.cache_bytes / u64::from(page_size)) as i64;
                cells.push(CellSpec { size, page_size, count, cache_pages, yours: false });
            }
        }
        cells
    }
}

/// A real disk for the datasets: the system temporary directory unless it
/// lives in memory (tmpfs), then the current directory.
pub fn default_workdir() -> PathBuf {
    let tmp = std::env::temp_dir();
    let in_memory =
        crate::measure::envinfo::storage_info(&tmp).is_some_and(|s| matches!(s.fs_type.as_str(), "tmpfs" | "ramfs"));
    if tmp.is_dir() && !in_memory {
        tmp
    } else {
        PathBuf::from(".")
    }
}
