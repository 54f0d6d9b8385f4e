use super::*;
use crate::measure::busy::Load;
use crate::measure::envinfo::Environment;
use crate::measure::paired::PairedRatio;
use crate::measure::rounds::{Round, RoundSet, StopReason};
use crate::records::EngineKind;
use crate::report::interval::Method;
use crate::studies::aging::{rounds_id, AgePoint, AgingSection, Fragmentation, ReadFigures, SizeSetting, Usage};

const LAST_AGE: u32 = 4;

fn layout(id: &str, title: &str, engine: EngineKind) -> LayoutInfo {
    LayoutInfo { id: id.into(), title: title.into(), engine }
}

/// A point at the last age whose warm reads have this median and spread.
fn point(layout: &str, per_op_us: f64, cv_pct: f64) -> AgePoint {
    AgePoint {
        layout: layout.into(),
        age: LAST_AGE,
        remedy: None,
        rewrite: None,
        read_warm: Some(ReadFigures { runs: 8, per_op_us, cv_pct, mb_per_s: 1.0, p50_us: 1.0, p99_us: 1.0 }),
        read_cold: None,
        usage: Usage::default(),
        fragmentation: Fragmentation::default(),
    }
}

/// Warm rounds at the last age: (arm, per-round figures).
fn rounds(arms: &[(&str, Vec<f64>)]) -> RoundSet {
    let n = arms[0].1.len();
    RoundSet {
        id: rounds_id("article", LAST_AGE, false),
        arms: arms.iter().map(|(id, _)| id.to_string()).collect(),
        seed: 1,
        warmup: true,
        target_pct: 5.0,
        budget_s: Some(20.0),
        max_rounds: 12,
        stop: StopReason::MaxRounds,
        rounds: (0..n)
            .map(|r| Round {
                order: (0..arms.len() as u32).collect(),
                per_op_us: arms.iter().map(|(_, t)| t[r]).collect(),
                steady_per_op_us: arms.iter().map(|(_, t)| t[r]).collect(),
                elapsed_ms: 10.0,
                load: Load::default(),
            })
            .collect(),
        warnings: vec![],
        run_time_s: None,
        ops_per_run: vec![],
    }
}

/// An aging file whose SQLite WAL layout reads in 10 us (30 us when the
/// machine is loaded) and files in place exactly 1.5x that in the same
/// round; the slower layouts of each side never win. Per layout, the
/// runs vary by 50% (the load), so the unpaired method sees no winner.
fn aging_file(with_rounds: bool) -> ResultFile {
    let wal = vec![10.0, 20.0, 10.0, 10.0, 30.0, 10.0, 10.0, 10.0];
    let inplace: Vec<f64> = wal.iter().map(|t| t * 1.5).collect();
    let setting = AgingSetting {
        sizes: SizeSetting::article(),
        count: 100,
        layouts: vec![
            layout("db-wal", "SQLite WAL", crate::engine::sqlite::KIND),
            layout("db-rollback", "SQLite rollback", crate::engine::sqlite::KIND),
            layout("files-inplace", "files in place", crate::engine::files::FLAT_KIND),
            layout("files-rename", "files by rename", crate::engine::files::FLAT_KIND),
        ],
        points: vec![
            point("db-wal", 10.0, 50.0),
            point("db-rollback", 12.0, 50.0),
            point("files-inplace", 15.0, 50.0),
            point("files-rename", 20.0, 50.0),
        ],
        remedies: vec![],
        crossover: vec![],
        rounds: if with_rounds {
            vec![rounds(&[
                ("files-rename", vec![20.0; 8]),
                ("db-wal", wal.clone()),
                ("files-inplace", inplace),
                ("db-rollback", vec![12.0; 8]),
            ])]
        } else {
            vec![]
        },
    };
    let mut f = ResultFile::new("aging", Environment::default());
    f.aging =
        Some(AgingSection { ages: vec![0, LAST_AGE], churn_pct: 0.0, settings: vec![setting], commit_every: None });
    f
}

fn answer(f: ResultFile) -> Answer {
    after_aging(&[f], 0).expect("an aging file answers")
}

#[test]
fn rounds_give_the_paired_factor_of_the_fastest_of_each_side() {
    let a = answer(aging_file(true));
    assert_eq!(a.factor.method, Method::Paired);
    assert_eq!((a.factor.low, a.factor.value, a.factor.high), (1.5, 1.5, 1.5));
    assert_eq!(a.factor.describe(), "1.50-1.50 (95% paired, 8 rounds)");
    assert_eq!((a.winner.as_str(), a.loser.as_str()), ("SQLite WAL", "files in place"));
    assert_eq!(a.outcome(), "SQLite WAL: 1.50x faster");
    assert_eq!(a.question, "reads after 4 rewrites of every blob (article)");
}

#[test]
fn files_without_rounds_are_answered_unpaired() {
    let a = answer(aging_file(false));
    assert_eq!(a.factor.method, Method::MinMax);
    assert!((a.factor.value - 1.5).abs() < 1e-12);
    assert!(a.factor.describe().contains("unpaired"), "{}", a.factor.describe());
    assert_eq!(a.outcome(), "no clear winner (the interval spans 1.0)", "a 50% spread on each side hides 1.5x");
}

#[test]
fn rounds_that_do_not_pair_are_answered_unpaired() {
    let mut f = aging_file(true);
    let set = &mut f.aging.as_mut().unwrap().settings[0].rounds[0];
    set.rounds[3].per_op_us.pop();
    assert_eq!(answer(f).factor.method, Method::MinMax, "an arm missing from a round: no paired ratio");
    let mut f = aging_file(true);
    f.aging.as_mut().unwrap().settings[0].rounds[0].id = rounds_id("article", LAST_AGE, true);
    assert_eq!(answer(f).factor.method, Method::MinMax, "cold rounds do not answer the warm question");
}

#[test]
fn a_paired_aging_factor_inside_a_noise_floor_is_within_noise() {
    let mut f = aging_file(true);
    let set = &mut f.aging.as_mut().unwrap().settings[0].rounds[0];
    for r in &mut set.rounds {
        r.per_op_us[2] = r.per_op_us[1] * 1.02;
        r.steady_per_op_us[2] = r.steady_per_op_us[1] * 1.02;
    }
    let a = answer(f);
    let floor = PairedRatio { value: 1.0, low: 0.96, high: 1.04, rounds: 8, coverage_pct: 99.2, outliers: vec![] };
    assert_eq!(a.outcome_over(Some(&floor)), "within noise (1.02x is inside the A/A noise floor)");
}

#[test]
fn the_verdict_sums_up_the_aging_rounds_in_one_line() {
    let mut f = aging_file(true);
    f.aging.as_mut().unwrap().settings[0].rounds[0].rounds[2].load.other_cpu_pct = Some(80.0);
    let s = crate::report::verdict::section(std::slice::from_ref(&f), &[after_aging]);
    let text = format!("{:?}", s[0].blocks);
    assert!(
        text.contains("aging/article: 1 round sets (1 of the layouts' reads at each age; warm and cold), 8 rounds each, stopped: 1 because the most rounds (--rounds) were run; 1 of 8 rounds ran on a busy machine (other processes up to 80%"),
        "{text}"
    );
}
