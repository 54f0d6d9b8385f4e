//! What a suite run is asked to do.

use std::path::PathBuf;
use std::time::Duration;

use crate::measure::rounds::RoundsPlan;
use crate::measure::Experiment;
use crate::records::{DatasetSpec, EngineKind, EngineSettings, Plan};

#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Where the datasets are built; a fresh subdirectory is made inside.
    pub workdir: PathBuf,
    pub spec: DatasetSpec,
    pub plan: Plan,
    /// Share of the blobs overwritten by each write experiment (the article: 10%).
    pub write_fraction: f64,
    /// Keep the datasets instead of removing them at the end.
    pub keep: bool,
    /// The small configuration, which trims warm-ups of the slowest steps.
    pub quick: bool,
    /// Key-value engines measured beside SQLite and files (`--engines`).
    pub engines: Vec<EngineKind>,
    /// Build the database from this directory's files instead of random
    /// blobs (`--from`); `spec`'s count and sizes are then the tree's.
    pub from: Option<PathBuf>,
    /// Hot keys: Zipf's theta (`--keys zipf:THETA`); None is kvtest's
    /// random order.
    pub zipf: Option<f64>,
    /// The rounds: most of them, the time budget for all of them (reads
    /// and writes together) and the precision target (`plan.repeat` and
    /// `plan.warmup` are not used: each arm warms up once, then rounds).
    pub rounds: RoundsPlan,
    /// Only these experiment ids (`advise` measures a few arms); None runs
    /// them all. The A/A control runs when `read/db-blob` is among them.
    pub only: Option<Vec<super::ids::ArmId>>,
    /// Read experiment ids also measured cold (the page cache evicted
    /// before each run), as arms `cold/ID` in rounds of their own after
    /// the warm reads (advise); empty for none.
    pub cold_also: Vec<super::ids::ArmId>,
    /// When set, the rounds end by then instead of taking `rounds.budget`
    /// (advise's budget covers the whole command, datasets included); a
    /// reading of `rounds.clock`. When it has passed before the first
    /// round, each set of rounds runs one round of each arm.
    pub deadline: Option<std::time::Instant>,
    /// Writes per commit of the committed write arms (`commit/...`,
    /// `--commit-every N`; 1 by default: each write committed on its own).
    pub commit_every: u32,
    /// Rounds sized by time rather than by the dataset (advise); None
    /// reads every blob once per run on average and writes
    /// `write_fraction` of them, as the article.
    pub sizing: Option<RoundSizing>,
    /// The engines' settings every arm starts from, built once by the
    /// caller (the servers' parts: `--s3-server`); an arm sets only what it
    /// varies.
    pub settings: EngineSettings,
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
    /// The article's dataset: 100k blobs of 10 KB +/- 2 KB, 4 KiB pages.
    pub fn article(workdir: PathBuf) -> Self {
        SuiteOptions {
            workdir,
            spec: DatasetSpec { count: 100_000, size: 10_000, variance: 2_000, ..DatasetSpec::default() },
            plan: Plan { repeat: 5, warmup: 1, cold: false, latency: true },
            write_fraction: 0.1,
            keep: false,
            quick: false,
            engines: Vec::new(),
            from: None,
            zipf: None,
            rounds: RoundsPlan::new(30, Some(Duration::from_secs(900))),
            only: None,
            cold_also: Vec::new(),
            deadline: None,
            commit_every: 1,
            sizing: None,
            settings: EngineSettings::default(),
        }
    }

    /// About 10k blobs and a budget of 80 s for the rounds: the whole
    /// command within two minutes on a small machine.
    pub fn quick(workdir: PathBuf) -> Self {
        let mut o = Self::article(workdir);
        o.spec.count = 10_000;
        o.plan.repeat = 3;
        o.rounds.budget = Some(QUICK_BUDGET);
        o.quick = true;
        o
    }
}

/// The rounds' default budget with `--quick`.
pub const QUICK_BUDGET: Duration = Duration::from_secs(80);

/// What the suite tells its caller as it goes.
pub trait SuiteObserver: Sync {
    /// A phase or an experiment starts, with the number of units it has.
    fn begin(&self, what: &str, units: u64);
    fn advance(&self, done: u64);
    /// A dataset was built: `init` for the database, else an engine's copy.
    fn built(&self, what: EngineKind, entries: u64, elapsed_ns: u64);
    /// An experiment was measured.
    fn measured(&self, experiment: &Experiment);
}
