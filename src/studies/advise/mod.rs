//! `advise`: one command for "where should these blobs live, and why".
//! States the workload, measures each candidate store in the configuration
//! that best fits the durability need (the suite's arms, in interleaved
//! rounds, warm and cold, within one time budget), records their disk
//! space, a short aging pass and the crash facts (a quick power-cut run
//! where FUSE works, else the documented table), and returns a suite
//! section plus its own. The recommendation is
//! [`rank::rank`] of that data; the report words it.

mod candidate;
pub mod clients;
mod facets;
pub mod rank;
pub mod replicated;
pub mod replication_cost;
pub mod rules;
mod section;

pub use candidate::{Durability, Store, ALWAYS};
pub use section::{AdviseSection, CrashFact, CrashFacts, CrashSource, Stage, StageTimes, Workload};

use std::path::PathBuf;
use std::time::Duration;

use crate::engine::dataset::from_dir;
use crate::measure::clock::Clock;
use crate::measure::rounds::RoundsPlan;
use crate::records::DatasetSpec;
use crate::studies::aging::AgingSection;
use crate::studies::context::{RoundsAsked, StudyContext, StudyRun};
use crate::studies::crashtest::PowerCutSection;
use crate::studies::matrix::MatrixSection;
use crate::studies::suite::{self, ids, ArmId, RoundSizing, SuiteOptions, SuiteOutcome};
use crate::util::fsutil;
use crate::{Error, Result};

/// The default budget of the whole command, and with `--quick`.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(270);
pub const QUICK_BUDGET: Duration = Duration::from_secs(60);

/// Kept from the budget for what follows the rounds' deadline: the round
/// under way, the arms' summaries and the page with its charts.
const AFTER_ROUNDS: Duration = Duration::from_secs(5);

/// Rounds every compared pair gets, even when the budget is spent before
/// them: enough for a 95% paired interval. Rounds are sized by time
/// ([`sizing`]), so their cost does not grow with the number of blobs.
pub const LEAST_ROUNDS: u32 = crate::measure::paired::MIN_ROUNDS_95 as u32;

/// The rounds' sizes: every run sized by time from an untimed run after
/// its warm-up, whatever an operation costs (a GET from an object store
/// takes milliseconds, a warm read from a memory map microseconds). Warm
/// reads take 0.1 s per arm and round with `--quick` (0.2 s without), cold
/// reads as much, writes 0.15 s (0.4 s).
pub fn sizing(quick: bool) -> RoundSizing {
    let ms = |quick_ms, full_ms| Duration::from_millis(if quick { quick_ms } else { full_ms });
    RoundSizing { read_time: ms(100, 200), cold_time: ms(100, 200), write_time: ms(150, 400) }
}

/// What `advise` is asked beyond its context (`StudyContext`: the work
/// directory, the key-value engines considered beside SQLite and files,
/// the seed of the blobs, `--quick`, the writes per commit (1 by default:
/// "a write that returned must survive a power cut" means each write
/// committed on its own; every candidate's writes, its power cuts and its
/// aging pass use it), the clock the budget is read on (the size matrix,
/// the aging pass and the rounds read it too), the settings every study
/// advise runs starts from, the observer).
#[derive(Debug, Clone)]
pub struct AdviseOptions {
    /// Count and sizes of random blobs (ignored with `from`; their seed is
    /// the context's).
    pub spec: DatasetSpec,
    /// The user's own files: every regular file under it is one blob (read only).
    pub from: Option<PathBuf>,
    pub mix_reads: u32,
    pub mix_writes: u32,
    pub durability: Durability,
    /// The whole command's time budget; None is the default (or, when the
    /// data needs more, the least that fits it).
    pub budget: Option<Duration>,
    /// A blobbench binary (with the hidden crash writer) for the power-cut
    /// run; None uses the documented table.
    pub writer: Option<PathBuf>,
    /// Clients at once (`--clients`, `--clients-are`, `--p99-write`).
    pub clients: clients::ClientsPlan,
}

