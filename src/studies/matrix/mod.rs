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
mod study;
mod writes;
mod yours;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use crossover::{crossover, Crossover, CrossoverKind};
pub use db_read::DbRead;
pub use engines::{
    engine_page_size, EngineCell, EngineCrossover, EngineWrites, ENGINE_READ_FIGURE, ENGINE_WRITE_FIGURE,
};
pub use study::{study_grid, study_ratio, STUDY_CACHE_BYTES, STUDY_PAGE_SIZES, STUDY_RATIOS, STUDY_SIZES};
pub use writes::{CellWrites, WriteCrossover};

use crate::engine::dataset::check_spec;
use crate::measure::rounds::RoundsPlan;
use crate::measure::Experiment;
use crate::measure::{stop_requested, NOISY_CV_PCT};
use crate::records::keys::Order;
use crate::records::DatasetSpec;
use crate::records::FileRead;
use crate::records::Plan;
use crate::records::{EngineKind, EngineSettings, SizeSource, SizesFrom};
use crate::util::progress::Progress;
use crate::util::units::plural;
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
    /// The reads' interleaved rounds, per cell.
    pub rounds: RoundsPlan,
    /// Where the cells' datasets are built (in a temporary directory).
    pub workdir: PathBuf,
    /// Seed of the blobs' random content.
    pub seed: u64,
    /// Also measure writes in each cell (overwrites fast and durable, grow
    /// and shrink).
    pub writes: bool,
    /// The user's blobs (`--from`, `--size-dist`): one more cell per page
    /// size, "your data", with up to `total_bytes` of them (an evenly
    /// spaced sample of the files when they hold more). With it, `sizes`
    /// may be empty (only your data is measured).
    pub yours: Option<SizeSource>,
    /// Key-value engines and servers measured beside the files in the
    /// cells of one page size ([`engine_page_size`]).
    pub engines: Vec<EngineKind>,
    /// How the cells read blobs out of SQLite (the study's SQL by default).
    pub db_read: DbRead,
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
            rounds: RoundsPlan::new(20, Some(Duration::from_secs(20))),
            workdir: default_workdir(),
            seed: 1,
            writes: true,
            yours: None,
            engines: Vec::new(),
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
            rounds: RoundsPlan { budget: Some(Duration::from_secs(2)), ..MatrixOptions::default().rounds },
            ..MatrixOptions::default()
        }
    }

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
            check_spec(&content.dataset(cell.dataset(self.seed)))?;
        }
        if !self.workdir.is_dir() {
            return Err(Error::bad_input(&self.workdir, "work directory does not exist or is not a directory"));
        }
        self.preflight_engines(&cells)?;
        check_space(&self.workdir, self.largest_cell_bytes(&cells), "the largest cell")
    }

    /// Each engine's own check (a server's programs), at the place its
    /// longest dataset path will be: in the engines' row, under a work
    /// directory named as [`run`] names it.
    fn preflight_engines(&self, cells: &[(CellSpec, yours::Content)]) -> Result<()> {
        let work = self.workdir.join(format!("{WORK_PREFIX}XXXXXX"));
        let engine_page = self.engine_page_size();
        let rows: Vec<&CellSpec> =
            cells.iter().map(|(c, _)| c).filter(|c| engines::measures_engines(c, engine_page)).collect();
        for (nth, &kind) in self.engines.iter().enumerate() {
            let targets = rows.iter().map(|spec| engines::dataset_dir(&cell::CellPaths::new(&work, spec).dir, nth));
            let targets: Vec<Option<PathBuf>> = targets.map(Some).collect();
            for target in if targets.is_empty() { vec![None] } else { targets } {
                crate::engine::registry::backend(kind).preflight(&EngineSettings::default(), target.as_deref())?;
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
        engine_page_size(&self.page_sizes).filter(|_| !self.engines.is_empty())
    }

    /// How many engines a cell measures beside SQLite and the files.
    fn engines_in(&self, cell: &CellSpec, engine_page: Option<u32>) -> usize {
        if engines::measures_engines(cell, engine_page) {
            self.engines.len()
        } else {
            0
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

/// The `matrix` section of a result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixSection {
    pub params: MatrixParams,
    /// What the ratios divide (see [`RATIO_FIGURE`]).
    pub ratio_figure: String,
    /// The measured cells, in the order measured (by blob size, then page size).
    pub cells: Vec<MatrixCell>,
    /// Per page size, where files start to beat the database.
    pub crossovers: Vec<PageCrossover>,
    /// Per blob size, the page size with the fastest database read.
    pub best_page_sizes: Vec<BestPageSize>,
    /// Per page size, where files start to beat the database at writing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_crossovers: Vec<WriteCrossover>,
    /// The "your data" cells, one per page size (see `params.sizes_from`);
    /// their `size_bytes` is the blobs' mean size. Not in the grids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yours: Vec<MatrixCell>,
    /// Per engine (`--engines`), where files start to beat it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_crossovers: Vec<EngineCrossover>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixParams {
    pub sizes_bytes: Vec<u32>,
    pub page_sizes: Vec<u32>,
    pub total_bytes: u64,
    pub cache_bytes: u64,
    pub plan: Plan,
    pub order: Order,
    /// How files are read, by the external and direct layouts alike.
    pub file_read: FileRead,
    pub seed: u64,
    pub workdir: String,
    /// Where the "your data" cells' blobs came from (absent without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes_from: Option<SizesFrom>,
    /// Engines measured beside the files (`--engines`), in the cells of
    /// `engine_page_size`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_page_size: Option<u32>,
    /// How the cells read blobs out of SQLite (older files: SQL).
    #[serde(default)]
    pub db_read: DbRead,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixCell {
    pub size_bytes: u32,
    pub page_size: u32,
    pub count: u32,
    pub content_bytes: u64,
    pub cache_pages: i64,
    /// Blobs inside the database, read as `params.db_read` says.
    pub internal: Experiment,
    /// Names in a database, blobs in files: lookup, then the file.
    pub external: Experiment,
    /// The same files opened directly by key, no database.
    pub direct: Experiment,
    /// external / internal of the ratio figure; above 1.0 the database is faster.
    pub external_ratio: f64,
    /// direct / internal of the ratio figure.
    pub direct_ratio: f64,
    /// The rounds the three reads ran in (absent in older files, whose
    /// ratios are of the medians, unpaired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<crate::measure::rounds::RoundSet>,
    /// The cell's write experiments (absent in older files and with
    /// `--reads-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<CellWrites>,
    /// The engines measured in this cell (`--engines`, at the engines' page
    /// size only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineCell>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageCrossover {
    pub page_size: u32,
    pub external: Crossover,
    pub direct: Crossover,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BestPageSize {
    pub size_bytes: u32,
    pub page_size: u32,
    /// Its database read time (the ratio figure), microseconds per blob.
    pub internal_us: f64,
    pub external_ratio: f64,
}

/// Which figure of the cells a grid shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    ExternalRatio,
    DirectRatio,
    /// The database read time, microseconds per blob.
    InternalUs,
}

/// Values by page size (rows) and blob size (columns); None where no cell
/// was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub sizes: Vec<u32>,
    pub page_sizes: Vec<u32>,
    pub values: Vec<Vec<Option<f64>>>,
}

impl Grid {
    /// (size, value) of the measured cells of one row, ascending in size.
    pub fn row_points(&self, row: usize) -> Vec<(f64, f64)> {
        self.sizes.iter().zip(&self.values[row]).filter_map(|(&s, v)| v.map(|v| (f64::from(s), v))).collect()
    }
}

impl MatrixCell {
    /// external / internal paired by round, with its interval (None for
    /// older files, whose cells were not measured in rounds).
    pub fn external_paired(&self) -> Option<crate::measure::paired::PairedRatio> {
        self.rounds.as_ref()?;
        crate::measure::paired::paired_ratio(&self.external.loop_times(), &self.internal.loop_times())
    }

    pub fn figure(&self, f: Figure) -> f64 {
        match f {
            Figure::ExternalRatio => self.external_ratio,
            Figure::DirectRatio => self.direct_ratio,
            Figure::InternalUs => ratio_figure(&self.internal),
        }
    }
}

/// The figure ratios are taken of (see [`RATIO_FIGURE`]), in microseconds.
pub fn ratio_figure(e: &Experiment) -> f64 {
    e.summary.loop_per_op_us.median
}

impl MatrixSection {
    /// "12-20 interleaved rounds per cell, ratios paired by round", or for
    /// older files "3 timed runs per cell".
    pub fn runs_phrase(&self) -> String {
        let counts: Vec<usize> = self.cells.iter().filter_map(|c| c.rounds.as_ref().map(|r| r.rounds.len())).collect();
        match (counts.iter().min(), counts.iter().max()) {
            (Some(lo), Some(hi)) if counts.len() == self.cells.len() => {
                let n = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
                format!("{n} interleaved rounds per cell, ratios paired by round (median of per-round ratios)")
            }
            _ => {
                let r = self.params.plan.repeat;
                format!("{r} timed run{} per cell (unpaired)", plural(r))
            }
        }
    }

    /// The section for `cells`, with crossovers and best page sizes derived.
    pub fn new(params: MatrixParams, cells: Vec<MatrixCell>) -> Self {
        let mut section = MatrixSection {
            params,
            ratio_figure: RATIO_FIGURE.to_string(),
            cells,
            crossovers: Vec::new(),
            best_page_sizes: Vec::new(),
            write_crossovers: Vec::new(),
            yours: Vec::new(),
            engine_crossovers: Vec::new(),
        };
        let (ext, direct) = (section.grid(Figure::ExternalRatio), section.grid(Figure::DirectRatio));
        for (row, &page_size) in ext.page_sizes.iter().enumerate() {
            if let (Some(external), Some(direct)) =
                (crossover(&ext.row_points(row)), crossover(&direct.row_points(row)))
            {
                section.crossovers.push(PageCrossover { page_size, external, direct });
            }
        }
        for &size in &ext.sizes {
            let best = section
                .cells
                .iter()
                .filter(|c| c.size_bytes == size)
                .min_by(|a, b| ratio_figure(&a.internal).total_cmp(&ratio_figure(&b.internal)));
            if let Some(c) = best {
                section.best_page_sizes.push(BestPageSize {
                    size_bytes: size,
                    page_size: c.page_size,
                    internal_us: ratio_figure(&c.internal),
                    external_ratio: c.external_ratio,
                });
            }
        }
        section.write_crossovers = section.write_crossovers();
        section.engine_crossovers = section.engine_crossovers();
        section
    }

    /// Cells where one of the three measurements varied between runs by
    /// more than [`NOISY_CV_PCT`] (coefficient of variation of the ratio
    /// figure), and the largest such variation in percent.
    pub fn noisy_cells(&self) -> (usize, f64) {
        let cv = |c: &MatrixCell| {
            [&c.internal, &c.external, &c.direct].iter().map(|e| e.summary.loop_per_op_us.cv_pct).fold(0.0, f64::max)
        };
        let noisy: Vec<f64> = self.cells.iter().map(cv).filter(|&v| v > NOISY_CV_PCT).collect();
        (noisy.len(), noisy.iter().copied().fold(0.0, f64::max))
    }

    /// One figure of every cell, laid out as the study's table.
    pub fn grid(&self, f: Figure) -> Grid {
        let (sizes, page_sizes) = (sorted(&self.params.sizes_bytes), sorted(&self.params.page_sizes));
        let values = page_sizes
            .iter()
            .map(|&p| {
                sizes
                    .iter()
                    .map(|&s| self.cells.iter().find(|c| c.page_size == p && c.size_bytes == s).map(|c| c.figure(f)))
                    .collect()
            })
            .collect();
        Grid { sizes, page_sizes, values }
    }
}

/// What [`run`] returns.
#[derive(Debug, Clone)]
pub struct MatrixRun {
    pub section: MatrixSection,
    /// Stopped by Ctrl-C; only complete cells are in the section.
    pub interrupted: bool,
    pub elapsed_ns: u64,
}

/// Measures every cell. Each cell's datasets live in a temporary directory
/// under `opts.workdir` that is removed when the cell is done, and the
/// whole directory on any exit (error or Ctrl-C included).
pub fn run(opts: &MatrixOptions, progress: &dyn Progress) -> Result<MatrixRun> {
    opts.validate()?;
    let started = Instant::now();
    crate::engine::registry::reap_killed(&opts.workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let work = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&opts.workdir)
        .map_err(|e| Error::io(&opts.workdir, "cannot create a work directory here", e))?;
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
        seed: opts.seed,
        workdir: opts.workdir.display().to_string(),
        sizes_from: yours.map(|y| y.from),
        engines: opts.engines.clone(),
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
