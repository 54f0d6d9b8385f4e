//! `suite`: the whole "35% Faster Than The Filesystem" article on this
//! machine. Makes the dataset and its flat and tree copies, measures every
//! read and write the article charts (plus the fair variants it left out),
//! records disk usage, and returns its section of a result file. With
//! `--engines` the key-value engines join the read, write and disk charts.

use std::path::{Path, PathBuf};

use crate::drivers::run::{self, RunOptions};
use crate::engine::dataset::{self, from_dir, stat};
use crate::measure::envinfo::{self, Environment};
use crate::measure::{stop_requested, Experiment};
use crate::records::keys::Order;
use crate::records::{
    DatasetSpec, DbAccess, DbParams, DiskUsage, EngineKind, FileParams, FileRead, FileWrite, KvParams, KvSync, Plan,
    SyncLevel,
};
use crate::util::fsutil;
use crate::util::progress::Progress;
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Where the datasets are built; a fresh subdirectory is made inside.
    pub workdir: PathBuf,
    pub spec: DatasetSpec,
    pub plan: Plan,
    /// Share of the blobs overwritten by each write experiment (the article: 10%).
    pub write_fraction: f64,
    /// Keep the datasets instead of removing them at the end.
    pub keep: bool,
    /// The small configuration, which trims warm-ups of the slowest steps.
    pub quick: bool,
    /// Key-value engines measured beside SQLite and files (`--engines`).
    pub engines: Vec<EngineKind>,
    /// Build the database from this directory's files instead of random
    /// blobs (`--from`); `spec`'s count and sizes are then the tree's.
    pub from: Option<PathBuf>,
    /// Hot keys: Zipf's theta (`--keys zipf:THETA`); None is kvtest's
    /// random order.
    pub zipf: Option<f64>,
}

impl SuiteOptions {
    /// The article's dataset: 100k blobs of 10 KB +/- 2 KB, 4 KiB pages.
    pub fn article(workdir: PathBuf) -> Self {
        SuiteOptions {
            workdir,
            spec: DatasetSpec { count: 100_000, size: 10_000, variance: 2_000, ..DatasetSpec::default() },
            plan: Plan { repeat: 5, warmup: 1, cold: false, latency: true },
            write_fraction: 0.1,
            keep: false,
            quick: false,
            engines: Vec::new(),
            from: None,
            zipf: None,
        }
    }

    /// About 10k blobs and three timed runs: minutes, not hours.
    pub fn quick(workdir: PathBuf) -> Self {
        let mut o = Self::article(workdir);
        o.spec.count = 10_000;
        o.plan.repeat = 3;
        o.quick = true;
        o
    }
}

/// One measured configuration of the suite.
struct Step {
    id: String,
    label: String,
    layout: EngineKind,
    update: bool,
    db: DbParams,
    files: FileParams,
    kv: KvParams,
}

fn db_read(id: &'static str, label: &'static str, access: DbAccess, mmap: bool) -> Step {
    Step {
        id: id.into(),
        label: label.into(),
        layout: EngineKind::Db,
        update: false,
        // mmap_bytes is filled in with the file size when the dataset exists.
        db: DbParams { access, mmap_bytes: if mmap { -1 } else { 0 }, ..DbParams::default() },
        files: FileParams::default(),
        kv: KvParams::default(),
    }
}

fn file_read(id: &'static str, label: &'static str, layout: EngineKind, read: FileRead) -> Step {
    Step {
        id: id.into(),
        label: label.into(),
        layout,
        update: false,
        db: DbParams::default(),
        files: FileParams { read, ..FileParams::default() },
        kv: KvParams::default(),
    }
}

fn db_write(id: &'static str, label: &'static str, journal: &str, sync: SyncLevel, nocheckpoint: bool) -> Step {
    Step {
        id: id.into(),
        label: label.into(),
        layout: EngineKind::Db,
        update: true,
        db: DbParams { journal_mode: Some(journal.into()), sync: Some(sync), nocheckpoint, ..DbParams::default() },
        files: FileParams::default(),
        kv: KvParams::default(),
    }
}

