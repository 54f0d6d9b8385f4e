//! The facets measured besides the suite's arms: the crash facts (a quick
//! power-cut run, or the documented table), the size crossover (a small
//! matrix around the blobs' mean size) and a short aging pass (two
//! rewrites of every blob of a sample, on the user's sizes).

use std::sync::Arc;
use std::time::Duration;

use super::candidate::Store;
use super::section::{CrashFact, CrashFacts, CrashSource};
use super::{rules, Advise};
use crate::engine::s3::Server;
use crate::records::{ConfigId, EngineKind, SizeSource};
use crate::studies::aging::{self, AgePoint, AgingOptions, AgingSection, SizeSetting};
use crate::studies::context::{Observer, RoundsAsked, StudyContext};
use crate::studies::crashtest::{self, CrashOptions, PowerCutSection};
use crate::studies::matrix::{self, MatrixOptions, MatrixSection};
use crate::{Error, Result};

/// Blob sizes of the size matrix: the mean times each factor.
const MATRIX_FACTORS: [f64; 5] = [0.25, 1.0, 4.0, 16.0, 64.0];
pub(super) const MATRIX_SIZES: usize = MATRIX_FACTORS.len();
/// The page size of the size matrix (SQLite's default).
pub const MATRIX_PAGE_SIZE: u32 = 4096;

/// Blob content per cell of the size matrix.
pub(super) fn matrix_bytes(quick: bool) -> u64 {
    if quick {
        8_000_000
    } else {
        20_000_000
    }
}

