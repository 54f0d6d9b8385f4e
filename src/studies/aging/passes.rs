//! The timed work of `aging`, all through the one timed session: rewrite
//! passes (a `Put` of a new size per blob, sizes and keys chosen before the
//! timer) and churn (delete then insert a share of the blobs); the reads
//! run in rounds ([`super::arms`]).

use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::layouts::AgingLayout;
use crate::drivers::session::{timed_session, Script, ScriptOp, SessionSpec, Work};
use crate::engine::{self, OpenMode};
use crate::measure::{self, Experiment};
use crate::records::keys::{KeySequence, Order};
use crate::records::{Plan, WorkloadParams};
use crate::Result;

/// Keys 1..=n in an order shuffled with `seed`.
pub fn shuffled(n: u32, seed: u64) -> Arc<[u32]> {
    let mut keys: Vec<u32> = (1..=n).collect();
    keys.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(seed));
    keys.into()
}

/// A random `share` (0..1] of keys 1..=n, in a shuffled order.
pub fn sample(n: u32, share: f64, seed: u64) -> Arc<[u32]> {
    let all = shuffled(n, seed);
    let take = ((f64::from(n) * share).round() as usize).clamp(1, all.len());
    all[..take].into()
}

/// One timed session of `ops` over `keys` (op i on key i) on `layout`: the
/// same session `run --update` times, without warm-up (a rewrite is not
/// repeatable) and with per-op latency as `run` records it; its writes are
/// committed as the layout says (one transaction per pass, or every N).
pub fn write_pass(layout: &AgingLayout, keys: &Arc<[u32]>, ops: Vec<ScriptOp>, seed: u64) -> Result<Experiment> {
    let mut engine = engine::open_as(layout.kind(), &layout.path, &layout.write_settings())?;
    let survey = engine.survey(true)?;
    let script = Script::new(ops, survey.blob_max, seed)?;
    let plan = Plan { repeat: 1, warmup: 0, cold: false, latency: true };
    let max_id = keys.iter().copied().max().unwrap_or(1);
    let measured = measure::measure(&plan, None, |ctx| {
        let spec = SessionSpec {
            mode: OpenMode::WRITE,
            max_id: Some(max_id),
            keys: |_| KeySequence::listed(keys.clone()),
            count: keys.len() as u64,
            work: Work::Script(&script),
        };
        let run = timed_session(engine.as_ref(), spec, ctx.latency, &|| {}, &mut |_| {})?;
        Ok(run.outcome(false))
    })?;
    let params = params(layout, true, keys.len() as u64, max_id, plan, Some(seed));
    Ok(Experiment::from_measured(&format!("aging/write/{}", layout.id()), &layout.info.title, params, measured))
}

pub(super) fn params(
    layout: &AgingLayout,
    update: bool,
    count: u64,
    max_id: u32,
    plan: Plan,
    seed: Option<u64>,
) -> WorkloadParams {
    WorkloadParams {
        path: layout.path.display().to_string(),
        layout: layout.kind(),
        update,
        count,
        max_id,
        start: 1,
        order: Order::Random,
        threads: 1,
        db: layout.settings.db.clone(),
        files: layout.settings.files,
        kv: layout.settings.kv,
        commit_every: if update { layout.commit_every } else { None },
        plan,
        seed,
        zipf_theta: None,
        mix: None,
        round_trip: false,
        server_info: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_permutations_and_samples_are_shares() {
        let s = shuffled(1000, 7);
        let mut sorted = s.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=1000).collect::<Vec<_>>());
        assert_ne!(s.to_vec(), sorted, "shuffled");
        assert_eq!(sample(1000, 0.1, 7).len(), 100);
        assert_eq!(sample(3, 0.01, 7).len(), 1, "at least one");
    }
}
