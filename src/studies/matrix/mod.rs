//! `matrix`: SQLite's "Internal Versus External BLOBs" study on this machine.
//! For each blob size x page size, the same blobs are read three ways: from
//! the database (`SELECT v FROM kv WHERE k=?1`, or the blob API over a
//! memory-mapped database: [`DbRead`]), from files whose names are
//! looked up in a database (the study's "external" blobs), and from files
//! opened directly by key. The study's figure is external time / internal
//! time; above 1.0 the database is faster.
//!
//! Cells are built, measured and removed one at a time, so disk use stays
//! near one cell's datasets; the blob files, which do not depend on the page
//! size, are shared by the cells of one blob size.

mod cell;
mod churn;
mod crossover;
mod db_read;
mod engines;
mod section;
mod study;
mod writes;
mod yours;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use crossover::{crossover, Crossover, CrossoverKind};
pub use db_read::DbRead;
pub use engines::{
    engine_page_size, EngineCell, EngineCrossover, EngineWrites, ENGINE_READ_FIGURE, ENGINE_WRITE_FIGURE,
};
pub use section::{ratio_figure, BestPageSize, Figure, Grid, MatrixCell, MatrixParams, MatrixSection, PageCrossover};
pub use study::{study_grid, study_ratio, STUDY_CACHE_BYTES, STUDY_PAGE_SIZES, STUDY_RATIOS, STUDY_SIZES};
pub use writes::{CellWrites, WriteCrossover};

use crate::engine::dataset::check_spec;
use crate::measure::rounds::RoundsPlan;
use crate::measure::stop_requested;
use crate::records::keys::Order;
use crate::records::DatasetSpec;
use crate::records::FileRead;
use crate::records::Plan;
use crate::records::{SizeSource, SizesFrom};
use crate::studies::context::{StudyContext, StudyRun};
use crate::util::progress::Progress;
use crate::{util::fsutil, Error, Result};

/// What the ratios divide, stated in every output.
pub const RATIO_FIGURE: &str =
    "median over the timed runs of the loop time per blob read (open, transaction and close excluded)";

/// SQLite's largest blob by default (SQLITE_MAX_LENGTH).
const MAX_BLOB: u32 = 1_000_000_000;

/// The start of the work directory's name (then 6 random characters).
const WORK_PREFIX: &str = "blobbench-matrix-";

