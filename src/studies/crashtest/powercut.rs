//! `crashtest --power-cut`: the same writers and checks as the kill test,
//! but the dataset lives on the power-cut layer (`crate::powercut`) and
//! each round ends with a power cut: the writer is killed, the layer's
//! volatile state goes to the model (the strict one drops all of it), the
//! layer is unmounted, and the backing directory is checked as the disk
//! would be after a reboot. The writer logs which writes it was told were
//! durable, so a blob that comes back older, torn or missing after that is
//! counted as a durability violation.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::blob::Verdict;
use super::dataset::{Dataset, Tally};
use super::kill;
use super::options::{Crash, CrashOptions, ROUND_SPAN, WORK_PREFIX};
use super::section::{CheckTotals, CrashRun, IntegrityReason};
use super::writer::{read_acks, WriterSpec};
use crate::measure::stop_requested;
use crate::powercut::cost::LayerCost;
use crate::powercut::{self, FaultPlan, Model, Mounted};
use crate::records::ConfigId;
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Rounds of the failed-fsync table per method (each with one fsync failing).
const FSYNC_TRIALS: u32 = 4;

/// The result file's `power_cut` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerCutSection {
    /// The model's name and what it drops.
    pub model: String,
    pub model_description: String,
    pub cuts_per_method: u32,
    #[serde(flatten)]
    pub run: CrashRun,
    pub methods: Vec<PowerCutMethodResult>,
    /// Methods asked for but not run: their writes are made by a server
    /// whose data directory the layer cannot carry (docs/crash-safety.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_on_layer: Vec<String>,
    /// What each method leaves after one fsync failed with EIO ("fsyncgate").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fsync_failure: Vec<FsyncFailureResult>,
    /// What the layer itself adds to a write and an fsync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_cost: Option<LayerCost>,
}

/// Totals over every cut of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerCutMethodResult {
    pub method: String,
    pub description: String,
    /// A write that returned was promised durable (see crash-safety.md).
    pub acknowledges_durability: bool,
    /// The method's documentation promises it: a loss after acknowledgement
    /// makes the command fail (false for DELETE + FULL, see crash-safety.md).
    pub promises_durability: bool,
    pub cuts: u32,
    /// What the check after each cut found, totalled.
    #[serde(flatten)]
    pub checks: CheckTotals,
    /// Blobs older, torn or missing although a later write was acknowledged
    /// durable: durability violations.
    pub lost_after_ack: u64,
    /// Blobs older than the last write that returned, which was not
    /// promised durable: allowed.
    pub lost_before_ack: u64,
    /// Writes that returned, and of those the ones promised durable.
    pub writes_returned: u64,
    pub writes_acknowledged: u64,
    /// Writes not yet synced at the cuts, and (torn models) how many of
    /// them reached the disk whole or in part.
    pub pending_writes: u64,
    pub landed_whole: u64,
    pub landed_torn: u64,
    pub elapsed_ns: u64,
}

impl PowerCutSection {
    /// The verdict: methods that promise durability and lost an
    /// acknowledged write or their integrity in a cut.
    pub fn broken_promises(&self) -> impl Iterator<Item = &PowerCutMethodResult> {
        self.methods
            .iter()
            .filter(|m| m.promises_durability && (m.lost_after_ack > 0 || m.checks.integrity_failures > 0))
    }
}

/// One method after one fsync failed with EIO (Linux semantics: the error
/// is reported once, the unsynced data dropped, the next fsync succeeds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FsyncFailureResult {
    pub method: String,
    pub trials: u32,
    /// Trials in which the failing fsync was reached.
    pub fsync_failed: u32,
    /// Trials in which the writer stopped with an error (it saw the failure).
    pub writer_stopped: u32,
    /// The writer's error, as it said it, from the first such trial.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub writer_error: String,
    pub integrity_failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity_reason: Option<IntegrityReason>,
    pub torn: u64,
    pub missing: u64,
    pub lost_after_ack: u64,
    pub intact_new: u64,
}

super::section::integrity_outcome!(PowerCutMethodResult, checks);
super::section::integrity_outcome!(FsyncFailureResult);

