//! Interleaved rounds: how every study compares methods.
//!
//! A comparison has arms. Each arm gets one untimed warm-up run (the arms
//! interleaved), then each round runs every arm once, in an order shuffled
//! per round from a fixed seed and recorded. A burst of load then lands on
//! all arms of a round alike, and the paired per-round ratios
//! ([`super::paired`]) cancel it (Google Benchmark's random interleaving,
//! Tango's paired comparisons). Rounds go on until every compared pair's
//! interval is narrower than the target, the most rounds are run, or the
//! time budget is spent; never until a result "looks significant"
//! (optional stopping makes false winners).

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::busy::{Load, Snapshot};
use super::clock::Clock;
use super::cold::EvictionReport;
use super::paired::{paired_ratio, PairedRatio, MIN_ROUNDS_95};
use super::{checked_eviction, stop_requested, summarise, timed_run, Latency, Measured, RunContext, RunOutcome};
use crate::{Error, Result};

/// One method of a comparison, run once per round.
pub trait Arm {
    /// Empties the page cache of this arm's dataset before a timed run
    /// (`--cold`); None when the arm runs warm.
    fn evict(&mut self) -> Option<Result<EvictionReport>>;
    /// One run: kvtest's open, loop, commit and close.
    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome>;
    /// Whether this arm takes the untimed warm-up run (an arm whose every
    /// operation waits for the disk may skip it to save time).
    fn warms_up(&self) -> bool {
        true
    }
    /// Operations per run, when the rounds may size its runs by time
    /// ([`RoundsPlan::run_time`]); None when its runs are fixed.
    fn ops_per_run(&self) -> Option<u64> {
        None
    }
    /// Sets its operations per run: called once, after its warm-up, when
    /// the rounds size runs by time; never between timed runs.
    fn set_ops_per_run(&mut self, _ops: u64) {}
}

/// Fewest and most operations a run sized by time makes: enough for a
/// per-op figure however slow each op is, and a bound however fast.
pub const MIN_SIZED_OPS: u64 = 32;
pub const MAX_SIZED_OPS: u64 = 1_000_000;

/// Operations per run that make a run take about `target`, judged from an
/// untimed run `w` after the warm-up: its steady-state time per op (the
/// loop with its commits and the work its writes deferred to the close),
/// and its one-off cost (open, close), which a run pays once whatever its
/// length. Between [`MIN_SIZED_OPS`] and [`MAX_SIZED_OPS`].
pub fn sized_ops(target: Duration, w: &RunOutcome) -> u64 {
    let per_op_ns = (w.phases.steady_ns() as f64 / w.ops.max(1) as f64).max(1.0);
    let room_ns = (target.as_nanos() as f64 - w.phases.one_off_ns() as f64).max(0.0);
    ((room_ns / per_op_ns) as u64).clamp(MIN_SIZED_OPS, MAX_SIZED_OPS)
}

/// How many rounds, and when to stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundsPlan {
    /// One untimed run per arm before the first round.
    pub warmup: bool,
    /// Most rounds (`--rounds`).
    pub max_rounds: u32,
    /// Time the rounds may take, warm-up included (`--budget`).
    pub budget: Option<Duration>,
    /// Stop once every compared pair's interval is within +/- this share
    /// of its estimate (0.05 is +/-5%).
    pub target: f64,
    /// Seed of the per-round shuffles.
    pub seed: u64,
    /// Time every operation for percentiles (one clock read per op).
    pub latency: bool,
    /// Size runs by time: each arm that can be sized ([`Arm::ops_per_run`])
    /// gets its operations per run set once from an untimed run after its
    /// warm-up (which it then takes even when it would skip one) so that a
    /// run takes about this long, fixed for every round so the rounds stay
    /// comparable. None keeps each arm's own count.
    pub run_time: Option<Duration>,
    /// Rounds that run even when the budget is spent (rounds sized by time
    /// have a known cost, so a caller can promise paired rounds); 1 is the
    /// round that always runs.
    pub least_rounds: u32,
    /// The clock the budget is read on (a fake one in tests).
    pub clock: Clock,
}

/// Default precision target: +/-5%.
pub const DEFAULT_TARGET: f64 = 0.05;
/// Default seed of the shuffles, so a re-run runs the same orders.
pub const DEFAULT_SEED: u64 = 0x0B10_B5EED;