/// What advise measured: a suite's outcome, the power cuts when they ran,
/// and its own section.
#[derive(Debug, Clone)]
pub struct AdviseOutcome {
    pub suite: SuiteOutcome,
    pub power_cut: Option<PowerCutSection>,
    /// The small matrix around the blobs' mean size (the size crossover).
    pub matrix: Option<MatrixSection>,
    /// The short aging pass (ages 0 and 2 of the candidates' layouts).
    pub aging: Option<AgingSection>,
    pub section: AdviseSection,
}

/// Advise as it runs: its context and options.
pub type Advise<'a> = StudyRun<'a, AdviseOptions>;

/// Advise in `ctx`, asked `opts`: its rounds are the studies' it runs.
pub fn in_context<'a>(ctx: &'a StudyContext, opts: &'a AdviseOptions) -> Advise<'a> {
    Advise::new(ctx, opts, RoundsPlan::new(LEAST_ROUNDS, None))
}

impl Advise<'_> {
    /// Every candidate, in the order the page lists them.
    pub fn stores(&self) -> Vec<Store> {
        ALWAYS.into_iter().chain(self.ctx.engines.iter().map(|&k| Store::Engine(k))).collect()
    }

    /// Writes per commit: a write returns once N writes have been
    /// committed (1 unless asked).
    pub fn commit_every(&self) -> u32 {
        self.ctx.commit_every_or(1)
    }

    pub fn quick(&self) -> bool {
        self.ctx.quick
    }

    /// The suite experiments the candidates need, with the A/A control's arm.
    fn experiment_ids(&self) -> Vec<ArmId> {
        let mut v = vec![ids::READ_DB_BLOB];
        for s in self.stores() {
            for id in [s.read_id(), s.write_id(self.durability, false)] {
                if !v.contains(&id) {
                    v.push(id);
                }
            }
        }
        v
    }

    /// The candidates' reads, each also measured cold.
    fn cold_ids(&self) -> Vec<ArmId> {
        let mut v: Vec<ArmId> = Vec::new();
        for id in self.stores().into_iter().map(Store::read_id) {
            if !v.contains(&id) {
                v.push(id);
            }
        }
        v
    }
}

/// The least budget that fits building the datasets and [`LEAST_ROUNDS`]
/// rounds after the warm-ups, as estimated from the dataset (100 MB/s to
/// build each copy; each arm's run sized by time ([`sizing`]), plus 10 us
/// per blob to evict each cold arm's dataset; the size matrix's cells at 100
/// MB/s and half a second each, and as much again per engine; the aging
/// pass's sample built and rewritten twice at 100 MB/s per layout, a
/// second per layout and age, and its four read sets): a budget below it
/// is refused, naming it.
pub fn minimum_budget(opts: &Advise, count: u32, mean_bytes: f64) -> Duration {
    let stores = opts.stores().len() as f64;
    let bytes = f64::from(count) * mean_bytes * (2.0 + stores);
    let build = bytes / 100e6;
    let rounds = f64::from(LEAST_ROUNDS + 1);
    let sized = sizing(opts.quick());
    let reads = (stores + 2.0) * rounds * sized.read_time.as_secs_f64();
    let cold_arms = opts.cold_ids().len() as f64;
    let cold = cold_arms * rounds * (sized.cold_time.as_secs_f64() + f64::from(count) * 10e-6);
    let writes = stores * rounds * sized.write_time.as_secs_f64();
    let sizes = facets::MATRIX_SIZES as f64;
    // Each engine's dataset is built in every cell and read beside the rest.
    let matrix =
        sizes * (1.0 + opts.ctx.engines.len() as f64) * (facets::matrix_bytes(opts.quick()) as f64 / 100e6 + 0.5);
    let layouts = opts.stores().iter().filter(|s| s.aging_layout().is_some()).count() as f64;
    // The aging pass's smaller plan: a larger budget affords the larger one.
    let sample = f64::from(facets::aging_count(count, mean_bytes, false, opts.quick())) * mean_bytes;
    let aging =
        sample * (1.0 + 3.0 * layouts) / 100e6 + 2.0 * layouts + 4.0 * facets::aging_round_budget(false).as_secs_f64();
    let with_clients = clients::least_time(opts).as_secs_f64();
    let total = 5.0 + AFTER_ROUNDS.as_secs_f64() + build + reads + cold + writes + matrix + aging + with_clients;
    Duration::from_secs_f64(total.ceil())
}

