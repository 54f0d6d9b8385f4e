//! The conclusions table from fixed results: which points are paired, the
//! factors, and each verdict.

use super::*;
use crate::measure::Latency;
use crate::records::DbWriters;
use crate::records::SyncLevel;
use crate::studies::concurrency::blobs::BlobPoint;
use crate::studies::concurrency::ids;
use crate::studies::concurrency::points::{self, PointRun, SideRun};
use crate::studies::concurrency::writers::{WriterPoint, Writers};
use crate::studies::concurrency::StoreId;

fn cfg(sharing: Sharing, journal: Journal, shared_cache: bool, read_only: bool) -> Config {
    Config { sharing, journal, shared_cache, read_only, sync: SyncLevel::Full }
}

fn side(rate: f64) -> SideRun {
    SideRun {
        threads: 1,
        ops: rate as u64,
        failed_ops: 0,
        busy_errors: 0,
        locked_errors: 0,
        ops_per_s: rate,
        per_thread_ops_per_s: vec![rate],
    }
}

/// A point whose readers and/or writers ran at the given rates.
fn pt(w: Workload, c: Config, threads: u32, reads: Option<f64>, writes: Option<f64>) -> Point {
    let run = PointRun {
        elapsed_ns: 1_000_000_000,
        reads: reads.map(side),
        writes: writes.map(side),
        os: Default::default(),
        rows_before: 0,
        rows_found: writes.map(|w| w as u64),
        integrity: writes.map(|_| "ok".to_string()),
    };
    let lat = Latency::new();
    points::point(w, c, threads, vec![run], (&lat, &lat), 20.0)
}

/// A blob reader point of `store` at `threads` threads.
fn blob_point(name: &str, threads: u32, reads_per_s: f64) -> BlobPoint {
    let store = StoreId::parse(name).unwrap();
    BlobPoint {
        store,
        label: name.to_string(),
        threads,
        experiment_id: crate::studies::concurrency::ids::reader_experiment(store, threads),
        mb_per_s: 0.0,
        reads_per_s,
        latency: None,
        noisy: false,
        cpu_us_per_read: 1.0,
        cores_used: 1.0,
        writes_per_s: None,
    }
}

fn find<'a>(cs: &'a [Conclusion], start: &str) -> &'a Conclusion {
    cs.iter().find(|c| c.claim.starts_with(start)).unwrap_or_else(|| panic!("no conclusion {start:?}"))
}

use Journal::{Delete, Wal};
use Sharing::{PerThread, Shared};
use Workload::{Mixed, Read, Write};

fn fixture() -> Vec<Point> {
    let base = cfg(PerThread, Wal, false, false);
    vec![
        // Reads: WAL 3x at 1 and 2 threads, a tie at 4.
        pt(Read, base, 1, Some(300.0), None),
        pt(Read, cfg(PerThread, Delete, false, false), 1, Some(100.0), None),
        pt(Read, base, 2, Some(600.0), None),
        pt(Read, cfg(PerThread, Delete, false, false), 2, Some(200.0), None),
        pt(Read, base, 4, Some(420.0), None),
        pt(Read, cfg(PerThread, Delete, false, false), 4, Some(400.0), None),
        // Shared cache: slower at 2 threads, faster at 4.
        pt(Read, cfg(PerThread, Wal, true, false), 2, Some(500.0), None),
        pt(Read, cfg(PerThread, Wal, true, false), 4, Some(500.0), None),
        // Read-only: 2% apart.
        pt(Read, cfg(PerThread, Wal, false, true), 2, Some(612.0), None),
        // Sharing: same at 1 thread, per-thread 2x at 2 (= cores), shared 1.5x at 4.
        pt(Read, cfg(Shared, Wal, false, false), 1, Some(300.0), None),
        pt(Read, cfg(Shared, Wal, false, false), 2, Some(300.0), None),
        pt(Read, cfg(Shared, Wal, false, false), 4, Some(630.0), None),
        // Writes: shared slower (0.9 of per-thread) at 2 threads.
        pt(Write, base, 2, None, Some(100.0)),
        pt(Write, cfg(Shared, Wal, false, false), 2, None, Some(90.0)),
        pt(Write, cfg(PerThread, Delete, false, false), 2, None, Some(20.0)),
        // Mixed: per-thread WAL best for reads (tied), worst for writes.
        pt(Mixed, base, 2, Some(100.0), Some(50.0)),
        pt(Mixed, cfg(Shared, Wal, false, false), 2, Some(95.0), Some(100.0)),
    ]
}

