//! The suite's arms in interleaved rounds: one set of rounds for the reads
//! (with the A/A control, two identical arms that give the noise floor) and
//! one for the writes, each stopping when the verdict's pairs are precise
//! enough or its share of the budget is spent.

use std::path::Path;
use std::time::Duration;

use super::ids::{self, ArmId, CONTROL_ID, CONTROL_OF};
use super::options::Suite;
use super::steps::{cold_steps, dataset_path, selected, Step};
use crate::drivers::run::{RunArm, RunOptions};
use crate::engine;
use crate::measure::rounds::RoundSet;
use crate::measure::rounds::{run_rounds, Arm, Comparison, RoundsPlan, StopReason};
use crate::measure::Experiment;
use crate::records::keys::Order;
use crate::records::{ConfigId, EngineKind, EngineSettings, KvSync, Plan};
use crate::{Error, Result};

/// The ids of the warm reads', the cold reads' and the writes' round sets.
pub const WARM_READS: &str = "suite/reads";
pub const COLD_READS: &str = "suite/cold-reads";
pub const WRITES: &str = "suite/writes";

/// Share of the budget the reads may take (one third); the writes get the
/// rest (their fsyncs make a write round many times longer than a read round).
const READ_SHARE: u32 = 3;

/// What the rounds measured, in the order measured.
#[derive(Default)]
pub(super) struct Measured {
    pub experiments: Vec<Experiment>,
    pub rounds: Vec<RoundSet>,
    pub notes: Vec<String>,
    /// The deadline had passed before the rounds (the caller's set-up
    /// took the whole budget): every set runs one round of each arm, so
    /// every arm is measured, and stops for the budget.
    pub past_deadline: bool,
}

/// Runs the read rounds, then the cold reads' (when asked: a share of the
/// budget like the reads'), then the write rounds; their experiments and
/// round sets go into `out`.
pub(super) fn measure_rounds(s: &Suite, work: &Path, pristine: &Path, out: &mut Measured) -> Result<()> {
    let all = selected(s);
    let (writes, mut reads): (Vec<Step>, Vec<Step>) = all.into_iter().partition(|s| s.update);
    let control = reads.iter().find(|s| s.id == CONTROL_OF).map(|s| Step {
        id: CONTROL_ID,
        label: "SQLite, blob API (A/A control)".into(),
        ..s.clone()
    });
    reads.extend(control);
    let cold = cold_steps(s);
    let (opts, rounds) = (&s.opts, s.rounds);
    let clock = rounds.clock;
    let start = clock.now();
    let budget = opts.deadline.map(|d| d.saturating_duration_since(start)).or(rounds.budget);
    let share = if cold.is_empty() { READ_SHARE } else { READ_SHARE + 1 };
    // Never zero: a zero budget is the user's error, refused before any work.
    let read_plan = RoundsPlan {
        budget: budget.map(|b| (b / share).max(Duration::from_millis(1))),
        run_time: opts.sizing.map(|s| s.read_time),
        ..rounds
    };
    run_set(WARM_READS, s, (work, pristine), &reads, &read_plan, out)?;
    if crate::measure::stop_requested() {
        return Ok(());
    }
    if !cold.is_empty() {
        let cold_plan = RoundsPlan {
            budget: budget.map(|b| (b / share).max(Duration::from_secs(1))),
            run_time: opts.sizing.map(|s| s.cold_time),
            ..rounds
        };
        run_set(COLD_READS, s, (work, pristine), &cold, &cold_plan, out)?;
        if crate::measure::stop_requested() {
            return Ok(());
        }
    }
    // The writes get what the reads left; at least a second, so the
    // budget rule (at least one round, with a warning) still applies.
    let left = |b: Duration| b.saturating_sub(clock.since(start)).max(Duration::from_secs(1));
    let run_time = opts.sizing.map(|s| s.write_time);
    let write_plan = RoundsPlan { budget: budget.map(left), run_time, ..rounds };
    run_set(WRITES, s, (work, pristine), &writes, &write_plan, out)
}

