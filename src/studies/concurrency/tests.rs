//! Real runs, briefly: every configuration with 2 threads, consistency of
//! what was written, and contention counted when it is provoked.

use std::time::Duration;

use super::*;
use crate::records::SyncLevel;
use crate::studies::context::StudyContext;

fn tiny() -> ConcurrencyOptions {
    ConcurrencyOptions {
        threads: vec![2],
        duration: Duration::from_millis(100),
        repeat: 1,
        rows: 2000,
        workloads: vec![Workload::Read, Workload::Write, Workload::Mixed],
        ..ConcurrencyOptions::new()
    }
}

/// The study's context in `dir`.
fn in_dir(dir: &Path) -> StudyContext {
    StudyContext::new(dir, crate::records::EngineSettings::default())
}

fn assert_consistent(p: &Point) {
    for r in &p.runs {
        if let Some(w) = &r.writes {
            assert_eq!(r.rows_found, Some(r.rows_before + w.ops), "{}: rows inserted = rows found", p.id);
            assert_eq!(r.integrity.as_deref(), Some("ok"), "{}", p.id);
        }
    }
    assert!(p.consistent, "{}", p.id);
}

#[test]
fn every_configuration_runs_with_two_threads_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny();
    opts.modes.sync = vec![SyncLevel::Normal];
    let m = run(&in_dir(dir.path()), &opts).unwrap();
    let s = &m.section;
    assert_eq!(s.points.len(), 16 + 8 + 10, "all combinations, each once");
    for p in &s.points {
        assert_consistent(p);
        let sides: Vec<&SideSummary> = p.reads.iter().chain(p.writes.iter()).collect();
        assert_eq!(sides.len(), if p.workload == Workload::Mixed { 2 } else { 1 }, "{}", p.id);
        for side in sides {
            assert_eq!(side.threads, 2, "{}", p.id);
            assert!(side.ops + side.failed_ops > 0, "{}: every side attempted something", p.id);
            if !p.errors_dominate {
                assert!(side.ops > 0 && side.ops_per_s.median > 0.0, "{}", p.id);
                assert_eq!(side.latency.count, side.ops, "{}: one latency per operation (batch 1)", p.id);
            }
        }
        let os = &p.runs[0].os;
        assert!(os.user_cpu_us + os.system_cpu_us > 0 && p.cores_used.median > 0.0, "{}: CPU time recorded", p.id);
        if p.workload == Workload::Read {
            assert_eq!(p.runs[0].rows_found, None, "read runs change nothing, so they are not recounted");
        }
    }
    assert!(!s.interrupted);
    assert!(m.experiments.is_empty(), "no blob section asked for");
    assert_eq!(s.conclusions.len(), 13);
}

#[test]
fn contention_is_counted_not_dropped() {
    // Rollback journal, several writers with their own connections and no
    // busy timeout: a writer that finds the database locked fails at once.
    let dir = tempfile::tempdir().unwrap();
    let mut templates = table::Templates::new(dir.path(), 10, 1);
    let db = dir.path().join("busy.db");
    let before = templates.fresh(Journal::Delete, true, &db).unwrap();
    let config = Config {
        sharing: Sharing::PerThread,
        journal: Journal::Delete,
        shared_cache: false,
        read_only: false,
        sync: SyncLevel::Full,
    };
    let spec = RunSpec {
        db: &db,
        workload: Workload::Write,
        config,
        threads: 4,
        duration: Duration::from_millis(300),
        batch: 1,
        busy_timeout_ms: 0,
        rows: 10,
        seed: 1,
    };
    let t = run_once(&spec).unwrap();
    let inserted: u64 = t.writers.iter().map(|w| w.ops).sum();
    let failed: u64 = t.writers.iter().map(|w| w.failed_ops).sum();
    let calls: u64 = t.writers.iter().map(|w| w.busy + w.locked).sum();
    assert!(failed > 0 && calls == failed, "BUSY/LOCKED counted: {failed} failed inserts, {calls} failed calls");
    assert!(inserted > 0);
    assert_eq!(table::check(&db).unwrap(), (before + inserted, "ok".to_string()), "failed inserts left nothing");
}

