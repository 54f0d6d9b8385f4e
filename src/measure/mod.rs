//! The measurement engine: warm-up runs, repeated timed runs, per-operation
//! latency, OS counters and cold-cache eviction around each run, and a summary
//! with spread. Workloads supply one run as a closure; everything about how
//! runs are repeated and summarised lives here, once.

pub mod blockdev;
pub mod busy;
pub mod clock;
pub mod cold;
pub mod envinfo;
mod experiment;
pub mod flush;
mod latency;
pub mod oscount;
pub mod pace;
pub mod paired;
pub mod rounds;
mod sample;
mod stats;

pub use experiment::{ClassLatency, Experiment, Measured};
pub use latency::{clock_cost_ns, harness_cost_ns, op_clock, Latency, LatencySink, LatencySummary, NoLatency};
pub use sample::{Phases, RunOutcome, RunSample};
pub use stats::{Stat, Summary, NOISY_CV_PCT};

use crate::records::Plan;
use crate::{Error, Result};
use cold::EvictionReport;
use oscount::OsCounters;

/// What a run closure is handed: the histogram to record into, when latency
/// is on. Workloads pass it to a loop generic over [`LatencySink`] so that a
/// run without latency has no clock reads in its loop at all.
pub struct RunContext<'a> {
    pub latency: Option<&'a mut Latency>,
    /// False for warm-up runs, whose figures are thrown away.
    pub timed: bool,
}

pub use crate::util::interrupt::{request_stop, stop_requested};