impl RoundsPlan {
    /// At most `max_rounds` within `budget`, each arm warmed up once, to
    /// the default target and seed, with latency; runs keep their counts.
    pub fn new(max_rounds: u32, budget: Option<Duration>) -> Self {
        RoundsPlan {
            warmup: true,
            max_rounds,
            budget,
            target: DEFAULT_TARGET,
            seed: DEFAULT_SEED,
            latency: true,
            run_time: None,
            least_rounds: 1,
            clock: Clock::REAL,
        }
    }

    /// Checks the plan before any work: a zero count or budget is refused.
    pub fn validate(&self) -> Result<()> {
        if self.max_rounds == 0 {
            return Err(Error::invalid("--rounds must be at least 1"));
        }
        if self.budget.is_some_and(|b| b.is_zero()) {
            return Err(Error::invalid("--budget must be longer than 0s"));
        }
        if !(self.target > 0.0 && self.target < 1.0) {
            return Err(Error::invalid("the precision target must be above 0% and below 100%"));
        }
        Ok(())
    }

    /// Rounds that always run before precision may stop them: enough for
    /// a 95% interval, or all of them when fewer are asked for.
    pub fn min_rounds(&self) -> u32 {
        self.max_rounds.min(MIN_ROUNDS_95 as u32)
    }
}

/// Why the rounds stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Every compared pair's interval was within the target.
    Precise,
    /// The most rounds (`--rounds`) were run.
    MaxRounds,
    /// Another round would not have fitted in the budget.
    Budget,
    /// Ctrl-C.
    Interrupted,
}

impl StopReason {
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Precise => "every interval within the target",
            StopReason::MaxRounds => "the most rounds (--rounds) were run",
            StopReason::Budget => "the time budget (--budget) was spent",
            StopReason::Interrupted => "interrupted",
        }
    }
}

/// The stop rule, after `done` rounds that took `in_rounds`, `elapsed`
/// since the start (warm-up included): `widest` is the largest half-width
/// of the compared pairs' intervals (None when some pair has none yet).
/// Never looks at whether a difference is significant.
pub fn stop_after(
    done: u32,
    elapsed: Duration,
    in_rounds: Duration,
    plan: &RoundsPlan,
    widest: Option<f64>,
) -> Option<StopReason> {
    if done >= plan.max_rounds {
        return Some(StopReason::MaxRounds);
    }
    if done >= plan.min_rounds() && widest.is_some_and(|w| w <= plan.target) {
        return Some(StopReason::Precise);
    }
    let budget = plan.budget.filter(|_| done >= plan.least_rounds)?;
    let per_round = in_rounds / done.max(1);
    (elapsed + per_round > budget).then_some(StopReason::Budget)
}

/// One round as stored: the order the arms ran in and each arm's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Arm indices (into [`RoundSet::arms`]) in the order they ran.
    pub order: Vec<u32>,
    /// Each arm's kvtest per-op time in this round, by arm index.
    pub per_op_us: Vec<f64>,
    /// Each arm's steady-state per-op time in this round (the loop with
    /// its commits: `RunSample::steady_per_op_us`), by arm index: what the
    /// paired ratios use. Empty in files from before schema version 4,
    /// whose ratios pair kvtest's totals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steady_per_op_us: Vec<f64>,
    /// Wall time of the whole round (eviction included).
    pub elapsed_ms: f64,
    pub load: Load,
}

/// The rounds of one comparison, stored in the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSet {
    /// What was compared: "suite", "matrix/10000/4096", "aging/3"...
    pub id: String,
    /// Experiment ids of the arms; figures are indexed by position here.
    pub arms: Vec<String>,
    pub seed: u64,
    pub warmup: bool,
    pub target_pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    pub max_rounds: u32,
    pub stop: StopReason,
    pub rounds: Vec<Round>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The time each arm's run was sized to take ([`RoundsPlan::run_time`]);
    /// absent when the arms kept their own counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_time_s: Option<f64>,
    /// Operations each arm made per timed run, by arm index (the same in
    /// every round); absent in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops_per_run: Vec<u64>,
}

impl RoundSet {
    /// Every round has one figure per arm (kvtest's, and the steady-state
    /// one in a version 4 file) and an order that is a permutation of the
    /// arms. Anything else is read as unpaired.
    pub fn consistent(&self) -> bool {
        let n = self.arms.len();
        let steady = self.steady();
        !self.rounds.is_empty()
            && self.rounds.iter().all(|r| {
                let mut seen = vec![false; n];
                r.per_op_us.len() == n
                    && (!steady || r.steady_per_op_us.len() == n)
                    && r.order.len() == n
                    && r.order.iter().all(|&i| (i as usize) < n && !std::mem::replace(&mut seen[i as usize], true))
            })
    }

