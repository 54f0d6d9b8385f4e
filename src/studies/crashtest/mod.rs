//! `crashtest`: what a killed writer leaves behind, per write method.
//!
//! For each method a dataset of self-verifying blobs is made (a database or
//! a directory of files); then, again and again, a child process overwrites
//! the blobs with new versions through the benchmark's own write paths and
//! is killed with SIGKILL after a random delay (a seeded, repeatable
//! schedule). After each kill the dataset is opened as a new user would
//! open it (SQLite recovery included), integrity-checked, and every blob is
//! classified; damage is repaired before the next kill so each is judged
//! alone.
//!
//! A process kill is not a power cut: the kernel keeps every page the
//! writer handed to it, so fsync cannot change the outcome here and only
//! the ordering of the writer's own system calls is tested. See
//! docs/crash-safety.md.

mod blob;
mod dataset;
mod kill;
pub mod method;
mod options;
mod powercut;
mod writer;

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub use kill::Signal;
use options::Crash;
pub use options::CrashOptions;
pub use powercut::{power_cut_test, FsyncFailureResult, PowerCutMethodResult, PowerCutReport, PowerCutSection};
pub use writer::{write_until_killed, WriterSpec};

use crate::measure::stop_requested;
use crate::records::ConfigId;
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};
use dataset::{Dataset, MAX_BLOB, MIN_BLOB};

/// Name prefix of the temporary work directory; the writer refuses to
/// write anywhere else, so a stray `crash-writer` cannot touch real data.
const WORK_PREFIX: &str = ".blobbench-crashtest-";

/// Versions one writer can use: kill `n` writes versions from `n << 32`.
const ROUND_SPAN: u64 = 1 << 32;

/// What `crashtest` does by default, and with `--quick`.
pub use options::{DEFAULT_COUNT, DEFAULT_KILLS, QUICK_COUNT, QUICK_KILLS};
const LIMIT: u32 = 100_000;

/// What the table's columns count (the terminal and the report show it).
pub const LEGEND: &str = "
integrity: kills after which integrity_check failed (for an engine's store: it could not be opened or read). torn,
missing, lost (whole but an unexpected version), undone (whole, but older than a write to it that had returned),
stray (temporary files left behind): totals over all kills. damaged: kills that left anything torn, missing, lost
or stray.
whole old / whole new: blobs intact at their version before the kill / at a version the killed writer wrote.
";

/// What a process kill shows and what it cannot; said wherever results are.
pub const LIMITS: &str = "\
Each writer was killed with SIGKILL, a process crash. The kernel kept every page the writer had passed to
write(), so this tests only what each method's order of system calls leaves behind when the process dies
between two of them (a file truncated but not rewritten, a temporary file never renamed, a transaction SQLite
must roll back or recover). It is not a power cut: nothing in the page cache was lost, so fsync protects
nothing here (a method with fsync differs only because its writer spends its time elsewhere when killed), and
a method that is clean here can still tear or lose data when the power fails. docs/crash-safety.md describes
what a power-cut test needs. For PostgreSQL the server's processes (postmaster and backends) are SIGKILLed, then
the client, and the server is restarted (crash recovery) for the check: a commit acknowledged under
synchronous_commit=off may still be in the server's WAL buffers, its own memory, which the kill loses.
";

/// What the power-cut table's columns count.
pub const POWER_CUT_LEGEND: &str = "
acks: a write that returned was promised durable (COMMIT under synchronous=FULL with a journal; a file fsync'd where
it lives, a rename only with its directory fsync'd; an engine's durable commit, one per write; its fast commit
acknowledges nothing). integrity: cuts after which integrity_check failed (an engine's store: it could not be opened
or read). lost-acked: blobs older, torn or missing after that version or a later one was acknowledged durable (for
such a method the version on disk before the cut counts as acknowledged): durability violations. lost-unack: blobs
older than the last write that returned, which was not promised durable (allowed). Other columns as in the
kill test: totals over all cuts. The command fails when a method whose documentation promises durability loses an
acknowledged write; db-delete is counted but not judged: SQLite documents that DELETE mode under FULL may lose the
last commit in a power cut (the journal's unlink is not fsync'd; synchronous=EXTRA does it: db-delete-extra).
";

/// The result file's `crashtest` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashSection {
    /// How the writer was stopped: "SIGKILL" (a process kill, not a power cut).
    pub fault: String,
    pub kills_per_method: u32,
    /// Blobs per dataset, and the range of their sizes.
    pub blobs: u32,
    pub blob_min_bytes: u64,
    pub blob_max_bytes: u64,
    /// Each writer ran for a random delay in [0, max_delay_us] once its first write returned.
    pub max_delay_us: u64,
    pub seed: u64,
    pub workdir: String,
    /// Writes per commit of every method's writer (`--commit-every`; 1 in
    /// files that do not record it, which committed every write).
    #[serde(default = "one")]
    pub commit_every: u32,
    pub methods: Vec<CrashMethodResult>,
}