#[derive(Debug, Clone)]
pub struct PowerCutReport {
    pub section: PowerCutSection,
    pub interrupted: bool,
    /// Leftover mounts of killed runs that were cleaned up first.
    pub cleaned_mounts: Vec<PathBuf>,
}

/// The places of one method's test inside the work directory.
struct Places {
    backing: PathBuf,
    mountpoint: PathBuf,
    acks: PathBuf,
    /// The dataset's name, the same on disk and on the mount.
    name: &'static str,
}

impl Places {
    fn new(dir: &Path, method: ConfigId) -> Result<Self> {
        let p = Places {
            backing: dir.join("disk"),
            mountpoint: dir.join("mnt"),
            acks: dir.join("acks"),
            name: method.dataset_name(),
        };
        for d in [&p.backing, &p.mountpoint] {
            std::fs::create_dir(d).map_err(|e| Error::io(d, "cannot create directory", e))?;
        }
        Ok(p)
    }
}

pub fn power_cut_test(ctx: &StudyContext, opts: &CrashOptions, model: Model) -> Result<PowerCutReport> {
    let opts = &Crash::new(ctx, opts);
    let progress = &ctx.progress();
    opts.validate()?;
    let (served, methods): (Vec<ConfigId>, Vec<ConfigId>) = opts.methods.iter().partition(|m| m.has_server());
    let not_on_layer: Vec<String> = served.iter().map(|m| m.name().to_string()).collect();
    if methods.is_empty() {
        return Err(Error::invalid(format!(
            "--power-cut: {} cannot run on the power-cut layer (a server's data directory; see docs/crash-safety.md)",
            not_on_layer.join(", ")
        )));
    }
    let opts = &Crash { methods, ..opts.clone() };
    let cleaned_mounts = powercut::clean_stale(&opts.ctx.workdir)?;
    // The killed run's own work directory goes with its mount.
    for m in &cleaned_mounts {
        if let Some(work) =
            m.ancestors().find(|a| a.file_name().is_some_and(|n| n.to_string_lossy().starts_with(WORK_PREFIX)))
        {
            let _ = std::fs::remove_dir_all(work);
        }
    }
    let root = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .tempdir_in(&opts.ctx.workdir)
        .map_err(|e| Error::io(&opts.ctx.workdir, "cannot create a directory here", e))?;
    let layer_cost = Some(powercut::cost::measure(root.path(), &opts.writer)?);
    let mut section = PowerCutSection {
        model: model.name().into(),
        model_description: model.description().into(),
        cuts_per_method: opts.kills,
        run: CrashRun::of(opts),
        methods: Vec::new(),
        not_on_layer,
        fsync_failure: Vec::new(),
        layer_cost,
    };
    let fsync_methods: Vec<ConfigId> = opts.methods.iter().copied().filter(|m| m.calls_fsync()).collect();
    let steps =
        u64::from(opts.kills) * opts.methods.len() as u64 + u64::from(FSYNC_TRIALS) * fsync_methods.len() as u64;
    progress.start("crashtest --power-cut", steps);
    let mut interrupted = false;
    for &method in &opts.methods {
        let dir = root.path().join(method.name());
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create directory", e))?;
        let result = one_method(opts, model, method, &dir, progress, &mut interrupted);
        let _ = std::fs::remove_dir_all(&dir);
        section.methods.push(result?);
        if interrupted {
            break;
        }
    }
    for &method in &fsync_methods {
        if interrupted {
            break;
        }
        let dir = root.path().join(format!("{}-fsync-eio", method.name()));
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create directory", e))?;
        let result = fsync_failure(opts, model, method, &dir, progress, &mut interrupted);
        let _ = std::fs::remove_dir_all(&dir);
        section.fsync_failure.push(result?);
    }
    progress.finish();
    Ok(PowerCutReport { section, interrupted, cleaned_mounts })
}

/// Each method has its own schedule, the same whether run alone or not.
fn schedule(opts: &Crash, method: ConfigId, salt: u64) -> SmallRng {
    let seed = method.name().bytes().fold(opts.ctx.seed ^ salt, |h, b| h.rotate_left(7) ^ u64::from(b));
    SmallRng::seed_from_u64(seed)
}