#[test]
fn batches_commit_whole_on_shared_and_private_connections() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny();
    opts.workloads = vec![Workload::Write, Workload::Mixed];
    opts.modes = Modes::parse("wal,private-cache,sync-off").unwrap();
    opts.batch = 25;
    opts.repeat = 2;
    let s = run(&in_dir(dir.path()), &opts).unwrap().section;
    assert_eq!(s.points.len(), 2 + 3);
    for p in &s.points {
        assert_eq!(p.runs.len(), 2, "{}: one run per round", p.id);
        assert_consistent(p);
        let w = p.writes.as_ref().unwrap();
        assert!(w.ops > 0 && w.ops % 25 == 0, "{}: {} rows, whole batches only", p.id, w.ops);
    }
}

#[test]
fn a_shared_connection_is_serialized_and_shared_cache_is_real() {
    use crate::engine::sqlite::raw as sqlite;
    use rusqlite::ffi;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    table::Templates::new(dir.path(), 5, 1).fresh(Journal::Wal, true, &db).unwrap();
    let shared = sqlite::SharedConn::open(&db, ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX).unwrap();
    assert!(!shared.conn().mutex().is_null(), "NOMUTEX is overridden: a shared connection is always serialized");
    let private = sqlite::Conn::open(&db, ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX).unwrap();
    assert!(private.mutex().is_null());
    // Two shared-cache connections see each other's uncommitted rows when
    // asked to: proof that this SQLite build honours SQLITE_OPEN_SHAREDCACHE.
    let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_SHAREDCACHE;
    let a = sqlite::Conn::open(&db, flags).unwrap();
    let b = sqlite::Conn::open(&db, flags).unwrap();
    a.exec("BEGIN; INSERT INTO t(a, b, c) VALUES(1, 2.0, 'x')").unwrap();
    b.exec("PRAGMA read_uncommitted=1").unwrap();
    let count = b.prepare(c"SELECT count(*) FROM t").unwrap();
    assert_eq!(count.step(), ffi::SQLITE_ROW);
    assert_eq!(count.column_i64(0), 6, "uncommitted row visible through the shared cache");
}

#[test]
fn a_missing_workdir_is_one_clear_error() {
    let e = run(&in_dir(Path::new("/nonexistent/blobbench")), &tiny()).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/blobbench") && e.contains("no such directory"), "{e}");
}

#[test]
fn a_point_where_errors_dominate_is_marked() {
    let side = |ops, failed| SideRun {
        threads: 2,
        ops,
        failed_ops: failed,
        busy_errors: failed,
        locked_errors: 0,
        ops_per_s: ops as f64,
        per_thread_ops_per_s: vec![ops as f64 / 2.0; 2],
    };
    let run = |ops, failed| PointRun {
        elapsed_ns: 1_000_000_000,
        reads: None,
        writes: Some(side(ops, failed)),
        os: Default::default(),
        rows_before: 0,
        rows_found: Some(ops),
        integrity: Some("ok".into()),
    };
    let cfg = Modes::default().baseline();
    let lat = Latency::new();
    let p = points::point(Workload::Write, cfg, 2, vec![run(40, 60)], (&lat, &lat), 20.0);
    assert!(p.errors_dominate);
    assert_eq!(p.writes.as_ref().unwrap().error_pct, 60.0);
    assert!(p.consistent);
    let q = points::point(Workload::Write, cfg, 2, vec![run(60, 40)], (&lat, &lat), 20.0);
    assert!(!q.errors_dominate);
    let bad = PointRun { rows_found: Some(59), ..run(60, 0) };
    assert!(!points::point(Workload::Write, cfg, 2, vec![bad], (&lat, &lat), 20.0).consistent, "a lost row is caught");
}

#[test]
fn zero_threads_through_the_library_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut templates = table::Templates::new(dir.path(), 10, 1);
    let db = dir.path().join("zero.db");
    templates.fresh(Journal::Wal, true, &db).unwrap();
    for sharing in [Sharing::Shared, Sharing::PerThread] {
        for workload in [Workload::Read, Workload::Write, Workload::Mixed] {
            let config =
                Config { sharing, journal: Journal::Wal, shared_cache: false, read_only: false, sync: SyncLevel::Off };
            let spec = RunSpec {
                db: &db,
                workload,
                config,
                threads: 0,
                duration: Duration::from_millis(10),
                batch: 1,
                busy_timeout_ms: 0,
                rows: 10,
                seed: 1,
            };
            let err = run_once(&spec).unwrap_err().to_string();
            assert!(err.contains("at least one thread"), "{err}");
        }
    }
}