/// Writes per commit where a result file does not say (every crash test
/// before `--commit-every` committed each write).
pub(crate) fn one() -> u32 {
    1
}

/// Totals over every kill of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrashMethodResult {
    pub method: String,
    pub description: String,
    /// SQLite with a journal: a kill must leave no torn blob and a sound
    /// database. Other methods are reported, not judged.
    pub promises_atomic: bool,
    pub kills: u32,
    /// Kills after which integrity_check failed or the database could not be read.
    pub integrity_failures: u32,
    /// Why: the first failure's reason (absent when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity_reason: Option<IntegrityReason>,
    /// Kills after which anything was torn, missing, unexpected or stray.
    pub damaged_kills: u32,
    /// Blob checks made (blobs x kills), then what they found.
    pub blobs_checked: u64,
    pub intact_old: u64,
    pub intact_new: u64,
    pub torn: u64,
    pub missing: u64,
    /// Whole, but neither the version verified before the kill nor one the
    /// killed writer wrote: a lost or misplaced write.
    pub unexpected_version: u64,
    /// Files left in the directory that are not blobs (temporary files).
    pub stray_files: u64,
    /// Whole, but older than a write to that blob that had returned to the
    /// writer: an acknowledged write undone (a server's unflushed commit).
    #[serde(default)]
    pub undone: u64,
    /// A write that returned was promised durable: undoing one breaks the
    /// promise (a process kill leaves the page cache, so nothing is lost
    /// unless a server's commit never reached it).
    #[serde(default)]
    pub acknowledges_durability: bool,
    /// Writes that returned to the writer, over every kill.
    #[serde(default)]
    pub acknowledged: u64,
    /// Blob checks whose blob a read found but the engine's listing did
    /// not show (an object store's bucket listing, kept apart from the
    /// objects); absent for an engine without a listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted: Option<u64>,
    /// Blob checks where a plain read served an older replica (or none)
    /// than the newest copy the store holds, which the other counts judge;
    /// absent for an engine with one copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_reads: Option<u64>,
    /// The server the method's writes ran on, as it described itself
    /// ("SeaweedFS 4.48, 1 replica"): each server has its own crash facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub elapsed_ns: u64,
}

impl CrashSection {
    /// The verdict: methods that promise atomic writes and showed damage.
    pub fn broken_promises(&self) -> impl Iterator<Item = &CrashMethodResult> {
        self.methods.iter().filter(|m| m.broke_promise())
    }
}

impl CrashMethodResult {
    /// A method that promises atomic writes showed damage, or one that
    /// promises durable commits undid one.
    pub fn broke_promise(&self) -> bool {
        let damaged = self.integrity_failures > 0 || self.torn > 0 || self.missing > 0 || self.unexpected_version > 0;
        (self.promises_atomic && damaged) || (self.acknowledges_durability && self.undone > 0)
    }
}

/// Why a method's checks failed: the first failure's one-line reason, and
/// how many of its failures gave that same reason (the rest said something
/// else).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntegrityReason {
    pub first: String,
    pub same: u32,
}

impl IntegrityReason {
    /// Counts one check's failure (`reason`; nothing when it passed) into `slot`.
    pub fn count(slot: &mut Option<IntegrityReason>, reason: Option<&str>) {
        let Some(reason) = reason else { return };
        let r = slot.get_or_insert_with(|| IntegrityReason { first: reason.to_string(), same: 0 });
        r.same += u32::from(r.first == reason);
    }
}

/// A method's result as far as its integrity checks go (kills, power cuts
/// and failed fsyncs alike): its name, how many checks failed and why.
pub trait IntegrityOutcome {
    fn method(&self) -> &str;
    fn integrity_failures(&self) -> u32;
    fn integrity_reason(&self) -> Option<&IntegrityReason>;
}

