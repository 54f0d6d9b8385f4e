use super::fixtures::{self, CLOSE_P99, FILES_P99, TWICE_P99};
use super::*;
use crate::measure::rounds::synthetic;
use crate::measure::{Latency, LatencySink, LatencySummary};
use crate::records::EngineKind;
use crate::records::{DbAccess, DbWriters};

#[test]
fn client_counts_double_up_to_n() {
    assert_eq!(levels(1), [1]);
    assert_eq!(levels(2), [1, 2]);
    assert_eq!(levels(8), [1, 2, 4, 8]);
    assert_eq!(levels(6), [1, 2, 4, 6]);
    assert_eq!(levels(1024).len(), 11);
}

#[test]
fn bad_plans_are_refused() {
    let plan = |clients, are, p99_write| ClientsPlan { clients, are, p99_write, ..ClientsPlan::ONE };
    let stores = [Store::Sqlite];
    assert!(plan(0, ClientsAre::Threads, None)
        .validate(&stores, true)
        .unwrap_err()
        .to_string()
        .contains("--clients 0"));
    assert!(plan(1025, ClientsAre::Threads, None).validate(&stores, true).is_err());
    assert!(plan(4, ClientsAre::Threads, Some(Duration::ZERO))
        .validate(&stores, true)
        .unwrap_err()
        .to_string()
        .contains("--p99-write"));
    assert!(plan(4, ClientsAre::Processes, None).validate(&stores, true).is_err(), "no program to start");
    assert!(plan(1024, ClientsAre::Threads, Some(Duration::from_millis(5))).validate(&stores, true).is_ok());
    for rate in [0.0, -1.0, 1e7] {
        let p = ClientsPlan { rate: Some(rate), ..plan(2, ClientsAre::Threads, None) };
        assert!(p.validate(&stores, true).unwrap_err().to_string().contains("--rate"));
    }
    // SQLite's one writer connection asked for with client processes.
    let launcher = Some(Launcher { exe: "/bin/true".into(), args: Vec::new() });
    for asked in [SqliteWriters::Only(DbWriters::One), SqliteWriters::Both] {
        let p = ClientsPlan {
            launcher: launcher.clone(),
            sqlite_writers: Some(asked),
            ..plan(4, ClientsAre::Processes, None)
        };
        let e = p.validate(&stores, true).unwrap_err().to_string();
        assert!(e.starts_with("--sqlite-writers one with --clients-are processes: SQLite's one writer"), "{e}");
    }
    let p = ClientsPlan { launcher, ..plan(4, ClientsAre::Processes, None) };
    assert!(p.validate(&stores, true).is_ok(), "by default processes measure a connection per client");
    assert_eq!(p.rows(Store::Sqlite).len(), 2, "its two access paths");
    assert_eq!(plan(4, ClientsAre::Threads, None).rows(Store::Sqlite).len(), 4, "and with threads, one writer too");
    assert!(!plan(1, ClientsAre::Threads, None).runs());
    assert!(ClientsPlan { rate: Some(100.0), ..plan(1, ClientsAre::Threads, None) }.runs(), "--rate at one client");
}

/// Under processes, redb and fjall (one process alone may open their
/// stores) are excluded with the reason each engine declares; when no
/// candidate remains the one line names each reason.
#[test]
fn processes_exclude_the_stores_one_process_alone_may_open() {
    let kind = |n| Store::Engine(EngineKind::from_name(n).unwrap());
    let (redb, fjall, lmdb) = (kind("redb"), kind("fjall"), kind("lmdb"));
    let all = [Store::Sqlite, Store::FilesReplace, lmdb, redb, fjall];
    assert!(excluded(&all, ClientsAre::Threads).is_empty());
    let out = excluded(&all, ClientsAre::Processes);
    assert_eq!(out.iter().map(|e| e.candidate.name()).collect::<Vec<_>>(), ["sqlite-one-writer", "redb", "fjall"]);
    assert!(out.iter().all(|e| e.why.contains("one process")), "{out:?}");
    let out: Vec<ClientsExclusion> = out.into_iter().skip(1).collect();
    let launcher = Launcher { exe: "/bin/true".into(), args: Vec::new() };
    let plan = ClientsPlan { clients: 2, are: ClientsAre::Processes, launcher: Some(launcher), ..ClientsPlan::ONE };
    assert!(plan.validate(&all, true).is_ok());
    let e = plan.validate(&[redb, fjall], true).unwrap_err().to_string();
    assert!(e.starts_with("--clients-are processes: no candidate remains"), "{e}");
    assert!(e.contains(&format!("redb: {}", out[0].why)) && e.contains(&format!("fjall: {}", out[1].why)), "{e}");
    assert!(!e.contains('\n'));
    // One client is no clients' stage: nothing to exclude.
    assert!(ClientsPlan { clients: 1, ..plan.clone() }.validate(&[redb], true).is_ok());
    // SQLite alone keeps its per-client rows.
    assert!(plan.validate(&[Store::Sqlite], true).is_ok());
}

