//! `crashtest --machine-loss`: beside the kill and the power cut, the loss
//! of a whole machine of a replicated store, for good: its processes and
//! its disk gone while the rest of the cluster goes on
//! (`engine::throwaway::hosts`). Writers make acknowledged writes; at a
//! random moment one host is lost; the store fails over its own way; every
//! acknowledged write is then checked by reading its blob back with a
//! reader blobbench owns, never by asking the store ([`run`]).
//!
//! Per method: acknowledged writes lost over K losses, writes in flight at
//! the losses, and the time until writes succeeded again after each.

mod methods;
mod run;
mod tally;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::dataset::{Dataset, MAX_BLOB, MIN_BLOB};
use super::WORK_PREFIX;
use crate::engine::throwaway::hosts::no_replicas;
use crate::engine::Engine;
use crate::records::{ConfigId, EngineSettings};
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};
pub use methods::Kept;
use methods::{each_method, EngineTarget};
pub use run::{Plan, Target};

/// Losses per method by default, and with `--quick`.
pub const DEFAULT_LOSSES: u32 = 20;
pub const QUICK_LOSSES: u32 = 3;
/// Writers at once (each a session of its own).
pub const WRITERS: u32 = 4;
/// How long writes may take to succeed again after a loss (a new standby
/// made and caught up included) before the method is an error.
pub const RESUME_BOUND: Duration = Duration::from_secs(300);

/// What the machine-loss table's columns count.
pub const LEGEND: &str = "
acks: writes acknowledged over every loss's round (each write its own commit). lost-acked: blobs whose newest
acknowledged version was gone after a loss (an older version, torn or missing), read back by blobbench's own reader
from the store's newest copy: durability violations for a layout that keeps each write on two machines. in flight:
writes issued and not answered when the host was lost (allowed either way). kept-unacked: blobs holding a version
no writer was told was stored. resumed: from the loss to the acknowledgement of the first write issued after it
(the store's failover, a new host in place of the lost one, and the clients' reconnections included), median and
range over the losses.
";

/// What a machine loss here shows and what it cannot.
pub const LIMITS: &str = "\
Each loss SIGKILLed every process of one host and moved its directory (its disk) away; in network namespaces its
link went down first, so its peers' connections hung, as a dead machine's do, until their timeouts. The hosts are
one machine's: a veth or loopback link has none of a real network's latency, bandwidth limits or partitions, no
disk fails slowly, and the replacement host keeps the lost one's address. The machine-loss figures are a floor
of what a real cluster shows.
";

/// What the machine-loss test is asked beyond its context.
#[derive(Debug, Clone)]
pub struct LossOptions {
    /// Replicated configurations (`ConfigId::replicated_methods`).
    pub methods: Vec<ConfigId>,
    pub losses: u32,
    /// Blobs per dataset.
    pub count: u32,
    /// The loss strikes a random delay in [0, max_delay] after the first
    /// acknowledged write of its round.
    pub max_delay: Duration,
    /// Run the methods' losses at once, each on a cluster of its own
    /// (advise: their set-ups, failovers and restores mostly wait), rather
    /// than one after the other (crashtest: each method's times alone).
    pub at_once: bool,
    /// Methods whose store, whole again after its last loss, is kept open
    /// for the caller ([`Kept`]): advise measures what replication costs
    /// on the same cluster rather than building another.
    pub keep: Vec<ConfigId>,
}

/// The result file's `machine_loss` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLossSection {
    pub losses_per_method: u32,
    pub blobs: u32,
    pub blob_min_bytes: u64,
    pub blob_max_bytes: u64,
    pub writers: u32,
    pub max_delay_us: u64,
    pub seed: u64,
    pub workdir: String,
    /// The methods' losses ran at once, each on a cluster of its own: a
    /// resume time includes the others' load on this machine.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub methods_at_once: bool,
    pub methods: Vec<MachineLossMethodResult>,
}