fn file_write(id: &'static str, label: &'static str, write: FileWrite, fsync: bool) -> Step {
    Step {
        id: id.into(),
        label: label.into(),
        layout: EngineKind::Flat,
        update: true,
        db: DbParams::default(),
        files: FileParams { write, fsync, ..FileParams::default() },
        kv: KvParams::default(),
    }
}

/// A key-value engine's read, fast write and durable write: ids
/// `read/ENGINE`, `write/ENGINE-fast`, `write/ENGINE-durable`.
fn engine_steps(kind: EngineKind) -> Vec<Step> {
    let step = |id: String, label: String, update: bool, sync: KvSync| Step {
        id,
        label,
        layout: kind,
        update,
        db: DbParams::default(),
        files: FileParams::default(),
        kv: KvParams { sync, multitrans: false },
    };
    let (name, title) = (kind.name(), kind.title());
    vec![
        step(format!("read/{name}"), format!("{title}, read"), false, KvSync::Durable),
        step(format!("write/{name}-fast"), format!("{title}, commit without sync"), true, KvSync::Fast),
        step(format!("write/{name}-durable"), format!("{title}, durable commit"), true, KvSync::Durable),
    ]
}

/// The experiments, in the order they run. Ids are the schema's contract
/// with `report` (docs/results-schema.md).
fn steps(engines: &[EngineKind]) -> Vec<Step> {
    let mut steps = article_steps();
    for &kind in engines {
        steps.extend(engine_steps(kind));
    }
    steps
}

/// The article's experiments and their fair variants.
fn article_steps() -> Vec<Step> {
    vec![
        db_read("read/db-sql", "SQLite, SQL", DbAccess::Sql, false),
        db_read("read/db-blob", "SQLite, blob API", DbAccess::BlobApi, false),
        db_read("read/db-blob-mmap", "SQLite, blob API + mmap", DbAccess::BlobApi, true),
        file_read("read/flat-stdio", "Files (flat), fopen/fread", EngineKind::Flat, FileRead::Stdio),
        file_read("read/flat-posix", "Files (flat), open/read", EngineKind::Flat, FileRead::Posix),
        file_read("read/tree-stdio", "Files (tree), fopen/fread", EngineKind::Tree, FileRead::Stdio),
        file_read("read/tree-posix", "Files (tree), open/read", EngineKind::Tree, FileRead::Posix),
        db_write("write/db-wal-normal", "SQLite, WAL, synchronous NORMAL", "wal", SyncLevel::Normal, true),
        db_write("write/db-wal-full", "SQLite, WAL, synchronous FULL", "wal", SyncLevel::Full, true),
        db_write("write/db-off", "SQLite, journal OFF, synchronous OFF", "off", SyncLevel::Off, false),
        file_write("write/flat-truncate", "Files, fopen(\"wb\")/fwrite", FileWrite::Truncate, false),
        file_write("write/flat-inplace", "Files, overwrite in place", FileWrite::Inplace, false),
        file_write("write/flat-replace", "Files, write temp + rename", FileWrite::Replace, false),
        file_write("write/flat-truncate-fsync", "Files, fopen(\"wb\")/fwrite + fsync", FileWrite::Truncate, true),
        file_write("write/flat-inplace-fsync", "Files, overwrite in place + fsync", FileWrite::Inplace, true),
        file_write("write/flat-replace-fsync", "Files, temp + fsync + rename", FileWrite::Replace, true),
    ]
}

/// What the suite tells its caller as it goes.
pub trait SuiteObserver: Sync {
    /// A phase or an experiment starts, with the number of units it has.
    fn begin(&self, what: &str, units: u64);
    fn advance(&self, done: u64);
    /// A dataset was built: `init` for the database, else an engine's copy.
    fn built(&self, what: EngineKind, entries: u64, elapsed_ns: u64);
    /// An experiment was measured.
    fn measured(&self, experiment: &Experiment);
}

/// Lets dataset building report through the same observer.
struct AsProgress<'a>(&'a dyn SuiteObserver);

impl Progress for AsProgress<'_> {
    fn start(&self, what: &str, total: u64) {
        self.0.begin(what, total);
    }
    fn advance(&self, units: u64) {
        self.0.advance(units);
    }
    fn finish(&self) {}
}