/// Progress steps per cell: build, then the three measurements.
const STEPS_PER_CELL: u64 = 4;

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
            total_bytes: study::STUDY_TOTAL_BYTES,
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
    fn your_data(&self) -> Result<Option<yours::Yours>> {
        self.yours.as_ref().map(|s| yours::resolve(s, self.total_bytes)).transpose()
    }

    /// Every cell in the order measured, the fixed sizes' then yours.
    fn planned(&self, yours: Option<&yours::Yours>) -> Vec<(CellSpec, yours::Content)> {
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

impl Matrix<'_> {
    /// Checks everything that can be checked before any dataset is built.
    pub fn validate(&self) -> Result<()> {
        self.rounds.validate()?;
        if (self.sizes.is_empty() && self.yours.is_none()) || self.page_sizes.is_empty() {
            return Err(Error::invalid("--sizes and --pagesizes need at least one value each"));
        }
        for &p in &self.page_sizes {
            crate::util::units::check_page_size(p).map_err(|e| Error::invalid(format!("--pagesizes: {e}")))?;
        }
        for &s in &self.sizes {
            if s == 0 || s > MAX_BLOB {
                return Err(Error::invalid(format!(
                    "--sizes: a blob size must be from 1 to {MAX_BLOB} bytes, got {s}"
                )));
            }
        }
        let smallest = u64::from(*self.sizes.iter().min().unwrap_or(&1));
        if self.total_bytes / smallest > i32::MAX as u64 {
            return Err(Error::invalid(format!(
                "--total {} makes {} blobs of {smallest} bytes, more than the {} keys a cell can hold",
                self.total_bytes,
                self.total_bytes / smallest,
                i32::MAX
            )));
        }
        let largest = *self.sizes.iter().max().unwrap_or(&0);
        if self.total_bytes < u64::from(largest) {
            return Err(Error::invalid(format!(
                "--total {} is smaller than one blob of {} bytes",
                self.total_bytes, largest
            )));
        }
        let biggest_page = *self.page_sizes.iter().max().unwrap_or(&0);
        if self.cache_bytes < u64::from(biggest_page) {
            return Err(Error::invalid(format!(
                "--cache {} is smaller than one page of {} bytes",
                self.cache_bytes, biggest_page
            )));
        }
        if self.plan.repeat == 0 {
            return Err(Error::invalid("--repeat must be at least 1"));
        }
        let yours = self.your_data()?;
        let cells = self.planned(yours.as_ref());
        for (cell, content) in &cells {
            check_spec(&content.dataset(cell.dataset(self.ctx.seed)))?;
        }
        let workdir = &self.ctx.workdir;
        if !workdir.is_dir() {
            return Err(Error::bad_input(workdir, "work directory does not exist or is not a directory"));
        }
        self.preflight_engines(&cells)?;
        check_space(workdir, self.largest_cell_bytes(&cells), "the largest cell")
    }

    /// Each engine's own check (a server's programs), at the place its
    /// longest dataset path will be: in the engines' row, under a work
    /// directory named as [`run`] names it.
    fn preflight_engines(&self, cells: &[(CellSpec, yours::Content)]) -> Result<()> {
        let work = self.ctx.workdir.join(format!("{WORK_PREFIX}XXXXXX"));
        let engine_page = self.engine_page_size();
        let rows: Vec<&CellSpec> =
            cells.iter().map(|(c, _)| c).filter(|c| engines::measures_engines(c, engine_page)).collect();
        for (nth, &kind) in self.ctx.engines.iter().enumerate() {
            let targets = rows.iter().map(|spec| engines::dataset_dir(&cell::CellPaths::new(&work, spec).dir, nth));
            let targets: Vec<Option<PathBuf>> = targets.map(Some).collect();
            for target in if targets.is_empty() { vec![None] } else { targets } {
                crate::engine::registry::backend(kind).preflight(&self.ctx.settings, target.as_deref())?;
            }
        }
        Ok(())
    }

    /// Disk the matrix needs at its peak: its largest cell, engines included
    /// (cells are built and removed one at a time).
    pub fn needed_bytes(&self) -> Result<u64> {
        let yours = self.your_data()?;
        Ok(self.largest_cell_bytes(&self.planned(yours.as_ref())))
    }

    fn largest_cell_bytes(&self, cells: &[(CellSpec, yours::Content)]) -> u64 {
        let engine_page = self.engine_page_size();
        cells.iter().map(|(c, _)| c.disk_bytes(true, self.engines_in(c, engine_page))).max().unwrap_or(0)
    }

    /// The page size whose cells measure the engines (None without engines).
    pub fn engine_page_size(&self) -> Option<u32> {
        engine_page_size(&self.page_sizes).filter(|_| !self.ctx.engines.is_empty())
    }

    /// How many engines a cell measures beside SQLite and the files.
    fn engines_in(&self, cell: &CellSpec, engine_page: Option<u32>) -> usize {
        if engines::measures_engines(cell, engine_page) {
            self.ctx.engines.len()
        } else {
            0
        }
    }
}

/// The values in ascending order, each once.
fn sorted(v: &[u32]) -> Vec<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v
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

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellSpec {
    pub size: u32,
    pub page_size: u32,
    /// Blobs in the cell (total / size), keys 1..=count.
    pub count: u32,
    /// PRAGMA cache_size of both databases, in pages.
    pub cache_pages: i64,
    /// The user's blobs ("your data"); `size` is then their mean size.
    pub yours: bool,
}

impl CellSpec {
    /// The cell's blob size in ids and directory names: "10k", or "yours".
    pub fn label(&self) -> String {
        if self.yours {
            "yours".to_string()
        } else {
            crate::util::units::short_size(u64::from(self.size))
        }
    }

    pub fn dataset(&self, seed: u64) -> DatasetSpec {
        DatasetSpec { count: self.count, size: self.size, page_size: self.page_size, seed, ..DatasetSpec::default() }
    }

    /// Rough bytes the cell's datasets take: the database, the name
    /// database, unless they already exist the files (each rounded up to a
    /// 4 KiB block), and `engines` datasets of about twice the database
    /// each (a server's cluster and WAL, an engine's rewrites) plus 64 MB.
    pub fn disk_bytes(&self, with_files: bool, engines: usize) -> u64 {
        let files = u64::from(self.count) * u64::from(self.size).div_ceil(4096) * 4096;
        let names = u64::from(self.count) * 64 + 4 * u64::from(self.page_size);
        let db = crate::engine::dataset::estimated_db_bytes(&self.dataset(1));
        let engines = engines as u64 * (2 * db + (64 << 20));
        db + names + if with_files { files } else { 0 } + engines + (4 << 20)
    }
}