/// Checks what can be checked before any work (the messages name the
/// fix) in the existing work directory; returns the budget.
fn validate(opts: &Advise, count: u32, mean_bytes: f64) -> Result<Duration> {
    if opts.mix_reads == 0 && opts.mix_writes == 0 {
        return Err(Error::invalid("--mix 0:0 has neither reads nor writes (give R:W, e.g. 90:10)"));
    }
    if let Some(k) = opts.ctx.engines.iter().find(|k| !k.is_key_value()) {
        return Err(Error::invalid(format!("--engines: {} is not a key-value engine", k.name())));
    }
    crate::records::check_commit_every(opts.commit_every()).map_err(Error::invalid)?;
    opts.clients.validate(&opts.stores(), opts.quick())?;
    let least = minimum_budget(opts, count, mean_bytes);
    let budget = choose_budget(opts.budget, least, opts.quick(), count)?;
    // The clients' rounds come on top of a default budget (the least one
    // already counts them).
    let with_clients = clients::least_time(opts);
    let budget = match opts.budget {
        None => choose_budget(None, least.saturating_sub(with_clients), opts.quick(), count)? + with_clients,
        Some(_) => budget,
    };
    let need = needed_bytes(opts, count, mean_bytes, thorough(opts, budget))?;
    let free = fsutil::free_bytes(&opts.ctx.workdir)?;
    if free < need {
        return Err(Error::bad_input(
            &opts.ctx.workdir,
            format!(
                "not enough free space: advise needs about {} MB here, {} MB free (use --workdir)",
                need.div_ceil(1_000_000),
                free / 1_000_000
            ),
        ));
    }
    Ok(budget)
}

/// Disk advise needs at its peak: the suite's datasets, the size matrix's
/// largest cell or the aging pass's datasets (each study removes its own
/// before the next starts), from each study's own estimate, for the mean
/// size (a --from tree's too).
fn needed_bytes(opts: &Advise, count: u32, mean_bytes: f64, thorough: bool) -> Result<u64> {
    let spec = DatasetSpec { count, size: mean_bytes.round() as u32, variance: 0, sizes: None, ..opts.spec.clone() };
    let suite = suite::needed_bytes(&spec, opts.ctx.engines.len());
    let (ctx, m) = facets::matrix_plan(opts, mean_bytes);
    let matrix = crate::studies::matrix::needed_bytes(&ctx, &m)?;
    let (ctx, a) = facets::aging_plan(opts, (count, mean_bytes), thorough);
    let aging = crate::studies::aging::needed_bytes_of(&ctx, &a)?;
    Ok(suite.max(matrix).max(aging))
}

/// Whether the budget affords the larger aging pass (the default budget or
/// more, without --quick).
fn thorough(opts: &Advise, budget: Duration) -> bool {
    !opts.quick() && budget >= DEFAULT_BUDGET
}

/// The budget given, refused below `least`; without one, the default or
/// `least` when that is more.
fn choose_budget(given: Option<Duration>, least: Duration, quick: bool, count: u32) -> Result<Duration> {
    match given {
        Some(b) if b < least => Err(Error::invalid(format!(
            "--budget {:.0} s is too short for {count} blobs (their datasets and {LEAST_ROUNDS} paired rounds): give \
             at least {} s",
            b.as_secs_f64(),
            least.as_secs()
        ))),
        Some(b) => Ok(b),
        None => Ok(least.max(if quick { QUICK_BUDGET } else { DEFAULT_BUDGET })),
    }
}

/// `f`'s result, the time it took on `clock` recorded as `stage`'s.
fn timed<T>(stages: &mut StageTimes, stage: Stage, clock: Clock, f: impl FnOnce() -> T) -> T {
    let start = clock.now();
    let value = f();
    stages.set(stage, clock.since(start).as_secs_f64());
    value
}

