//! `aging`: what years of rewrites do to files and to the database (Sears,
//! van Ingen and Gray, "To BLOB or Not To BLOB", MSR-TR-2006-45). Each size
//! setting gets one dataset copied into every layout; each age step
//! rewrites every blob once, in a shuffled order, with a new size drawn
//! from the same distribution (and optionally deletes and re-inserts a
//! share); then reads warm and cold, disk usage and fragmentation are
//! measured. At the end the remedies (VACUUM, incremental auto-vacuum, a
//! copy-rewrite of the files) are applied to copies of the aged layouts and
//! measured beside them. Every comparison of reads runs in interleaved
//! rounds ([`arms`]).

mod arms;
mod crossover;
mod frag;
mod layouts;
mod passes;
mod remedies;
mod remedy_step;
pub(crate) mod section;
pub(crate) mod sizes;
mod steps;

pub use frag::{file_extents, OverflowLocality};
pub use section::{
    band_rounds_id, files_faster_from, is_band_or_remedy_rounds, is_band_rounds, is_remedy_rounds, remedy_arm,
    remedy_rounds_id, rounds_id, AgePoint, AgingSection, AgingSetting, Band, Crossover, Fragmentation, LayoutInfo,
    ReadFigures, Usage, WriteFigures,
};
pub use sizes::{check_ages, parse_ages, parse_size_dists, SizeSetting, MAX_AGE, SQLITE_MAX_BLOB};

use std::time::Duration;

use crate::engine::dataset::{self, from_dir, from_dir::Scan};
use crate::measure::envinfo::{self, Environment};
use crate::measure::rounds::RoundsPlan;
use crate::measure::stop_requested;
use crate::records::SizeSource;
use crate::studies::context::{StudyContext, StudyRun};
use crate::util::fsutil;
use crate::{Error, Result};

/// What `aging` is asked beyond its context (`StudyContext`: the work
/// directory, the key-value engines aged beside SQLite and files, the
/// rounds asked for, the seed, `--quick`, the rewrite passes' commits,
/// the settings every layout starts from, the clock and the observer).
#[derive(Debug, Clone)]
pub struct AgingOptions {
    pub ages: Vec<u32>,
    pub sizes: Vec<SizeSetting>,
    /// The user's blobs (`--from`, or a distribution): one more setting,
    /// "yours" (your files' content, an evenly spaced sample of `count` of
    /// them) or named as the distribution. With it, `sizes` may be empty.
    /// Checked (DIR scanned, never written) before anything is built.
    pub yours: Option<SizeSource>,
    /// Blobs per setting; by default [`SizeSetting::default_count`].
    pub count: Option<u32>,
    /// Share of blobs deleted and inserted again per age step, in percent.
    pub churn_pct: f64,
    /// Only these layout ids (`db-wal`, `files-inplace`, ...; advise ages
    /// its candidates' layouts); None ages them all.
    pub layouts: Option<Vec<crate::records::LayoutId>>,
    /// The remedies after the last age (VACUUM, incremental auto-vacuum,
    /// a copy-rewrite); advise's short pass leaves them out.
    pub remedies: bool,
    /// Reads by size band at each age, for a wide size setting; advise's
    /// short pass leaves them out (its size matrix answers that).
    pub bands: bool,
    pub keep: bool,
}

/// Aging as it runs: its context, its options and every comparison's
/// reads as interleaved rounds (the layouts at each age, each size band,
/// the remedies; the budget is per set of rounds: per age, band or
/// remedies, and cache state). It tells its observer each step as a phase
/// begun (building, a rewrite pass, a measurement) and each layout
/// measured at an age as a point.
pub type Aging<'a> = StudyRun<'a, AgingOptions>;

impl AgingOptions {
    /// The default study: ages 0,1,2,4,8 (0,1,2 with `quick`), both size settings.
    pub fn new(quick: bool) -> Self {
        AgingOptions {
            ages: if quick { vec![0, 1, 2] } else { vec![0, 1, 2, 4, 8] },
            sizes: vec![SizeSetting::article(), SizeSetting::large()],
            yours: None,
            count: None,
            churn_pct: 0.0,
            layouts: None,
            remedies: true,
            bands: true,
            keep: false,
        }
    }
}

/// The reads' rounds unless asked otherwise: at most 12 per set within
/// 20 s, 4 within 2 s with `--quick`.
pub fn default_rounds(quick: bool) -> RoundsPlan {
    RoundsPlan::new(if quick { 4 } else { 12 }, Some(Duration::from_secs(if quick { 2 } else { 20 })))
}

/// Checks everything that can be checked before any dataset is built,
/// your directory included (scanned, not read), as [`run_aging`] does
/// first: for a caller that runs other studies before this one.
pub fn validate(ctx: &StudyContext, opts: &AgingOptions) -> Result<()> {
    let aging = Aging::new(ctx, opts, default_rounds(ctx.quick));
    check(&aging)?;
    plan(&aging).map(|_| ())
}

