//! The crash test's result sections as files hold them: a kill run's
//! (`crashtest`), each method's totals, and why its integrity checks
//! failed (shared with the power cuts').

use serde::{Deserialize, Serialize};

use super::dataset::Tally;
use super::options::{Crash, MAX_BLOB, MIN_BLOB};

/// The result file's `crashtest` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashSection {
    /// How the writer was stopped: "SIGKILL" (a process kill, not a power cut).
    pub fault: String,
    pub kills_per_method: u32,
    #[serde(flatten)]
    pub run: CrashRun,
    pub methods: Vec<CrashMethodResult>,
}

/// What every method's writer of a kill or power-cut run did: the
/// dataset, how long it wrote, how it committed and where.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrashRun {
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
}

impl CrashRun {
    /// What the test's writers are asked to do.
    pub(super) fn of(opts: &Crash) -> CrashRun {
        CrashRun {
            blobs: opts.count,
            blob_min_bytes: MIN_BLOB as u64,
            blob_max_bytes: MAX_BLOB as u64,
            max_delay_us: opts.max_delay.as_micros() as u64,
            seed: opts.ctx.seed,
            workdir: opts.ctx.workdir.display().to_string(),
            commit_every: opts.commit_every,
        }
    }
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
    /// What the check after each kill found, totalled.
    #[serde(flatten)]
    pub checks: CheckTotals,
    /// Kills after which anything was torn, missing, unexpected or stray.
    pub damaged_kills: u32,
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
        let c = &self.checks;
        let damaged = c.integrity_failures > 0 || c.torn > 0 || c.missing > 0 || c.unexpected_version > 0;
        (self.promises_atomic && damaged) || (self.acknowledges_durability && self.undone > 0)
    }
}

/// What the checks after every kill or cut of one method found, totalled
/// (a kill's and a power cut's alike).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckTotals {
    /// Checks after which integrity_check failed or the store could not
    /// be opened or read.
    pub integrity_failures: u32,
    /// Why: the first failure's reason (absent when none failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity_reason: Option<IntegrityReason>,
    /// Blob checks made (blobs x kills or cuts), then what they found.
    pub blobs_checked: u64,
    pub intact_old: u64,
    pub intact_new: u64,
    pub torn: u64,
    pub missing: u64,
    /// Whole, but neither the version verified before the kill or cut nor
    /// one written since: a lost or misplaced write.
    pub unexpected_version: u64,
    /// Files left in the directory that are not blobs (temporary files).
    pub stray_files: u64,
}

impl CheckTotals {
    /// Adds one check of `blobs` blobs.
    pub fn add(&mut self, t: &Tally, blobs: u32) {
        self.integrity_failures += u32::from(t.integrity_failed());
        IntegrityReason::count(&mut self.integrity_reason, t.integrity_error.as_deref());
        self.blobs_checked += u64::from(blobs);
        self.intact_old += t.intact_old;
        self.intact_new += t.intact_new;
        self.torn += t.torn;
        self.missing += t.missing;
        self.unexpected_version += t.unexpected;
        self.stray_files += t.stray.len() as u64;
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
    ($t:ty, $checks:ident) => {
        impl $crate::studies::crashtest::section::IntegrityOutcome for $t {
            fn method(&self) -> &str {
                &self.method
            }
            fn integrity_failures(&self) -> u32 {
                self.$checks.integrity_failures
            }
            fn integrity_reason(&self) -> Option<&$crate::studies::crashtest::section::IntegrityReason> {
                self.$checks.integrity_reason.as_ref()
            }
        }
    };
    ($t:ty) => {
        impl $crate::studies::crashtest::section::IntegrityOutcome for $t {
            fn method(&self) -> &str {
                &self.method
            }
            fn integrity_failures(&self) -> u32 {
                self.integrity_failures
            }
            fn integrity_reason(&self) -> Option<&$crate::studies::crashtest::section::IntegrityReason> {
                self.integrity_reason.as_ref()
            }
        }
    };
}
pub(crate) use integrity_outcome;

integrity_outcome!(CrashMethodResult, checks);