/// Totals over every loss of one method.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineLossMethodResult {
    pub method: String,
    pub description: String,
    /// The store as it describes itself (its layout, what a commit waits for).
    pub store: String,
    /// How its hosts were joined (namespaces, or loopback, and what that
    /// lets a loss show).
    pub network: String,
    /// Its layout keeps each acknowledged write on two machines: losing
    /// one breaks the promise (the asynchronous standby makes none).
    pub promises_survival: bool,
    pub losses: u32,
    /// The hosts lost, one per loss.
    pub hosts_lost: Vec<String>,
    /// Writes acknowledged over every loss's round.
    pub acknowledged: u64,
    /// Blobs whose newest acknowledged version was gone after a loss
    /// (older, torn or missing), over every loss.
    pub lost_acknowledged: u64,
    pub torn: u64,
    pub missing: u64,
    /// Writes issued and not answered when the host was lost.
    pub in_flight: u64,
    /// Blobs holding a version no writer was told was stored.
    pub unacknowledged_kept: u64,
    /// Per loss: from the loss to the first acknowledged write issued after it.
    pub resumed_after_ms: Vec<f64>,
    pub elapsed_ns: u64,
    /// Why the method stopped before its losses were done (one line):
    /// the losses counted above are those completed before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl MachineLossSection {
    /// The verdict: layouts that promise to survive a loss and lost an
    /// acknowledged write.
    pub fn broken_promises(&self) -> impl Iterator<Item = &MachineLossMethodResult> {
        self.methods.iter().filter(|m| m.promises_survival && m.lost_acknowledged > 0)
    }

    /// The methods that stopped on an error before their losses were done.
    pub fn failed(&self) -> impl Iterator<Item = &MachineLossMethodResult> {
        self.methods.iter().filter(|m| m.failed.is_some())
    }
}

#[derive(Debug, Clone)]
pub struct MachineLossReport {
    pub section: MachineLossSection,
    /// Stopped by Ctrl-C: the last method has fewer losses.
    pub interrupted: bool,
}

/// Checks `methods` before any work: each must be replicated (a store
/// with one copy is one line: nothing to fail over to).
pub fn check_methods(methods: &[ConfigId]) -> Result<()> {
    if methods.is_empty() {
        return Err(Error::invalid("--method: no write method chosen"));
    }
    match methods.iter().find(|m| m.replica().is_none()) {
        Some(m) => Err(Error::invalid(format!("--machine-loss --method {}: {}", m.name(), no_replicas(m.name())))),
        None => Ok(()),
    }
}

pub fn machine_loss_test(ctx: &StudyContext, opts: &LossOptions) -> Result<MachineLossReport> {
    machine_loss_keeping(ctx, opts).map(|(report, _)| report)
}

/// The machine-loss test, and the stores of `opts.keep`'s methods that
/// completed their losses, open (removed when [`Kept`] is dropped).
pub fn machine_loss_keeping(ctx: &StudyContext, opts: &LossOptions) -> Result<(MachineLossReport, Kept)> {
    check_methods(&opts.methods)?;
    let least = 2 * WRITERS;
    if !(1..=1000).contains(&opts.losses) || !(least..=100_000).contains(&opts.count) {
        return Err(Error::invalid(format!(
            "--losses must be from 1 to 1000, --count from {least} to 100000 (each of the {WRITERS} writers keeps a \
             blob of its own to probe with)"
        )));
    }
    for m in &opts.methods {
        let settings = EngineSettings { replica: m.replica(), ..ctx.settings.clone() };
        m.check_installed(&settings).map_err(|e| Error::invalid(format!("--method {}: {e}", m.name())))?;
    }
    crate::engine::registry::reap_killed(&ctx.workdir)?;
    let root = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&ctx.workdir)
        .map_err(|e| Error::io(&ctx.workdir, "cannot create a directory here", e))?;
    let mut section = MachineLossSection {
        losses_per_method: opts.losses,
        blobs: opts.count,
        blob_min_bytes: MIN_BLOB as u64,
        blob_max_bytes: MAX_BLOB as u64,
        writers: WRITERS,
        max_delay_us: opts.max_delay.as_micros() as u64,
        seed: ctx.seed,
        workdir: ctx.workdir.display().to_string(),
        methods_at_once: opts.at_once && opts.methods.len() > 1,
        methods: Vec::new(),
    };
    let progress = ctx.progress();
    progress.start("machine loss", u64::from(opts.losses) * opts.methods.len() as u64);
    let kept = Kept::new(root);
    let (methods, interrupted) = each_method(
        &opts.methods,
        opts.at_once,
        &|i, method| {
            let dir = kept.dir().join(format!("m{i}"));
            std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create directory", e))?;
            let (result, engine) = one_method(ctx, opts, method, &dir, &|| progress.advance(1))?;
            if !kept.offer(&opts.keep, (method, result.failed.is_none()), engine) {
                let _ = std::fs::remove_dir_all(&dir);
            }
            Ok(result)
        },
        MachineLossMethodResult::failed_before_any_loss,
    );
    section.methods = methods;
    progress.finish();
    Ok((MachineLossReport { section, interrupted }, kept))
}

impl MachineLossMethodResult {
    /// The row of a method that failed before its first loss (its cluster
    /// could not be built or started).
    fn failed_before_any_loss(method: ConfigId, e: &Error) -> MachineLossMethodResult {
        MachineLossMethodResult {
            method: method.name().into(),
            description: method.description().into(),
            promises_survival: method.replica().is_some_and(|r| r.keeps_two_copies()),
            failed: Some(e.to_string()),
            ..MachineLossMethodResult::default()
        }
    }
}