/// [`IntegrityOutcome`] for a result type with those three fields.
macro_rules! integrity_outcome {
    ($t:ty) => {
        impl $crate::studies::crashtest::IntegrityOutcome for $t {
            fn method(&self) -> &str {
                &self.method
            }
            fn integrity_failures(&self) -> u32 {
                self.integrity_failures
            }
            fn integrity_reason(&self) -> Option<&$crate::studies::crashtest::IntegrityReason> {
                self.integrity_reason.as_ref()
            }
        }
    };
}
pub(crate) use integrity_outcome;

integrity_outcome!(CrashMethodResult);

#[derive(Debug, Clone)]
pub struct CrashReport {
    pub section: CrashSection,
    /// Stopped by Ctrl-C: the last method has fewer kills.
    pub interrupted: bool,
}

pub fn crashtest(ctx: &StudyContext, opts: &CrashOptions) -> Result<CrashReport> {
    let opts = &Crash::new(ctx, opts);
    let progress = &ctx.progress();
    validate(opts)?;
    // Before any method runs: a missing server would end a long run late.
    for m in &opts.methods {
        m.check_installed(&opts.ctx.settings).map_err(|e| Error::invalid(format!("--method {}: {e}", m.name())))?;
    }
    crate::engine::registry::reap_killed(&opts.ctx.workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let root = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&opts.ctx.workdir)
        .map_err(|e| Error::io(&opts.ctx.workdir, "cannot create a directory here", e))?;
    let mut section = CrashSection {
        fault: "SIGKILL".into(),
        kills_per_method: opts.kills,
        blobs: opts.count,
        blob_min_bytes: MIN_BLOB as u64,
        blob_max_bytes: MAX_BLOB as u64,
        max_delay_us: opts.max_delay.as_micros() as u64,
        seed: opts.ctx.seed,
        workdir: opts.ctx.workdir.display().to_string(),
        commit_every: opts.commit_every,
        methods: Vec::new(),
    };
    progress.start("crashtest", u64::from(opts.kills) * opts.methods.len() as u64);
    let mut interrupted = false;
    for (i, &method) in opts.methods.iter().enumerate() {
        // A short name: a server's Unix socket path must fit in 107 bytes.
        let dir = root.path().join(format!("m{i}"));
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create directory", e))?;
        let result = one_method(opts, method, &dir, progress, &mut interrupted);
        let _ = std::fs::remove_dir_all(&dir);
        section.methods.push(result?);
        if interrupted {
            break;
        }
    }
    progress.finish();
    Ok(CrashReport { section, interrupted })
}

fn validate(opts: &Crash) -> Result<()> {
    if opts.methods.is_empty() {
        return Err(Error::invalid("--method: no write method chosen"));
    }
    crate::records::check_commit_every(opts.commit_every).map_err(Error::invalid)?;
    if !(1..=LIMIT).contains(&opts.kills) || !(1..=LIMIT).contains(&opts.count) {
        return Err(Error::invalid(format!("--kills and --count must be from 1 to {LIMIT}")));
    }
    match std::fs::metadata(&opts.ctx.workdir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NotFound(opts.ctx.workdir.clone())),
        Err(e) => return Err(Error::io(&opts.ctx.workdir, "cannot access", e)),
        Ok(m) if !m.is_dir() => return Err(Error::bad_input(&opts.ctx.workdir, "is not a directory")),
        Ok(_) => {}
    }
    // One dataset at a time, plus a WAL or a journal as large as it.
    let need = 2 * u64::from(opts.count) * (MAX_BLOB as u64 + 512);
    let free = crate::util::fsutil::free_bytes(&opts.ctx.workdir)?;
    if free < need {
        return Err(Error::bad_input(
            &opts.ctx.workdir,
            format!(
                "not enough free space: the test needs about {} MB, {} MB free",
                need / 1_000_000,
                free / 1_000_000
            ),
        ));
    }
    Ok(())
}