/// Runs the power cuts (where FUSE works), the size matrix, the aging pass
/// and the suite's arms, within the budget. When the work before the
/// rounds used the whole budget, the rounds run one round of each arm and
/// the section says so (`over_budget`): the budget is a plan, and the user
/// asked for advice.
pub fn run(ctx: &StudyContext, opts: &AdviseOptions) -> Result<AdviseOutcome> {
    let opts = &in_context(ctx, opts);
    let clock = ctx.clock;
    let started = clock.now();
    let scan = opts.from.as_deref().map(from_dir::scan).transpose()?;
    let (count, mean) = match &scan {
        Some(s) => (s.files.len() as u32, s.content_bytes() as f64 / s.files.len().max(1) as f64),
        None => (opts.spec.count, opts.spec.size_dist().mean()),
    };
    // Removed again if advise made it and leaves it empty (a failed run).
    let _workdir = fsutil::CreatedDirs::create(&ctx.workdir)?;
    let budget = validate(opts, count, mean)?;
    drop(scan);
    let flush = crate::measure::flush::measure(&ctx.workdir, crate::measure::flush::TRIALS)?;
    let mut stages = StageTimes::default();
    let (crash, power_cut) = timed(&mut stages, Stage::PowerCuts, clock, || facets::crash_facts(opts));
    let matrix = timed(&mut stages, Stage::SizeMatrix, clock, || facets::size_crossover(opts, mean));
    let thorough = thorough(opts, budget);
    let aging = timed(&mut stages, Stage::Aging, clock, || facets::aging_pass(opts, (count, mean), thorough));
    // The rest of the budget goes to the rounds, less what the last round,
    // the arms' summaries and the page take after the deadline.
    let kept = AFTER_ROUNDS.max(budget / 8);
    let before_suite = clock.since(started);
    let deadline = started + budget.saturating_sub(kept + clients::least_time(opts));
    let (outcome, at_clients) = suite_and_clients(opts, deadline, &crash, &mut stages)?;
    let over_budget = outcome.past_deadline.then(|| {
        let mut over = StageTimes::of_durations([(Stage::Setup, before_suite + outcome.setup), (Stage::Kept, kept)]);
        for stage in [Stage::PowerCuts, Stage::SizeMatrix, Stage::Aging, Stage::Datasets] {
            over.set(stage, stages[stage]);
        }
        over
    });
    let section = AdviseSection {
        workload: Workload {
            count: outcome.spec.count,
            mean_bytes: outcome.spec.size_dist().mean().round() as u64,
            from_dir: outcome.spec.from_dir.clone(),
            mix_reads: opts.mix_reads,
            mix_writes: opts.mix_writes,
            durability: opts.durability,
            commit_every: Some(opts.commit_every()),
        },
        candidates: opts.stores(),
        crash,
        budget_s: budget.as_secs_f64(),
        elapsed_s: clock.since(started).as_secs_f64(),
        quick: opts.quick(),
        over_budget,
        clients: at_clients,
        stages: Some(stages),
        flush: Some(flush),
    };
    let mut suite = outcome;
    let matrix = matrix.unwrap_or_else(|e| {
        suite.notes.push(format!("advise: the size crossover could not be measured ({e})"));
        None
    });
    let aging = match aging {
        Ok(None) => {
            suite.notes.push("advise: the aging pass was stopped before its last age".into());
            None
        }
        Ok(a) => a,
        Err(e) => {
            suite.notes.push(format!("advise: the aging pass could not run ({e})"));
            None
        }
    };
    Ok(AdviseOutcome { suite, power_cut, matrix, aging, section })
}