    /// The rounds record steady-state figures (schema version 4 on); older
    /// ones record kvtest's totals only.
    pub fn steady(&self) -> bool {
        self.rounds.iter().any(|r| !r.steady_per_op_us.is_empty())
    }

    /// Each round's figures by arm index, the ones comparisons use: the
    /// steady-state figures, or kvtest's totals in an older file.
    pub fn table(&self) -> Vec<Vec<f64>> {
        let steady = self.steady();
        self.rounds.iter().map(|r| if steady { r.steady_per_op_us.clone() } else { r.per_op_us.clone() }).collect()
    }

    /// An arm's figure in every round (steady-state, or kvtest's in an
    /// older file), or None (absent arm, inconsistent).
    pub fn figures(&self, arm: &str) -> Option<Vec<f64>> {
        let i = self.arms.iter().position(|a| a == arm)?;
        self.consistent().then(|| self.table().into_iter().map(|r| r[i]).collect())
    }

    /// An arm's kvtest total per op in every round (open, loop, commit and
    /// close over the ops), for the charts that redraw kvtest's figures.
    pub fn kvtest_figures(&self, arm: &str) -> Option<Vec<f64>> {
        let i = self.arms.iter().position(|a| a == arm)?;
        self.consistent().then(|| self.rounds.iter().map(|r| r.per_op_us[i]).collect())
    }

    /// numerator's time over denominator's, paired by round (the figures
    /// comparisons use: see [`RoundSet::figures`]).
    pub fn ratio(&self, numerator: &str, denominator: &str) -> Option<PairedRatio> {
        paired_ratio(&self.figures(numerator)?, &self.figures(denominator)?)
    }

    /// [`RoundSet::ratio`] of kvtest's totals.
    pub fn kvtest_ratio(&self, numerator: &str, denominator: &str) -> Option<PairedRatio> {
        paired_ratio(&self.kvtest_figures(numerator)?, &self.kvtest_figures(denominator)?)
    }

    /// How many rounds ran on a busy machine, and how busy.
    pub fn busy(&self) -> super::busy::BusySummary {
        super::busy::BusySummary::of(&self.rounds.iter().map(|r| r.load).collect::<Vec<_>>())
    }
}

/// A compared pair: the fastest (by median) of arms `a` against the fastest
/// of arms `b`. The stop rule waits for each pair's interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub a: Vec<usize>,
    pub b: Vec<usize>,
}

/// The median figure of an arm over rounds.
fn median_of(figures: &[Vec<f64>], arm: usize) -> f64 {
    let mut v: Vec<f64> = figures.iter().map(|r| r[arm]).collect();
    v.sort_by(f64::total_cmp);
    super::paired::median_sorted(&v)
}

/// The fastest arm of `arms` by median figure over `figures` (per round,
/// by arm index).
pub fn fastest(figures: &[Vec<f64>], arms: &[usize]) -> Option<usize> {
    arms.iter().copied().min_by(|&x, &y| median_of(figures, x).total_cmp(&median_of(figures, y)))
}

/// The paired ratio of the two sides' fastest arms.
pub fn compare(figures: &[Vec<f64>], c: &Comparison) -> Option<PairedRatio> {
    let (a, b) = (fastest(figures, &c.a)?, fastest(figures, &c.b)?);
    let column = |i: usize| figures.iter().map(|r| r[i]).collect::<Vec<_>>();
    paired_ratio(&column(a), &column(b))
}

/// What the rounds measured: each arm's runs (index = round) and the record.
pub struct RoundsOutcome {
    pub measured: Vec<Measured>,
    pub set: RoundSet,
}

