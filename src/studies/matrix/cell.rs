//! One cell of the matrix: build its databases (and its blob size's files,
//! when the cell is the first of that size), measure the three ways of
//! reading the same blobs in the same random order, remove the databases.
//! The database and direct-file reads go through `run::run` (kvtest's run);
//! only the external read, which `run` has no layout for, is driven here,
//! with `run`'s own timed loop.

use std::path::{Path, PathBuf};

use super::{check_space, ratio_figure, CellSpec, MatrixCell, MatrixOptions};
use crate::drivers::run::{self, RunOptions};
use crate::engine::dataset::{export, init, init_names};
use crate::engine::ExternalEngine;
use crate::measure::Experiment;
use crate::records::keys::Order;
use crate::records::Plan;
use crate::records::{DbAccess, DbParams, FileParams, FileRead};
use crate::util::progress::{Progress, Silent};
use crate::util::units::short_size;
use crate::{util::fsutil, Error, Result};

/// A cell's datasets: blobs in a database and a database of the files'
/// names, both with the cell's page size, in the cell's directory; and the
/// blobs as files, which do not depend on the page size and are shared by
/// the cells of one blob size (see [`files_dir`]).
pub(super) struct CellPaths {
    pub dir: PathBuf,
    pub blobs_db: PathBuf,
    pub files: PathBuf,
    pub names_db: PathBuf,
}

impl CellPaths {
    pub(super) fn new(work: &Path, spec: &CellSpec) -> Self {
        let dir = work.join(format!("p{}-{}", spec.page_size, short_size(u64::from(spec.size))));
        CellPaths {
            blobs_db: dir.join("internal.db"),
            files: files_dir(work, spec.size),
            names_db: dir.join("external.db"),
            dir,
        }
    }
}

/// Where the files of one blob size live while its cells are measured.
pub(super) fn files_dir(work: &Path, size: u32) -> PathBuf {
    work.join(format!("files-{}", short_size(u64::from(size))))
}

/// Removes a directory however the scope that made it ends.
pub(super) struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Measures one cell; None when Ctrl-C cut it short (a partial cell would
/// compare runs of unequal number, so it is dropped). The cell's databases
/// are removed when it ends; the shared files are left to the caller.
pub(super) fn run_cell(
    spec: &CellSpec,
    opts: &MatrixOptions,
    work: &Path,
    progress: &dyn Progress,
) -> Result<Option<MatrixCell>> {
    let paths = CellPaths::new(work, spec);
    let what = format!("the cell of {}-byte blobs at page size {}", spec.size, spec.page_size);
    check_space(work, spec.disk_bytes(!paths.files.exists()), &what)?;
    std::fs::create_dir(&paths.dir).map_err(|e| Error::io(&paths.dir, "cannot create directory", e))?;
    let _cleanup = RemoveOnDrop(paths.dir.clone());
    let content_bytes = build(spec, opts.seed, &paths)?;
    progress.advance(1);

    let id = |what: &str| format!("matrix/p{}/{}/{what}", spec.page_size, short_size(u64::from(spec.size)));
    let internal = run::run(&run_options(spec, &paths.blobs_db, &opts.plan), &id("internal"), INTERNAL_LABEL)?;
    progress.advance(1);
    if internal.interrupted {
        return Ok(None);
    }
    let Some(external) = measure_external(spec, &paths, &opts.plan, &id("external"))? else {
        return Ok(None);
    };
    progress.advance(1);
    let direct = run::run(&run_options(spec, &paths.files, &opts.plan), &id("direct"), DIRECT_LABEL)?;
    progress.advance(1);
    if direct.interrupted {
        return Ok(None);
    }
    let writes = if opts.writes {
        Some(super::writes::measure(spec, &paths.blobs_db, &paths.files, &paths.dir, &opts.plan, opts.seed)?)
    } else {
        None
    };
    let (internal, direct) = (internal.experiment, direct.experiment);
    let base = ratio_figure(&internal);
    if !(base.is_finite() && base > 0.0) {
        return Err(Error::invalid(format!("{what}: the database reads took no measurable time; no ratio")));
    }
    Ok(Some(MatrixCell {
        size_bytes: spec.size,
        page_size: spec.page_size,
        count: spec.count,
        content_bytes,
        cache_pages: spec.cache_pages,
        external_ratio: ratio_figure(&external) / base,
        direct_ratio: ratio_figure(&direct) / base,
        internal,
        external,
        direct,
        writes,
    }))
}

const INTERNAL_LABEL: &str = "blob inside SQLite (SELECT v FROM kv WHERE k=?1)";
const EXTERNAL_LABEL: &str = "name in SQLite, blob in a file (lookup, then open/fstat/read/close)";
const DIRECT_LABEL: &str = "blob in a file opened by key (open/fstat/read/close, no database)";

/// Builds the cell's databases, and the files when this blob size has none
/// yet (the same seed gives the same content whatever the page size), then
/// flushes them to disk so their writeback does not overlap the timed runs.
/// Returns the bytes of blob content.
pub(super) fn build(spec: &CellSpec, seed: u64, paths: &CellPaths) -> Result<u64> {
    let made = init(&paths.blobs_db, &spec.dataset(seed), false, &Silent)?;
    if !paths.files.exists() {
        export(&paths.blobs_db, &paths.files, false, false, &Silent)?;
    }
    init_names(&paths.blobs_db, &paths.names_db, spec.page_size)?;
    fsutil::sync_filesystem(&paths.dir)?;
    Ok(made.content_bytes)
}

/// The cell's database settings: SQL reads, the cell's share of the cache.
fn db_params(spec: &CellSpec) -> DbParams {
    DbParams { access: DbAccess::Sql, cache_size: spec.cache_pages, ..DbParams::default() }
}

/// Files are read with open/fstat/read/close by both file layouts.
fn file_params() -> FileParams {
    FileParams { read: FileRead::Posix, ..FileParams::default() }
}

/// kvtest's run over every blob of the cell, once per run on average, in
/// kvtest's random order, of a database or of the directory of files.
fn run_options(spec: &CellSpec, path: &Path, plan: &Plan) -> RunOptions {
    RunOptions {
        count: u64::from(spec.count),
        max_id: Some(spec.count),
        order: Order::Random,
        db: db_params(spec),
        files: file_params(),
        plan: *plan,
        ..RunOptions::new(path)
    }
}

/// The external reads, timed as `run` times a database: open, the loop,
/// commit, close. None when interrupted.
fn measure_external(spec: &CellSpec, paths: &CellPaths, plan: &Plan, id: &str) -> Result<Option<Experiment>> {
    let engine = ExternalEngine::at(&paths.dir, &paths.names_db, &paths.files, spec.cache_pages);
    let opts = run_options(spec, &paths.names_db, plan);
    let report = run::run_engine(Box::new(engine), &opts, id, EXTERNAL_LABEL, &mut |_, _| {})?;
    Ok((!report.interrupted).then_some(report.experiment))
}