/// What one round (one cut) found, beyond the kill test's tally.
struct Round {
    tally: Tally,
    lost_after_ack: u64,
    lost_before_ack: u64,
    returned: u64,
    acknowledged: u64,
    cut: powercut::CutStats,
    /// The writer's own error, when it stopped by itself.
    writer_error: Option<String>,
    fsync_failed: bool,
}

/// One method's test: its options, model, dataset and places.
struct Ctx<'a> {
    opts: &'a Crash,
    model: Model,
    method: ConfigId,
    places: Places,
    ds: Dataset,
}

impl<'a> Ctx<'a> {
    fn new(opts: &'a Crash, model: Model, method: ConfigId, dir: &Path) -> Result<Self> {
        let places = Places::new(dir, method)?;
        let path = places.backing.join(places.name);
        let ds = Dataset::create_with(&path, method, opts.count, opts.ctx.seed, opts.ctx.settings.clone())?;
        Ok(Ctx { opts, model, method, places, ds })
    }
}

/// Mount, write, cut, check, repair.
fn one_round(c: &mut Ctx, round: u64, faults: FaultPlan, rng: &mut SmallRng) -> Result<Round> {
    let (opts, model, method, places) = (c.opts, c.model, c.method, &c.places);
    let max_us = opts.max_delay.as_micros() as u64;
    let delay = Duration::from_micros(rng.gen_range(0..=max_us));
    let _ = std::fs::remove_file(&places.acks);
    let mounted = Mounted::mount(&places.backing, &places.mountpoint, faults)?;
    let base = round * ROUND_SPAN;
    let spec = WriterSpec {
        method,
        path: places.mountpoint.join(places.name),
        count: opts.count,
        seed: opts.ctx.seed,
        base,
        acks: Some(places.acks.clone()),
        commit_every: opts.commit_every,
        settings: opts.ctx.settings.clone(),
    };
    let writer_error = kill::run_for(&opts.writer, &spec, delay, None)?;
    let fsync_failed = mounted.counters().faults_injected > 0;
    if writer_error.is_some() && faults == FaultPlan::none() {
        let e = writer_error.unwrap_or_default();
        return Err(Error::invalid(format!("crash-test writer stopped by itself on the power-cut layer: {e}")));
    }
    let cut = mounted.cut(model, rng)?;
    let acks = read_acks(&places.acks)?;
    // What was verified on disk before the round was durable: for a method
    // that promises durability, losing it counts like losing a later ack.
    let on_disk = method.acknowledges_durability().then(|| c.ds.versions().to_vec());
    let tally = c.ds.check(base)?;
    let (lost_after_ack, lost_before_ack) = durability(&tally, &acks, on_disk.as_deref(), opts.count);
    c.ds.repair(&tally)?;
    Ok(Round {
        tally,
        lost_after_ack,
        lost_before_ack,
        returned: acks.len() as u64,
        acknowledged: acks.iter().filter(|a| a.2).count() as u64,
        cut,
        writer_error,
        fsync_failed,
    })
}

/// (lost after acknowledgement, lost before it) over every key. `on_disk`:
/// the versions known durable before the round, when the method promises
/// durability.
fn durability(t: &Tally, acks: &[(u32, u64, bool)], on_disk: Option<&[u64]>, count: u32) -> (u64, u64) {
    let mut last_acked: Vec<Option<u64>> = match on_disk {
        Some(v) => v.iter().map(|&x| Some(x)).collect(),
        None => vec![None; count as usize + 1],
    };
    last_acked.resize(count as usize + 1, None);
    let mut last_returned = vec![None::<u64>; count as usize + 1];
    for &(key, version, durable) in acks {
        let Some(slot) = last_returned.get_mut(key as usize) else { continue };
        *slot = (*slot).max(Some(version));
        if durable {
            last_acked[key as usize] = last_acked[key as usize].max(Some(version));
        }
    }
    let (mut after, mut before) = (0, 0);
    for key in 1..=count as usize {
        let found = t.found.get(key).copied().flatten();
        let have = match found {
            Some(Verdict::Intact(v)) => Some(v),
            _ => None,
        };
        if last_acked[key].is_some_and(|a| have.is_none_or(|v| v < a)) {
            after += 1;
        } else if last_returned[key].is_some_and(|w| have.is_some_and(|v| v < w)) {
            before += 1;
        }
    }
    (after, before)
}

