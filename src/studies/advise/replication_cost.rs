//! What replication costs per write, under `--durability replicated`:
//! each ranked replicated layout against the same store alone
//! (PostgreSQL with a synchronous standby against PostgreSQL alone, Swift
//! on three hosts against Swift on one), both built with the same blobs,
//! written by the same clients in interleaved rounds (each round runs
//! every arm once, in a shuffled order), at one client and at `--clients
//! N`, and compared by paired per-round ratios. On one machine the hosts'
//! link is a veth pair or loopback, so the cost is a floor. The replicated
//! store is the machine-loss run's own cluster, whole again after its
//! losses, where there was one; the store alone is built while the losses
//! run ([`build_alone`]).

use std::time::Duration;

use crate::drivers::clients::ClientsArm;
use crate::engine::s3::Server;
use crate::engine::Engine;
use crate::measure::paired::{median_sorted, PairedRatio};
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan};
use crate::records::{ConfigId, EngineSettings, Mix, Replica};
use crate::studies::context::StudyContext;
use crate::studies::crashtest::loss::open_store;
use crate::{Error, Result};

/// Rounds with `--quick`: enough for a 95% paired interval.
const LEAST_ROUNDS: u32 = crate::measure::paired::MIN_ROUNDS_95 as u32;

/// How the cost is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostPlan {
    /// `--clients N`: measured at 1 and, when above 1, at N.
    pub clients: u32,
    /// Blobs in each store (512 B to 64 KiB, as many as the machine-loss
    /// run's, whose store the replicated side is).
    pub count: u32,
    /// Each run's window: every client overwrites blobs for this long.
    pub window: Duration,
    /// Interleaved rounds, every one run (a count, not a budget).
    pub rounds: u32,
}

impl CostPlan {
    /// `--quick`'s plan, or the longer one; `clients` as asked, on stores
    /// of `count` blobs.
    pub fn new(quick: bool, clients: u32, count: u32) -> CostPlan {
        CostPlan {
            clients,
            count,
            // An S3 PUT on a loaded machine takes tens of ms: a window
            // holds several at one client.
            window: Duration::from_millis(if quick { 300 } else { 600 }),
            rounds: if quick { LEAST_ROUNDS } else { 2 * LEAST_ROUNDS },
        }
    }

    /// The client counts measured: 1, and N when above 1.
    pub fn levels(&self) -> Vec<u32> {
        if self.clients > 1 {
            vec![1, self.clients]
        } else {
            vec![1]
        }
    }
}

/// One replicated layout's cost against the same store alone.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicationCost {
    pub layout: ConfigId,
    /// The same store alone: its durable commit on one throwaway server.
    pub alone: ConfigId,
    /// The layout's hosts were joined by veth links in network
    /// namespaces (else they shared loopback).
    pub veth: bool,
    /// The replicated side was the machine-loss run's cluster, after its
    /// losses (else one built for the cost).
    pub on_loss_cluster: bool,
    /// By client count, 1 first.
    pub at: Vec<CostAt>,
    /// The rounds' id in the result file.
    pub rounds_id: String,
}

/// The cost at one client count.
#[derive(Debug, Clone, PartialEq)]
pub struct CostAt {
    pub clients: u32,
    /// Median time per acknowledged write over all clients (at N, the
    /// inverse of throughput), replicated and alone, over the rounds.
    pub replicated_us: f64,
    pub alone_us: f64,
    /// Replicated over alone, paired by round; None with one round.
    pub ratio: Option<PairedRatio>,
}

/// The same store alone as `layout`: its durable commit, on the single
/// server of the layout's kind (Swift on one host for Swift on three).
pub fn alone_of(layout: ConfigId, settings: &EngineSettings) -> Option<(ConfigId, EngineSettings)> {
    let ConfigId::Replicated(kind, replica) = layout else { return None };
    let mut alone = EngineSettings { replica: None, ..settings.clone() };
    match replica {
        Replica::SwiftThreeHosts => alone.s3.server = Some(Server::Swift.name().into()),
        Replica::SeaweedfsTwoHosts => alone.s3.server = Some(Server::Seaweedfs.name().into()),
        Replica::SyncStandby | Replica::AsyncStandby => {}
    }
    Some((ConfigId::Durable(kind), alone))
}

