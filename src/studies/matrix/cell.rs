//! One cell of the matrix: build its databases (and its blob size's files,
//! when the cell is the first of that size), measure the three ways of
//! reading the same blobs in the same random order, remove the databases.
//! The three reads are the arms of interleaved rounds (`measure::rounds`),
//! each a `run` (kvtest's run) of its engine; the ratios are paired by round.
//! In the engines' row (`matrix --engines`) each engine's read is one more
//! arm, and its dataset is built from the cell's database.

use std::path::{Path, PathBuf};

use super::cells::{check_space, CellSpec};
use super::engines::{self, EngineCell};
use super::options::Matrix;
use super::section::{ratio_figure, MatrixCell};
use super::yours::Content;
use crate::drivers::run::{RunArm, RunOptions};
use crate::engine::dataset::{export, from_dir, init, init_names};
use crate::engine::{self, ExternalEngine};
use crate::measure::paired::paired_ratio;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, StopReason};
use crate::measure::Experiment;
use crate::records::keys::Order;
use crate::records::{DbParams, EngineKind, EngineSettings, FileParams, FileRead};
use crate::util::progress::{Progress, Silent};
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
        let dir = work.join(format!("p{}-{}", spec.page_size, spec.label()));
        CellPaths {
            blobs_db: dir.join("internal.db"),
            files: files_dir(work, spec),
            names_db: dir.join("external.db"),
            dir,
        }
    }
}

/// Where the files of one blob size (or of your data) live while its
/// cells are measured.
pub(super) fn files_dir(work: &Path, spec: &CellSpec) -> PathBuf {
    work.join(format!("files-{}", spec.label()))
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
    content: &Content,
    opts: &Matrix,
    work: &Path,
    progress: &dyn Progress,
) -> Result<Option<MatrixCell>> {
    let paths = CellPaths::new(work, spec);
    let what = match spec.yours {
        true => format!("the cell of your data at page size {}", spec.page_size),
        false => format!("the cell of {}-byte blobs at page size {}", spec.size, spec.page_size),
    };
    let kinds = if engines::measures_engines(spec, opts.engine_page_size()) { &opts.ctx.engines[..] } else { &[] };
    check_space(work, spec.disk_bytes(!paths.files.exists(), kinds.len()), &what)?;
    std::fs::create_dir(&paths.dir).map_err(|e| Error::io(&paths.dir, "cannot create directory", e))?;
    let _cleanup = RemoveOnDrop(paths.dir.clone());
    let content_bytes = build(spec, content, opts.ctx.seed, &paths)?;
    let engine_sets = engines::build(&paths.blobs_db, &paths.dir, kinds, &opts.ctx.settings)?;
    progress.advance(1);

    let id = |what: &str| format!("matrix/p{}/{}/{what}", spec.page_size, spec.label());
    let Some((reads, set)) = measure_reads(spec, &paths, opts, &id, &engine_sets)? else {
        return Ok(None);
    };
    progress.advance(3);
    let mut reads = reads.into_iter();
    let (Some(internal), Some(external), Some(direct)) = (reads.next(), reads.next(), reads.next()) else {
        return Ok(None);
    };
    let engine_reads: Vec<Experiment> = reads.collect();
    let (writes, engine_writes) = if opts.writes {
        let (w, e) = super::writes::measure(spec, &paths.blobs_db, &paths.files, &paths.dir, &engine_sets, opts)?;
        (Some(w), e.into_iter().map(Some).collect())
    } else {
        (None, vec![None; engine_sets.len()])
    };
    let base = ratio_figure(&internal);
    if !(base.is_finite() && base > 0.0) {
        return Err(Error::invalid(format!("{what}: the database reads took no measurable time; no ratio")));
    }
    let unpaired = || Error::invalid(format!("{what}: the engines' reads and the files' do not pair by round"));
    let mut engine_cells = Vec::with_capacity(engine_sets.len());
    for (((kind, _), read), writes) in engine_sets.iter().zip(engine_reads).zip(engine_writes) {
        let files_ratio = paired_ratio(&direct.loop_times(), &read.loop_times()).ok_or_else(unpaired)?;
        engine_cells.push(EngineCell { engine: *kind, read, files_ratio, writes });
    }
    // Paired by round: run i of every arm ran in round i.
    let paired = |e: &Experiment| paired_ratio(&e.loop_times(), &internal.loop_times()).map(|r| r.value);
    Ok(Some(MatrixCell {
        size_bytes: spec.size,
        page_size: spec.page_size,
        count: spec.count,
        content_bytes,
        cache_pages: spec.cache_pages,
        external_ratio: paired(&external).unwrap_or(ratio_figure(&external) / base),
        direct_ratio: paired(&direct).unwrap_or(ratio_figure(&direct) / base),
        rounds: Some(set),
        internal,
        external,
        direct,
        writes,
        engines: engine_cells,
    }))
}