/// Runs `warmup` untimed and `repeat` timed runs of `one_run`. `evict`, when
/// given, is called before each timed run (outside any timer) to empty the
/// page cache of the dataset; a run whose eviction did not take is refused
/// rather than reported as cold.
pub fn measure(
    plan: &Plan,
    evict: Option<&mut dyn FnMut() -> Result<EvictionReport>>,
    one_run: impl FnMut(RunContext<'_>) -> Result<RunOutcome>,
) -> Result<Measured> {
    measure_observed(plan, evict, &mut |_, _| {}, one_run)
}

/// [`measure`], calling `after_run(done, total)` after each run (warm-up
/// runs included) so a caller can draw progress. Never called inside a timer.
pub fn measure_observed(
    plan: &Plan,
    mut evict: Option<&mut dyn FnMut() -> Result<EvictionReport>>,
    after_run: &mut dyn FnMut(u32, u32),
    mut one_run: impl FnMut(RunContext<'_>) -> Result<RunOutcome>,
) -> Result<Measured> {
    if plan.repeat == 0 {
        return Err(Error::invalid("--repeat must be at least 1"));
    }
    if plan.cold && evict.is_none() {
        return Err(Error::invalid("--cold is not supported for this experiment"));
    }
    let warnings = Vec::new();
    let total = plan.warmup + plan.repeat;
    let mut warmup_open_ns = None;
    for done in 1..=plan.warmup {
        if stop_requested() {
            break;
        }
        let outcome = one_run(RunContext { latency: None, timed: false })?;
        warmup_open_ns = warmup_open_ns.or(outcome.handle_open_ns());
        after_run(done, total);
    }
    let mut latency = plan.latency.then(Latency::new);
    let mut runs = Vec::with_capacity(plan.repeat as usize);
    for index in 0..plan.repeat {
        if stop_requested() {
            break;
        }
        let cold = match (plan.cold, evict.as_mut()) {
            (true, Some(evict)) => Some(checked_eviction(evict())?),
            _ => None,
        };
        runs.push(timed_run(index, cold, latency.as_mut(), &mut one_run)?);
        after_run(plan.warmup + index + 1, total);
    }
    let interrupted = runs.len() < plan.repeat as usize;
    if runs.is_empty() {
        return Err(Error::Interrupted);
    }
    Ok(summarise(runs, latency, warnings, interrupted, true).opened_in_warmup(warmup_open_ns))
}

impl RunOutcome {
    /// The run's setup time when it opened the engine's handle.
    pub(crate) fn handle_open_ns(&self) -> Option<u64> {
        self.opened_handle.then_some(self.phases.setup_ns)
    }
}

impl Measured {
    /// The one-off open, when a warm-up run (`warmup_open_ns`, its setup)
    /// opened the handle before the timed runs.
    pub(crate) fn opened_in_warmup(self, warmup_open_ns: Option<u64>) -> Measured {
        Measured { handle_open_ns: warmup_open_ns.or(self.handle_open_ns), ..self }
    }
}

/// A cold run's eviction, refused when it did not take.
pub(crate) fn checked_eviction(report: Result<EvictionReport>) -> Result<EvictionReport> {
    let report = report?;
    if !report.effective {
        return Err(Error::invalid(format!(
            "--cold: eviction did not work ({:.0}% of the sampled pages still cached{}); refusing to report a cold number",
            report.resident_pct,
            report.note.as_deref().map(|n| format!(": {n}")).unwrap_or_default()
        )));
    }
    Ok(report)
}

/// One timed run between two readings of the OS counters; `cold` is the
/// eviction done just before it, if any.
pub(crate) fn timed_run(
    index: u32,
    cold: Option<EvictionReport>,
    latency: Option<&mut Latency>,
    one_run: &mut dyn FnMut(RunContext<'_>) -> Result<RunOutcome>,
) -> Result<RunSample> {
    let before = OsCounters::now();
    let outcome = one_run(RunContext { latency, timed: true })?;
    let os = OsCounters::now().since(&before);
    Ok(sample(index, &outcome, os, cold))
}

/// The summary and clock overhead of one arm's timed runs; with
/// `warn_spread`, a warning when the runs vary much. Arms of rounds do not
/// warn one by one: their comparisons are paired, and the report sums up
/// their spread once.
pub(crate) fn summarise(
    runs: Vec<RunSample>,
    latency: Option<Latency>,
    mut warnings: Vec<String>,
    interrupted: bool,
    warn_spread: bool,
) -> Measured {
    let summary = Summary::of(&runs);
    if summary.noisy && warn_spread {
        warnings.push(format!(
            "runs vary by {:.0}% (coefficient of variation of per-op time over {} runs); treat small differences as noise",
            summary.figure().cv_pct, summary.runs
        ));
    }
    let clock_cost_ns = clock_cost_ns();
    // Against the mean latency of one operation as one thread saw it (the
    // loop's per-op time would be throughput time with several threads).
    let clock_overhead_pct = match &latency {
        Some(l) if l.count() > 0 => clock_cost_ns / (l.summary().mean_us * 1000.0).max(1.0) * 100.0,
        _ => 0.0,
    };
    // The first timed run that opened the handle (a warm-up's open comes
    // before, see `opened_in_warmup`).
    let handle_open_ns = runs.iter().find(|r| r.opened_handle).map(|r| r.phases.setup_ns);
    Measured { runs, latency, summary, clock_cost_ns, clock_overhead_pct, warnings, interrupted, handle_open_ns }
}

fn sample(index: u32, o: &RunOutcome, os: OsCounters, cold: Option<EvictionReport>) -> RunSample {
    let ops = o.ops.max(1) as f64;
    let total_ns = o.phases.kvtest_total_ns.max(1) as f64;
    RunSample {
        index,
        ops: o.ops,
        misses: o.misses,
        bytes: o.bytes,
        phases: o.phases,
        per_op_us: total_ns / 1000.0 / ops,
        loop_per_op_us: o.phases.loop_ns as f64 / 1000.0 / ops,
        steady_per_op_us: Some(o.phases.steady_ns() as f64 / 1000.0 / ops),
        one_off_us: Some(o.phases.one_off_ns() as f64 / 1000.0),
        mb_per_s: o.bytes as f64 / total_ns * 1000.0,
        os,
        cold,
        opened_handle: o.opened_handle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(ops: u64, total_ns: u64) -> RunOutcome {
        RunOutcome {
            ops,
            misses: 0,
            bytes: ops * 100,
            phases: Phases { loop_ns: total_ns, kvtest_total_ns: total_ns, ..Phases::default() },
            opened_handle: false,
        }
    }

    #[test]
    fn honours_repeat_and_warmup() {
        let plan = Plan { repeat: 3, warmup: 2, cold: false, latency: true };
        let (mut warm, mut timed) = (0, 0);
        let m = measure(&plan, None, |ctx| {
            if ctx.timed {
                timed += 1;
                ctx.latency.expect("latency on").record(1000);
            } else {
                warm += 1;
                assert!(ctx.latency.is_none(), "warm-up runs record nothing");
            }
            Ok(fake(10, 10_000))
        })
        .unwrap();
        assert_eq!((warm, timed), (2, 3));
        assert_eq!(m.runs.len(), 3);
        assert_eq!(m.latency.unwrap().count(), 3);
        assert!((m.summary.per_op_us.median - 1.0).abs() < 1e-9);
        assert!((m.runs[0].mb_per_s - 100.0).abs() < 1e-9, "100 bytes per us is 100 MB/s");
    }

    /// The steady-state figure is the loop with its commits and the
    /// deferred work, over the ops; the open and the close's own cost are
    /// one-off, per run, never spread over the ops.
    #[test]
    fn the_steady_figure_holds_the_commits_and_the_one_off_cost_stands_apart() {
        let phases = Phases {
            setup_ns: 5_000_000,
            loop_ns: 80_000,
            commit_ns: 20_000,
            close_ns: 3_000_000,
            checkpoint_ns: 0,
            kvtest_total_ns: 8_100_000,
            deferred_ns: 2_000_000,
        };
        let o = RunOutcome { ops: 100, misses: 0, bytes: 100, phases, opened_handle: false };
        let r = sample(0, &o, OsCounters::default(), None);
        assert!((r.per_op_us - 81.0).abs() < 1e-9, "kvtest's total over the ops: {}", r.per_op_us);
        assert!((r.loop_per_op_us - 0.8).abs() < 1e-9);
        assert_eq!(r.steady_per_op_us, Some(21.0), "(loop + commit + deferred) / ops");
        assert_eq!(r.one_off_us, Some(6000.0), "open and the close's own 1 ms, per run");
        assert_eq!(r.figure(), 21.0);
        let older = RunSample { steady_per_op_us: None, ..r.clone() };
        assert_eq!(older.figure(), 81.0, "a file without it compares kvtest's totals");
        let s = Summary::of(&[r, older]);
        assert!(s.steady_per_op_us.is_none(), "not every run recorded it");
        assert_eq!(s.figure().median, s.per_op_us.median);
    }

    #[test]
    fn the_one_off_open_is_the_setup_of_the_first_run_that_opened_the_handle() {
        // A warm run: the warm-up opens the handle, the timed runs find it.
        let mut runs = 0;
        let one = |n: &mut u32, opens: &[u32]| {
            *n += 1;
            let opened = opens.contains(n);
            let phases = Phases { setup_ns: 1000 * u64::from(*n), ..fake(10, 10_000).phases };
            Ok(RunOutcome { opened_handle: opened, phases, ..fake(10, 10_000) })
        };
        let plan = Plan { repeat: 3, warmup: 1, cold: false, latency: false };
        let m = measure(&plan, None, |_| one(&mut runs, &[1])).unwrap();
        assert_eq!(m.handle_open_ns, Some(1000), "the warm-up's setup");
        assert!(m.runs.iter().all(|r| !r.opened_handle));
        // No warm-up, and a cold run reopens it every time: the first timed run's.
        let mut runs = 0;
        let plan = Plan { repeat: 3, warmup: 0, cold: false, latency: false };
        let m = measure(&plan, None, |_| one(&mut runs, &[1, 2, 3])).unwrap();
        assert_eq!(m.handle_open_ns, Some(1000));
        assert!(m.runs.iter().all(|r| r.opened_handle), "each run says it opened the handle");
        // Nothing to open (files).
        let m = measure(&plan, None, |_| Ok(fake(10, 10_000))).unwrap();
        assert_eq!(m.handle_open_ns, None);
    }

    #[test]
    fn zero_repeat_is_refused() {
        let plan = Plan { repeat: 0, ..Plan::default() };
        assert!(measure(&plan, None, |_| Ok(fake(1, 1))).is_err());
    }

    #[test]
    fn ineffective_eviction_is_an_error_not_a_cold_number() {
        let plan = Plan { repeat: 1, warmup: 0, cold: true, latency: false };
        let mut evict = || Ok(EvictionReport { effective: false, resident_pct: 80.0, ..EvictionReport::default() });
        let err = measure(&plan, Some(&mut evict), |_| Ok(fake(1, 1))).unwrap_err();
        assert!(err.to_string().contains("eviction did not work"), "{err}");
    }

    #[test]
    fn noisy_runs_warn() {
        let plan = Plan { repeat: 3, warmup: 0, cold: false, latency: false };
        let mut t = 0;
        let m = measure(&plan, None, |_| {
            t += 1;
            Ok(fake(10, [10_000, 20_000, 40_000][t - 1]))
        })
        .unwrap();
        assert!(m.summary.noisy);
        assert_eq!(m.warnings.len(), 1);
    }
}