/// What the suite measured: its section of a result file.
#[derive(Debug, Clone)]
pub struct SuiteOutcome {
    pub environment: Environment,
    pub spec: DatasetSpec,
    pub experiments: Vec<Experiment>,
    pub disk_usage: Vec<DiskUsage>,
    pub notes: Vec<String>,
    /// False when Ctrl-C stopped it before every experiment ran.
    pub complete: bool,
}

/// Disk the suite needs: the database, two file copies (rounded up to 4 KiB
/// blocks), a copy of the database for the write experiments, and a copy
/// per key-value engine (counted as one more database each), plus room.
pub fn needed_bytes(spec: &DatasetSpec, engines: usize) -> u64 {
    let db = dataset::estimated_db_bytes(spec);
    let per_file = (spec.size_dist().mean() as u64 + u64::from(spec.variance) / 2).div_ceil(4096) * 4096;
    let files = u64::from(spec.count) * per_file;
    ((2 + engines as u64) * db + 2 * files) / 10 * 12
}

/// Runs the suite. On Ctrl-C it stops after the current run and returns
/// what was measured, marked incomplete.
pub fn run_suite(opts: &SuiteOptions, observer: &dyn SuiteObserver) -> Result<SuiteOutcome> {
    let scan = opts.from.as_deref().map(from_dir::scan).transpose()?;
    let mut opts = opts.clone();
    if let Some(scan) = &scan {
        let n = scan.files.len() as u64;
        opts.spec.count = n as u32;
        opts.spec.size = (scan.content_bytes() / n) as u32;
        opts.spec.variance = 0;
        opts.spec.sizes = None;
        opts.spec.from_dir = Some(scan.root.display().to_string());
    }
    let opts = &opts;
    dataset::check_spec(&opts.spec)?;
    std::fs::create_dir_all(&opts.workdir).map_err(|e| Error::io(&opts.workdir, "cannot create directory", e))?;
    let need = needed_bytes(&opts.spec, opts.engines.len());
    let free = fsutil::free_bytes(&opts.workdir)?;
    if free < need {
        return Err(Error::bad_input(
            &opts.workdir,
            format!(
                "not enough free space: the suite needs about {} MB here, {} MB free (use --workdir, or a smaller --count)",
                need / 1_000_000,
                free / 1_000_000
            ),
        ));
    }
    crate::engine::postgres::server::reap_killed(&opts.workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let work = tempfile::Builder::new()
        .prefix("blobbench-suite-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&opts.workdir)
        .map_err(|e| Error::io(&opts.workdir, "cannot create a work directory", e))?;
    let mut outcome = SuiteOutcome {
        environment: envinfo::collect(work.path()),
        spec: opts.spec.clone(),
        experiments: Vec::new(),
        disk_usage: Vec::new(),
        notes: Vec::new(),
        complete: false,
    };
    let measured = measure_all(opts, scan.as_ref(), work.path(), observer, &mut outcome);
    if opts.keep {
        let kept = work.keep();
        outcome.notes.push(format!("datasets kept in {}", kept.display()));
    }
    measured?;
    outcome.complete = !stop_requested() && outcome.experiments.len() == steps(&opts.engines).len();
    Ok(outcome)
}

/// Where each engine's copy of the dataset lives in the work directory.
fn dataset_path(work: &Path, kind: EngineKind) -> PathBuf {
    match kind {
        EngineKind::Db => work.join("test1.db"),
        EngineKind::Flat => work.join("test1.dir"),
        EngineKind::Tree => work.join("test1.tree"),
        other => work.join(format!("test1.{}", other.name())),
    }
}

fn measure_all(
    opts: &SuiteOptions,
    scan: Option<&from_dir::Scan>,
    work: &Path,
    observer: &dyn SuiteObserver,
    out: &mut SuiteOutcome,
) -> Result<()> {
    let db = dataset_path(work, EngineKind::Db);
    let progress = AsProgress(observer);
    let made = match scan {
        Some(scan) => {
            let made = from_dir::init_from(&db, scan, opts.spec.page_size, false, &progress)?;
            let skipped = made.skipped.0.iter().map(|(why, n)| format!("{n} {}", why.describe()));
            out.notes.extend(skipped.map(|s| format!("--from {}: skipped {s}", scan.root.display())));
            out.spec.count = made.init.count as u32;
            made.init
        }
        None => dataset::init(&db, &opts.spec, false, &progress)?,
    };
    out.spec.size_histogram.clone_from(&made.size_histogram);
    observer.built(EngineKind::Db, made.count, made.elapsed_ns);
    out.disk_usage.push(stat(&db, false)?.disk_usage(&db));
    let copies = [EngineKind::Flat, EngineKind::Tree].into_iter().chain(opts.engines.iter().copied());
    for kind in copies {
        let path = dataset_path(work, kind);
        let r = dataset::build(kind, &db, &path, false, &progress)?;
        observer.built(kind, r.files, r.elapsed_ns);
        out.disk_usage.push(stat(&path, false)?.disk_usage(&path));
    }
    let pristine = work.join("pristine.db");
    std::fs::copy(&db, &pristine).map_err(|e| Error::io(&pristine, "cannot copy the database", e))?;
    let db_bytes = std::fs::metadata(&db).map(|m| m.len() as i64).unwrap_or(0);
    let reads = u64::from(opts.spec.count);
    let writes = ((reads as f64 * opts.write_fraction).round() as u64).max(1);
    for step in steps(&opts.engines) {
        if stop_requested() {
            break;
        }
        let path = dataset_path(work, step.layout);
        if step.layout == EngineKind::Db && step.update {
            restore_database(&pristine, &db)?;
        }
        let mut run_opts = RunOptions::new(&path);
        run_opts.count = if step.update { writes } else { reads };
        run_opts.order = Order::Random;
        run_opts.zipf = opts.zipf;
        run_opts.update = step.update;
        run_opts.db = step.db.clone();
        if run_opts.db.mmap_bytes < 0 {
            run_opts.db.mmap_bytes = db_bytes;
        }
        run_opts.files = step.files;
        run_opts.kv = step.kv;
        // Each write experiment writes its own content (a rewrite of the
        // bytes already there would cost SQLite almost nothing).
        run_opts.seed = opts.spec.seed.wrapping_add(out.experiments.len() as u64 + 1);
        run_opts.plan = Plan { cold: opts.plan.cold && !step.update, ..opts.plan };
        let waits_for_disk =
            step.files.fsync || (step.layout.is_key_value() && step.update && step.kv.sync == KvSync::Durable);
        if opts.quick && waits_for_disk {
            // Each fsync costs milliseconds here; --quick keeps to its budget
            // by skipping their warm-up (the page cache matters little when
            // every write waits for the disk).
            run_opts.plan.warmup = 0;
        }
        observer.begin(&step.label, u64::from(run_opts.plan.warmup + run_opts.plan.repeat));
        let report =
            run::run_observed(&run_opts, &step.id, &step.label, &mut |done, _| observer.advance(u64::from(done)))?;
        observer.measured(&report.experiment);
        out.experiments.push(report.experiment);
    }
    out.notes.push(
        "Each database write experiment starts from a fresh copy of the pristine database. File write experiments \
         share the flat copy, and each key-value engine's writes share its copy: every write keeps the blob's size \
         and replaces its content with random bytes, so each starts from an equivalent state."
            .into(),
    );
    if opts.plan.cold {
        out.notes.push("--cold applies to reads; write experiments run warm.".into());
    }
    Ok(())
}

/// Journal mode, WAL and free pages carry over between writes: every
/// database write experiment starts from the pristine copy.
fn restore_database(pristine: &Path, db: &Path) -> Result<()> {
    std::fs::copy(pristine, db).map_err(|e| Error::io(db, "cannot restore the database", e))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_cover_the_article() {
        let all = steps(&EngineKind::KEY_VALUE);
        let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        for needed in [
            "read/db-sql",
            "read/db-blob",
            "read/db-blob-mmap",
            "write/db-wal-normal",
            "write/db-off",
            "read/flat-stdio",
            "write/flat-truncate",
        ] {
            assert!(ids.contains(&needed), "{needed}");
        }
    }

    #[test]
    fn disk_estimate_covers_db_and_files() {
        let spec = SuiteOptions::article(PathBuf::from(".")).spec;
        let need = needed_bytes(&spec, 0);
        // Two 1 GB databases and two 1.2 GB file copies, with 20% room.
        assert!(need > 4_000_000_000 && need < 7_000_000_000, "{need}");
    }
}
