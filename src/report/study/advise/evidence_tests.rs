//! The evidence under the advice on fixed result files: the size
//! crossover, the power-cut table, cold reads, the aging pass and the
//! suite's charts, each shown and each able to change the leader.

use super::tests::{advise_file, durable_times, page_lines, rounds, LMDB, REDB};
use super::{ranking, words};
use crate::records::EngineKind;
use crate::results::ResultFile;
use crate::studies::advise::rank::Change;
use crate::studies::advise::Store;
use crate::studies::advise::{CrashSource, Durability};
#[test]
fn the_size_matrix_says_above_which_size_files_win() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    assert!(words::what_would_change_it(&ranking(&f).unwrap().0).contains("Blob size: not measured by this run"));
    // At 4 KiB pages files opened directly cost 10 µs, SQLite 8 µs at 10 KB
    // and 25 µs at 100 KB: files win from between the two.
    f.matrix = Some(crate::studies::matrix::tests_support::fixed_section());
    let (r, _) = ranking(&f).unwrap();
    let size = r.changes.iter().find_map(|c| match c {
        Change::Size { crossover, page_size: 4096, .. } => crossover.size_bytes,
        _ => None,
    });
    let size = size.expect("a crossover at 4 KiB pages");
    assert!(size > 10_000.0 && size < 100_000.0, "{size}");
    let text = words::what_would_change_it(&r);
    assert!(
        text.contains(
            "files opened directly read faster than SQLite (size matrix crossover, 4 KiB pages, SQL reads against \
             files by open/read)"
        ),
        "{text}"
    );
    assert!(!text.contains("not measured by this run"), "{text}");
    // A matrix that read SQLite as its candidate reads names that path.
    f.matrix.as_mut().unwrap().params.db_read = crate::studies::matrix::DbRead::BlobApiMmap;
    let text = words::what_would_change_it(&ranking(&f).unwrap().0);
    assert!(text.contains("(size matrix crossover, 4 KiB pages, blob API + mmap reads against files"), "{text}");
}

/// With an engine leading, the size matrix's crossover of that engine
/// against the files is given too (and no other engine's).
#[test]
fn a_leading_engine_gets_its_own_size_crossover() {
    let mut f = advise_file(Durability::Required, (100, 0), &durable_times());
    let mut m = crate::studies::matrix::tests_support::section_with_engine();
    m.engine_crossovers[0].engine = EngineKind::Lmdb;
    let mut other = m.engine_crossovers[0].clone();
    other.engine = EngineKind::Redb;
    m.engine_crossovers.push(other);
    f.matrix = Some(m);
    let (r, _) = ranking(&f).unwrap();
    assert_eq!(r.ranked[0].store, LMDB, "LMDB reads fastest: {:?}", r.ranked);
    let against: Vec<Store> = r
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Size { against, .. } => Some(*against),
            _ => None,
        })
        .collect();
    assert!(against.contains(&Store::Sqlite) && against.contains(&LMDB), "{against:?}");
    assert!(!against.contains(&REDB), "only the leader's: {against:?}");
    let text = words::what_would_change_it(&r);
    assert!(
        text.contains(
            "above about 100.00 KB per blob, files opened directly read faster than LMDB (size matrix crossover, \
             LMDB's own reads against files by open/read, in the same rounds)"
        ),
        "{text}"
    );
}

#[test]
fn a_short_power_cut_run_cannot_clear_what_the_documented_table_caught() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    let crash = &mut f.advise.as_mut().unwrap().crash;
    crash.source = CrashSource::Measured;
    crash.why.clear();
    for m in &mut crash.methods {
        (m.cuts, m.lost_after_ack, m.torn, m.integrity_failures) = (6, 0, 0, 0);
    }
    let (r, s) = ranking(&f).unwrap();
    assert_eq!(r.excluded.len(), 1, "{:?}", r.excluded);
    assert_eq!((r.excluded[0].store, r.excluded[0].source), (Store::FilesInPlace, CrashSource::Documented));
    assert!(words::exclusion(&r.excluded[0], s)
        .ends_with("in 50 power cuts (inplace-fsync); torn-4k model, documented table."));
}

#[test]
fn two_candidates_timed_by_one_experiment_compare_exactly() {
    let mut times = durable_times();
    times.retain(|(id, _)| *id != "write/flat-inplace-fsync");
    times.push(("write/flat-inplace-fsync", 100.0));
    let mut f = advise_file(Durability::Required, (90, 10), &times);
    let crash = &mut f.advise.as_mut().unwrap().crash;
    crash
        .methods
        .iter_mut()
        .filter(|m| m.method_name() == "inplace-fsync")
        .for_each(|m| (m.lost_after_ack, m.torn) = (0, 0));
    let (r, _) = ranking(&f).unwrap();
    assert_eq!(r.ranked[0].store, Store::FilesInPlace);
    // Both file candidates read the same files: exactly 1, said so.
    let replace = r.ranked.iter().find(|c| c.store == Store::FilesReplace).unwrap();
    let reads = replace.reads.unwrap();
    assert!(reads.same && reads.value == 1.0);
    assert_eq!(words::interval(&reads), "exact (the same measurement on both sides)");
}

