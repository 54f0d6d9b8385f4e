use super::*;
use crate::report::fixtures::{exp_mut, experiment_runs, full_suite};

fn five(id: &str, us: f64) -> Experiment {
    experiment_runs(id, &[us * 0.99, us, us * 1.01, us * 0.995, us * 1.005])
}

#[test]
fn changes_beyond_the_interval_are_marked_with_their_size() {
    let mut old = full_suite("host-a");
    let mut new = full_suite("host-a");
    *exp_mut(&mut old, "read/db-sql") = five("read/db-sql", 10.0);
    *exp_mut(&mut new, "read/db-sql") = five("read/db-sql", 12.5);
    *exp_mut(&mut old, "read/db-blob") = five("read/db-blob", 10.0);
    *exp_mut(&mut new, "read/db-blob") = five("read/db-blob", 8.0);
    *exp_mut(&mut old, "read/flat-posix") = five("read/flat-posix", 10.0);
    *exp_mut(&mut new, "read/flat-posix") = five("read/flat-posix", 10.02);
    let change = |id: &str| mark(&old, &new, old.experiment(id).unwrap(), new.experiment(id).unwrap()).unwrap();
    let Change::Regressed(r) = change("read/db-sql") else { panic!("{:?}", change("read/db-sql")) };
    assert!((r.value - 1.25).abs() < 1e-9 && r.low > 1.2 && r.high < 1.3, "{r:?}");
    assert!(
        change("read/db-sql").describe().starts_with("regressed: 25% slower (interval "),
        "{}",
        change("read/db-sql").describe()
    );
    assert!(change("read/db-blob").describe().starts_with("improved: 20% faster"));
    assert!(matches!(change("read/flat-posix"), Change::WithinNoise(_)));
    assert!(change("read/flat-posix").describe().starts_with("within noise: 0.2% slower (interval "));
    // Three identical runs each: a min-max interval, tight, so a 10% change shows.
    exp_mut(&mut new, "read/tree-posix").runs.iter_mut().for_each(|r| {
        r.per_op_us *= 1.1;
        r.steady_per_op_us = r.steady_per_op_us.map(|us| us * 1.1);
    });
    let e = "read/tree-posix";
    let c = mark(&old, &new, old.experiment(e).unwrap(), new.experiment(e).unwrap()).unwrap();
    assert!(c.describe().contains("(interval 10% slower to 10% slower, min-max)"), "{}", c.describe());
}

#[test]
fn different_parameters_are_named_not_compared() {
    let old = full_suite("host-a");
    let mut new = full_suite("host-a");
    new.dataset.as_mut().unwrap().size = 100_000;
    let e = "read/db-sql";
    let why = mark(&old, &new, old.experiment(e).unwrap(), new.experiment(e).unwrap()).unwrap_err();
    assert_eq!(why, "not compared: blob sizes (10000 vs 100000 bytes) differ");
    let mut threads = full_suite("host-a");
    exp_mut(&mut threads, e).params.threads = 4;
    let why = mark(&old, &threads, old.experiment(e).unwrap(), threads.experiment(e).unwrap()).unwrap_err();
    assert!(why.contains("threads (1 vs 4)"), "{why}");
}

#[test]
fn the_section_names_another_schema_version_and_the_verdict_then_and_now() {
    let mut old = full_suite("host-a");
    old.schema_version = 1;
    let new = full_suite("host-a");
    let s = &section(&old, &[new], &crate::report::questions())[0];
    let text = format!("{:?}", s.blocks);
    let versions = format!("The baseline is schema version 1, the results version {}", crate::results::SCHEMA_VERSION);
    assert!(text.contains(&versions), "{text}");
    assert!(text.contains("The verdict then and now"));
    let Some(Block::Table(t)) = s.blocks.iter().find(|b| matches!(b, Block::Table(_))) else { panic!() };
    assert_eq!(t.rows.len(), 16);
    assert!(
        t.rows.iter().all(|r| r[4] == "within noise: unchanged (interval unchanged to unchanged, min-max)"),
        "{:?}",
        t.rows[0]
    );
}