/// Runs the arms in rounds. `arms` and `ids` are in the same order;
/// `after_run(done, expected)` is called after each run for progress.
pub fn run_rounds(
    id: &str,
    ids: &[String],
    arms: &mut [&mut dyn Arm],
    plan: &RoundsPlan,
    comparisons: &[Comparison],
    after_run: &mut dyn FnMut(u64, u64),
) -> Result<RoundsOutcome> {
    plan.validate()?;
    let n = arms.len();
    let mut rng = SmallRng::seed_from_u64(plan.seed);
    let clock = plan.clock;
    let start = clock.now();
    let sized_arms = arms.iter().filter(|a| sized(plan, &***a)).count() as u64;
    let expected = (u64::from(plan.max_rounds) + u64::from(plan.warmup)) * n as u64 + sized_arms;
    let mut progress = Progress { done: 0, expected, after_run };
    let warmup_open_ns = untimed_runs(arms, plan, &mut rng, &mut progress)?;
    let mut latency: Vec<Option<Latency>> = (0..n).map(|_| plan.latency.then(Latency::new)).collect();
    let mut samples: Vec<Vec<super::RunSample>> = vec![Vec::new(); n];
    let mut rounds: Vec<Round> = Vec::new();
    let mut stop = StopReason::Interrupted;
    let rounds_start = clock.now();
    while let Some(round) = one_round(rounds.len() as u32, arms, plan, &mut rng, &mut latency, &mut progress)? {
        for (i, sample) in round.samples {
            samples[i].push(sample);
        }
        rounds.push(round.record);
        let table: Vec<Vec<f64>> = rounds.iter().map(|r| r.steady_per_op_us.clone()).collect();
        let widest = comparisons
            .iter()
            .map(|c| compare(&table, c).filter(|r| r.rounds >= 2).map(|r| r.half_width()))
            .try_fold(0.0f64, |acc, w| w.map(|w| acc.max(w)))
            // Nothing compared: run to --rounds or the budget.
            .filter(|_| !comparisons.is_empty());
        let done = rounds.len() as u32;
        if let Some(reason) = stop_after(done, clock.since(start), clock.since(rounds_start), plan, widest) {
            stop = reason;
            break;
        }
    }
    if rounds.is_empty() {
        return Err(Error::Interrupted);
    }
    let mut warnings = Vec::new();
    if stop == StopReason::Budget && (rounds.len() as u32) < plan.min_rounds() {
        warnings.push(too_few_rounds(plan, rounds.len() as u32, clock.since(rounds_start)));
    }
    let interrupted = stop == StopReason::Interrupted;
    let ops_per_run = samples.iter().map(|runs| runs.first().map_or(0, |r| r.ops)).collect();
    let measured = samples
        .into_iter()
        .zip(latency)
        .zip(warmup_open_ns)
        .map(|((runs, latency), open)| summarise(runs, latency, Vec::new(), interrupted, false).opened_in_warmup(open))
        .collect();
    let set = RoundSet {
        id: id.to_string(),
        arms: ids.to_vec(),
        seed: plan.seed,
        warmup: plan.warmup,
        target_pct: plan.target * 100.0,
        budget_s: plan.budget.map(|b| b.as_secs_f64()),
        max_rounds: plan.max_rounds,
        stop,
        rounds,
        warnings,
        run_time_s: plan.run_time.map(|t| t.as_secs_f64()),
        ops_per_run,
    };
    Ok(RoundsOutcome { measured, set })
}

/// Runs done out of those expected, told to the caller after each.
struct Progress<'a> {
    done: u64,
    expected: u64,
    after_run: &'a mut dyn FnMut(u64, u64),
}

impl Progress<'_> {
    fn ran(&mut self) {
        self.done += 1;
        (self.after_run)(self.done, self.expected);
    }
}

/// Whether the rounds size `arm`'s runs by time.
fn sized(plan: &RoundsPlan, arm: &dyn Arm) -> bool {
    plan.run_time.is_some() && arm.ops_per_run().is_some()
}