/// A latency histogram of `values` (ns), serialised.
fn histogram(values: &[u64]) -> (Latency, String) {
    let mut l = Latency::new();
    for &v in values {
        l.record(v);
    }
    let text = l.to_base64();
    (l, text)
}

#[test]
fn merged_histograms_give_the_percentiles_of_every_sample_pooled() {
    // Four clients, one slow: averaging their p99s would hide it.
    let clients: Vec<Vec<u64>> =
        (0..4u64).map(|c| (1..=1000u64).map(|i| if c == 3 { i * 1000 * 50 } else { i * 1000 + c }).collect()).collect();
    let encoded: Vec<String> = clients.iter().map(|v| histogram(v).1).collect();
    let merged = merge_histograms(&encoded.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
    let pooled: Vec<u64> = clients.concat();
    let (all, _) = histogram(&pooled);
    assert_eq!(merged.count(), 4000);
    assert_eq!(merged.summary(), all.summary(), "exactly the pooled samples' histogram");
    assert!(merge_histograms(&["not base64"]).is_err());
}

/// `store`'s arm at `clients` (SQLite's a connection per client through
/// the blob handle), 100 operations per run, with a write p99.
fn record(store: Store, clients: u32, write_p99_us: f64) -> ClientsArmRecord {
    let latency = LatencySummary { count: 10, p99_us: write_p99_us, ..LatencySummary::default() };
    let row =
        if store == Store::Sqlite { Row::sqlite(DbWriters::PerClient, DbAccess::BlobApi) } else { Row::of(store) };
    ClientsArmRecord {
        ops_per_run: 100,
        busy_waits: u64::from(clients) * 3,
        classes: vec![ClassLatency { class: "overwrite".into(), latency, histogram: String::new() }],
        ..fixtures::arm(row, clients, Vec::new())
    }
}

/// SQLite leads alone and at 2 clients; at 4 the files' throughput,
/// which grows with clients, passes it.
fn scaling() -> (ClientsSection, RoundSet) {
    let (db, files) = (Store::Sqlite, Store::FilesReplace);
    let lmdb = Store::Engine(EngineKind::from_name("lmdb").unwrap());
    let mut arms = Vec::new();
    for n in [1, 2, 4] {
        arms.extend([record(db, n, 300.0), record(files, n, 900.0 * f64::from(n)), record(lmdb, n, 200.0)]);
    }
    let ids: Vec<String> = arms.iter().map(|a| a.id.clone()).collect();
    // µs per op over all clients, by arm, in six rounds; round 3 is busy.
    let row = |load: f64| {
        vec![10.0, 30.0, 20.0, 10.0, 15.0, 20.0, 10.0, 7.5, 25.0].into_iter().map(|x| x * load).collect::<Vec<_>>()
    };
    let rows: Vec<Vec<f64>> = [1.0, 1.0, 3.0, 1.0, 1.0, 1.0].into_iter().map(row).collect();
    let set = synthetic(ROUNDS_ID, &ids.iter().map(String::as_str).collect::<Vec<_>>(), &rows);
    let section = ClientsSection::threads_up_to_4(arms);
    (section, set)
}

#[test]
fn the_ranking_at_n_is_by_throughput_with_paired_intervals() {
    let (section, set) = scaling();
    let at1 = at(&section, &set, 1);
    let order: Vec<Store> = at1.ranked.iter().map(|a| a.row.store).collect();
    assert_eq!(order[0], Store::Sqlite);
    assert_eq!(order[2], Store::FilesReplace);
    assert!((at1.ranked[0].ops_per_s - 100_000.0).abs() < 1e-6, "1e6 / 10 µs");
    assert!(at1.ranked[0].against_leader.is_none());
    let files = at1.ranked[2].against_leader.clone().unwrap();
    // The busy round slowed every arm alike: the paired ratio is exact.
    assert!((files.value - 3.0).abs() < 1e-9 && (files.low - 3.0).abs() < 1e-9, "{files:?}");
    let at4 = at(&section, &set, 4);
    assert_eq!(at4.ranked[0].row, Row::of(Store::FilesReplace));
    assert_eq!(at4.ranked[0].write_p99_us, Some(3600.0));
    assert_eq!(at4.ranked[1].busy_waits, 12);
}

#[test]
fn a_write_p99_over_the_need_excludes_at_n() {
    let (mut section, set) = scaling();
    section.p99_write_us = Some(1000.0);
    let at4 = at(&section, &set, 4);
    assert_eq!(at4.over_p99.iter().map(|a| a.row.store).collect::<Vec<_>>(), [Store::FilesReplace]);
    assert_eq!(at4.ranked[0].row.store, Store::Sqlite, "the next by throughput leads");
    assert!(at4.ranked.iter().all(|a| a.write_p99_us.unwrap() <= 1000.0));
}

#[test]
fn the_client_count_where_the_leader_changes_is_named() {
    let (section, set) = scaling();
    let (leaders, change) = leader_change(&section, &set);
    let sqlite = Some(Row::sqlite(DbWriters::PerClient, DbAccess::BlobApi));
    assert_eq!(leaders, [(1, sqlite), (2, sqlite), (4, Some(Row::of(Store::FilesReplace)))]);
    assert_eq!(change, Some(4));
    // At one client the ranking is today's: one level, no change.
    let one = ClientsSection { levels: vec![1], ..section };
    assert_eq!(leader_change(&one, &set).1, None);
}

/// A candidate that leads at N by the median alone, its paired interval
/// against the one-client leader straddling 1, is a tie, not a change.
#[test]
fn a_lead_within_the_noise_is_no_change_of_leader() {
    let (section, _) = scaling();
    let ids: Vec<String> = section.arms.iter().map(|a| a.id.clone()).collect();
    // µs per op; at 4 clients SQLite takes 10 in every round, files take 9
    // in four rounds and 11 in two.
    let rows: Vec<Vec<f64>> = [9.0, 9.0, 11.0, 9.0, 11.0, 9.0]
        .into_iter()
        .map(|files| vec![10.0, 30.0, 20.0, 10.0, 15.0, 20.0, 10.0, files, 25.0])
        .collect();
    let set = synthetic(ROUNDS_ID, &ids.iter().map(String::as_str).collect::<Vec<_>>(), &rows);
    let (leaders, change) = leader_change(&section, &set);
    assert_eq!(leaders.last(), Some(&(4, Some(Row::of(Store::FilesReplace)))), "files lead at 4 by the median");
    assert_eq!(change, None, "but SQLite was faster in two of six rounds");
}

/// The clients' stage with --quick: windows shorter than without; its
/// least time is every arm's warm-up and promised rounds of its window
/// (and the lead before it), and a second per arm to open and survey its
/// store. Under a rate, windows hold 200 due operations per client, within
/// four times the closed loop's.
#[test]
fn the_least_time_covers_every_arm_s_runs_at_their_window() {
    assert!(run_time(true) < run_time(false));
    let mut o = crate::studies::advise::tests::options(std::path::Path::new("."));
    o.opts.clients = ClientsPlan { clients: 8, ..ClientsPlan::ONE };
    // SQLite's four rows (two ways of writing, two access paths) and the rest once.
    let rows = (o.advise().stores().len() + 3) as f64;
    let runs = f64::from(crate::studies::advise::LEAST_ROUNDS + 1);
    for quick in [true, false] {
        o.ctx.quick = quick;
        let per_row: f64 = [1u32, 2, 4, 8]
            .map(|n| runs * (run_time(quick) + crate::drivers::clients::lead(n)).as_secs_f64() + 1.0)
            .iter()
            .sum();
        assert_eq!(least_time(&o.advise()).as_secs_f64(), (rows * per_row).ceil(), "quick {quick}");
    }
    o.opts.clients = ClientsPlan::ONE;
    assert_eq!(least_time(&o.advise()), Duration::ZERO, "one client: no clients' stage");
    // 200 due per client: 0.2 s at 8,000 ops/s over 8 clients.
    assert_eq!(window(false, 8, Some(8000.0)), Duration::from_millis(400), "at least the closed loop's");
    assert_eq!(window(false, 8, Some(2000.0)), Duration::from_millis(800));
    assert_eq!(window(true, 16, Some(10.0)), run_time(true) * 4, "at most four times it");
}

/// Every arm of the clients' rounds has a seed of its own: two rows on
/// one SQLite file writing the same content in their k-th runs would make
/// the second's commits empty.
#[test]
fn every_row_and_client_count_writes_content_of_its_own() {
    let mut seeds: Vec<u64> = (0..4).flat_map(|r| levels(1024).into_iter().map(move |n| arm_seed(7, r, n))).collect();
    let all = seeds.len();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), all);
}

