//! The advice on fixed result files written with `--commit-every`: the
//! ranking uses the steady-state times (the loop with each commit inside
//! it), the page names the commit granularity, and a candidate measured at
//! another one is refused, not compared.

use super::{ranking, sections, terminal, words};
use crate::records::{DiskUsage, EngineKind};
use crate::report::fixtures::{advise_section, exp_mut, suite};
use crate::results::ResultFile;
use crate::studies::advise::Durability;
use crate::studies::advise::Store;

const LMDB: Store = Store::Engine(EngineKind::Lmdb);

/// A version 4 advise file at `--commit-every n`: SQLite, both file
/// methods and LMDB, with the given steady-state times per op and the
/// committed write arms (`commit/...`) measured at `n`.
fn committed_file(n: u32, times: &[(&str, f64)]) -> ResultFile {
    let mut f = suite("host-a", times);
    f.command = "advise".into();
    f.disk_usage.retain(|d| d.layout != EngineKind::Tree);
    f.disk_usage.push(DiskUsage {
        layout: EngineKind::Lmdb,
        path: "/data/test1.lmdb".into(),
        entries: 1000,
        content_bytes: 10_000_000,
        apparent_bytes: 14_000_000,
        allocated_bytes: 14_000_000,
    });
    for e in f.experiments.iter_mut().filter(|e| e.id.starts_with("commit/")) {
        e.params.commit_every = Some(n);
    }
    let stores = [Store::Sqlite, Store::FilesInPlace, Store::FilesReplace, LMDB];
    f.advise = Some(advise_section(&stores, (90, 10), Durability::Required, Some(n)));
    f
}

/// The figures, per write with its commit: SQLite reads 5.6 µs and
/// writes 434 µs, LMDB 3.0 and 657, files 10.2 and 755 (temp + rename).
fn per_write_times() -> Vec<(&'static str, f64)> {
    vec![
        ("read/db-blob-mmap", 5.6),
        ("read/db-blob", 8.0),
        ("read/flat-posix", 10.2),
        ("commit/db-wal-full", 434.0),
        ("commit/flat-inplace-fsync", 250.0),
        ("commit/flat-replace-fsync", 755.0),
        ("read/lmdb", 3.0),
        ("commit/lmdb-durable", 657.0),
    ]
}

/// Sets an experiment's kvtest total per op (open to close, as a file's
/// `per_op_us`), leaving its steady-state figure as it is.
fn with_kvtest_total(f: &mut ResultFile, id: &str, us: f64) {
    let e = exp_mut(f, id);
    for r in &mut e.runs {
        r.per_op_us = us;
    }
    e.summary.per_op_us.median = us;
}

#[test]
fn the_ranking_uses_the_loop_with_its_commits_not_kvtests_total() {
    let mut f = committed_file(1, &per_write_times());
    // kvtest's totals as one commit per run spread them: LMDB far ahead.
    with_kvtest_total(&mut f, "commit/lmdb-durable", 101.0);
    with_kvtest_total(&mut f, "commit/db-wal-full", 216.0);
    let (r, _) = ranking(&f).unwrap();
    let order: Vec<Store> = r.ranked.iter().map(|c| c.store).collect();
    // At 90:10: SQLite 0.9 * 5.6 + 0.1 * 434 = 48.4, LMDB 68.4, files 84.7.
    assert_eq!(order, [Store::Sqlite, LMDB, Store::FilesReplace], "{:?}", r.ranked);
    assert!((r.ranked[0].write_us - 434.0).abs() < 1e-9);
    assert!((r.ranked[0].mixed_us - 48.44).abs() < 1e-6, "{}", r.ranked[0].mixed_us);
    assert!((r.ranked[1].mixed_us - 68.4).abs() < 1e-6, "{}", r.ranked[1].mixed_us);
    let writes = r.ranked[1].writes.unwrap();
    assert!((writes.value - 657.0 / 434.0).abs() < 1e-9, "LMDB's writes over SQLite's, steady: {writes:?}");
}