/// The suite's arms for the candidates, their rounds ending by `deadline`,
/// then (when asked) the candidates with clients on the suite's datasets;
/// their times go into `stages` (the datasets', the rounds', the clients').
fn suite_and_clients(
    opts: &Advise,
    deadline: std::time::Instant,
    crash: &CrashFacts,
    stages: &mut StageTimes,
) -> Result<(SuiteOutcome, Option<clients::ClientsSection>)> {
    let clock = opts.ctx.clock;
    let (ctx, suite_opts) = suite_plan(opts, deadline);
    let with_clients = clients::least_time(opts);
    let mut at_clients = None;
    let mut clients_time = Duration::ZERO;
    let started = clock.now();
    let outcome = suite::run_suite_then(&ctx, &suite_opts, &mut |work, outcome| {
        if opts.clients.runs() {
            let start = clock.now();
            let measured = clients::measure(opts, &ctx, work, crash, with_clients);
            clients_time = clock.since(start);
            let (section, set) = measured?;
            outcome.rounds.push(set);
            at_clients = Some(section);
        }
        Ok(())
    });
    let suite_time = clock.since(started);
    let outcome = outcome?;
    stages.set(Stage::Datasets, outcome.setup.as_secs_f64());
    stages.set(Stage::Rounds, suite_time.saturating_sub(outcome.setup + clients_time).as_secs_f64());
    stages.set(Stage::Clients, clients_time.as_secs_f64());
    Ok((outcome, at_clients))
}