/// Under a rate: each row at each of `levels`, keeping up in six rounds
/// (or, where `behind`, its furthest client 5% behind), with every
/// operation's p99 in each round (µs) as given.
fn at_rate(arms: &[(Row, u32, [f64; 6], bool)], levels: Vec<u32>) -> (ClientsSection, RoundSet) {
    let records = arms
        .iter()
        .map(|&(row, n, p99s, behind)| ClientsArmRecord {
            id: arm_id(row, n),
            sqlite: row.sqlite,
            runs: fixtures::rate_runs(p99s, behind),
            ..record(row.store, n, 100.0)
        })
        .collect();
    fixtures::at_rate(records, levels)
}

/// Under a rate those that keep up rank by the median round's p99, each
/// against the leader's paired by round; one whose interval holds 1 is
/// tied with the leader, not behind it.
#[test]
fn under_a_rate_a_p99_within_the_paired_interval_is_a_tie() {
    let lmdb = Row::of(Store::Engine(EngineKind::from_name("lmdb").unwrap()));
    let (files, sqlite) = (Row::of(Store::FilesReplace), Row::sqlite(DbWriters::One, DbAccess::BlobApi));
    let arms = [(sqlite, 4, TWICE_P99, false), (lmdb, 4, CLOSE_P99, false), (files, 4, FILES_P99, false)];
    let (section, set) = at_rate(&arms, vec![4]);
    let ranking = at(&section, &set, 4);
    assert_eq!(ranking.ranked.iter().map(|a| a.row).collect::<Vec<_>>(), [files, lmdb, sqlite]);
    assert_eq!(ranking.ranked[0].rate_p99_us(), Some(100.0), "the median round's p99");
    assert_eq!(ranking.ranked[1].round_p99.map(|r| (r.low, r.high)), Some((96.0, 120.0)));
    assert!(ranking.ranked[1].tied_with_leader(), "{:?}", ranking.ranked[1].against_leader);
    let twice = ranking.ranked[2].against_leader.clone().expect("paired by round");
    assert!(!ranking.ranked[2].tied_with_leader() && twice.low > 1.9 && twice.high < 2.1, "{twice:?}");
}