#[test]
fn verdicts_and_factors_from_fixed_points() {
    let cs = evaluate(&fixture(), Extensions::default(), 2);
    let wal = find(&cs, "WAL is faster than the default journal");
    assert_eq!((wal.verdict, wal.confirming, wal.comparisons.len()), (Verdict::Partly, 2, 3));
    assert!((wal.factor_max.unwrap() - 3.0).abs() < 1e-9 && (wal.factor_min.unwrap() - 1.05).abs() < 1e-9);
    let geo = (3.0f64 * 3.0 * 1.05).powf(1.0 / 3.0);
    assert!((wal.factor.unwrap() - geo).abs() < 1e-9, "geometric mean");

    let w = find(&cs, "WAL drastically");
    assert_eq!(w.verdict, Verdict::Holds);
    assert!((w.factor.unwrap() - 5.0).abs() < 1e-9);

    let cache = find(&cs, "A shared cache is never faster");
    assert_eq!((cache.verdict, cache.confirming), (Verdict::Partly, 1), "{:?}", cache.comparisons);
    let none = find(&cs, "A shared cache makes no real difference");
    assert_eq!(none.verdict, Verdict::NotMeasured);

    let ro = find(&cs, "Read-only");
    assert_eq!(ro.verdict, Verdict::Holds);
    assert!((ro.factor.unwrap() - 1.02).abs() < 1e-9);

    assert_eq!(find(&cs, "With one thread").verdict, Verdict::Holds);
    let up_to = find(&cs, "Reading, threads <= cores");
    assert_eq!((up_to.verdict, up_to.comparisons.len()), (Verdict::Holds, 1));
    assert!((up_to.factor.unwrap() - 2.0).abs() < 1e-9);
    let above = find(&cs, "Reading, threads > cores");
    assert_eq!(above.verdict, Verdict::Holds);
    assert!((above.factor.unwrap() - 1.5).abs() < 1e-9);
    assert_eq!(above.comparisons[0].threads, 4);

    let writes = find(&cs, "Writing: a shared connection");
    assert_eq!(writes.verdict, Verdict::DoesNotHold, "0.9x is below the tie band");

    let mixed_reads = find(&cs, "Mixed: a connection per thread with WAL is best (reads)");
    assert_eq!(mixed_reads.verdict, Verdict::Holds, "best by 5%: a tie with the best counts");
    let mixed_writes = find(&cs, "Mixed: a connection per thread with WAL is best (writes)");
    assert_eq!(mixed_writes.verdict, Verdict::DoesNotHold);
    assert!((mixed_writes.factor.unwrap() - 0.5).abs() < 1e-9);
    assert_eq!(find(&cs, "WAL is faster for mixed reads and writes (reads)").verdict, Verdict::NotMeasured);
}

#[test]
fn the_core_count_moves_the_split() {
    let cs = evaluate(&fixture(), Extensions::default(), 4);
    assert_eq!(find(&cs, "Reading, threads <= cores").verdict, Verdict::Partly, "per-thread wins at 2, loses at 4");
    assert_eq!(find(&cs, "Reading, threads > cores").verdict, Verdict::NotMeasured);
}

#[test]
fn blob_lead_per_thread_count() {
    let bp = blob_point;
    let b = BlobReaders {
        blobs: 10,
        blob_size: 10_000,
        reads_per_run: 100,
        points: vec![
            bp("db", 1, 100.0),
            bp("db-mmap", 1, 150.0),
            bp("files", 1, 100.0),
            bp("db", 2, 100.0),
            bp("db-mmap", 2, 90.0),
            bp("files", 2, 200.0),
        ],
    };
    let leads = b.leads(&[]);
    assert_eq!(leads.len(), 2, "4 threads not measured");
    assert_eq!((leads[0].a.as_str(), leads[0].ratio), ("db-mmap", 1.5));
    assert_eq!((leads[1].a.as_str(), leads[1].ratio), ("db", 0.5));
    let cs = evaluate(&[], Extensions { blobs: Some(&b), ..Extensions::default() }, 2);
    let c = find(&cs, "Extension: SQLite keeps its lead");
    assert_eq!((c.verdict, c.confirming), (Verdict::Partly, 1));
}

/// A point of several runs (rounds), readers at the given rates.
fn pt_runs(c: Config, rates: &[f64]) -> Point {
    let runs = rates
        .iter()
        .map(|&r| PointRun {
            elapsed_ns: 1_000_000_000,
            reads: Some(side(r)),
            writes: None,
            os: Default::default(),
            rows_before: 0,
            rows_found: None,
            integrity: None,
        })
        .collect();
    let lat = Latency::new();
    points::point(Read, c, 2, runs, (&lat, &lat), 20.0)
}

