//! The layouts' reads at one age as interleaved rounds (`measure::rounds`):
//! every layout is an arm, so a burst of load lands on files and database
//! alike and their ratio is paired by round.

use std::path::PathBuf;
use std::sync::Arc;

use super::layouts::AgingLayout;
use super::passes::params;
use super::section::ReadFigures;
use crate::drivers::session::{timed_session, SessionSpec, Work};
use crate::engine::{self, Engine, OpenMode};
use crate::measure::cold::{self, EvictionReport};
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan, StopReason};
use crate::measure::{Experiment, RunContext, RunOutcome};
use crate::records::keys::KeySequence;
use crate::records::{EngineKind, Plan};
use crate::{Error, Result};

/// One layout's reads of every key in `keys`, warm or cold.
struct ReadArm {
    engine: Box<dyn Engine>,
    keys: Arc<[u32]>,
    max_id: u32,
    cold: bool,
    cache_files: Option<Vec<PathBuf>>,
}

impl Arm for ReadArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        if !self.cold {
            return None;
        }
        let files = match &mut self.cache_files {
            Some(f) => f,
            none => match self.engine.cache_files() {
                Ok(f) => none.insert(f),
                Err(e) => return Some(Err(e)),
            },
        };
        Some(cold::evict(files))
    }

    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let spec = SessionSpec {
            mode: OpenMode::READ,
            max_id: Some(self.max_id),
            keys: |_| KeySequence::listed(self.keys.clone()),
            count: self.keys.len() as u64,
            work: Work::Read,
        };
        let run = timed_session(self.engine.as_ref(), spec, ctx.latency, &|| {}, &mut |_| {})?;
        Ok(run.outcome(false))
    }

    /// A cold run empties the cache first: a warm-up would be thrown away.
    fn warms_up(&self) -> bool {
        !self.cold
    }
}

/// Reads of every layout in `keys`' order as the arms of rounds `id`
/// (arms named by layout id); each layout's figures, in `layouts` order.
/// The rounds stop on the files-vs-database pair (fastest of each).
pub fn read_rounds(
    id: &str,
    layouts: &[AgingLayout],
    keys: &Arc<[u32]>,
    cold: bool,
    plan: &RoundsPlan,
) -> Result<(Vec<ReadFigures>, RoundSet)> {
    let max_id = keys.iter().copied().max().unwrap_or(1);
    let mut arms = Vec::with_capacity(layouts.len());
    for l in layouts {
        let mut engine = engine::open_as(l.kind(), &l.path, &l.settings)?;
        engine.survey(false)?;
        arms.push(ReadArm { engine, keys: keys.clone(), max_id, cold, cache_files: None });
    }
    let ids: Vec<String> = layouts.iter().map(|l| l.id().to_string()).collect();
    let side = |keep: fn(EngineKind) -> bool| -> Vec<usize> {
        layouts.iter().enumerate().filter(|(_, l)| keep(l.kind())).map(|(i, _)| i).collect()
    };
    let pairs = [Comparison { a: side(EngineKind::is_files), b: side(|k| k == crate::engine::sqlite::KIND) }];
    let plan = RoundsPlan { warmup: plan.warmup && !cold, latency: true, ..*plan };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let out = run_rounds(id, &ids, &mut dyn_arms, &plan, &pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    let cache = if cold { "cold" } else { "warm" };
    let run_plan = Plan { repeat: out.set.rounds.len() as u32, warmup: u32::from(plan.warmup), cold, latency: true };
    let figures = layouts
        .iter()
        .zip(out.measured)
        .map(|(l, m)| {
            let p = params(l, false, keys.len() as u64, max_id, run_plan, None);
            let e = Experiment::from_measured(&format!("aging/read-{cache}/{}", l.id()), &l.info.title, p, m);
            ReadFigures::of(&e)
        })
        .collect();
    Ok((figures, out.set))
}