/// Overwrites per timed run: a tenth of the cell's blobs (the article's
/// share), at least 20 and at most 500 (durable writes cost milliseconds).
pub(super) fn writes_per_run(spec: &CellSpec) -> u64 {
    (u64::from(spec.count) / 10).clamp(20, 500).min(u64::from(spec.count))
}

/// What [`run`] returns.
#[derive(Debug, Clone)]
pub struct MatrixRun {
    pub section: MatrixSection,
    /// Stopped by Ctrl-C; only complete cells are in the section.
    pub interrupted: bool,
    pub elapsed_ns: u64,
}

/// Checks everything that can be checked before any dataset is built.
pub fn validate(ctx: &StudyContext, opts: &MatrixOptions) -> Result<()> {
    Matrix::new(ctx, opts, default_rounds(ctx.quick)).validate()
}

/// Disk the matrix needs at its peak: its largest cell, engines included
/// (cells are built and removed one at a time).
pub fn needed_bytes(ctx: &StudyContext, opts: &MatrixOptions) -> Result<u64> {
    Matrix::new(ctx, opts, default_rounds(ctx.quick)).needed_bytes()
}

/// Measures every cell. Each cell's datasets live in a temporary directory
/// under `opts.workdir` that is removed when the cell is done, and the
/// whole directory on any exit (error or Ctrl-C included).
pub fn run(ctx: &StudyContext, opts: &MatrixOptions) -> Result<MatrixRun> {
    let opts = &Matrix::new(ctx, opts, default_rounds(ctx.quick));
    opts.validate()?;
    let progress = &ctx.progress();
    let started = Instant::now();
    crate::engine::registry::reap_killed(&ctx.workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let work = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&ctx.workdir)
        .map_err(|e| Error::io(&ctx.workdir, "cannot create a work directory here", e))?;
    let yours = opts.your_data()?;
    let cells = opts.planned(yours.as_ref());
    progress.start("matrix", cells.len() as u64 * STEPS_PER_CELL);
    let (mut done, mut done_yours) = (Vec::with_capacity(cells.len()), Vec::new());
    let mut interrupted = false;
    // The current blob size's files, removed when the size changes.
    let mut files: Option<(String, cell::RemoveOnDrop)> = None;
    for (spec, content) in &cells {
        if stop_requested() {
            interrupted = true;
            break;
        }
        if files.as_ref().map(|(label, _)| label) != Some(&spec.label()) {
            files = Some((spec.label(), cell::RemoveOnDrop(cell::files_dir(work.path(), spec))));
        }
        match cell::run_cell(spec, content, opts, work.path(), progress) {
            Ok(Some(c)) if spec.yours => done_yours.push(c),
            Ok(Some(c)) => done.push(c),
            Ok(None) | Err(Error::Interrupted) => {
                interrupted = true;
                break;
            }
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        }
    }
    progress.finish();
    drop(files);
    remove_work(work)?;
    let params = MatrixParams {
        sizes_bytes: sorted(&opts.sizes),
        page_sizes: sorted(&opts.page_sizes),
        total_bytes: opts.total_bytes,
        cache_bytes: opts.cache_bytes,
        plan: opts.plan,
        order: Order::Random,
        file_read: FileRead::Posix,
        seed: ctx.seed,
        workdir: ctx.workdir.display().to_string(),
        sizes_from: yours.map(|y| y.from),
        engines: ctx.engines.clone(),
        engine_page_size: opts.engine_page_size(),
        db_read: opts.db_read,
    };
    let mut section = MatrixSection::new(params, done);
    section.yours = done_yours;
    Ok(MatrixRun { section, interrupted, elapsed_ns: started.elapsed().as_nanos() as u64 })
}

fn remove_work(work: tempfile::TempDir) -> Result<()> {
    let path: PathBuf = work.path().to_path_buf();
    work.close().map_err(|e| Error::io(&path, "cannot remove the work directory", e))
}

/// Fails when `dir`'s filesystem has less than `need` bytes free; checked
/// up front for the largest cell and again before each cell is built.
fn check_space(dir: &Path, need: u64, what: &str) -> Result<()> {
    let free = fsutil::free_bytes(dir)?;
    if free < need {
        return Err(Error::bad_input(
            dir,
            format!(
                "not enough free space for {what}: needs about {} MB, {} MB free (use --workdir or a smaller --total)",
                need.div_ceil(1_000_000),
                free / 1_000_000
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_support;