#[test]
fn ratios_are_paired_by_round() {
    // Rounds 2 and 5 ran on a busy machine: both points lost half their rate.
    let wal = pt_runs(cfg(PerThread, Wal, false, false), &[300.0, 150.0, 300.0, 300.0, 150.0, 300.0, 150.0]);
    let delete = pt_runs(cfg(PerThread, Delete, false, false), &[100.0, 50.0, 100.0, 100.0, 50.0, 100.0, 50.0]);
    let c = Comparison::of(Read, &wal, &delete, false).unwrap();
    let p = c.paired.as_ref().expect("several rounds: paired");
    assert!([p.low, p.value, p.high, c.ratio].iter().all(|v| (v - 3.0).abs() < 1e-9), "{p:?}");
    assert_eq!(p.rounds, 7);
    // A round missing on one side (an interrupted run): only common rounds pair.
    let short = pt_runs(cfg(PerThread, Delete, false, false), &[100.0, 50.0]);
    assert_eq!(Comparison::of(Read, &wal, &short, false).unwrap().paired.unwrap().rounds, 2);
}

/// Rounds `id` of two arms, per round (first arm's, second arm's) per-op time.
fn two_arm_rounds(id: &str, arms: [&str; 2], times: &[(f64, f64)]) -> RoundSet {
    let rows: Vec<Vec<f64>> = times.iter().map(|&(a, b)| vec![a, b]).collect();
    crate::measure::rounds::synthetic(id, &arms, &rows)
}

#[test]
fn blob_leads_are_paired_from_the_readers_rounds() {
    let bp = |store: &str, reads_per_s: f64| blob_point(store, 1, reads_per_s);
    let b = BlobReaders {
        blobs: 10,
        blob_size: 10_000,
        reads_per_run: 100,
        points: vec![bp("db", 100.0), bp("files", 80.0)],
    };
    // Per-op times: files take 2x the database's time in every round.
    let times = [(10.0, 20.0), (30.0, 60.0), (10.0, 20.0), (11.0, 22.0), (10.0, 20.0), (12.0, 24.0)];
    let set = two_arm_rounds("concurrency/blobs/t1", ["blobs/db/t1", "blobs/files/t1"], &times);
    let lead = &b.leads(std::slice::from_ref(&set))[0];
    assert!((lead.ratio - 2.0).abs() < 1e-9, "paired, not the medians' 1.25: {lead:?}");
    assert_eq!(lead.paired.as_ref().unwrap().rounds, 6);
    assert_eq!(b.leads(&[])[0].ratio, 1.25, "without rounds: the ratio of the medians");
}

/// The stores beside a writer at 2 threads: by their medians, the database
/// reads 10% faster; round by round, 1.5x (a busy round slowed both).
fn with_writer() -> (BlobReaders, RoundSet) {
    let bp = |store: &str, reads_per_s: f64| blob_point(store, 2, reads_per_s);
    let b = BlobReaders {
        blobs: 10,
        blob_size: 10_000,
        reads_per_run: 100,
        points: vec![bp("db", 300.0), bp("files", 100.0), bp("db-wal-writer", 110.0), bp("files-writer", 100.0)],
    };
    let times = [(10.0, 15.0), (40.0, 60.0), (10.0, 15.0), (12.0, 18.0), (10.0, 15.0), (10.0, 15.0), (11.0, 16.5)];
    let set =
        two_arm_rounds("concurrency/blobs-writer/t2", ["blobs/db-wal-writer/t2", "blobs/files-writer/t2"], &times);
    (b, set)
}

#[test]
fn writer_leads_are_paired_from_the_writer_rounds() {
    let (b, set) = with_writer();
    let leads = b.writer_leads(std::slice::from_ref(&set));
    assert_eq!(leads.len(), 1, "only 2 threads measured");
    let l = &leads[0];
    assert_eq!((l.threads, l.a.as_str(), l.b.as_str()), (2, "db-wal-writer", "files-writer"));
    let p = l.paired.as_ref().expect("paired by round");
    assert!((l.ratio - 1.5).abs() < 1e-9 && (p.low - 1.5).abs() < 1e-9 && (p.high - 1.5).abs() < 1e-9, "{l:?}");
    assert_eq!((p.rounds, p.outliers.len()), (7, 0), "the busy round is cancelled, not far out");
    let alone = &b.leads(std::slice::from_ref(&set))[0];
    assert_eq!((alone.ratio, alone.paired.is_none()), (3.0, true), "the writer rounds do not pair the stores alone");
}