/// The pairs whose intervals the rounds wait for: the verdict's questions.
fn comparisons(ids: &[ArmId]) -> Vec<Comparison> {
    let pick = |f: &dyn Fn(ArmId) -> bool| -> Vec<usize> { (0..ids.len()).filter(|&i| f(ids[i])).collect() };
    let db_reads = |id: ArmId| id.read().is_some_and(|r| r.is_db());
    let file_reads = |id: ArmId| id.read().is_some_and(|r| r.is_files());
    let kv =
        |id: ArmId, engine_id: fn(EngineKind) -> ArmId| EngineKind::KEY_VALUE.into_iter().any(|k| id == engine_id(k));
    let files_fsync = |id: ArmId, arm: fn(ConfigId) -> ArmId| {
        [ConfigId::TruncateFsync, ConfigId::InplaceFsync, ConfigId::ReplaceFsync].into_iter().any(|c| id == arm(c))
    };
    let pairs = [
        (pick(&db_reads), pick(&file_reads)),
        (pick(&|id| kv(id, ids::engine_read)), pick(&db_reads)),
        (pick(&|id| id == CONTROL_OF), pick(&|id| id == CONTROL_ID)),
        (
            pick(&|id| [ids::WRITE_DB_WAL_NORMAL, ids::WRITE_DB_OFF].contains(&id)),
            pick(&|id| [ids::WRITE_FLAT_TRUNCATE, ids::WRITE_FLAT_INPLACE, ids::WRITE_FLAT_REPLACE].contains(&id)),
        ),
        (pick(&|id| id == ids::WRITE_DB_WAL_FULL), pick(&|id| files_fsync(id, ArmId::Write))),
        (pick(&|id| kv(id, ids::engine_durable_write)), pick(&|id| id == ids::WRITE_DB_WAL_FULL)),
        // The durable writes committed as an application would, as the
        // verdict compares them.
        (
            pick(&|id| id == ids::committed(ids::WRITE_DB_WAL_FULL)),
            pick(&|id| files_fsync(id, |c| ids::committed(ArmId::Write(c)))),
        ),
        (
            pick(&|id| kv(id, ids::engine_committed_durable_write)),
            pick(&|id| id == ids::committed(ids::WRITE_DB_WAL_FULL)),
        ),
    ];
    pairs.into_iter().filter(|(a, b)| !a.is_empty() && !b.is_empty()).map(|(a, b)| Comparison { a, b }).collect()
}

/// One set of rounds over `steps`, on the datasets in `work` (the
/// database's writers each on a copy of `pristine`).
fn run_set(
    id: &str,
    s: &Suite,
    (work, pristine): (&Path, &Path),
    steps: &[Step],
    plan: &RoundsPlan,
    out: &mut Measured,
) -> Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    let db_bytes =
        std::fs::metadata(dataset_path(work, crate::engine::sqlite::KIND)).map(|m| m.len() as i64).unwrap_or(0);
    let mut arms = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let mut path = dataset_path(work, step.layout);
        if step.layout == crate::engine::sqlite::KIND && step.update {
            // Arms that write keep their own datasets.
            path = work.join(format!("write-{i}.db"));
            restore_database(pristine, &path)?;
        }
        let run_opts = run_options(s, step, &path, db_bytes, out.experiments.len() + i);
        let engine = engine::open(&path, &run_opts.settings)?;
        let arm = RunArm::prepare(engine, &run_opts)?;
        arms.push(if s.opts.sizing.is_some() { arm.keys_by_round() } else { arm });
    }
    let ids: Vec<String> = steps.iter().map(|s| s.id.to_string()).collect();
    // Preparing the arms (copies of the database) took some of the time
    // left: with a deadline, the rounds get no more than what remains.
    let plan = &match s.opts.deadline {
        _ if out.past_deadline => RoundsPlan { max_rounds: 1, budget: None, ..*plan },
        Some(d) => {
            let left = d.saturating_duration_since(plan.clock.now()).max(Duration::from_secs(1));
            RoundsPlan { budget: Some(plan.budget.map_or(left, |b| b.min(left))), ..*plan }
        }
        None => *plan,
    };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let runs = u64::from(plan.max_rounds + 1) * steps.len() as u64;
    let observer = s.observer();
    observer.begin(&format!("{} arms in rounds ({id})", steps.len()), runs);
    // Cold arms wait for the same pairs as their warm twins.
    let plain: Vec<ArmId> = steps.iter().map(|s| s.id.warm()).collect();
    let mut measured =
        run_rounds(id, &ids, &mut dyn_arms, plan, &comparisons(&plain), &mut |done, _| observer.advance(done))?;
    if out.past_deadline && measured.set.stop == StopReason::MaxRounds {
        // One round because the budget was spent before it, not because
        // one was asked for.
        measured.set.stop = StopReason::Budget;
    }
    for ((arm, m), step) in arms.into_iter().zip(measured.measured).zip(steps) {
        let report = arm.finish(&step.id.to_string(), &step.label, m)?;
        observer.measured(&report.experiment);
        out.experiments.push(report.experiment);
    }
    out.notes.extend(measured.set.warnings.iter().map(|w| format!("{id}: {w}")));
    out.rounds.push(measured.set);
    Ok(())
}

/// Operations of an arm's warm-up and sizing run when its runs are sized
/// by time: few, so that an arm whose operation takes milliseconds (a GET
/// from an object store) does not spend its share of the budget before
/// its first round; its runs are then sized from the second of them.
const SIZING_WRITES: u64 = 20;
const SIZING_READS: u64 = 200;
const SIZING_COLD_READS: u64 = 50;

/// Operations per run of `step`: with rounds sized by time, the few of
/// its sizing run until the rounds size it; else one read per blob and
/// `write_fraction` of them written. A committed arm writes whole batches,
/// so no write is left uncommitted at the end of the loop.
fn ops_per_run(s: &Suite, step: &Step) -> u64 {
    let opts = &s.opts;
    let blobs = u64::from(opts.spec.count);
    let writes = match opts.sizing {
        Some(_) => SIZING_WRITES,
        None => ((blobs as f64 * opts.write_fraction).round() as u64).max(1),
    };
    match (opts.sizing, step.update) {
        (_, true) => step.commit_every.map_or(writes, |n| writes.div_ceil(u64::from(n)) * u64::from(n)),
        (Some(_), false) if step.cold => SIZING_COLD_READS,
        (Some(_), false) => SIZING_READS,
        (None, false) => blobs,
    }
}

