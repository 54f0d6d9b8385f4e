//! The writers' arms on real SQLite databases, briefly.

use super::*;
use crate::measure::rounds::Arm;
use crate::measure::RunContext;
use crate::records::DatasetSpec;
use crate::records::DbWriters;
use crate::studies::concurrency::options::{default_rounds, Concurrency, ConcurrencyOptions};
use crate::studies::context::StudyContext;
use crate::util::progress::Silent;

/// The quick study's context in `dir`.
fn quick(dir: &std::path::Path) -> StudyContext {
    StudyContext { quick: true, ..StudyContext::new(dir, crate::records::EngineSettings::default()) }
}

/// Every blob's content, by key.
fn blobs(db: &Path) -> Vec<Vec<u8>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT v FROM kv ORDER BY k").unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// A database of `count` blobs of 1,000 bytes, in WAL as the writers' is.
fn wal_db(dir: &Path, count: u32) -> PathBuf {
    let db = dir.join("kv.db");
    let spec = DatasetSpec { count, size: 1000, ..DatasetSpec::default() };
    crate::engine::sqlite::init::init(&db, &spec, false, &Silent).unwrap();
    sqlite_writer::to_wal(&db).unwrap();
    db
}

/// Every write of every run changes the blob it writes. A write of the
/// content a blob already holds is a commit that writes nothing: SQLite
/// compares an overwritten cell with its new content and leaves an equal
/// page clean, so the COMMIT has no frame to append and no WAL to sync.
/// Runs that repeated the run before them, key for key and content for
/// content, made SQLite's durable writes look like 9 us.
#[test]
fn every_run_writes_new_content_into_every_blob_it_writes() {
    for store in [StoreId::Engine(EngineKind::Db), StoreId::SqliteWriters(DbWriters::One)] {
        let dir = tempfile::tempdir().unwrap();
        let db = wal_db(dir.path(), 40);
        let ctx = quick(dir.path());
        let ctx = StudyContext { seed: 3, ..ctx };
        let o = ConcurrencyOptions::quick();
        let opts = Concurrency::new(&ctx, &o, default_rounds(true));
        let mut arm = WritersArm::prepare(store, &db, 2, &opts).unwrap();
        // Two writers of 20 keys each, 10 writes each per run.
        arm.set_ops_per_run(20);
        for run in 0..3 {
            let before = blobs(&db);
            arm.run(RunContext { latency: None, timed: false }).unwrap();
            let changed = before.iter().zip(blobs(&db)).filter(|(a, b)| *a != b).count();
            assert_eq!(changed, 20, "{store}, run {run}: each of the 20 writes changed its blob");
        }
    }
}

/// Both SQLite rows keep their WAL between runs, as a long-running
/// application's connections do: a per-writer row whose connections all
/// closed after each run had its WAL deleted and grown again from nothing
/// in the next, every commit extending the file, which the one-writer
/// row's kept connection never paid.
#[test]
fn both_sqlite_rows_keep_their_wal_between_runs() {
    for store in [StoreId::Engine(EngineKind::Db), StoreId::SqliteWriters(DbWriters::One)] {
        let dir = tempfile::tempdir().unwrap();
        let db = wal_db(dir.path(), 8);
        let (ctx, o) = (quick(dir.path()), ConcurrencyOptions::quick());
        let opts = Concurrency::new(&ctx, &o, default_rounds(true));
        let mut arm = WritersArm::prepare(store, &db, 2, &opts).unwrap();
        arm.set_ops_per_run(4);
        arm.run(RunContext { latency: None, timed: false }).unwrap();
        assert!(dir.path().join("kv.db-wal").exists(), "{store}: the WAL is still there after a run");
    }
}