/// The size crossover: a one-row matrix (4 KiB pages, sizes from a quarter
/// of the mean to 64 times it, no writes, the embedded engines considered
/// beside the files, each candidate read through its own read path: SQLite by the
/// blob API over a memory-mapped database) whose crossovers say above which
/// blob size files read faster than SQLite, and than each engine, here.
/// None when interrupted.
pub(super) fn size_crossover(opts: &Advise, mean: f64) -> Result<Option<MatrixSection>> {
    let (ctx, m) = matrix_plan(opts, mean);
    match matrix::run(&ctx, &m) {
        Ok(run) if !run.interrupted => Ok(Some(run.section)),
        Ok(_) | Err(Error::Interrupted) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The size matrix's context and options for blobs of `mean` bytes:
/// advise's context, with the embedded engines only, a short budget per
/// cell and the promised rounds.
pub(super) fn matrix_plan(opts: &Advise, mean: f64) -> (StudyContext, MatrixOptions) {
    let total = matrix_bytes(opts.quick());
    let mut sizes: Vec<u32> =
        MATRIX_FACTORS.iter().map(|k| ((mean * k).round() as u64).clamp(1000, total / 4) as u32).collect();
    sizes.dedup();
    let mut m = MatrixOptions::quick();
    m.sizes = sizes;
    m.page_sizes = vec![MATRIX_PAGE_SIZE];
    m.total_bytes = total;
    m.writes = false;
    // SQLite read as its candidate reads, with the suite's page cache.
    m.db_read = rules::SQLITE_READ;
    m.cache_bytes = crate::records::DbParams::default().cache_size.unsigned_abs() * u64::from(MATRIX_PAGE_SIZE);
    // A cell's reads cover at most its few MB: the promised rounds are cheap.
    let rounds = RoundsAsked {
        budget: Some(Duration::from_secs(if opts.quick() { 1 } else { 3 })),
        least_rounds: Some(super::LEAST_ROUNDS),
        ..RoundsAsked::default()
    };
    // A server's round trip, not the blob size, sets its read times, and at
    // tens of ms per op its cells would outlast the whole budget: its sizes
    // are `matrix --engines`'s study, as its aging is not advise's either.
    let ctx = StudyContext { engines: embedded(opts), rounds, quick: true, ..opts.ctx.clone() };
    (ctx, m)
}

/// The engines considered that are not servers.
fn embedded(opts: &Advise) -> Vec<EngineKind> {
    opts.ctx.engines.iter().copied().filter(|k| !k.is_server()).collect()
}

/// Blob content the short aging pass rewrites per layout and pass (a
/// sample of the blobs: the pass must fit the budget beside the rest);
/// `thorough` with the default budget or more, without `--quick`. With
/// `--quick` a smaller sample: every blob of it is rewritten twice in
/// every layout, each write committed, and 10 MB of 10 KB blobs in six
/// layouts (12,000 durable commits) took about a minute on a 2-core
/// machine, more than the whole quick budget.
fn aging_bytes(thorough: bool, quick: bool) -> f64 {
    match (thorough, quick) {
        (true, _) => 30e6,
        (false, true) => 2e6,
        (false, false) => 10e6,
    }
}

/// Blobs in the short aging pass: about [`aging_bytes`] of content, at
/// least 20, at most the blobs there are.
pub(super) fn aging_count(count: u32, mean: f64, thorough: bool, quick: bool) -> u32 {
    ((aging_bytes(thorough, quick) / mean.max(1.0)) as u32).clamp(20, 10_000).min(count.max(1))
}

/// The rounds' budget of each read set of the aging pass (two ages, warm
/// and cold: four sets).
pub(super) fn aging_round_budget(thorough: bool) -> Duration {
    Duration::from_secs(if thorough { 3 } else { 1 })
}

/// Aging's steps as advise's observer's phases, named as aging's; its
/// points are not advise's news.
struct AsAging(Arc<dyn Observer>);

impl Observer for AsAging {
    fn begin(&self, what: &str, units: u64) {
        self.0.begin(&format!("aging: {what}"), units);
    }
    fn advance(&self, done: u64) {
        self.0.advance(done);
    }
    fn point(&self, _: &SizeSetting, _: &AgePoint) {}
}

/// The short aging pass: ages 0 and [`rules::AGING_AGE`] of the candidates'
/// layouts (no remedies, no size bands), on a sample of the user's files
/// or blobs drawn from the stated sizes (a larger one, `thorough`, with a
/// larger budget). None when interrupted or stopped early (a full disk).
pub(super) fn aging_pass(opts: &Advise, (count, mean): (u32, f64), thorough: bool) -> Result<Option<AgingSection>> {
    let (ctx, a) = aging_plan(opts, (count, mean), thorough);
    match aging::run_aging(&ctx, &a) {
        Ok(out) if out.complete => Ok(Some(out.section)),
        Ok(_) | Err(Error::Interrupted) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The short aging pass's context and options (its disk need is part of
/// advise's): advise's context, with the embedded engines only, each
/// candidate rewriting as it writes (a commit per N writes), a short
/// budget per set of reads and the promised rounds.
pub(super) fn aging_plan(opts: &Advise, (count, mean): (u32, f64), thorough: bool) -> (StudyContext, AgingOptions) {
    let stores = opts.stores();
    let mut a = AgingOptions::new(true);
    a.ages = vec![0, rules::AGING_AGE];
    a.sizes = Vec::new();
    a.yours = Some(match &opts.from {
        Some(dir) => SizeSource::Files(dir.clone()),
        None => SizeSource::Dist(opts.spec.size_dist()),
    });
    a.count = Some(aging_count(count, mean, thorough, opts.quick()));
    a.layouts = Some(stores.iter().filter_map(|s| s.aging_layout()).collect());
    a.remedies = false;
    a.bands = false;
    // Each read set reads the sample (about 10 MB): the promised rounds
    // are cheap.
    let rounds = RoundsAsked {
        max_rounds: Some(if thorough { 12 } else { super::LEAST_ROUNDS }),
        budget: Some(aging_round_budget(thorough)),
        least_rounds: Some(super::LEAST_ROUNDS),
    };
    let ctx = StudyContext {
        engines: embedded(opts),
        rounds,
        quick: true,
        commit_every: Some(opts.commit_every()),
        observer: Arc::new(AsAging(Arc::clone(&opts.ctx.observer))),
        ..opts.ctx.clone()
    };
    (ctx, a)
}

/// The crash facts: a quick power-cut run of the candidates' write methods
/// (both durability needs, so the page can say what the other need would
/// change) where FUSE works; else the documented table, saying why.
pub(super) fn crash_facts(opts: &Advise) -> (CrashFacts, Option<PowerCutSection>) {
    let (mut facts, section) = power_cut_facts(opts);
    facts.methods.extend(server_facts(opts));
    (facts, section)
}

/// What the S3 candidate's server is known to promise: a throwaway server
/// that answers a PUT before it is on disk never acknowledges a write as
/// durable, however a process kill leaves it (`Server::syncs_puts`).
fn server_facts(opts: &Advise) -> Option<CrashFact> {
    let s3 = Store::Engine(EngineKind::S3);
    let settings = &opts.ctx.settings;
    if !opts.stores().contains(&s3) || settings.s3.url.is_some() {
        return None;
    }
    let server = Server::from_setting(settings.s3.server.as_deref()).ok()?;
    (!server.syncs_puts()).then(|| CrashFact {
        method: s3.crash_method(opts.durability),
        acknowledges_durability: false,
        cuts: 0,
        lost_after_ack: 0,
        torn: 0,
        integrity_failures: 0,
    })
}

/// The power-cut run's facts, or the documented table, saying why.
fn power_cut_facts(opts: &Advise) -> (CrashFacts, Option<PowerCutSection>) {
    let documented = |why: String| CrashFacts {
        source: CrashSource::Documented,
        model: rules::CRASH_MODEL.name().into(),
        why,
        methods: rules::documented(),
    };
    let Some(writer) = &opts.writer else {
        return (documented("no power-cut run was asked for".into()), None);
    };
    let mut methods = Vec::new();
    for s in opts.stores() {
        for m in [opts.durability, opts.durability.other()].into_iter().filter_map(|need| s.crash_method(need)) {
            if !methods.contains(&m) {
                methods.push(m);
            }
        }
    }
    let mut copts = CrashOptions::new(writer.clone());
    copts.methods = methods;
    copts.kills = if opts.quick() { crashtest::QUICK_KILLS } else { 2 * crashtest::QUICK_KILLS };
    copts.count = crashtest::QUICK_COUNT;
    let ctx = StudyContext { commit_every: Some(opts.commit_every()), ..opts.ctx.clone() };
    match crashtest::power_cut_test(&ctx, &copts, rules::CRASH_MODEL) {
        Ok(report) => {
            let facts = report
                .section
                .methods
                .iter()
                .map(|m| CrashFact {
                    method: ConfigId::method_named(&m.method),
                    acknowledges_durability: m.acknowledges_durability,
                    cuts: m.cuts,
                    lost_after_ack: m.lost_after_ack,
                    torn: m.checks.torn,
                    integrity_failures: m.checks.integrity_failures,
                })
                .collect();
            let crash = CrashFacts {
                source: CrashSource::Measured,
                model: report.section.model.clone(),
                why: String::new(),
                methods: facts,
            };
            (crash, Some(report.section))
        }
        Err(Error::Interrupted) => (documented("the power-cut run was interrupted".into()), None),
        Err(e) => (documented(format!("the power-cut run could not run here ({e})")), None),
    }
}