fn one_method(
    opts: &Crash,
    method: ConfigId,
    dir: &std::path::Path,
    progress: &dyn Progress,
    interrupted: &mut bool,
) -> Result<CrashMethodResult> {
    let started = Instant::now();
    let path = dir.join(method.dataset_name());
    let mut ds = Dataset::create_with(&path, method, opts.count, opts.ctx.seed, opts.ctx.settings.clone())?;
    // Each method has its own schedule, the same whether run alone or not.
    let schedule_seed = method.name().bytes().fold(opts.ctx.seed, |h, b| h.rotate_left(7) ^ u64::from(b));
    let mut schedule = rand::rngs::SmallRng::seed_from_u64(schedule_seed);
    let max_us = opts.max_delay.as_micros() as u64;
    let mut r = CrashMethodResult {
        method: method.name().into(),
        description: method.description().into(),
        promises_atomic: method.promises_atomic(),
        acknowledges_durability: method.acknowledges_durability(),
        server: ds.server()?,
        ..CrashMethodResult::default()
    };
    let acks = dir.join("acks");
    for kill in 1..=u64::from(opts.kills) {
        let _ = std::fs::remove_file(&acks);
        let delay = Duration::from_micros(schedule.gen_range(0..=max_us));
        let spec = WriterSpec {
            method,
            path: path.clone(),
            count: opts.count,
            seed: opts.ctx.seed,
            base: kill * ROUND_SPAN,
            acks: Some(acks.clone()),
            commit_every: opts.commit_every,
            settings: opts.ctx.settings.clone(),
        };
        kill::run_and_kill(&opts.writer, &spec, delay)?;
        let t = ds.check(spec.base)?;
        let returned = writer::read_acks(&acks)?;
        r.undone += undone(&t, &returned);
        r.acknowledged += returned.len() as u64;
        if let Some(n) = t.unlisted {
            r.unlisted = Some(r.unlisted.unwrap_or(0) + n);
        }
        if let Some(n) = t.stale {
            r.stale_reads = Some(r.stale_reads.unwrap_or(0) + n);
        }
        r.kills += 1;
        r.integrity_failures += u32::from(t.integrity_failed());
        IntegrityReason::count(&mut r.integrity_reason, t.integrity_error.as_deref());
        let damaged = t.integrity_failed() || t.torn + t.missing + t.unexpected > 0 || !t.stray.is_empty();
        r.damaged_kills += u32::from(damaged);
        r.blobs_checked += u64::from(opts.count);
        r.intact_old += t.intact_old;
        r.intact_new += t.intact_new;
        r.torn += t.torn;
        r.missing += t.missing;
        r.unexpected_version += t.unexpected;
        r.stray_files += t.stray.len() as u64;
        ds.repair(&t)?;
        progress.advance(1);
        if stop_requested() {
            *interrupted = true;
            break;
        }
    }
    r.elapsed_ns = started.elapsed().as_nanos() as u64;
    Ok(r)
}

/// Blobs found whole at a version older than the last write to them that
/// returned to the writer (`acks`: key, version, promised durable).
fn undone(t: &dataset::Tally, acks: &[(u32, u64, bool)]) -> u64 {
    let mut last = std::collections::HashMap::new();
    for &(key, version, _) in acks {
        let v = last.entry(key).or_insert(version);
        *v = (*v).max(version);
    }
    let older = |(key, &returned): (&u32, &u64)| matches!(t.found.get(*key as usize), Some(Some(blob::Verdict::Intact(v))) if *v < returned);
    last.iter().filter(|&e| older(e)).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_reason_keeps_the_first_and_counts_its_repeats() {
        let mut slot = None;
        for r in [None, Some("kv: cannot open: missing blob file"), Some("kv: other"), None] {
            IntegrityReason::count(&mut slot, r);
        }
        IntegrityReason::count(&mut slot, Some("kv: cannot open: missing blob file"));
        let r = slot.expect("two reasons seen");
        assert_eq!((r.first.as_str(), r.same), ("kv: cannot open: missing blob file", 2));
        let mut none = None;
        IntegrityReason::count(&mut none, None);
        assert_eq!(none, None, "a passed check gives no reason");
    }

    #[test]
    fn undone_counts_whole_blobs_older_than_a_returned_write() {
        use blob::Verdict::{Intact, Torn};
        let mut t = dataset::Tally::default();
        t.found = vec![None, Some(Intact(5)), Some(Intact(7)), Some(Torn), None];
        // key 1 returned 6 and 7 but has 5; key 2 has what returned; key 3
        // is torn (its own column); key 4 is missing (its own column).
        let acks = [(1, 6, false), (1, 7, false), (2, 7, true), (3, 9, true), (4, 1, true)];
        assert_eq!(undone(&t, &acks), 1);
        assert_eq!(undone(&t, &[]), 0);
    }
}