/// One method's dataset, built with version 0 of every blob, copied onto
/// its replicated cluster, then its losses; and its store, open, when
/// no writer of its still holds it (one whose writes never resumed may).
fn one_method(
    ctx: &StudyContext,
    opts: &LossOptions,
    method: ConfigId,
    dir: &Path,
    advance: &dyn Fn(),
) -> Result<(MachineLossMethodResult, Option<Box<dyn Engine>>)> {
    let started = Instant::now();
    let engine = open_store(method, &dir.join(method.dataset_name()), (opts.count, ctx.seed), &ctx.settings)?;
    let cluster = engine.replicated()?.ok_or_else(|| no_replicas(method.name()))?;
    let (store, network) = {
        let c = cluster.lock().unwrap_or_else(|e| e.into_inner());
        (c.describe(), c.hosts().network().describe())
    };
    let target = Arc::new(EngineTarget { engine, cluster });
    let plan = Plan {
        losses: opts.losses,
        count: opts.count,
        writers: WRITERS,
        seed: ctx.seed,
        max_delay: opts.max_delay,
        bound: RESUME_BOUND,
    };
    let mut r = MachineLossMethodResult {
        method: method.name().into(),
        description: method.description().into(),
        store,
        network,
        promises_survival: method.replica().is_some_and(|r| r.keeps_two_copies()),
        ..MachineLossMethodResult::default()
    };
    let as_target: Arc<dyn Target> = Arc::clone(&target) as Arc<dyn Target>;
    let ended = losses(&as_target, &plan, method, &mut r, advance);
    drop(as_target);
    keep_completed(ended, &mut r)?;
    r.elapsed_ns = started.elapsed().as_nanos() as u64;
    Ok((r, Arc::try_unwrap(target).ok().map(|t| t.engine)))
}

/// `method`'s store at `path`, `count` blobs at version 0 (from `seed`),
/// built on the layout's own servers (S3 exports onto the layout's server;
/// PostgreSQL copies its cluster when the engine opens it) with
/// `settings`' other parts, and opened for writes each committed on its
/// own. A method of one copy (an engine's durable commit) opens alone: the
/// replicated write's cost is measured against it.
pub fn open_store(
    method: ConfigId,
    path: &Path,
    (count, seed): (u32, u64),
    settings: &EngineSettings,
) -> Result<Box<dyn Engine>> {
    let build = EngineSettings { replica: method.replica(), ..settings.clone() };
    Dataset::create_with(path, method, count, seed, build)?;
    let (engine, kv) = method.kv_params().ok_or_else(|| no_replicas(method.name()))?;
    let settings = EngineSettings { kv, commit_every: Some(1), replica: method.replica(), ..settings.clone() };
    crate::engine::open_as(engine, path, &settings)
}

/// How a method's losses `ended`, into its row `r`: the losses completed
/// before an error are kept, with why it stopped (a cluster that fails at
/// its 18th loss still counted 17); at Ctrl-C too, once one is done.
fn keep_completed(ended: Result<()>, r: &mut MachineLossMethodResult) -> Result<()> {
    match ended {
        Ok(()) => Ok(()),
        Err(Error::Interrupted) if r.losses > 0 => Ok(()),
        Err(Error::Interrupted) => Err(Error::Interrupted),
        Err(e) => {
            r.failed = Some(e.to_string());
            Ok(())
        }
    }
}

/// `plan.losses` losses on `target`, each judged alone, added into `r`.
/// Each method has its own schedule, the same whether run alone or not.
pub fn losses(
    target: &Arc<dyn Target>,
    plan: &Plan,
    method: ConfigId,
    r: &mut MachineLossMethodResult,
    advance: &dyn Fn(),
) -> Result<()> {
    let seed = method.name().bytes().fold(plan.seed, |h, b| h.rotate_left(7) ^ u64::from(b));
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut before = vec![0u64; plan.count as usize + 1];
    for round in 1..=plan.losses {
        let o = run::one_loss(target, plan, round, &mut before, &mut rng)?;
        target.cluster().lock().unwrap_or_else(|e| e.into_inner()).readmit()?;
        r.losses += 1;
        r.hosts_lost.push(o.host);
        r.acknowledged += o.acknowledged;
        r.in_flight += o.in_flight;
        r.lost_acknowledged += o.found.lost_acknowledged;
        r.torn += o.found.torn;
        r.missing += o.found.missing;
        r.unacknowledged_kept += o.found.unacknowledged_kept;
        r.resumed_after_ms.push(o.resumed_after.as_secs_f64() * 1000.0);
        advance();
        if crate::measure::stop_requested() {
            return Err(Error::Interrupted);
        }
    }
    Ok(())
}