/// Cold reads: SQLite 50 µs, files 40, LMDB 60, redb 45, paired over
/// rounds of their own that wobble by 2% either way.
fn with_cold_reads(f: &mut ResultFile) {
    let cold = [
        ("cold/read/db-blob-mmap", 50.0),
        ("cold/read/flat-posix", 40.0),
        ("cold/read/lmdb", 60.0),
        ("cold/read/redb", 45.0),
    ];
    f.experiments.extend(cold.iter().map(|(id, us)| crate::report::fixtures::experiment(id, *us)));
    let wobble: Vec<Vec<f64>> = (0..6).map(|i| vec![if i % 2 == 0 { 1.02 } else { 0.98 }; 4]).collect();
    f.rounds.push(rounds("suite/cold-reads", &cold, &wobble));
    crate::report::fixtures::as_older(f);
}

#[test]
fn cold_reads_are_evidence_and_can_change_the_leader() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    with_cold_reads(&mut f);
    let (r, _) = ranking(&f).unwrap();
    assert_eq!(r.ranked[0].store, Store::Sqlite, "the ranking stays by warm reads");
    assert_eq!(r.ranked[0].cold_read_us, Some(50.0));
    let redb = r.ranked.iter().find(|c| c.store == REDB).unwrap();
    let cold = redb.cold_reads.expect("redb's cold reads against SQLite's");
    assert!(cold.paired && (cold.value - 0.9).abs() < 1e-9 && cold.rounds == 6, "{cold:?}");
    // Cold, at 90:10: SQLite 0.9 * 50 + 30 = 75 µs per op, redb 0.9 * 45 + 25 = 65.5.
    let cold_change = r.changes.iter().find_map(|c| match c {
        Change::Cold { leader, reads } => Some((*leader, reads.map(|f| f.value))),
        _ => None,
    });
    assert_eq!(cold_change, Some((REDB, Some(cold.value))), "{:?}", r.changes);
    let text = words::what_would_change_it(&r);
    assert!(text.contains("With the data not in the page cache"), "{text}");
    assert!(text.contains("evicted before each run), redb would rank first;"), "a clear change: {text}");
    let out = page_lines(&f);
    let line = out.lines().find(|l| l.contains("reads (cold): redb")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("redb 1.11x faster than SQLite; 1.11-1.11 (paired, 6 rounds) [chart advise-reads]"),
        "{line}"
    );
    // The same medians, but redb's cold reads wobble across 1.0 against
    // SQLite's round by round: the change is said to be unclear.
    let wide: Vec<Vec<f64>> = (0..6).map(|i| vec![1.0, 1.0, 1.0, if i % 2 == 0 { 0.6 } else { 1.4 }]).collect();
    let cold_set = f.rounds.iter_mut().find(|s| s.id == "suite/cold-reads").unwrap();
    *cold_set = rounds(
        "suite/cold-reads",
        &[
            ("cold/read/db-blob-mmap", 50.0),
            ("cold/read/flat-posix", 40.0),
            ("cold/read/lmdb", 60.0),
            ("cold/read/redb", 50.0),
        ],
        &wide,
    );
    let text = words::what_would_change_it(&ranking(&f).unwrap().0);
    assert!(text.contains("redb would rank first, though not clearly: the interval of its cold reads"), "{text}");
    // Cold reads as slow as warm ones relative to each other: no change, said so.
    for e in f.experiments.iter_mut().filter(|e| e.id == "cold/read/redb") {
        e.summary.per_op_us.median = 80.0;
    }
    let (r, _) = ranking(&f).unwrap();
    assert!(!r.changes.iter().any(|c| matches!(c, Change::Cold { .. })), "{:?}", r.changes);
    assert!(words::what_would_change_it(&r)
        .contains("Cold reads (the page cache evicted before each run) do not change the leader."));
}

