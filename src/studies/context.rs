//! What every study shares, built once by its caller: the CLI, next to
//! `StudyServers::settings`, from the flags every study takes; advise,
//! from its own, for the studies it runs (with a few overrides). A study's
//! options then hold only its own knobs: no options struct declares a
//! field held here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::measure::clock::Clock;
use crate::measure::rounds::RoundsPlan;
use crate::measure::Experiment;
use crate::records::{EngineKind, EngineSettings};
use crate::studies::aging::section::AgePoint;
use crate::studies::aging::sizes::SizeSetting;
use crate::util::progress::Progress;

/// The context of one study's run.
#[derive(Clone)]
pub struct StudyContext {
    /// Where the datasets are built (a temporary directory is made inside).
    pub workdir: PathBuf,
    /// The engines' settings every arm starts from (the servers' parts:
    /// `--s3-server`); an arm sets only what it varies.
    pub settings: EngineSettings,
    /// The engines asked for (`--engines`), measured beside SQLite and
    /// files (the concurrency study's writers: the engines written).
    pub engines: Vec<EngineKind>,
    /// The rounds asked for, on top of each study's own plan.
    pub rounds: RoundsAsked,
    /// Seed of the blobs' content and sizes (and of the crash test's kill
    /// schedule).
    pub seed: u64,
    /// The small configuration of each study (`--quick`).
    pub quick: bool,
    /// Writes per commit (`--commit-every N`); None: each study's own
    /// default (one transaction per pass in aging, each write committed on
    /// its own in the suite, advise and the crash test).
    pub commit_every: Option<u32>,
    /// The clock budgets and deadlines are read on: [`Clock::REAL`], or a
    /// fake one in tests.
    pub clock: Clock,
    /// Where the study says what it is doing.
    pub observer: Arc<dyn Observer>,
}

impl std::fmt::Debug for StudyContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StudyContext")
            .field("workdir", &self.workdir)
            .field("engines", &self.engines)
            .field("rounds", &self.rounds)
            .field("seed", &self.seed)
            .field("quick", &self.quick)
            .field("commit_every", &self.commit_every)
            .finish_non_exhaustive()
    }
}

impl StudyContext {
    /// A context in `workdir` with `settings`: no engines, each study's
    /// own rounds, seed 1, the full configuration, each study's commits,
    /// the real clock, nothing told.
    pub fn new(workdir: impl Into<PathBuf>, settings: EngineSettings) -> StudyContext {
        StudyContext {
            workdir: workdir.into(),
            settings,
            engines: Vec::new(),
            rounds: RoundsAsked::default(),
            seed: 1,
            quick: false,
            commit_every: None,
            clock: Clock::REAL,
            observer: Arc::new(Quiet),
        }
    }

    /// A study's own plan (`default`) with the rounds asked for, on this
    /// context's clock.
    pub fn rounds_plan(&self, default: RoundsPlan) -> RoundsPlan {
        RoundsPlan { clock: self.clock, ..self.rounds.apply(default) }
    }

    /// Writes per commit, or `default` when none was asked for.
    pub fn commit_every_or(&self, default: u32) -> u32 {
        self.commit_every.unwrap_or(default)
    }

    /// The observer as the lower layers' progress (building datasets, a
    /// study that counts units).
    pub fn progress(&self) -> AsProgress<'_> {
        AsProgress::new(self.observer.as_ref())
    }
}

/// A study's run: its context, its options and the rounds they resolve
/// to. It reads as its options (their own knobs); the context's fields are
/// `ctx`'s.
pub struct StudyRun<'a, O> {
    pub ctx: &'a StudyContext,
    pub opts: &'a O,
    /// The study's own plan with the rounds asked for, on the context's
    /// clock.
    pub rounds: RoundsPlan,
}

impl<'a, O> StudyRun<'a, O> {
    /// `opts` in `ctx`, the rounds resolved from the study's `default`.
    pub fn new(ctx: &'a StudyContext, opts: &'a O, default: RoundsPlan) -> Self {
        StudyRun { ctx, opts, rounds: ctx.rounds_plan(default) }
    }

    pub fn observer(&self) -> &dyn Observer {
        self.ctx.observer.as_ref()
    }
}

impl<O> std::ops::Deref for StudyRun<'_, O> {
    type Target = O;
    fn deref(&self) -> &O {
        self.opts
    }
}