fn one_method(
    opts: &Crash,
    model: Model,
    method: ConfigId,
    dir: &Path,
    progress: &dyn Progress,
    interrupted: &mut bool,
) -> Result<PowerCutMethodResult> {
    let started = Instant::now();
    let mut c = Ctx::new(opts, model, method, dir)?;
    let mut rng = schedule(opts, method, 0x9c07);
    let mut r = PowerCutMethodResult {
        method: method.name().into(),
        description: method.description().into(),
        acknowledges_durability: method.acknowledges_durability(),
        promises_durability: method.promises_durability(),
        ..PowerCutMethodResult::default()
    };
    for round in 1..=u64::from(opts.kills) {
        let x = one_round(&mut c, round, FaultPlan::none(), &mut rng)?;
        let t = &x.tally;
        r.cuts += 1;
        r.checks.add(t, opts.count);
        r.lost_after_ack += x.lost_after_ack;
        r.lost_before_ack += x.lost_before_ack;
        r.writes_returned += x.returned;
        r.writes_acknowledged += x.acknowledged;
        r.pending_writes += x.cut.pending_writes;
        r.landed_whole += x.cut.landed_whole;
        r.landed_torn += x.cut.landed_torn;
        progress.advance(1);
        if stop_requested() {
            *interrupted = true;
            break;
        }
    }
    r.elapsed_ns = started.elapsed().as_nanos() as u64;
    Ok(r)
}

/// Rounds in which one fsync (the n-th, n drawn from the schedule) fails
/// with EIO; the writer runs until it stops by itself or the delay ends,
/// then the power is cut as usual.
fn fsync_failure(
    opts: &Crash,
    model: Model,
    method: ConfigId,
    dir: &Path,
    progress: &dyn Progress,
    interrupted: &mut bool,
) -> Result<FsyncFailureResult> {
    let long = Crash { max_delay: opts.max_delay * 4, ..opts.clone() };
    let mut c = Ctx::new(&long, model, method, dir)?;
    let mut rng = schedule(opts, method, 0xf5c);
    let mut r = FsyncFailureResult { method: method.name().into(), ..FsyncFailureResult::default() };
    for round in 1..=u64::from(FSYNC_TRIALS) {
        let faults = FaultPlan::parse("fsync-eio", rng.gen_range(1..=8)).map_err(Error::invalid)?;
        let x = one_round(&mut c, round, faults, &mut rng)?;
        r.trials += 1;
        r.fsync_failed += u32::from(x.fsync_failed);
        if let Some(e) = x.writer_error {
            r.writer_stopped += 1;
            if r.writer_error.is_empty() {
                r.writer_error = without_path(&e, &c.places.mountpoint);
            }
        }
        r.integrity_failures += u32::from(x.tally.integrity_failed());
        IntegrityReason::count(&mut r.integrity_reason, x.tally.integrity_error.as_deref());
        r.torn += x.tally.torn;
        r.missing += x.tally.missing;
        r.lost_after_ack += x.lost_after_ack;
        r.intact_new += x.tally.intact_new;
        progress.advance(1);
        if stop_requested() {
            *interrupted = true;
            break;
        }
    }
    Ok(r)
}

/// The writer's message without the (temporary) path it starts with.
fn without_path(message: &str, mountpoint: &Path) -> String {
    let prefix = mountpoint.display().to_string();
    match message.strip_prefix(&prefix) {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, m)| m).to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_counts_only_what_was_promised() {
        let mut t = Tally::default();
        t.found = vec![None, Some(Verdict::Intact(5)), Some(Verdict::Intact(5)), Some(Verdict::Torn), None];
        // key 1: acked 7, has 5 -> violation; key 2: returned 6 unacked -> allowed;
        // key 3: torn after ack -> violation; key 4: missing, nothing written -> neither.
        let acks = [(1, 7, true), (2, 6, false), (3, 2, true)];
        assert_eq!(durability(&t, &acks, None, 4), (2, 1));
        assert_eq!(durability(&t, &[(1, 5, true)], None, 4), (0, 0), "the acknowledged version itself is fine");
        // A version verified on disk before the round and then torn or lost
        // counts for a method that promises durability (keys 3 and 4).
        assert_eq!(durability(&t, &[], Some(&[0, 5, 5, 1, 1]), 4), (2, 0));
    }
}