/// The aging pass at ages 0 and 2: SQLite's reads 3x slower and its file
/// 1.4x larger after two rewrites of every blob; the others unchanged.
fn with_aging(f: &mut ResultFile) {
    use crate::studies::aging::{
        rounds_id, AgePoint, AgingSection, AgingSetting, Fragmentation, LayoutInfo, ReadFigures, SizeSetting, Usage,
    };
    let layouts = [
        ("db-wal", 6.0, 10_000_000),
        ("files-rename", 13.0, 12_000_000),
        ("lmdb", 4.0, 14_000_000),
        ("redb", 20.0, 16_000_000),
    ];
    let point = |layout: &str, age: u32, us: f64, allocated: u64| AgePoint {
        layout: layout.into(),
        age,
        remedy: None,
        rewrite: None,
        read_warm: Some(ReadFigures { runs: 4, per_op_us: us, cv_pct: 1.0, mb_per_s: 1.0, p50_us: us, p99_us: us }),
        read_cold: None,
        usage: Usage { allocated_bytes: allocated, ..Usage::default() },
        fragmentation: Fragmentation::default(),
    };
    let mut points = Vec::new();
    for (l, us, bytes) in layouts {
        points.push(point(l, 0, us, bytes));
        let (us, bytes) = if l == "db-wal" { (us * 3.0, bytes * 14 / 10) } else { (us, bytes) };
        points.push(point(l, 2, us, bytes));
    }
    let arms: Vec<(&str, f64)> =
        points.iter().filter(|p| p.age == 2).map(|p| (p.layout.name(), p.read_warm.unwrap().per_op_us)).collect();
    let wobble: Vec<Vec<f64>> = (0..4).map(|i| vec![if i % 2 == 0 { 1.01 } else { 0.99 }; 4]).collect();
    let sizes = SizeSetting::article();
    let set = rounds(&rounds_id(&sizes.name, 2, false), &arms, &wobble);
    let kind = |l: &str| match l {
        "db-wal" => crate::engine::sqlite::KIND,
        "files-rename" => crate::engine::files::FLAT_KIND,
        other => EngineKind::from_name(other).unwrap(),
    };
    f.aging = Some(AgingSection {
        ages: vec![0, 2],
        churn_pct: 0.0,
        settings: vec![AgingSetting {
            sizes,
            count: 400,
            layouts: layouts
                .iter()
                .map(|(l, _, _)| LayoutInfo { id: (*l).into(), title: (*l).into(), engine: kind(l) })
                .collect(),
            points,
            remedies: Vec::new(),
            crossover: Vec::new(),
            rounds: vec![set],
        }],
        commit_every: None,
    });
}

#[test]
fn the_aging_pass_is_evidence_and_can_change_the_leader() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    with_aging(&mut f);
    let (r, _) = ranking(&f).unwrap();
    assert_eq!(r.ranked[0].store, Store::Sqlite);
    let sqlite = r.ranked[0].aged.expect("SQLite aged as db-wal");
    assert_eq!((sqlite.age, sqlite.reads), (2, None), "the leader has no factor against itself");
    assert!((sqlite.read_change.unwrap() - 3.0).abs() < 1e-9 && (sqlite.growth.unwrap() - 1.4).abs() < 1e-9);
    let redb = r.ranked.iter().find(|c| c.store == REDB).unwrap().aged.unwrap();
    let reads = redb.reads.expect("redb against db-wal at age 2");
    assert!(reads.paired && (reads.value - 20.0 / 18.0).abs() < 1e-9 && reads.rounds == 4, "{reads:?}");
    // Aged, at 90:10: SQLite 0.9 * 15 + 30 = 43.5 µs per op, redb 43.
    assert!(r.changes.contains(&Change::Aged { age: 2, leader: REDB }), "{:?}", r.changes);
    let text = words::what_would_change_it(&r);
    let aged =
        "After 2 rewrites of every blob (reads slowed or sped up as the aging pass measured), redb would rank first";
    assert!(text.contains(aged), "{text}");
    let out = page_lines(&f);
    let line = out.lines().find(|l| l.contains("reads after 2 rewrites: redb")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("redb 1.11x slower than SQLite; 1.11-1.11 (paired, 4 rounds) [chart aging-article-read-warm]"),
        "{line}"
    );
    assert!(out.contains("disk growth after 2 rewrites: redb grew 1.00x, SQLite 1.40x; exact"), "{out}");
    assert!(out.contains("After 2 rewrites of every blob (the aging pass, on a sample of 400 blobs"), "{out}");
    assert!(out.contains("SQLite reads 3.00x, space 1.40x"), "{out}");
    // The chart linked is drawn on the same page.
    let doc = crate::report::document(std::slice::from_ref(&f));
    assert!(crate::report::format::doc::figures(&doc).any(|x| x.id == "aging-article-read-warm"));
}

#[test]
fn the_suites_charts_under_the_advice_show_only_what_advise_measured() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    f.experiments.push(crate::report::fixtures::experiment("control/db-blob", 8.0));
    let doc = crate::report::document(std::slice::from_ref(&f));
    let ids: Vec<&str> = crate::report::format::doc::figures(&doc).map(|x| x.id.as_str()).collect();
    assert!(!ids.iter().any(|i| i.starts_with("chart")), "the article's charts need fopen/fread: {ids:?}");
    assert!(ids.contains(&"fair-read-blob-mmap") && ids.contains(&"durable-write"), "{ids:?}");
    assert!(!ids.contains(&"engines-write-fast"), "no fast writes with durability required: {ids:?}");
    for fig in crate::report::format::doc::figures(&doc) {
        if let crate::report::Chart::Bars(b) = &fig.chart {
            let gaps = b.values.iter().flatten().filter(|v| v.is_none()).count();
            assert_eq!(gaps, 0, "{}: {:?} has cells not measured", fig.id, b.series);
        }
    }
    for section in &doc {
        for block in &section.blocks {
            if let crate::report::Block::Table(t) = block {
                let gap = t.rows.iter().flatten().any(|c| c == crate::report::NOT_MEASURED);
                assert!(!gap, "{}: a table {:?} has cells not measured", section.id, t.headers);
            }
        }
    }
}
