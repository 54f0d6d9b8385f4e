//! `suite`: the whole "35% Faster Than The Filesystem" article on this
//! machine. Makes the dataset and its flat and tree copies, measures every
//! read and write the article charts (plus the fair variants it left out),
//! records disk usage, and returns its section of a result file. With
//! `--engines` the key-value engines join the read, write and disk charts.

mod arms;
pub mod ids;
mod options;
mod steps;

pub use arms::{COLD_READS, WARM_READS, WRITES};
pub use ids::{ArmId, ReadPath, CONTROL_ID, CONTROL_OF};
use options::Suite;
pub use options::{default_rounds, RoundSizing, SuiteOptions, COMMIT_EVERY, QUICK_BUDGET};
use steps::{cold_steps, dataset_path, selected};

use std::path::Path;

use crate::engine::dataset::{self, from_dir, stat};
use crate::measure::envinfo::{self, Environment};
use crate::measure::rounds::{self, RoundSet};
use crate::measure::{stop_requested, Experiment};
use crate::records::{DatasetSpec, DiskUsage, EngineSettings};
use crate::studies::context::StudyContext;
use crate::util::fsutil;
use crate::{Error, Result};

/// What the suite measured: its section of a result file.
#[derive(Debug, Clone)]
pub struct SuiteOutcome {
    pub environment: Environment,
    pub spec: DatasetSpec,
    pub experiments: Vec<Experiment>,
    pub disk_usage: Vec<DiskUsage>,
    pub notes: Vec<String>,
    /// The interleaved rounds of the reads and of the writes.
    pub rounds: Vec<RoundSet>,
    /// False when Ctrl-C stopped it before every experiment ran.
    pub complete: bool,
    /// From the start to the first round (the scan, the datasets and their
    /// copies), on the rounds' clock.
    pub setup: std::time::Duration,
    /// The deadline (advise's budget) had passed when the rounds began, so
    /// each set of rounds ran one round.
    pub past_deadline: bool,
}

/// Disk the suite needs: the database, two file copies (rounded up to 4 KiB
/// blocks), the pristine copy and one copy of the database per database
/// write arm (arms that write keep their own datasets), and a copy per
/// key-value engine (counted as one more database each), plus room.
pub fn needed_bytes(spec: &DatasetSpec, engines: usize) -> u64 {
    let db = dataset::estimated_db_bytes(spec);
    let per_file = (spec.size_dist().mean() as u64 + u64::from(spec.variance) / 2).div_ceil(4096) * 4096;
    let files = u64::from(spec.count) * per_file;
    ((5 + engines as u64) * db + 2 * files) / 10 * 12
}

/// Runs the suite. On Ctrl-C it stops after the current run and returns
/// what was measured, marked incomplete.
pub fn run_suite(ctx: &StudyContext, opts: &SuiteOptions) -> Result<SuiteOutcome> {
    run_suite_then(ctx, opts, &mut |_, _| Ok(()))
}