#[test]
fn the_page_names_the_commit_granularity() {
    let f = committed_file(1, &per_write_times());
    let (r, s) = ranking(&f).unwrap();
    let rec = words::recommendation(&r, s);
    assert!(rec.contains("WAL + synchronous FULL writes, a commit per write"), "{rec}");
    assert!(words::workload(s).contains("a write returns once it is committed (--commit-every 1)"));
    let page = format!("{:?}", sections(std::slice::from_ref(&f)));
    assert!(page.contains("durable commit, a commit per write"), "LMDB's row names N: {page}");
    assert!(page.contains("the loop with a commit per write inside it"), "the writes chart says what it times");
    let hundred = committed_file(100, &per_write_times());
    let (r, s) = ranking(&hundred).unwrap();
    assert!(words::recommendation(&r, s).contains("a commit every 100 writes"));
    assert!(words::workload(s).contains("once 100 writes are committed (--commit-every 100)"));
    assert!(terminal(&hundred, false).contains("--commit-every 100"));
}

#[test]
fn a_candidate_measured_at_another_granularity_is_refused_not_compared() {
    let mut f = committed_file(1, &per_write_times());
    exp_mut(&mut f, "commit/lmdb-durable").params.commit_every = Some(100);
    let (r, _) = ranking(&f).unwrap();
    assert!(r.ranked.iter().all(|c| c.store != LMDB), "LMDB is not ranked: {:?}", r.ranked);
    assert_eq!(r.refused.len(), 1);
    assert_eq!((r.refused[0].store, r.refused[0].measured, r.refused[0].stated), (LMDB, Some(100), Some(1)));
    let line = words::refusal(&r.refused[0]);
    assert_eq!(
        line,
        "LMDB: not ranked, its writes were measured with a commit every 100 writes and the workload states a \
         commit per write; figures of another commit granularity are not compared."
    );
    assert!(terminal(&f, false).contains(&line));
    // A write arm that committed once per run is refused the same way.
    exp_mut(&mut f, "commit/lmdb-durable").params.commit_every = None;
    let (r, _) = ranking(&f).unwrap();
    assert!(words::refusal(&r.refused[0]).contains("measured with one transaction per run"));
}

#[test]
fn an_older_file_is_ranked_on_its_own_arms_and_marked() {
    // The tests in tests.rs rank older files; here: what their page says.
    let mut f =
        committed_file(1, &[("read/db-blob-mmap", 5.0), ("read/flat-posix", 10.0), ("write/db-wal-full", 300.0)]);
    f.advise.as_mut().unwrap().workload.commit_every = None;
    crate::report::fixtures::as_older(&mut f);
    let (r, s) = ranking(&f).unwrap();
    assert!(r.ranked.iter().any(|c| c.store == Store::Sqlite), "its write/... arm is used: {:?}", r.ranked);
    assert!(words::workload(s).contains("an older file"));
    let page = format!("{:?}", sections(std::slice::from_ref(&f)));
    assert!(page.contains("Write figures: one commit per run (older file)"), "{page}");
}

/// An object store among the candidates: no power cut can cover its
/// write method and it is in neither the size crossover nor the aging
/// pass, and the page says why, naming the study that measures it.
#[test]
fn a_server_candidate_says_why_it_has_no_power_cuts_or_crossover() {
    let mut times = per_write_times();
    times.extend([("read/s3", 10_000.0), ("commit/s3-durable", 40_000.0)]);
    let mut f = committed_file(1, &times);
    f.advise.as_mut().unwrap().candidates.push("s3".into());
    let (r, s) = ranking(&f).unwrap();
    assert!(r.untested.contains(&Store::Engine(EngineKind::S3)), "{:?}", r.untested);
    let notes = super::notes(&r, s).join("\n");
    assert!(notes.contains("(s3-durable): a server's data directory cannot run on the power-cut layer"), "{notes}");
    assert!(notes.contains("not in the size crossover or the aging pass") && notes.contains("matrix --engines s3"));
    assert!(!notes.contains("SQLite: not in the size crossover"), "embedded stores are in it: {notes}");
}