/// Disk the study needs at its peak (its largest setting, as
/// [`run_aging`] checks before it builds), after the same checks as
/// [`validate`]: for a caller that checks the space of several studies at
/// once.
pub fn needed_bytes_of(ctx: &StudyContext, opts: &AgingOptions) -> Result<u64> {
    let aging = Aging::new(ctx, opts, default_rounds(ctx.quick));
    check(&aging)?;
    Ok(peak_bytes(&aging, &plan(&aging)?))
}

/// What the study measured: its section of a result file.
#[derive(Debug, Clone)]
pub struct AgingOutcome {
    pub environment: Environment,
    pub section: AgingSection,
    pub notes: Vec<String>,
    /// False when Ctrl-C or a full disk stopped it early.
    pub complete: bool,
}

/// Disk one setting needs at its peak: the database copies (each may double
/// with a WAL or journal of a whole pass), the file copies, and at the
/// remedies, beside the aged copies, every remedied copy at once (a
/// VACUUMed and an incremental copy per database, the latter with a pass
/// in its WAL, and a rewritten copy per file layout), each key-value
/// store, plus 20%.
pub fn needed_bytes(sizes: &SizeSetting, count: u32, engines: usize) -> u64 {
    let db = dataset::estimated_db_bytes(&sizes.spec(count, 1));
    let per_file = (sizes.mean() as u64).div_ceil(4096) * 4096;
    let files = u64::from(count) * per_file;
    ((9 + 2 * engines as u64) * db + 4 * files + files / 5) / 10 * 12
}

/// Disk the largest planned setting needs (one setting at a time).
fn peak_bytes(opts: &Aging, planned: &[Planned]) -> u64 {
    planned.iter().map(|p| needed_bytes(&p.sizes, p.count, opts.ctx.engines.len())).max().unwrap_or(0)
}

/// A setting to age, with your files when it is made of them.
struct Planned {
    sizes: SizeSetting,
    files: Option<Scan>,
    count: u32,
}

/// Every setting to age, the user's last, checked before anything is built.
fn plan(opts: &Aging) -> Result<Vec<Planned>> {
    let count = |s: &SizeSetting| opts.count.unwrap_or_else(|| s.default_count(opts.ctx.quick));
    let mut out: Vec<Planned> =
        opts.sizes.iter().map(|s| Planned { sizes: s.clone(), files: None, count: count(s) }).collect();
    match &opts.yours {
        None => {}
        Some(SizeSource::Dist(dist)) => {
            dist.validate().map_err(|e| Error::invalid(format!("--sizes: {e}")))?;
            let sizes = SizeSetting::from_dist(&dist.describe(), dist.clone());
            out.push(Planned { count: count(&sizes), sizes, files: None });
        }
        Some(SizeSource::Files(dir)) => {
            let found = from_dir::scan(dir)?;
            let used = found.evenly(count(&SizeSetting::from_files(&found, &found)) as usize);
            let sizes = SizeSetting::from_files(&used, &found);
            out.push(Planned { count: used.files.len() as u32, sizes, files: Some(used) });
        }
    }
    Ok(out)
}

