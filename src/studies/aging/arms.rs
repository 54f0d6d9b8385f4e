//! Aging's reads as interleaved rounds (`measure::rounds`): the layouts at
//! each age, the layouts in each size band, the aged layouts beside their
//! remedied copies. Every copy read is an arm, so a burst of load lands on
//! all of them alike and their ratios are paired by round.

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
        // A server's own cache first (PostgreSQL's shared_buffers), as a
        // cold `run` empties it.
        if let Err(e) = self.engine.drop_own_caches() {
            return Some(Err(e));
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
            mode: OpenMode::measured(false, false),
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

/// One arm of a set of aging reads: its name in the round set (a layout
/// id, or "db-wal/vacuum" for a remedied copy) and the copy it reads.
pub struct Reader<'a> {
    pub arm: String,
    pub layout: &'a AgingLayout,
}

impl<'a> Reader<'a> {
    /// A layout read as itself, named by its id.
    pub fn of(layout: &'a AgingLayout) -> Self {
        Reader { arm: layout.id().to_string(), layout }
    }
}

/// The fastest file layout against the fastest SQLite layout of `readers`
/// (arm indices), the pair the layouts' and the size bands' rounds watch.
pub fn files_vs_db(readers: &[Reader<'_>]) -> Comparison {
    let side = |keep: &dyn Fn(EngineKind) -> bool| -> Vec<usize> {
        readers.iter().enumerate().filter(|(_, r)| keep(r.layout.kind())).map(|(i, _)| i).collect()
    };
    Comparison { a: side(&EngineKind::is_files), b: side(&|k| k == crate::engine::sqlite::KIND) }
}

/// Reads of `keys`, in their order, by every reader as the arms of rounds
/// `id`, stopping on `pairs`; each reader's figures, in `readers` order.
pub fn read_rounds(
    id: &str,
    readers: &[Reader<'_>],
    keys: &Arc<[u32]>,
    cold: bool,
    plan: &RoundsPlan,
    pairs: &[Comparison],
) -> Result<(Vec<ReadFigures>, RoundSet)> {
    let max_id = keys.iter().copied().max().unwrap_or(1);
    let mut arms = Vec::with_capacity(readers.len());
    for r in readers {
        let l = r.layout;
        let mut engine = engine::open_as(l.kind(), &l.path, &l.settings)?;
        engine.survey(false)?;
        arms.push(ReadArm { engine, keys: keys.clone(), max_id, cold, cache_files: None });
    }
    let ids: Vec<String> = readers.iter().map(|r| r.arm.clone()).collect();
    let plan = RoundsPlan { warmup: plan.warmup && !cold, latency: true, ..*plan };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let out = run_rounds(id, &ids, &mut dyn_arms, &plan, pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    let cache = if cold { "cold" } else { "warm" };
    let run_plan = Plan { repeat: out.set.rounds.len() as u32, warmup: u32::from(plan.warmup), cold, latency: true };
    let figures = readers
        .iter()
        .zip(out.measured)
        .map(|(r, m)| {
            let p = params(r.layout, false, keys.len() as u64, max_id, run_plan, None);
            let e = Experiment::from_measured(&format!("aging/read-{cache}/{}", r.arm), &r.layout.info.title, p, m);
            ReadFigures::of(&e)
        })
        .collect();
    Ok((figures, out.set))
}
