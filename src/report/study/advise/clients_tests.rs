use super::*;
use crate::drivers::clients::WindowCount;
use crate::measure::rounds::{synthetic, RoundSet};
use crate::records::DbAccess;
use crate::report::format::doc::Chart;
use crate::studies::advise::clients::fixtures::{self, arm, CLOSE_P99, FILES_P99, TWICE_P99};
use crate::studies::advise::clients::{ClientsArmRecord, Harness};

/// SQLite (a connection per client, blob reads) and files at 1, 2 and 4
/// clients, six rounds; µs per op over all clients by arm (SQLite, files
/// at each count); round 3 is busy.
fn fixed(files_at_4: f64) -> (ClientsSection, RoundSet) {
    let rows = [Row::sqlite(DbWriters::PerClient, DbAccess::BlobApi), Row::of(Store::FilesReplace)];
    let arms: Vec<ClientsArmRecord> =
        [1, 2, 4].into_iter().flat_map(|n| rows.map(|r| (r, n))).map(|(r, n)| arm(r, n, Vec::new())).collect();
    let ids: Vec<&str> = arms.iter().map(|a| a.id.as_str()).collect();
    let rows: Vec<Vec<f64>> = [1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
        .into_iter()
        .map(|load| [10.0, 20.0, 10.0, 15.0, 10.0, files_at_4].map(|x| x * load).to_vec())
        .collect();
    let set = synthetic(ROUNDS_ID, &ids, &rows);
    let section = ClientsSection::threads_up_to_4(arms);
    (section, set)
}

#[test]
fn the_leader_change_names_the_count_and_its_paired_interval() {
    let (section, set) = fixed(5.0);
    let text = change(&section, &set);
    assert!(
        text.contains(
            "the leader changes beyond the noise at 4 clients, from SQLite, a connection per client, blob handle to \
             files, temp + rename"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "at each count: SQLite, a connection per client, blob handle at 1, SQLite, a connection per client, blob \
             handle at 2, files, temp + rename at 4."
        ),
        "{text}"
    );
    // The busy round slowed both alike: the paired ratio is exact.
    assert!(text.contains("takes 2.00x files, temp + rename's time per op there, 2.00-2.00, paired over 6 rounds"));
}

#[test]
fn the_recommendation_at_n_is_the_leader_there_or_a_tie_within_the_interval() {
    let (section, set) = fixed(5.0);
    let text = recommendation(&clients::at(&section, &set, 4), &section);
    assert!(
        text.starts_with(
            "Recommendation at 4 clients (threads), the concurrency asked for: files, temp + rename leads, 200,000 \
             ops/s"
        ),
        "{text}"
    );
    // Files at SQLite's time per op at 4 clients: a ratio of exactly 1,
    // its interval holding 1.0.
    let (section, set) = fixed(10.0);
    let text = recommendation(&clients::at(&section, &set, 4), &section);
    assert!(text.contains("the concurrency asked for: a tie between "), "{text}");
}

#[test]
fn a_leader_that_never_changes_is_said_with_the_counts_measured() {
    let (section, set) = fixed(12.0);
    assert_eq!(
        change(&section, &set),
        "With clients the leader does not change: SQLite, a connection per client, blob handle leads at every \
         count measured (1, 2, 4 clients)."
    );
}

#[test]
fn a_leader_within_the_noise_elsewhere_is_named_beside_the_one_client_leader() {
    let (section, _) = fixed(12.0);
    let ids: Vec<&str> = section.arms.iter().map(|a| a.id.as_str()).collect();
    // Files lead at 4 clients by their median (9 against 10), but one
    // round of six has them at 12: the paired interval holds 1.0.
    let rows: Vec<Vec<f64>> =
        [9.0, 9.0, 9.0, 9.0, 9.0, 12.0].into_iter().map(|files| vec![10.0, 20.0, 10.0, 15.0, 10.0, files]).collect();
    let set = synthetic(ROUNDS_ID, &ids, &rows);
    assert_eq!(
        change(&section, &set),
        "With clients the leader does not change beyond the noise: SQLite, a connection per client, blob handle \
         leads at 1 client, and the leaders at other counts (files, temp + rename at 4) do not beat it there \
         beyond the noise (their paired intervals against it hold 1.0)."
    );
}

#[test]
fn the_scaling_chart_draws_each_points_spread_over_the_rounds() {
    let (section, set) = fixed(5.0);
    let figure = chart(&section, &set, "");
    let Chart::Lines(lines) = &figure.chart else { panic!("a line chart") };
    let files = lines.series.iter().find(|s| s.name == "files, temp + rename").unwrap();
    // At 4 clients: 5 µs per op in five rounds, 10 in the busy one.
    assert_eq!(files.values[2], Some(200_000.0));
    assert_eq!(files.intervals[2], Some((100_000.0, 200_000.0)));
    assert_eq!(files.intervals.len(), section.levels.len());
    let svg = lines.to_svg();
    assert_eq!(svg.matches(r#"class="interval""#).count(), 6, "one bar per point");
    assert!(figure.caption[0].contains("slowest round to its fastest"));
}

#[test]
fn the_harness_cost_and_the_machine_at_n_are_stated() {
    let (mut section, set) = fixed(5.0);
    assert_eq!(harness(&section), None, "an older file says nothing");
    section.harness = Some(Harness { clients: 16, cost_ns: 31.0, share_pct: 0.25, candidate: "sqlite".into() });
    let text = harness(&section).unwrap();
    assert!(text.starts_with("Harness at 16 clients: one clock read and one histogram record per operation cost 31 ns"));
    assert!(text.contains("(16 threads measured at once) = 0.250% of the mean operation's latency"), "{text}");
    assert!(text.ends_with("(at most: SQLite, a connection per client, blob handle)."), "{text}");
    assert!(runs_note(&section, &set).contains("6 arms (each row at each client count), 6 interleaved rounds"));
    assert!(runs_note(&section, &set).contains("each run one window of 0.10 s shared by all its clients"));
    section.clients = 16;
    let m = machine(&section).unwrap();
    assert!(m.starts_with("16 clients on 2 cores: 16 clients take turns on 2 cores"), "{m}");
    section.cores = None;
    assert_eq!(machine(&section), None, "an older file does not say");
}

/// SQLite's two ways of writing and two access paths are four rows of
/// the ranking, each named by its access path on the page; nothing is set
/// aside.
#[test]
fn sqlites_access_paths_are_rows_named_on_the_page() {
    let rows = fixtures::access_path_rows();
    let (section, set) = fixtures::access_paths(16);
    let at = clients::at(&section, &set, 16);
    let text = recommendation(&at, &section);
    assert!(text.contains("SQLite, one writer connection, SQL leads, 33,333 ops/s"), "{text}");
    let t = table(&at, &section);
    let names: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "SQLite, one writer connection, SQL",
            "files, temp + rename",
            "SQLite, one writer connection, blob handle",
            "SQLite, a connection per client, blob handle",
            "SQLite, a connection per client, SQL",
        ]
    );
    assert!(t.notes.iter().all(|n| !n.contains("read path") && !n.contains("faster of")), "{:?}", t.notes);
    let how = configuration(rows[1], Durability::Required, ClientsAre::Threads);
    assert!(how.contains("access path: reads and writes through SQL (a prepared SELECT"), "{how}");
    let Chart::Lines(lines) = &chart(&section, &set, "").chart else { panic!("a line chart") };
    assert_eq!(lines.series.len(), 5, "one line per row");
}

/// Under a rate: files, LMDB and SQLite keep up at 4 clients, LMDB's p99
/// within the files' paired interval, SQLite's twice theirs in every
/// round; at 1 and 2 clients all alike.
fn at_rate() -> (ClientsSection, RoundSet) {
    let lmdb = Row::of(Store::Engine(crate::records::EngineKind::from_name("lmdb").unwrap()));
    let rows = [Row::of(Store::FilesReplace), lmdb, Row::sqlite(DbWriters::One, DbAccess::BlobApi)];
    let p99s_at_4 = [FILES_P99, CLOSE_P99, TWICE_P99];
    let arms: Vec<ClientsArmRecord> = [1, 2, 4]
        .into_iter()
        .flat_map(|n| rows.iter().zip(p99s_at_4).map(move |(&r, p)| (r, n, if n == 4 { p } else { [50.0; 6] })))
        .map(|(r, n, p)| arm(r, n, fixtures::rate_runs(p, false)))
        .collect();
    fixtures::at_rate(arms, vec![1, 2, 4])
}

/// Under a rate the table shows the p99 the ranking is by, and each one's
/// paired interval against the leader's, a tie called a tie; the
/// recommendation names the tie and the leader by that figure.
#[test]
fn under_a_rate_the_p99_is_a_column_and_a_tie_is_called_one() {
    let (section, set) = at_rate();
    let at = clients::at(&section, &set, 4);
    let t = table(&at, &section);
    let column = t.headers.iter().position(|h| h == "p99 at 200 ops/s (µs, median round)").expect("the p99 column");
    let vs = t.headers.iter().position(|h| h == "p99 vs leader (paired by round)").expect("its interval");
    let cells: Vec<(&str, &str, &str)> =
        t.rows.iter().map(|r| (r[0].as_str(), r[column].as_str(), r[vs].as_str())).collect();
    assert_eq!(cells[0], ("files, temp + rename", "100.0", "leader"));
    assert_eq!(cells[1].0, "LMDB");
    assert!(cells[1].2.starts_with("tied with the leader: 1.0"), "{cells:?}");
    assert!(cells[2].2.starts_with("2.0") && !cells[2].2.contains("tied"), "{cells:?}");
    let text = recommendation(&at, &section);
    assert!(
        text.contains(
            "at 200 ops/s over all clients (an open loop): a tie between files, temp + rename and LMDB, which keep up"
        ),
        "{text}"
    );
    assert!(text.contains("lowest median, 100.0 µs (every operation's p99 at 200 ops/s, the median round's"), "{text}");
    assert!(text.contains("; next SQLite, one writer connection, blob handle at 200.0 µs (2.00x"), "{text}");
}

/// Under a rate the headline chart is every operation's p99 at R against
/// clients, with each point's interval over the rounds; a closed loop's
/// stays throughput.
#[test]
fn under_a_rate_the_headline_chart_is_p99_against_clients() {
    let (section, set) = at_rate();
    let figure = chart(&section, &set, "");
    let Chart::Lines(lines) = &figure.chart else { panic!("a line chart") };
    assert_eq!(lines.title, "p99 at 200 ops/s against clients (threads)");
    assert_eq!(lines.y_label, "p99 of every operation, µs");
    let files = lines.series.iter().find(|s| s.name == "files, temp + rename").unwrap();
    assert_eq!(files.values, [Some(50.0), Some(50.0), Some(100.0)], "the median round's p99 at each count");
    assert_eq!(files.intervals[2], Some((90.0, 110.0)), "six rounds: the lowest to the highest");
    assert!(figure.caption[0].contains("the median of the rounds'"), "{:?}", figure.caption);
    let (closed, set) = fixed(5.0);
    let Chart::Lines(lines) = &chart(&closed, &set, "").chart else { panic!("a line chart") };
    assert_eq!(lines.y_label, "operations per second, all clients");
}

/// Under --rate a candidate that cannot keep up ranks below every one
/// that does, whatever its p99 or throughput; those that keep up rank by
/// p99.
#[test]
fn under_a_rate_keeping_up_ranks_first_then_the_p99() {
    let runs = |ops: u64, due: u64| {
        vec![WindowCount { ops, slowest: ops / 4, median: ops / 4, due: Some(due), ..WindowCount::default() }; 6]
    };
    let (lmdb, files, sqlite) = (
        Row::of(Store::Engine(crate::records::EngineKind::from_name("lmdb").unwrap())),
        Row::of(Store::FilesReplace),
        Row::sqlite(DbWriters::One, DbAccess::BlobApi),
    );
    // LMDB completes 90% (behind, yet the lowest p99 and most ops/s),
    // files 99.5% with a p99 of 3 ms, SQLite 100% with 1 ms.
    let mut arms =
        vec![arm(lmdb, 4, runs(900, 1000)), arm(files, 4, runs(995, 1000)), arm(sqlite, 4, runs(1000, 1000))];
    for (a, p99) in arms.iter_mut().zip([200.0, 3000.0, 1000.0]) {
        let latency = crate::measure::LatencySummary { count: 10, p99_us: p99, ..Default::default() };
        a.classes = vec![crate::studies::advise::clients::ClassLatency {
            class: "overwrite".into(),
            latency,
            histogram: String::new(),
        }];
    }
    let ids: Vec<&str> = arms.iter().map(|a| a.id.as_str()).collect();
    let set = synthetic(ROUNDS_ID, &ids, &vec![vec![5.0, 10.0, 10.0]; 6]);
    let section =
        ClientsSection { levels: vec![4], rate_ops_s: Some(10_000.0), ..ClientsSection::threads_up_to_4(arms) };
    let at = clients::at(&section, &set, 4);
    assert_eq!(at.ranked.iter().map(|a| a.row).collect::<Vec<_>>(), [sqlite, files, lmdb]);
    assert!(!at.ranked[2].keeps_up() && at.ranked[0].keeps_up());
    assert!(at.ranked.iter().all(|a| a.against_leader.is_none()), "no throughput ratios at a rate");
    let text = recommendation(&at, &section);
    assert!(
        text.starts_with(
            "Recommendation at 4 clients (threads), at 10,000 ops/s over all clients (an open loop): SQLite, one \
             writer connection, blob handle keeps up with the lowest p99, 1,000 µs (every operation's p99 at 10,000 \
             ops/s, over every timed run; its client furthest behind started 100.0% of its operations due in time)"
        ),
        "{text}"
    );
    // An older file kept no round's p99: the table says what its p99 is.
    assert!(table(&at, &section).notes.iter().any(|n| n.starts_with("This file kept no round's p99")));
    // None keeps up: none is recommended, the closest named.
    let mut behind = section.clone();
    for a in &mut behind.arms {
        a.runs = runs(500, 1000);
    }
    let text = recommendation(&clients::at(&behind, &set, 4), &behind);
    assert!(text.contains("none; no candidate keeps up (every client starting 99% of its operations due"), "{text}");
}