/// Under a rate the leader changes across client counts only beyond the
/// interval: a lead by the median p99 alone is none, a lead on every
/// round is one, and so is a one-client leader that no longer keeps up.
#[test]
fn under_a_rate_the_leader_changes_only_outside_the_interval() {
    let lmdb = Row::of(Store::Engine(EngineKind::from_name("lmdb").unwrap()));
    let files = Row::of(Store::FilesReplace);
    let change = |lmdb_at_4: [f64; 6], files_behind: bool| {
        let arms = [
            (files, 1, FILES_P99, false),
            (lmdb, 1, TWICE_P99, false),
            (files, 4, CLOSE_P99, files_behind),
            (lmdb, 4, lmdb_at_4, false),
        ];
        let (section, set) = at_rate(&arms, vec![1, 4]);
        leader_change(&section, &set)
    };
    let (leaders, within) = change(FILES_P99, false);
    assert_eq!(leaders, [(1, Some(files)), (4, Some(lmdb))], "LMDB leads at 4 by the median");
    assert_eq!(within, None, "but its interval against the files holds 1");
    assert_eq!(change(FILES_P99.map(|p| p / 2.0), false).1, Some(4), "half the files' p99 in every round");
    assert_eq!(change(TWICE_P99, true).1, Some(4), "the files no longer keep up at 4");
}

/// SQLite's two ways of writing and two access paths are four rows, each
/// ranked like any candidate: none is set aside for another's figure.
#[test]
fn sqlites_access_paths_are_rows_ranked_on_their_own() {
    let rows = fixtures::access_path_rows();
    let (section, set) = fixtures::access_paths(4);
    let ranking = at(&section, &set, 4);
    let order: Vec<Row> = ranking.ranked.iter().map(|a| a.row).collect();
    assert_eq!(order, [rows[1], rows[4], rows[0], rows[2], rows[3]]);
    let blob = &ranking.ranked[2];
    assert_eq!(blob.against_leader.as_ref().map(|r| r.value), Some(40.0 / 30.0), "against the leader like any row");
}