#[test]
fn writer_leads_without_rounds_or_with_broken_rounds_are_unpaired() {
    let (b, mut set) = with_writer();
    let old = &b.writer_leads(&[])[0];
    assert!(old.paired.is_none() && (old.ratio - 1.1).abs() < 1e-9, "older files: the medians' ratio: {old:?}");
    set.rounds[2].per_op_us.pop();
    let broken = &b.writer_leads(std::slice::from_ref(&set))[0];
    assert!(broken.paired.is_none() && (broken.ratio - 1.1).abs() < 1e-9, "an arm missing from a round: unpaired");
}

/// A writers' point: `per_write_us` is its time per write, all writers.
fn writer_point(store: impl Into<StoreId>, writers: u32, per_write_us: f64) -> WriterPoint {
    WriterPoint::fixture(store.into(), writers, per_write_us)
}

/// SQLite and files at 1 and 2 writers: SQLite takes 160 us a write at
/// both; files 480 us at one writer and 240 at two. Round 2 ran on a busy
/// machine (everything twice as slow), round 4 a little.
fn writers_fixture() -> (Writers, RoundSet) {
    use crate::records::EngineKind::{Db, Flat};
    let base = [(Db, 1, 160.0), (Db, 2, 160.0), (Flat, 1, 480.0), (Flat, 2, 240.0)];
    let points: Vec<WriterPoint> = base.iter().map(|&(k, n, t)| writer_point(k, n, t)).collect();
    let arms: Vec<String> = points.iter().map(|p| p.experiment_id.clone()).collect();
    let arms: Vec<&str> = arms.iter().map(String::as_str).collect();
    let rows: Vec<Vec<f64>> =
        [1.0, 2.0, 1.0, 1.1, 1.0, 1.0].iter().map(|slow| base.iter().map(|b| b.2 * slow).collect()).collect();
    let set = crate::measure::rounds::synthetic(ids::WRITERS_ROUNDS, &arms, &rows);
    let w = Writers { blobs: 100, blob_size: 10_000, run_time_s: 0.2, busy_timeout_ms: 5000, points };
    (w, set)
}

#[test]
fn writer_conclusions_are_judged_over_the_rounds_with_intervals() {
    let (w, set) = writers_fixture();
    let rounds = std::slice::from_ref(&set);
    let cs = evaluate(&[], Extensions { writers: Some(&w), rounds, ..Extensions::default() }, 2);
    let lead = find(&cs, "Extension: SQLite's durable writes outpace files'");
    assert_eq!((lead.verdict, lead.confirming, lead.firm), (Verdict::Holds, 2, 2));
    let ratios: Vec<f64> = lead.comparisons.iter().map(|c| c.ratio).collect();
    assert!((ratios[0] - 3.0).abs() < 1e-9 && (ratios[1] - 1.5).abs() < 1e-9, "paired: {ratios:?}");
    let i = lead.interval.expect("every ratio paired: an interval");
    assert!((i.low - 1.5).abs() < 1e-9 && (i.high - 3.0).abs() < 1e-9, "{i:?}");
    assert_eq!(i.rounds, 6);
    assert!(i.coverage_pct >= 95.0, "6 rounds give a 95% interval: {i:?}");
    let flat = find(&cs, "Extension: more writers do not raise SQLite's");
    assert_eq!((flat.verdict, flat.comparisons.len()), (Verdict::Holds, 1));
    let grow = find(&cs, "Extension: more writers raise the other stores'");
    assert_eq!((grow.verdict, grow.comparisons[0].a.as_str()), (Verdict::Holds, "flat x2"));
    assert!((grow.comparisons[0].ratio - 2.0).abs() < 1e-9);
    // Without rounds (a file whose rounds are missing): the medians' ratios,
    // no interval.
    let unpaired = evaluate(&[], Extensions { writers: Some(&w), ..Extensions::default() }, 2);
    let lead = find(&unpaired, "Extension: SQLite's durable writes outpace files'");
    assert_eq!((lead.verdict, lead.firm, lead.interval), (Verdict::Holds, 0, None));
}