/// The `run` options of one arm; `nth` varies each writer's content (a
/// rewrite of the bytes already there would cost SQLite almost nothing).
fn run_options(s: &Suite, step: &Step, path: &Path, db_bytes: i64, nth: usize) -> RunOptions {
    let opts = &s.opts;
    let mut run_opts = RunOptions::new(path);
    run_opts.count = ops_per_run(s, step);
    run_opts.order = Order::Random;
    run_opts.zipf = opts.zipf;
    run_opts.update = step.update;
    run_opts.round_trip = step.round_trip;
    run_opts.settings = EngineSettings {
        db: step.db.clone(),
        files: step.files,
        kv: step.kv,
        commit_every: step.commit_every,
        ..s.ctx.settings.clone()
    };
    if run_opts.settings.db.mmap_bytes < 0 {
        run_opts.settings.db.mmap_bytes = db_bytes;
    }
    run_opts.seed = opts.spec.seed.wrapping_add(nth as u64 + 1);
    let waits_for_disk =
        step.files.fsync || (step.layout.is_key_value() && step.update && step.kv.sync == KvSync::Durable);
    // Each fsync costs milliseconds here; --quick keeps to its budget by
    // skipping their warm-up (the page cache matters little when every
    // write waits for the disk). A committed arm always warms up: its
    // first run would otherwise pay for pages faulted in once.
    // A cold arm empties the cache before each run: a warm-up is thrown away.
    let skip = s.ctx.quick && waits_for_disk && step.commit_every.is_none();
    let warmup = u32::from(s.rounds.warmup && !step.cold && !skip);
    let cold = (opts.plan.cold || step.cold) && !step.update;
    run_opts.plan = Plan { cold, warmup, repeat: 1, latency: s.rounds.latency };
    run_opts
}

/// Journal mode, WAL and free pages carry over between writes: every
/// database write experiment starts from the pristine copy.
fn restore_database(pristine: &Path, db: &Path) -> Result<()> {
    std::fs::copy(pristine, db).map_err(|e| Error::io(db, "cannot restore the database", e))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::steps::steps;
    use super::super::SuiteOptions;
    use super::*;
    use crate::studies::context::StudyContext;

    #[test]
    fn rounds_sized_by_time_start_from_a_few_operations_whatever_the_blobs() {
        let ctx = StudyContext { quick: true, ..StudyContext::new(".", EngineSettings::default()) };
        let mut o = SuiteOptions::new(true);
        o.spec.count = 100_000;
        let s = |o: &SuiteOptions| Suite::new(&ctx, o);
        let all = steps(&[], 100);
        let read = all.iter().find(|s| s.id == ids::READ_DB_BLOB_MMAP).unwrap();
        let write = all.iter().find(|s| s.id == ids::WRITE_DB_WAL_FULL).unwrap();
        let batched = all.iter().find(|s| s.id == ids::committed(ids::WRITE_DB_WAL_FULL)).unwrap();
        let cold = Step { cold: true, ..read.clone() };
        assert_eq!(ops_per_run(&s(&o), read), 100_000, "the article: one read per blob");
        assert_eq!(ops_per_run(&s(&o), &cold), 100_000);
        assert_eq!(ops_per_run(&s(&o), write), 10_000, "and a tenth of them written");
        let write_time = Duration::from_millis(150);
        o.sizing = Some(super::super::RoundSizing { read_time: write_time, cold_time: write_time, write_time });
        for count in [10_000, 25_000, 100_000] {
            o.spec.count = count;
            assert_eq!(ops_per_run(&s(&o), read), SIZING_READS, "until the warm-up sizes it");
            assert_eq!(ops_per_run(&s(&o), &cold), SIZING_COLD_READS);
            assert_eq!(ops_per_run(&s(&o), write), SIZING_WRITES, "until the warm-up sizes it");
            assert_eq!(ops_per_run(&s(&o), batched), 100, "a whole batch of --commit-every 100");
        }
    }

    #[test]
    fn comparisons_follow_the_verdict_questions() {
        let ids: Vec<ArmId> = steps(&[EngineKind::from_name("lmdb").unwrap()], 1).into_iter().map(|s| s.id).collect();
        let (reads, writes): (Vec<ArmId>, Vec<ArmId>) = ids.into_iter().partition(|i| i.read().is_some());
        let mut reads = reads;
        reads.push(CONTROL_ID);
        let r = comparisons(&reads);
        assert_eq!(r.len(), 3, "files vs SQLite, engines vs SQLite, A/A: {r:?}");
        assert_eq!(r[0].a.len(), 3);
        assert_eq!(r[0].b.len(), 4);
        let w = comparisons(&writes);
        assert_eq!(w.len(), 5, "fast, durable, engines durable, and both committed per write: {w:?}");
    }
}
