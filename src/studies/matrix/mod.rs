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
mod cells;
mod churn;
mod crossover;
mod db_read;
mod engines;
mod options;
mod section;
mod study;
mod writes;
mod yours;

use std::path::PathBuf;
use std::time::Instant;

pub use cells::CellSpec;
use cells::{check_space, sorted};
pub use crossover::{crossover, Crossover, CrossoverKind};
pub use db_read::DbRead;
pub use engines::{
    engine_page_size, EngineCell, EngineCrossover, EngineWrites, ENGINE_READ_FIGURE, ENGINE_WRITE_FIGURE,
};
pub use options::{
    default_rounds, default_workdir, Matrix, MatrixOptions, STUDY_CACHE_BYTES, STUDY_PAGE_SIZES, STUDY_SIZES,
};
pub use section::{
    ratio_figure, BestPageSize, Figure, Grid, MatrixCell, MatrixParams, MatrixSection, PageCrossover, RATIO_FIGURE,
};
pub use study::{study_grid, study_ratio, STUDY_RATIOS};
pub use writes::{CellWrites, WriteCrossover};

use crate::engine::dataset::check_spec;
use crate::measure::stop_requested;
use crate::records::keys::Order;
use crate::records::FileRead;
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// SQLite's largest blob by default (SQLITE_MAX_LENGTH).
const MAX_BLOB: u32 = 1_000_000_000;

/// The start of the work directory's name (then 6 random characters).
const WORK_PREFIX: &str = "blobbench-matrix-";

/// Progress steps per cell: build, then the three measurements.
const STEPS_PER_CELL: u64 = 4;

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

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_support;