const EXTERNAL_LABEL: &str = "name in SQLite, blob in a file (lookup, then open/fstat/read/close)";
const DIRECT_LABEL: &str = "blob in a file opened by key (open/fstat/read/close, no database)";

/// Builds the cell's databases, and the files when this blob size has none
/// yet (the same seed gives the same content whatever the page size), then
/// flushes them to disk so their writeback does not overlap the timed runs.
/// Your files are copied into the database (read, never written), and the
/// cell's files exported from it. Returns the bytes of blob content.
pub(super) fn build(spec: &CellSpec, content: &Content, seed: u64, paths: &CellPaths) -> Result<u64> {
    let made = match content {
        Content::Files(scan) => from_dir::init_from(&paths.blobs_db, scan, spec.page_size, false, &Silent)?.init,
        _ => init(&paths.blobs_db, &content.dataset(spec.dataset(seed)), false, &Silent)?,
    };
    if !paths.files.exists() {
        export(&paths.blobs_db, &paths.files, false, false, &Silent)?;
    }
    init_names(&paths.blobs_db, &paths.names_db, spec.page_size)?;
    fsutil::sync_filesystem(&paths.dir)?;
    Ok(made.content_bytes)
}

/// Files are read with open/fstat/read/close by both file layouts.
fn file_params() -> FileParams {
    FileParams { read: FileRead::Posix, ..FileParams::default() }
}

/// kvtest's run over every blob of the cell, once per run on average, in
/// kvtest's random order, of a database (read with `db`'s settings), of
/// the directory of files or of an engine's dataset.
fn run_options(spec: &CellSpec, path: &Path, opts: &Matrix, db: &DbParams) -> RunOptions {
    RunOptions {
        count: u64::from(spec.count),
        max_id: Some(spec.count),
        order: Order::Random,
        settings: EngineSettings { db: db.clone(), files: file_params(), ..opts.ctx.settings.clone() },
        plan: opts.plan,
        ..RunOptions::new(path)
    }
}

/// The three reads (internal, external, direct), then each engine's, as
/// interleaved rounds; None when interrupted.
fn measure_reads(
    spec: &CellSpec,
    paths: &CellPaths,
    opts: &Matrix,
    id: &dyn Fn(&str) -> String,
    engine_sets: &[(EngineKind, PathBuf)],
) -> Result<Option<(Vec<Experiment>, RoundSet)>> {
    let external = ExternalEngine::at(&paths.dir, &paths.names_db, &paths.files, spec.cache_pages);
    // The cell's share of the cache, and the read path asked for.
    let db = opts.db_read.params(&paths.blobs_db, spec.cache_pages)?;
    let options = |path: &Path| run_options(spec, path, opts, &db);
    let mut setup = vec![
        (engine::open(&paths.blobs_db, &options(&paths.blobs_db).settings)?, &paths.blobs_db),
        (Box::new(external) as Box<dyn engine::Engine>, &paths.names_db),
        (engine::open(&paths.files, &options(&paths.files).settings)?, &paths.files),
    ];
    for (kind, path) in engine_sets {
        setup.push((engine::open_as(*kind, path, &options(path).settings)?, path));
    }
    let mut arms = Vec::with_capacity(setup.len());
    for (engine, path) in setup {
        arms.push(RunArm::prepare(engine, &options(path))?);
    }
    let mut ids = vec![id("internal"), id("external"), id("direct")];
    ids.extend(engine_sets.iter().map(|(kind, _)| id(kind.name())));
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let mut pairs = vec![Comparison { a: vec![1], b: vec![0] }, Comparison { a: vec![2], b: vec![0] }];
    pairs.extend((0..engine_sets.len()).map(|k| Comparison { a: vec![2], b: vec![3 + k] }));
    let cell = format!("matrix/p{}/{}", spec.page_size, spec.label());
    let out = match run_rounds(&cell, &ids, &mut dyn_arms, &opts.rounds, &pairs, &mut |_, _| {}) {
        Ok(out) => out,
        Err(Error::Interrupted) => return Ok(None),
        Err(e) => return Err(e),
    };
    if out.set.stop == StopReason::Interrupted {
        return Ok(None);
    }
    let titles: Vec<String> = engine_sets.iter().map(|(kind, _)| format!("{}, read by key", kind.title())).collect();
    let labels =
        [opts.db_read.label(), EXTERNAL_LABEL, DIRECT_LABEL].into_iter().chain(titles.iter().map(String::as_str));
    let mut experiments = Vec::with_capacity(ids.len());
    for ((arm, m), (id, label)) in arms.into_iter().zip(out.measured).zip(ids.iter().zip(labels)) {
        experiments.push(arm.finish(id, label, m)?.experiment);
    }
    Ok(Some((experiments, out.set)))
}
