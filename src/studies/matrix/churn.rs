//! Grow and shrink in a cell: each op replaces a blob with one twice or half
//! its size, or deletes one, in the database and in a copy of the files.
//! The two are the arms of interleaved rounds, so their ratio is paired by
//! round like the cell's other writes.

use std::path::Path;

use super::cells::{writes_per_run, CellSpec};
use crate::drivers::run::RunOptions;
use crate::drivers::session::{timed_session, Script, ScriptOp, SessionSpec, Work};
use crate::engine::{self, Engine, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundSet, RoundsPlan, StopReason};
use crate::measure::{Experiment, RunContext, RunOutcome};
use crate::records::keys::{KeySequence, Order};
use crate::records::{EngineSettings, Plan};
use crate::{Error, Result};

/// Fast settings for both ([`EngineSettings::fast_rewrites`]), with the
/// cell's page cache.
fn settings(spec: &CellSpec) -> EngineSettings {
    let mut s = EngineSettings::fast_rewrites();
    s.db.cache_size = spec.cache_pages;
    s
}

/// A third of the ops put a blob of twice the size, a third one of half the
/// size, a third delete one (a miss when it is already gone, counted as
/// kvtest counts misses).
fn script(spec: &CellSpec, seed: u64) -> Result<Script> {
    let (grow, shrink) = (spec.size.saturating_mul(2).min(crate::records::sizes::MAX_BLOB), (spec.size / 2).max(1));
    Script::new([ScriptOp::Put(grow), ScriptOp::Put(shrink), ScriptOp::Delete].repeat(64), spec.size, seed)
}

/// One layout's grow-and-shrink runs.
struct ChurnArm<'a> {
    engine: Box<dyn Engine>,
    script: &'a Script,
    max_id: u32,
    count: u64,
    warmup: bool,
}

impl Arm for ChurnArm<'_> {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }

    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let spec = SessionSpec {
            mode: OpenMode::WRITE,
            max_id: Some(self.max_id),
            keys: |max| KeySequence::new(Order::Random, 1, max),
            count: self.count,
            work: Work::Script(self.script),
        };
        Ok(timed_session(self.engine.as_ref(), spec, ctx.latency, &|| {}, &mut |_| {})?.outcome(false))
    }

    fn warms_up(&self) -> bool {
        self.warmup
    }
}

/// The database's and the files' grow and shrink as rounds `set_id` (arms
/// `ids`: database, files), compared files against database. Returns the
/// two experiments and the rounds.
pub(super) fn churn_rounds(
    spec: &CellSpec,
    (db, files): (&Path, &Path),
    ids: [String; 2],
    plan: &Plan,
    rounds: &RoundsPlan,
    seed: u64,
) -> Result<(Experiment, Experiment, RoundSet)> {
    let script = script(spec, seed)?;
    let settings = settings(spec);
    let count = writes_per_run(spec);
    let mut arms = Vec::with_capacity(2);
    for path in [db, files] {
        let mut engine = engine::open(path, &settings)?;
        engine.survey(true)?;
        arms.push(ChurnArm { engine, script: &script, max_id: spec.count, count, warmup: plan.warmup > 0 });
    }
    let set_id = format!("matrix/p{}/{}/churn", spec.page_size, spec.label());
    let round_plan = RoundsPlan { warmup: plan.warmup > 0, max_rounds: plan.repeat, latency: plan.latency, ..*rounds };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let pairs = [Comparison { a: vec![1], b: vec![0] }];
    let out = run_rounds(&set_id, &ids, &mut dyn_arms, &round_plan, &pairs, &mut |_, _| {})?;
    if out.set.stop == StopReason::Interrupted {
        return Err(Error::Interrupted);
    }
    let run_plan = Plan { repeat: out.set.rounds.len() as u32, ..*plan };
    let labels = ["grow/shrink in SQLite (WAL + NORMAL)", "grow/shrink files (new file + rename)"];
    let mut experiments = Vec::with_capacity(2);
    for (((arm, m), id), (path, label)) in
        arms.iter().zip(out.measured).zip(&ids).zip([db, files].into_iter().zip(labels))
    {
        let mut o = RunOptions::new(path);
        o.count = count;
        o.update = true;
        o.plan = run_plan;
        o.settings = settings.clone();
        experiments.push(Experiment::from_measured(id, label, o.params(arm.engine.kind(), spec.count, 1), m));
    }
    let (files_e, db_e) = (experiments.pop(), experiments.pop());
    let (Some(db_e), Some(files_e)) = (db_e, files_e) else {
        return Err(Error::invalid("a grow/shrink arm is missing from its rounds"));
    };
    Ok((db_e, files_e, out.set))
}