/// The rounds asked for (`--rounds`, `--budget`; advise's overrides for
/// the studies it runs), each None for the study's own.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundsAsked {
    /// Most rounds.
    pub max_rounds: Option<u32>,
    /// Time the rounds may take.
    pub budget: Option<Duration>,
    /// Rounds that run even when the budget is spent.
    pub least_rounds: Option<u32>,
}

impl RoundsAsked {
    /// `plan` with what was asked. A count asked alone is the number of
    /// rounds asked for: the plan's budget does not cut it short, so the
    /// count never depends on the machine's speed.
    pub fn apply(&self, plan: RoundsPlan) -> RoundsPlan {
        let budget = match (self.budget, self.max_rounds) {
            (Some(b), _) => Some(b),
            (None, Some(_)) => None,
            (None, None) => plan.budget,
        };
        RoundsPlan {
            max_rounds: self.max_rounds.unwrap_or(plan.max_rounds),
            budget,
            least_rounds: self.least_rounds.unwrap_or(plan.least_rounds),
            ..plan
        }
    }
}

/// What a study tells its caller as it goes: phases and their units for
/// every study, and each study's own news, which an observer not
/// interested in it ignores.
pub trait Observer: Send + Sync {
    /// A phase or an experiment starts, with the number of units it has.
    fn begin(&self, what: &str, units: u64);
    /// Units of the phase done so far.
    fn advance(&self, done: u64);
    /// The phase ended.
    fn finish(&self) {}
    /// The suite built a dataset: `init` for the database, else an engine's copy.
    fn built(&self, _what: EngineKind, _entries: u64, _elapsed_ns: u64) {}
    /// The suite measured an experiment.
    fn measured(&self, _experiment: &Experiment) {}
    /// Aging measured a layout at an age (or after a remedy).
    fn point(&self, _sizes: &SizeSetting, _point: &AgePoint) {}
}

/// An observer that is told nothing (tests, output that is not a terminal).
pub struct Quiet;

impl Observer for Quiet {
    fn begin(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// An observer as the lower layers' [`Progress`] (units added as they are
/// done, told as the phase's total so far).
pub struct AsProgress<'a> {
    observer: &'a dyn Observer,
    done: AtomicU64,
}

impl<'a> AsProgress<'a> {
    pub fn new(observer: &'a dyn Observer) -> Self {
        AsProgress { observer, done: AtomicU64::new(0) }
    }
}

impl Progress for AsProgress<'_> {
    fn start(&self, what: &str, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.observer.begin(what, total);
    }
    fn advance(&self, units: u64) {
        let done = self.done.fetch_add(units, Ordering::Relaxed) + units;
        self.observer.advance(done);
    }
    fn finish(&self) {
        self.observer.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_asked_alone_is_not_cut_short_by_the_default_budget() {
        let plan =
            RoundsPlan { target: 0.05, seed: 1, latency: false, ..RoundsPlan::new(20, Some(Duration::from_secs(4))) };
        let asked = |max_rounds, budget| RoundsAsked { max_rounds, budget, least_rounds: None };
        let ten = Some(Duration::from_secs(10));
        assert_eq!(asked(None, None).apply(plan), plan);
        assert_eq!(asked(Some(3), None).apply(plan), RoundsPlan { max_rounds: 3, budget: None, ..plan });
        assert_eq!(asked(Some(3), ten).apply(plan), RoundsPlan { max_rounds: 3, budget: ten, ..plan });
        assert_eq!(asked(None, ten).apply(plan), RoundsPlan { budget: ten, ..plan });
        let least = RoundsAsked { least_rounds: Some(6), ..RoundsAsked::default() };
        assert_eq!(least.apply(plan), RoundsPlan { least_rounds: 6, ..plan });
    }

    #[test]
    fn progress_is_told_as_the_units_done_so_far() {
        struct Seen(std::sync::Mutex<Vec<u64>>);
        impl Observer for Seen {
            fn begin(&self, _: &str, _: u64) {}
            fn advance(&self, done: u64) {
                self.0.lock().unwrap().push(done);
            }
        }
        let seen = Seen(std::sync::Mutex::new(Vec::new()));
        let p = AsProgress::new(&seen);
        p.start("a", 10);
        p.advance(3);
        p.advance(4);
        p.start("b", 2);
        p.advance(1);
        assert_eq!(*seen.0.lock().unwrap(), [3, 7, 1]);
    }
}