#[test]
fn a_ratio_whose_interval_crosses_the_tie_band_confirms_but_not_firmly() {
    let bp = |store: &str, reads_per_s: f64| blob_point(store, 1, reads_per_s);
    let b =
        BlobReaders { blobs: 10, blob_size: 10_000, reads_per_run: 100, points: vec![bp("db", 1.0), bp("files", 1.0)] };
    // Files over the database, round by round: 1.0 (a tie) to 1.3.
    let times: Vec<(f64, f64)> = [1.0, 1.3, 1.2, 1.25, 1.05, 1.3].iter().map(|&r| (10.0, 10.0 * r)).collect();
    let set = two_arm_rounds("concurrency/blobs/t1", ["blobs/db/t1", "blobs/files/t1"], &times);
    let rounds = std::slice::from_ref(&set);
    let cs = evaluate(&[], Extensions { blobs: Some(&b), rounds, ..Extensions::default() }, 2);
    let c = find(&cs, "Extension: SQLite keeps its lead");
    assert_eq!((c.verdict, c.confirming, c.firm), (Verdict::Holds, 1, 0), "the median 1.225 confirms; 1.0 does not");
    let i = c.interval.unwrap();
    assert!((i.low - 1.0).abs() < 1e-9 && (i.high - 1.3).abs() < 1e-9 && i.rounds == 6, "{i:?}");
}

/// SQLite's two rows at 1, 2 and 4 writers, over `rounds` rounds: one
/// writer connection ties at 1 writer, leads 1.5x at 2 and trails 2x at 4
/// (each per-round ratio within 2% of those).
fn connections_fixture(rounds: usize) -> (Writers, RoundSet) {
    let per = StoreId::Engine(crate::records::EngineKind::Db);
    let one = StoreId::SqliteWriters(DbWriters::One);
    let base = [(per, 1, 100.0), (one, 1, 100.0), (per, 2, 150.0), (one, 2, 100.0), (per, 4, 100.0), (one, 4, 200.0)];
    let points: Vec<WriterPoint> = base.iter().map(|&(s, n, t)| writer_point(s, n, t)).collect();
    let arms: Vec<String> = points.iter().map(|p| p.experiment_id.clone()).collect();
    let arms: Vec<&str> = arms.iter().map(String::as_str).collect();
    let wobble = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0];
    let rows: Vec<Vec<f64>> = (0..rounds)
        .map(|r| base.iter().enumerate().map(|(i, b)| if i % 2 == 1 { b.2 * wobble[r % 6] } else { b.2 }).collect())
        .collect();
    let set = crate::measure::rounds::synthetic(ids::WRITERS_ROUNDS, &arms, &rows);
    let w = Writers { blobs: 100, blob_size: 10_000, run_time_s: 0.2, busy_timeout_ms: 5000, points };
    (w, set)
}

#[test]
fn one_writer_connection_or_one_per_writer_is_answered_at_each_writer_count() {
    use crate::studies::concurrency::{connection_answers, ConnectionPick};
    let (w, set) = connections_fixture(6);
    let answers = connection_answers(&w, std::slice::from_ref(&set));
    let picks: Vec<(u32, ConnectionPick, bool)> = answers.iter().map(|a| (a.writers, a.pick, a.firm)).collect();
    assert_eq!(
        picks,
        [(1, ConnectionPick::Either, true), (2, ConnectionPick::OneWriter, true), (4, ConnectionPick::PerWriter, true)]
    );
    assert!(answers.iter().all(|a| a.rounds == 6 && a.enough_rounds()));
    assert!((answers[1].comparison.ratio - 1.5).abs() < 0.05, "{:?}", answers[1].comparison);
    // The conclusion compares the counts with several writers: 2 confirms,
    // 4 does not.
    let cs =
        evaluate(&[], Extensions { writers: Some(&w), rounds: std::slice::from_ref(&set), ..Default::default() }, 2);
    let c = find(&cs, "Extension: writing blobs from several threads, one writer connection");
    assert_eq!((c.verdict, c.confirming, c.comparisons.len()), (Verdict::Partly, 1, 2));
    assert_eq!(c.interval.unwrap().rounds, 6);
}

#[test]
fn an_answer_over_fewer_than_six_rounds_says_so_and_an_unpaired_one_is_never_firm() {
    use crate::studies::concurrency::connection_answers;
    let (w, set) = connections_fixture(3);
    let few = connection_answers(&w, std::slice::from_ref(&set));
    assert!(few.iter().all(|a| a.rounds == 3 && !a.enough_rounds()), "{few:?}");
    let unpaired = connection_answers(&w, &[]);
    assert!(unpaired.iter().all(|a| a.rounds == 0 && !a.firm && a.comparison.paired.is_none()), "{unpaired:?}");
    assert!((unpaired[1].comparison.ratio - 1.5).abs() < 1e-9, "the medians' ratio");
    // A file from before the one-writer row: no answer at all.
    let old = Writers {
        points: w.points.iter().filter(|p| p.store != StoreId::SqliteWriters(DbWriters::One)).cloned().collect(),
        ..w
    };
    assert!(connection_answers(&old, std::slice::from_ref(&set)).is_empty());
}