/// Runs the study. Ctrl-C or a full disk stops it; what was measured is
/// returned, marked incomplete, and the datasets are removed unless `keep`
/// (a disk that fills before anything was measured is an error).
pub fn run_aging(ctx: &StudyContext, opts: &AgingOptions) -> Result<AgingOutcome> {
    let opts = &Aging::new(ctx, opts, default_rounds(ctx.quick));
    let workdir = &ctx.workdir;
    check(opts)?;
    let planned = plan(opts)?;
    std::fs::create_dir_all(workdir).map_err(|e| Error::io(workdir, "cannot create directory", e))?;
    let need = peak_bytes(opts, &planned);
    let free = fsutil::free_bytes(workdir)?;
    if free < need {
        return Err(Error::bad_input(
            workdir,
            format!(
                "not enough free space: aging needs about {} MB here, {} MB free (use --workdir, or a smaller --count)",
                need / 1_000_000,
                free / 1_000_000
            ),
        ));
    }
    let mut outcome = AgingOutcome {
        environment: envinfo::collect(workdir),
        section: AgingSection {
            ages: opts.ages.clone(),
            churn_pct: opts.churn_pct,
            settings: Vec::new(),
            commit_every: ctx.commit_every,
        },
        notes: Vec::new(),
        complete: true,
    };
    for Planned { sizes, files, count } in &planned {
        if stop_requested() {
            outcome.complete = false;
            break;
        }
        let work = tempfile::Builder::new()
            .prefix("blobbench-aging-")
            .tempdir_in(workdir)
            .map_err(|e| Error::io(workdir, "cannot create a work directory", e))?;
        let mut setting = AgingSetting {
            sizes: sizes.clone(),
            count: *count,
            layouts: Vec::new(),
            points: Vec::new(),
            remedies: Vec::new(),
            crossover: Vec::new(),
            rounds: Vec::new(),
        };
        let result = steps::run_setting(opts, work.path(), files.as_ref(), &mut setting);
        let warnings = setting.rounds.iter().flat_map(|r| r.warnings.iter().map(move |w| format!("{}: {w}", r.id)));
        outcome.notes.extend(warnings);
        if opts.keep {
            let kept = work.keep();
            outcome.notes.push(format!("{} datasets kept in {}", sizes.name, kept.display()));
        }
        outcome.section.settings.push(setting);
        match result {
            Ok(()) if !stop_requested() => {}
            Ok(()) | Err(Error::Interrupted) => {
                outcome.complete = false;
                outcome.notes.push("interrupted (Ctrl-C): the figures here were measured before the stop".into());
                break;
            }
            Err(e) if is_disk_full(&e) && outcome.section.settings.iter().any(|s| !s.points.is_empty()) => {
                outcome.complete = false;
                outcome.notes.push(format!(
                    "stopped: the disk filled up during the {} setting ({e}); the figures here were measured before",
                    sizes.name
                ));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(outcome)
}

fn check(opts: &Aging) -> Result<()> {
    check_ages(&opts.ages).map_err(Error::invalid)?;
    if opts.sizes.is_empty() && opts.yours.is_none() {
        return Err(Error::invalid("no size setting given (use article, large or uniform:MIN..MAX)"));
    }
    if let Some(s) = opts.sizes.iter().find(|s| s.max_bytes > SQLITE_MAX_BLOB || s.min_bytes == 0) {
        return Err(Error::invalid(format!(
            "size setting {}: blobs must be from 1 byte to SQLite's blob limit of {SQLITE_MAX_BLOB} bytes",
            s.name
        )));
    }
    if !(0.0..100.0).contains(&opts.churn_pct) {
        return Err(Error::invalid("--churn must be a percentage from 0 to less than 100"));
    }
    opts.rounds.validate()?;
    if opts.layouts.as_ref().is_some_and(Vec::is_empty) {
        return Err(Error::invalid("no layout to age"));
    }
    if opts.count == Some(0) {
        return Err(Error::invalid("--count must be at least 1"));
    }
    Ok(())
}

/// ENOSPC, EDQUOT or EFBIG (a file size limit) from the OS, or SQLITE_FULL.
fn is_disk_full(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => {
            matches!(source.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG))
        }
        Error::Sqlite { source, .. } => source.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_full_is_recognised() {
        let full =
            Error::io(std::path::Path::new("x"), "cannot write", std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(is_disk_full(&full));
        let other = Error::io(std::path::Path::new("x"), "cannot write", std::io::Error::from_raw_os_error(libc::EIO));
        assert!(!is_disk_full(&other));
    }

    #[test]
    fn disk_estimate_covers_the_copies() {
        let need = needed_bytes(&SizeSetting::article(), 10_000, 0);
        // Nine 100 MB databases' worth and four file copies, plus room.
        assert!(need > 1_300_000_000 && need < 2_000_000_000, "{need}");
    }

    #[test]
    fn options_are_checked() {
        let mut ctx = StudyContext { quick: true, ..StudyContext::new(".", crate::records::EngineSettings::default()) };
        let mut o = AgingOptions::new(true);
        let check = |ctx: &StudyContext, o: &AgingOptions| check(&Aging::new(ctx, o, default_rounds(true)));
        o.ages = vec![2, 1];
        assert!(check(&ctx, &o).is_err());
        o.ages = vec![0, 1];
        o.churn_pct = 100.0;
        assert!(check(&ctx, &o).is_err());
        o.churn_pct = 10.0;
        assert!(check(&ctx, &o).is_ok());
        ctx.rounds.max_rounds = Some(0);
        assert!(check(&ctx, &o).is_err(), "no rounds");
        ctx.rounds.max_rounds = Some(3);
        ctx.rounds.budget = Some(std::time::Duration::ZERO);
        assert!(check(&ctx, &o).is_err(), "a zero budget");
        ctx.rounds.budget = None;
        o.layouts = Some(Vec::new());
        assert!(check(&ctx, &o).unwrap_err().to_string().contains("no layout to age"));
        o.layouts = None;
        o.sizes.clear();
        assert!(validate(&ctx, &o).unwrap_err().to_string().contains("no size setting"));
        let mine = tempfile::tempdir().unwrap();
        o.yours = Some(SizeSource::Files(mine.path().to_path_buf()));
        assert!(validate(&ctx, &o).unwrap_err().to_string().contains("holds no regular"), "an empty directory");
        for i in 0..10u8 {
            std::fs::write(mine.path().join(format!("f{i}")), vec![i; 100 * (usize::from(i) + 1)]).unwrap();
        }
        o.count = Some(4);
        validate(&ctx, &o).unwrap();
        let planned = plan(&Aging::new(&ctx, &o, default_rounds(true))).unwrap();
        assert_eq!((planned.len(), planned[0].count, planned[0].sizes.name.as_str()), (1, 4, "yours"));
        assert_eq!(planned[0].files.as_ref().map(|f| f.files.len()), Some(4), "an evenly spaced sample of --count");
    }
}