/// [`run_suite`], then `then` on the work directory while its datasets
/// are still there (advise runs its clients on them), unless stopped.
pub fn run_suite_then(
    ctx: &StudyContext,
    opts: &SuiteOptions,
    then: &mut dyn FnMut(&Path, &mut SuiteOutcome) -> Result<()>,
) -> Result<SuiteOutcome> {
    let started = ctx.clock.now();
    let scan = opts.from.as_deref().map(from_dir::scan).transpose()?;
    let mut suite = Suite::new(ctx, opts);
    if let Some(scan) = &scan {
        let n = scan.files.len() as u64;
        let spec = &mut suite.opts.spec;
        spec.count = n as u32;
        spec.size = (scan.content_bytes() / n) as u32;
        spec.variance = 0;
        spec.sizes = None;
        spec.from_dir = Some(scan.root.display().to_string());
    }
    let (suite, opts, workdir) = (&suite, &suite.opts, &ctx.workdir);
    suite.rounds.validate()?;
    dataset::check_spec(&opts.spec)?;
    std::fs::create_dir_all(workdir).map_err(|e| Error::io(workdir, "cannot create directory", e))?;
    let need = needed_bytes(&opts.spec, ctx.engines.len());
    let free = fsutil::free_bytes(workdir)?;
    if free < need {
        return Err(Error::bad_input(
            workdir,
            format!(
                "not enough free space: the suite needs about {} MB here, {} MB free (use --workdir, or a smaller --count)",
                need / 1_000_000,
                free / 1_000_000
            ),
        ));
    }
    crate::engine::registry::reap_killed(workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let work = tempfile::Builder::new()
        .prefix("blobbench-suite-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(workdir)
        .map_err(|e| Error::io(workdir, "cannot create a work directory", e))?;
    let mut outcome = SuiteOutcome {
        environment: envinfo::collect(work.path()),
        spec: opts.spec.clone(),
        experiments: Vec::new(),
        disk_usage: Vec::new(),
        notes: Vec::new(),
        rounds: Vec::new(),
        complete: false,
        setup: std::time::Duration::ZERO,
        past_deadline: false,
    };
    // The S3 stores' engines, held open from their build to the end of
    // `then`: a throwaway server then starts once for every set of rounds
    // (a Swift cluster takes seconds to start) instead of once per set.
    let mut servers = Vec::new();
    let measured = measure_all(suite, scan.as_ref(), started, work.path(), &mut outcome, &mut servers).and_then(|()| {
        if stop_requested() {
            Ok(())
        } else {
            then(work.path(), &mut outcome)
        }
    });
    drop(servers);
    if opts.keep {
        let kept = work.keep();
        outcome.notes.push(format!("datasets kept in {}", kept.display()));
    }
    measured?;
    outcome.complete = !stop_requested()
        && outcome.experiments.len()
            == selected(suite).len() + usize::from(has_control(suite)) + cold_steps(suite).len()
        && outcome.rounds.iter().all(|r| r.stop != rounds::StopReason::Interrupted);
    Ok(outcome)
}

/// One session that reads as experiment `read_id` and writes as
/// `write_id` (both of one layout) on the suite's dataset in `work`: its
/// settings (the writes', with the reads' access path) and its dataset.
/// None when the two are not experiments of `opts` on one layout.
pub(crate) fn mixed_settings(
    ctx: &StudyContext,
    work: &Path,
    read_id: ArmId,
    write_id: ArmId,
) -> Option<(EngineSettings, std::path::PathBuf)> {
    let all = steps::steps(&ctx.engines, ctx.commit_every_or(COMMIT_EVERY));
    let read = all.iter().find(|s| s.id == read_id)?;
    let write = all.iter().find(|s| s.id == write_id)?;
    if read.layout != write.layout {
        return None;
    }
    let path = dataset_path(work, write.layout);
    let mut db = write.db.clone();
    db.access = read.db.access;
    db.mmap_bytes = match read.db.mmap_bytes {
        m if m < 0 => std::fs::metadata(&path).map(|m| m.len() as i64).unwrap_or(0),
        m => m,
    };
    let files = crate::records::FileParams { read: read.files.read, ..write.files };
    let settings = EngineSettings { db, files, kv: write.kv, commit_every: write.commit_every, ..ctx.settings.clone() };
    Some((settings, path))
}

/// The database settings of the suite's experiment `id` (for a check that
/// another study reads SQLite as that experiment does).
#[cfg(test)]
pub(crate) fn db_params_of(id: ArmId) -> Option<crate::records::DbParams> {
    steps::steps(&[], 1).into_iter().find(|s| s.id == id).map(|s| s.db)
}

/// Whether the A/A control runs: it repeats `read/db-blob`.
fn has_control(suite: &Suite) -> bool {
    selected(suite).iter().any(|s| s.id == CONTROL_OF)
}

/// Builds the datasets and measures the arms; `started` is when the suite
/// began, on the rounds' clock.
fn measure_all(
    suite: &Suite,
    scan: Option<&from_dir::Scan>,
    started: std::time::Instant,
    work: &Path,
    out: &mut SuiteOutcome,
    servers: &mut Vec<Box<dyn crate::engine::Engine>>,
) -> Result<()> {
    let (ctx, opts, observer) = (suite.ctx, &suite.opts, suite.observer());
    let db = dataset_path(work, crate::engine::sqlite::KIND);
    let progress = ctx.progress();
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
    observer.built(crate::engine::sqlite::KIND, made.count, made.elapsed_ns);
    out.disk_usage.push(stat(&db, false)?.disk_usage(&db));
    let wanted = selected(suite);
    let copies = [crate::engine::files::FLAT_KIND, crate::engine::files::TREE_KIND]
        .into_iter()
        .chain(ctx.engines.iter().copied())
        .filter(|&kind| opts.only.is_none() || wanted.iter().any(|s| s.layout == kind));
    for kind in copies {
        let path = dataset_path(work, kind);
        let settings = &ctx.settings;
        let r = crate::engine::registry::build_with(kind, &db, &path, false, settings, &progress)?;
        observer.built(kind, r.files, r.elapsed_ns);
        // Only S3's: PostgreSQL's cold runs restart its throwaway cluster
        // to empty shared_buffers, which a held engine would refuse, and
        // it starts in about a second; a Swift cluster takes several.
        if kind == crate::records::EngineKind::S3 {
            // Surveyed: its server is reached, and stays up while held.
            let mut held = crate::engine::open(&path, settings)?;
            held.survey(false)?;
            servers.push(held);
        }
        out.disk_usage.push(stat(&path, false)?.disk_usage(&path));
    }
    let pristine = work.join("pristine.db");
    std::fs::copy(&db, &pristine).map_err(|e| Error::io(&pristine, "cannot copy the database", e))?;
    let clock = ctx.clock;
    out.setup = clock.since(started);
    let mut measured =
        arms::Measured { past_deadline: opts.deadline.is_some_and(|d| clock.now() >= d), ..Default::default() };
    let done = arms::measure_rounds(suite, work, &pristine, &mut measured);
    out.past_deadline = measured.past_deadline;
    out.experiments.extend(measured.experiments);
    out.rounds.extend(measured.rounds);
    out.notes.extend(measured.notes);
    done?;
    out.notes.push(
        "Each database write arm writes its own copy of the pristine database. File write arms share the flat copy, \
         and each key-value engine's writes share its copy: every write keeps the blob's size and replaces its \
         content with random bytes, so each starts from an equivalent state."
            .into(),
    );
    if opts.plan.cold {
        out.notes.push("--cold applies to reads; write experiments run warm.".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::steps::steps;
    use super::*;

    #[test]
    fn ids_are_unique_and_cover_the_article() {
        let all = steps(&crate::records::EngineKind::KEY_VALUE, 1);
        let ids: Vec<String> = all.iter().map(|s| s.id.to_string()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
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
    fn cold_reads_are_arms_of_their_own() {
        let lmdb = crate::records::EngineKind::Lmdb;
        let ctx =
            StudyContext { quick: true, engines: vec![lmdb], ..StudyContext::new(".", EngineSettings::default()) };
        let mut o = SuiteOptions::new(true);
        o.cold_also = vec![ids::READ_DB_BLOB_MMAP, ids::engine_read(lmdb), ids::WRITE_DB_WAL_FULL];
        let o = Suite::new(&ctx, &o);
        let cold = cold_steps(&o);
        let ids: Vec<String> = cold.iter().map(|s| s.id.to_string()).collect();
        assert_eq!(ids, ["cold/read/db-blob-mmap", "cold/read/lmdb"], "reads only, each under its own id");
        assert!(cold.iter().all(|s| s.cold && !s.update));
        assert!(selected(&o).iter().all(|s| !s.cold), "the warm arms stay warm");
    }

    #[test]
    fn disk_estimate_covers_db_and_files() {
        let spec = SuiteOptions::new(false).spec;
        let need = needed_bytes(&spec, 0);
        // Five 1 GB databases (the dataset, the pristine copy, one per
        // database write arm) and two 1.2 GB file copies, with 20% room.
        assert!(need > 8_000_000_000 && need < 11_000_000_000, "{need}");
    }
}
