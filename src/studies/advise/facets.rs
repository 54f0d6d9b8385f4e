//! The facets measured besides the suite's arms: the crash facts (a quick
//! power-cut run, or the documented table) and the size crossover (a small
//! matrix around the blobs' mean size).

use std::time::Duration;

use super::section::{CrashFact, CrashFacts, CrashSource};
use super::{rules, AdviseOptions};
use crate::studies::crashtest::{self, CrashOptions, Method, PowerCutSection};
use crate::studies::matrix::{self, MatrixOptions, MatrixSection};
use crate::studies::suite::{AsProgress, SuiteObserver};
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
/// of the mean to 64 times it, no writes) whose crossover says above which
/// blob size files read faster than SQLite here. None when interrupted.
pub(super) fn size_crossover(
    opts: &AdviseOptions,
    mean: f64,
    observer: &dyn SuiteObserver,
) -> Result<Option<MatrixSection>> {
    let total = matrix_bytes(opts.quick);
    let mut sizes: Vec<u32> =
        MATRIX_FACTORS.iter().map(|k| ((mean * k).round() as u64).clamp(1000, total / 4) as u32).collect();
    sizes.dedup();
    let mut m = MatrixOptions::quick();
    m.sizes = sizes;
    m.page_sizes = vec![MATRIX_PAGE_SIZE];
    m.total_bytes = total;
    m.writes = false;
    m.workdir.clone_from(&opts.workdir);
    m.rounds.budget = Some(Duration::from_secs(if opts.quick { 1 } else { 3 }));
    match matrix::run(&m, &AsProgress(observer)) {
        Ok(run) if !run.interrupted => Ok(Some(run.section)),
        Ok(_) | Err(Error::Interrupted) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The crash facts: a quick power-cut run of the candidates' write methods
/// (both durability needs, so the page can say what the other need would
/// change) where FUSE works; else the documented table, saying why.
pub(super) fn crash_facts(opts: &AdviseOptions, observer: &dyn SuiteObserver) -> (CrashFacts, Option<PowerCutSection>) {
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
        for need in [opts.durability, opts.durability.other()] {
            for m in Method::parse_list(&s.crash_method(need)).unwrap_or_default() {
                if !methods.contains(&m) {
                    methods.push(m);
                }
            }
        }
    }
    let mut copts = CrashOptions::new(writer.clone());
    copts.methods = methods;
    copts.kills = if opts.quick { crashtest::QUICK_KILLS } else { 2 * crashtest::QUICK_KILLS };
    copts.count = crashtest::QUICK_COUNT;
    copts.workdir.clone_from(&opts.workdir);
    match crashtest::power_cut_test(&copts, rules::CRASH_MODEL, &AsProgress(observer)) {
        Ok(report) => {
            let facts = report
                .section
                .methods
                .iter()
                .map(|m| CrashFact {
                    method: m.method.clone(),
                    acknowledges_durability: m.acknowledges_durability,
                    cuts: m.cuts,
                    lost_after_ack: m.lost_after_ack,
                    torn: m.torn,
                    integrity_failures: m.integrity_failures,
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