/// A store the cost is measured on, and the directory it was built in
/// (none: the machine-loss run's, which removes its own). Dropped, the
/// store ends (its servers with it), then its directory is removed.
pub struct CostStore {
    engine: Box<dyn Engine>,
    root: Option<tempfile::TempDir>,
}

impl CostStore {
    /// The machine-loss run's store, kept open after its losses.
    pub fn kept(engine: Box<dyn Engine>) -> CostStore {
        CostStore { engine, root: None }
    }
}

/// `m`'s store of `count` blobs (from `ctx.seed`), built with
/// `settings` in a directory of its own in `ctx`'s work directory, and
/// surveyed, which starts its server: built while the losses run, it is
/// up when the rounds begin (its start is no part of them either way).
pub fn build(ctx: &StudyContext, m: ConfigId, count: u32, settings: &EngineSettings) -> Result<CostStore> {
    let root = tempfile::Builder::new()
        .prefix(".blobbench-replication-cost-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&ctx.workdir)
        .map_err(|e| Error::io(&ctx.workdir, "cannot create a directory here", e))?;
    let mut engine = open_store(m, &root.path().join(m.dataset_name()), (count, ctx.seed), settings)?;
    engine.survey(true)?;
    Ok(CostStore { engine, root: Some(root) })
}

/// The same store alone as `layout` ([`alone_of`]), of `count` blobs.
pub fn build_alone(ctx: &StudyContext, layout: ConfigId, count: u32) -> Result<CostStore> {
    let (alone, settings) = alone_of(layout, &ctx.settings)
        .ok_or_else(|| Error::invalid(format!("{} is not replicated", layout.name())))?;
    build(ctx, alone, count, &settings)
}

/// An arm's id in the rounds: its configuration and client count.
fn arm_id(m: ConfigId, clients: u32) -> String {
    format!("{}@{clients}", m.name())
}

/// `layout`'s cost against the same store alone, by `plan`, on the
/// `replicated` store and the one `alone` (both ended, their directories
/// removed, when this returns).
pub fn measure(
    ctx: &StudyContext,
    layout: ConfigId,
    (replicated, alone_store): (CostStore, CostStore),
    plan: &CostPlan,
) -> Result<(ReplicationCost, RoundSet)> {
    let (alone, _) = alone_of(layout, &ctx.settings)
        .ok_or_else(|| Error::invalid(format!("{} is not replicated", layout.name())))?;
    // Bound first, so removed after the engines (and their servers) end.
    let (replicated_root, _alone_root) = (replicated.root, alone_store.root);
    let on_loss_cluster = replicated_root.is_none();
    let (replicated, alone_engine) = (replicated.engine, alone_store.engine);
    let cluster = replicated.replicated()?.ok_or_else(|| Error::invalid(format!("{}: no cluster", layout.name())))?;
    let veth = cluster.lock().unwrap_or_else(|e| e.into_inner()).hosts().network().is_namespaces();
    drop(cluster);
    let levels = plan.levels();
    let mix = Mix { read: 0, write: 1 };
    let mut arms: Vec<ClientsArm> = Vec::new();
    let mut ids = Vec::new();
    // Both stores' clients write the same keys with the same content.
    for (m, engine) in [(layout, replicated), (alone, alone_engine)] {
        let first = ClientsArm::prepare(engine, levels[0], mix, plan.window, ctx.seed, None)?;
        let more: Vec<ClientsArm> = levels[1..]
            .iter()
            .map(|&n| first.at(n, plan.window, ctx.seed.wrapping_add(u64::from(n))))
            .collect::<Result<_>>()?;
        arms.push(first);
        arms.extend(more);
        ids.extend(levels.iter().map(|&n| arm_id(m, n)));
    }
    let k = levels.len();
    let comparisons: Vec<Comparison> = (0..k).map(|i| Comparison { a: vec![i], b: vec![k + i] }).collect();
    let rounds = RoundsPlan {
        max_rounds: plan.rounds,
        least_rounds: plan.rounds,
        clock: ctx.clock,
        ..RoundsPlan::new(plan.rounds, None)
    };
    let rounds_id = format!("replication-cost/{}", layout.name());
    let observer = &ctx.observer;
    observer.begin(
        &format!("replication cost: {} against {}", layout.name(), alone.name()),
        u64::from(plan.rounds + 1) * ids.len() as u64,
    );
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let out = run_rounds(&rounds_id, &ids, &mut dyn_arms, &rounds, &comparisons, &mut |done, _| observer.advance(done));
    observer.finish();
    drop(dyn_arms);
    drop(arms);
    let set = out?.set;
    let at = levels.iter().map(|&n| cost_at(&set, (layout, alone), n)).collect::<Option<Vec<_>>>();
    let at = at.ok_or_else(|| Error::invalid(format!("{}: its rounds were not consistent", rounds_id)))?;
    Ok((ReplicationCost { layout, alone, veth, on_loss_cluster, at, rounds_id }, set))
}

/// The cost at `clients` from the rounds: each side's median and the
/// paired ratio.
fn cost_at(set: &RoundSet, (layout, alone): (ConfigId, ConfigId), clients: u32) -> Option<CostAt> {
    let (a, b) = (arm_id(layout, clients), arm_id(alone, clients));
    let median = |id: &str| {
        let mut v = set.figures(id)?;
        v.sort_by(f64::total_cmp);
        Some(median_sorted(&v))
    };
    Some(CostAt { clients, replicated_us: median(&a)?, alone_us: median(&b)?, ratio: set.ratio(&a, &b) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EngineKind;

    #[test]
    fn each_layout_is_paired_with_the_same_store_alone() {
        let settings = EngineSettings::default();
        let swift = ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts);
        let (alone, s) = alone_of(swift, &settings).unwrap();
        assert_eq!(
            (alone, s.replica, s.s3.server.as_deref()),
            (ConfigId::Durable(EngineKind::S3), None, Some("swift"))
        );
        let pg = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
        let (alone, s) = alone_of(pg, &settings).unwrap();
        assert_eq!((alone, s.replica), (ConfigId::Durable(EngineKind::Postgres), None));
        assert_eq!(alone_of(ConfigId::Durable(EngineKind::Postgres), &settings), None);
    }

    #[test]
    fn the_cost_is_paired_by_round_at_each_client_count() {
        assert_eq!(CostPlan::new(true, 1, 40).levels(), [1]);
        assert_eq!(CostPlan::new(true, 8, 40).levels(), [1, 8]);
        let pg = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
        let alone = ConfigId::Durable(EngineKind::Postgres);
        let arms = [arm_id(pg, 1), arm_id(pg, 4), arm_id(alone, 1), arm_id(alone, 4)];
        let arms: Vec<&str> = arms.iter().map(String::as_str).collect();
        // Round-to-round noise cancels in the pairs: replicated is 2x at
        // one client and 1.5x at four, whatever each round's load.
        let rows: Vec<Vec<f64>> =
            [1.0, 3.0, 1.5, 2.0, 1.2, 4.0].iter().map(|k| vec![200.0 * k, 60.0 * k, 100.0 * k, 40.0 * k]).collect();
        let set = crate::measure::rounds::synthetic("replication-cost/postgres-sync-standby", &arms, &rows);
        let one = cost_at(&set, (pg, alone), 1).unwrap();
        let r = one.ratio.unwrap();
        assert!((r.value - 2.0).abs() < 1e-9 && (r.low - 2.0).abs() < 1e-9 && r.rounds == 6, "{r:?}");
        let four = cost_at(&set, (pg, alone), 4).unwrap();
        assert!((four.ratio.as_ref().unwrap().value - 1.5).abs() < 1e-9);
        assert!(four.alone_us > 40.0 && four.replicated_us > four.alone_us, "{four:?}");
        assert_eq!(cost_at(&set, (pg, alone), 8), None, "not measured at 8");
    }
}
