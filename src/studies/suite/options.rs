//! What a suite run is asked to do.

use std::path::PathBuf;
use std::time::Duration;

use crate::measure::rounds::RoundsPlan;
use crate::records::{DatasetSpec, Plan};
use crate::studies::context::{Observer, StudyContext};

/// What the suite is asked beyond its context (`StudyContext`: the work
/// directory, the engines beside SQLite and files, the rounds asked for,
/// the seed, `--quick`, the commits of the committed arms, the settings,
/// the clock and the observer).
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// The dataset (its seed is the context's).
    pub spec: DatasetSpec,
    pub plan: Plan,
    /// Share of the blobs overwritten by each write experiment (the article: 10%).
    pub write_fraction: f64,
    /// Keep the datasets instead of removing them at the end.
    pub keep: bool,
    /// Build the database from this directory's files instead of random
    /// blobs (`--from`); `spec`'s count and sizes are then the tree's.
    pub from: Option<PathBuf>,
    /// Hot keys: Zipf's theta (`--keys zipf:THETA`); None is kvtest's
    /// random order.
    pub zipf: Option<f64>,
    /// Only these experiment ids (`advise` measures a few arms); None runs
    /// them all. The A/A control runs when `read/db-blob` is among them.
    pub only: Option<Vec<super::ids::ArmId>>,
    /// Read experiment ids also measured cold (the page cache evicted
    /// before each run), as arms `cold/ID` in rounds of their own after
    /// the warm reads (advise); empty for none.
    pub cold_also: Vec<super::ids::ArmId>,
    /// When set, the rounds end by then instead of taking their budget
    /// (advise's budget covers the whole command, datasets included); a
    /// reading of the context's clock. When it has passed before the first
    /// round, each set of rounds runs one round of each arm.
    pub deadline: Option<std::time::Instant>,
    /// Rounds sized by time rather than by the dataset (advise); None
    /// reads every blob once per run on average and writes
    /// `write_fraction` of them, as the article.
    pub sizing: Option<RoundSizing>,
}

/// Rounds whose cost does not grow with the dataset or with the cost of an
/// operation: each run, read or write, is sized by time from an untimed
/// run after its warm-up, its keys drawn at random over the whole dataset,
/// anew each round (the same for every arm of a round).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundSizing {
    /// The time each warm read run is sized to take ([`RoundsPlan::run_time`]).
    pub read_time: Duration,
    /// The time each cold read run is sized to take, from a cold untimed run.
    pub cold_time: Duration,
    /// The time each write arm's run is sized to take, from an untimed run after its warm-up
    /// ([`RoundsPlan::run_time`]).
    pub write_time: Duration,
}

impl SuiteOptions {
    /// The article's dataset: 100k blobs of 10 KB +/- 2 KB, 4 KiB pages
    /// (`quick`: about 10k blobs, fewer runs of the unpaired plan).
    pub fn new(quick: bool) -> Self {
        let mut spec = DatasetSpec { count: 100_000, size: 10_000, variance: 2_000, ..DatasetSpec::default() };
        let mut plan = Plan { repeat: 5, warmup: 1, cold: false, latency: true };
        if quick {
            spec.count = 10_000;
            plan.repeat = 3;
        }
        SuiteOptions {
            spec,
            plan,
            write_fraction: 0.1,
            keep: false,
            from: None,
            zipf: None,
            only: None,
            cold_also: Vec::new(),
            deadline: None,
            sizing: None,
        }
    }
}

/// The suite as it runs: its context, its options (the dataset's seed the
/// context's) and the rounds and commits they resolve to.
pub(super) struct Suite<'a> {
    pub ctx: &'a StudyContext,
    pub opts: SuiteOptions,
    pub rounds: RoundsPlan,
    /// Writes per commit of the committed arms.
    pub commit_every: u32,
}

impl<'a> Suite<'a> {
    pub fn new(ctx: &'a StudyContext, opts: &SuiteOptions) -> Suite<'a> {
        let mut opts = opts.clone();
        opts.spec.seed = ctx.seed;
        let rounds = ctx.rounds_plan(default_rounds(ctx.quick));
        Suite { ctx, opts, rounds, commit_every: ctx.commit_every_or(COMMIT_EVERY) }
    }

    pub fn observer(&self) -> &dyn Observer {
        self.ctx.observer.as_ref()
    }
}

/// The suite's rounds unless asked otherwise: at most 30 within 900 s, or
/// within 80 s with `--quick` (the whole command within two minutes on a
/// small machine).
pub fn default_rounds(quick: bool) -> RoundsPlan {
    RoundsPlan::new(30, Some(if quick { QUICK_BUDGET } else { Duration::from_secs(900) }))
}

/// Writes per commit of the committed arms (`commit/...`) unless asked:
/// each write committed on its own.
pub const COMMIT_EVERY: u32 = 1;

/// The rounds' default budget with `--quick`.
pub const QUICK_BUDGET: Duration = Duration::from_secs(80);