/// The suite advise runs: its context (advise's, every set of rounds
/// promised [`LEAST_ROUNDS`]) and its options (the candidates' arms, their
/// reads also cold, runs sized by time, the rounds ending by `deadline`).
fn suite_plan(opts: &Advise, deadline: std::time::Instant) -> (StudyContext, SuiteOptions) {
    let rounds = RoundsAsked { least_rounds: Some(LEAST_ROUNDS), ..RoundsAsked::default() };
    let ctx = StudyContext { rounds, commit_every: Some(opts.commit_every()), ..opts.ctx.clone() };
    let mut suite_opts = SuiteOptions::new(opts.quick());
    suite_opts.spec = opts.spec.clone();
    suite_opts.from.clone_from(&opts.from);
    suite_opts.only = Some(opts.experiment_ids());
    suite_opts.cold_also = opts.cold_ids();
    suite_opts.sizing = Some(sizing(opts.quick()));
    suite_opts.deadline = Some(deadline);
    (ctx, suite_opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::records::{EngineKind, EngineSettings};

    /// A run of advise in a context: what the tests vary.
    #[derive(Clone)]
    pub(super) struct Case {
        pub ctx: StudyContext,
        pub opts: AdviseOptions,
    }

    impl Case {
        pub fn advise(&self) -> Advise<'_> {
            in_context(&self.ctx, &self.opts)
        }
    }

    /// A quick run of 200 blobs in `dir` (the clients' tests use it too).
    pub(super) fn options(dir: &std::path::Path) -> Case {
        let ctx = StudyContext {
            engines: rules::default_engines(),
            quick: true,
            commit_every: Some(1),
            ..StudyContext::new(dir, EngineSettings::default())
        };
        let opts = AdviseOptions {
            spec: DatasetSpec { count: 200, size: 10_000, variance: 2_000, ..DatasetSpec::default() },
            from: None,
            mix_reads: 90,
            mix_writes: 10,
            durability: Durability::Required,
            budget: None,
            writer: None,
            clients: clients::ClientsPlan::ONE,
        };
        Case { ctx, opts }
    }

    #[test]
    fn a_power_cut_run_that_cannot_run_falls_back_to_the_documented_table() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        o.opts.writer = Some(d.path().join("no-such-blobbench"));
        let (facts, section) = facets::crash_facts(&o.advise());
        assert!(section.is_none());
        assert_eq!(facts.source, CrashSource::Documented);
        assert!(facts.why.starts_with("the power-cut run could not run here"), "{}", facts.why);
        assert_eq!(facts.methods, rules::documented());
    }

    /// S3 on SeaweedFS, which answers a PUT before it is on disk, is known
    /// not to acknowledge durability; on Swift, or on a store the user
    /// runs, nothing is claimed beyond what was measured.
    #[test]
    fn s3_on_a_server_that_does_not_sync_its_puts_never_acknowledges_durability() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        o.ctx.engines = vec![EngineKind::S3];
        let s3 = Store::Engine(EngineKind::S3).crash_method(o.opts.durability);
        let fact = |o: &Case| facets::crash_facts(&o.advise()).0.of(s3).cloned();
        o.ctx.settings.s3.server = Some("seaweedfs".into());
        assert_eq!(fact(&o).map(|f| f.acknowledges_durability), Some(false));
        o.ctx.settings.s3.server = Some("swift".into());
        assert_eq!(fact(&o), None);
        o.ctx.settings.s3.server = Some("seaweedfs".into());
        o.ctx.settings.s3.url = Some("http://127.0.0.1:1".into());
        assert_eq!(fact(&o), None);
    }

    #[test]
    fn bad_plans_are_refused_before_any_work() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        o.opts.mix_reads = 0;
        o.opts.mix_writes = 0;
        assert!(validate(&o.advise(), 200, 10_000.0).unwrap_err().to_string().contains("--mix 0:0"));
        let mut o = options(d.path());
        o.opts.budget = Some(Duration::from_secs(1));
        let least = minimum_budget(&o.advise(), 200, 10_000.0).as_secs();
        let e = validate(&o.advise(), 200, 10_000.0).unwrap_err().to_string();
        assert!(e.contains(&format!("give at least {least} s")), "{e}");
        // Without --budget: the default, or the least the data needs.
        assert_eq!(validate(&options(d.path()).advise(), 200, 10_000.0).unwrap(), QUICK_BUDGET);
        let least = minimum_budget(&options(d.path()).advise(), 10_000, 500_000.0);
        assert!(least > QUICK_BUDGET, "{least:?}");
        assert_eq!(choose_budget(None, least, true, 10_000).unwrap(), least);
        assert_eq!(choose_budget(None, least, false, 10_000).unwrap(), DEFAULT_BUDGET.max(least));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "nothing written");
    }

    /// Without --budget the clients' rounds come on top of the default
    /// budget, counted once (the least budget already holds them).
    #[test]
    fn a_default_budget_counts_the_clients_rounds_once() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        o.opts.clients = clients::ClientsPlan { clients: 8, ..clients::ClientsPlan::ONE };
        let with = clients::least_time(&o.advise());
        assert!(!with.is_zero());
        let least = minimum_budget(&o.advise(), 200, 10_000.0);
        let one = Case { opts: AdviseOptions { clients: clients::ClientsPlan::ONE, ..o.opts.clone() }, ..o.clone() };
        let without = minimum_budget(&one.advise(), 200, 10_000.0);
        assert_eq!(least, without + with, "the least budget holds the clients' rounds");
        assert_eq!(validate(&o.advise(), 200, 10_000.0).unwrap(), without.max(QUICK_BUDGET) + with);
        // A budget given is the whole command's, clients included.
        o.opts.budget = Some(least);
        assert_eq!(validate(&o.advise(), 200, 10_000.0).unwrap(), least);
    }

    #[test]
    fn the_space_check_counts_the_aging_pass() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        // No engines, so the size matrix's cells stay small (see below);
        // without --quick, whose aging sample is smaller.
        o.ctx.engines.clear();
        o.ctx.quick = false;
        // Few large blobs: the aging pass ages all of them, in more copies
        // than the suite makes.
        let (count, mean) = (100, 100_000.0);
        o.opts.spec = DatasetSpec { count, size: 100_000, variance: 0, ..DatasetSpec::default() };
        let (ctx, a) = facets::aging_plan(&o.advise(), (count, mean), false);
        let aging = crate::studies::aging::needed_bytes_of(&ctx, &a).unwrap();
        let spec = DatasetSpec { count, size: 100_000, variance: 0, sizes: None, ..o.opts.spec.clone() };
        let suite = suite::needed_bytes(&spec, o.ctx.engines.len());
        assert!(aging > suite, "aging {aging} > suite {suite}");
        assert_eq!(needed_bytes(&o.advise(), count, mean, false).unwrap(), aging);
        // Many small blobs: the suite needs more, the aging pass a sample.
        o.opts.spec = DatasetSpec { count: 100_000, size: 1000, variance: 0, ..DatasetSpec::default() };
        assert_eq!(needed_bytes(&o.advise(), 100_000, 1000.0, false).unwrap(), {
            let spec = DatasetSpec { count: 100_000, size: 1000, variance: 0, sizes: None, ..o.opts.spec.clone() };
            suite::needed_bytes(&spec, o.ctx.engines.len())
        });
    }

    /// A small dataset with engines considered: the size matrix's largest
    /// cell, with an engine dataset each, needs more than the suite or aging.
    #[test]
    fn the_space_check_counts_the_size_matrix() {
        let d = tempfile::tempdir().unwrap();
        let mut o = options(d.path());
        o.ctx.engines = rules::default_engines();
        let (count, mean) = (50, 2000.0);
        o.opts.spec = DatasetSpec { count, size: 2000, variance: 0, ..DatasetSpec::default() };
        let matrix_bytes = |o: &Case| {
            let (ctx, m) = facets::matrix_plan(&o.advise(), mean);
            crate::studies::matrix::needed_bytes(&ctx, &m).unwrap()
        };
        let matrix = matrix_bytes(&o);
        let mut none = o.clone();
        none.ctx.engines = Vec::new();
        let without = matrix_bytes(&none);
        assert!(matrix > without, "each engine's dataset counts: {matrix} > {without}");
        assert_eq!(needed_bytes(&o.advise(), count, mean, false).unwrap(), matrix);
    }

    #[test]
    fn the_size_crossover_reads_sqlite_as_its_candidate_does() {
        let o = options(std::path::Path::new("."));
        let (_, m) = facets::matrix_plan(&o.advise(), 10_000.0);
        assert_eq!(Store::Sqlite.read_id(), ids::READ_DB_BLOB_MMAP);
        assert_eq!(m.db_read, crate::studies::matrix::DbRead::BlobApiMmap);
        // The suite's page cache for it: kvtest's 1000 pages.
        assert_eq!(m.cache_bytes / u64::from(m.page_sizes[0]), 1000);
        let read = crate::studies::suite::db_params_of(ids::READ_DB_BLOB_MMAP).unwrap();
        assert_eq!(read.access, crate::records::DbAccess::BlobApi);
        assert!(read.mmap_bytes != 0, "memory-mapped: {read:?}");
    }

    #[test]
    fn rounds_are_sized_by_time_and_promised() {
        for quick in [true, false] {
            let s = sizing(quick);
            assert!(!s.read_time.is_zero() && !s.cold_time.is_zero() && !s.write_time.is_zero());
        }
        assert!(sizing(true).write_time < sizing(false).write_time);
        assert!(sizing(true).read_time < sizing(false).read_time);
        const { assert!(LEAST_ROUNDS >= 6, "a 95% paired interval") };
        // The least budget grows with the data it builds, not with rounds
        // that read every blob: ten times the blobs of 1 KB add their
        // build, their cold arms' eviction and no more than that.
        let mut case = options(std::path::Path::new("."));
        case.ctx.engines = Vec::new();
        let o = case.advise();
        let (small, large) = (minimum_budget(&o, 10_000, 1000.0), minimum_budget(&o, 100_000, 1000.0));
        let build = 90_000.0 * 1000.0 * 5.0 / 100e6;
        let evict = 2.0 * f64::from(LEAST_ROUNDS + 1) * 90_000.0 * 10e-6;
        assert!((large - small).as_secs_f64() <= build + evict + 2.0, "{small:?} {large:?}");
    }

    #[test]
    fn the_arms_cover_every_candidate_and_the_control() {
        let case = options(std::path::Path::new("."));
        let o = case.advise();
        let ids = o.experiment_ids();
        assert!(ids.contains(&crate::studies::suite::CONTROL_OF));
        for s in o.stores() {
            assert!(ids.contains(&s.read_id()) && ids.contains(&s.write_id(o.durability, false)), "{}", s.name());
        }
        assert!(!ids.iter().any(|i| i.to_string().contains("tree")), "no tree copy needed: {ids:?}");
        let cold = o.cold_ids();
        assert_eq!(cold.len(), o.stores().len() - 1, "both file candidates read the same files: {cold:?}");
        assert!(cold.iter().all(|id| ids.contains(id)), "every cold read is a measured read");
    }
}