/// The untimed runs before the rounds, the arms shuffled: every warm-up
/// first, then each arm sized by time takes a second untimed run to be
/// sized from (an engine's first session pays what later ones do not: a
/// writer's connection opened and its WAL grown from empty, the writeback
/// of an earlier step's files, and a run sized from it would be too
/// short). Returns each arm's handle-open time in its warm-up.
fn untimed_runs(
    arms: &mut [&mut dyn Arm],
    plan: &RoundsPlan,
    rng: &mut SmallRng,
    progress: &mut Progress,
) -> Result<Vec<Option<u64>>> {
    let mut warmup_open_ns = vec![None; arms.len()];
    if !plan.warmup && plan.run_time.is_none() {
        return Ok(warmup_open_ns);
    }
    let mut order: Vec<usize> = (0..arms.len()).collect();
    order.shuffle(rng);
    order.retain(|&i| (plan.warmup && arms[i].warms_up()) || sized(plan, &*arms[i]));
    let sizing: Vec<usize> = order.iter().copied().filter(|&i| sized(plan, &*arms[i])).collect();
    let untimed = order.iter().map(|&i| (i, false)).chain(sizing.into_iter().map(|i| (i, true)));
    for (i, sizes) in untimed {
        if stop_requested() {
            return Err(Error::Interrupted);
        }
        // A cold arm is sized from a cold run, as its timed runs will be.
        if sizes {
            arms[i].evict().map(checked_eviction).transpose()?;
        }
        let run = arms[i].run(RunContext { latency: None, timed: false })?;
        match plan.run_time.filter(|_| sizes) {
            Some(target) => arms[i].set_ops_per_run(sized_ops(target, &run)),
            None => warmup_open_ns[i] = run.handle_open_ns(),
        }
        progress.ran();
    }
    Ok(warmup_open_ns)
}

/// One round's record and each arm's sample (by arm index).
struct RoundRun {
    record: Round,
    samples: Vec<(usize, super::RunSample)>,
}

/// Round `index`: every arm once, in an order shuffled for this round.
/// None when a stop was asked for before the round's last run (the
/// round's runs so far are dropped: a round is every arm or none).
fn one_round(
    index: u32,
    arms: &mut [&mut dyn Arm],
    plan: &RoundsPlan,
    rng: &mut SmallRng,
    latency: &mut [Option<Latency>],
    progress: &mut Progress,
) -> Result<Option<RoundRun>> {
    let n = arms.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let round_start = (plan.clock.now(), Snapshot::now());
    let mut figures = vec![0.0; n];
    let mut kvtest = vec![0.0; n];
    let mut samples = Vec::with_capacity(n);
    for &i in &order {
        if stop_requested() {
            return Ok(None);
        }
        let arm = &mut *arms[i];
        let cold = arm.evict().map(checked_eviction).transpose()?;
        let sample = timed_run(index, cold, latency[i].as_mut(), &mut |ctx| arm.run(ctx))?;
        figures[i] = sample.figure();
        kvtest[i] = sample.per_op_us;
        samples.push((i, sample));
        progress.ran();
    }
    let record = Round {
        order: order.iter().map(|&i| i as u32).collect(),
        per_op_us: kvtest,
        steady_per_op_us: figures,
        elapsed_ms: plan.clock.since(round_start.0).as_secs_f64() * 1000.0,
        load: Snapshot::now().load_since(&round_start.1),
    };
    Ok(Some(RoundRun { record, samples }))
}

/// The warning when the budget allowed fewer rounds than a 95% interval
/// needs, with the budget that would allow them.
fn too_few_rounds(plan: &RoundsPlan, rounds: u32, rounds_took: Duration) -> String {
    let per_round = rounds_took.as_secs_f64() / f64::from(rounds);
    format!(
        "--budget {:.0}s allowed only {} round(s) (one takes about {:.1}s); {} rounds give a 95% interval, so allow at least {:.0}s",
        plan.budget.map_or(0.0, |b| b.as_secs_f64()),
        rounds,
        per_round,
        plan.min_rounds(),
        per_round * f64::from(plan.min_rounds() + u32::from(plan.warmup)),
    )
}

/// A consistent round set for tests on fixed figures: `rows[i]` is round
/// i's figure per arm; the arms ran in reverse order, on a quiet machine.
#[cfg(test)]
pub(crate) fn synthetic(id: &str, arms: &[&str], rows: &[Vec<f64>]) -> RoundSet {
    RoundSet {
        id: id.into(),
        arms: arms.iter().map(|a| a.to_string()).collect(),
        seed: 1,
        warmup: true,
        target_pct: DEFAULT_TARGET * 100.0,
        budget_s: None,
        max_rounds: rows.len() as u32,
        stop: StopReason::MaxRounds,
        rounds: rows
            .iter()
            .map(|r| Round {
                order: (0..arms.len() as u32).rev().collect(),
                per_op_us: r.clone(),
                steady_per_op_us: r.clone(),
                elapsed_ms: 1.0,
                load: Load::default(),
            })
            .collect(),
        warnings: vec![],
        run_time_s: None,
        ops_per_run: Vec::new(),
    }
}

#[cfg(test)]
#[path = "rounds_tests.rs"]
mod tests;
