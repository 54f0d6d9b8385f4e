//! redb's engine on real files: a read run leaves the file as it was, a
//! committing writer keeps the database and syncs at close, a write that
//! finds no blob frees the write lock, and the round trip every key-value
//! engine passes.

use super::*;
use crate::engine::kv::test_support::round_trip;

/// A redb dataset of `n` kvtest blobs, in a scratch directory.
fn built(n: u32) -> (tempfile::TempDir, PathBuf, Vec<(u32, Vec<u8>)>) {
    let tmp = tempfile::tempdir().unwrap();
    let (db, rows) = crate::engine::kv::test_support::tiny_kv(tmp.path(), n);
    let target = tmp.path().join("t.redb");
    build(&db, &target, false, &crate::util::progress::Silent).unwrap();
    (tmp, target, rows)
}

#[test]
fn a_read_run_leaves_the_file_as_it_was() {
    let (_tmp, target, rows) = built(30);
    let before = (std::fs::read(&target).unwrap(), std::fs::metadata(&target).unwrap().modified().unwrap());
    for commit_every in [None, Some(1)] {
        let mut e = RedbEngine::new(&target, KvParams { sync: KvSync::Durable }, commit_every);
        e.survey(false).unwrap();
        let mut s = e.open(OpenMode::READ).unwrap();
        for (k, v) in &rows {
            assert_eq!(s.read(*k).unwrap(), v.len() as u64);
        }
        s.commit().unwrap();
        s.close().unwrap();
        stat(&target).unwrap();
    }
    let after = (std::fs::read(&target).unwrap(), std::fs::metadata(&target).unwrap().modified().unwrap());
    assert!(before.0 == after.0, "a read run changed the redb file's bytes");
    assert_eq!(before.1, after.1, "a read run wrote to the redb file");
}

/// What a copy of the file holds at key `k`: what a crash now would
/// leave (redb opens the copy at its last durable commit).
fn on_disk(target: &Path, k: u32) -> Vec<u8> {
    let copy = target.with_extension("copy");
    std::fs::copy(target, &copy).unwrap();
    let db = open_db(&copy, false).unwrap();
    let txn = db.begin_read().unwrap();
    let v = txn.open_table(TABLE).unwrap().get(key_bytes(k)).unwrap().unwrap().value().to_vec();
    v
}

#[test]
fn a_committing_writer_keeps_the_database_and_its_close_syncs_unsynced_commits() {
    let (_tmp, target, rows) = built(10);
    let (k, old) = (rows[0].0, rows[0].1.clone());
    let fast = RedbEngine::new(&target, KvParams { sync: KvSync::Fast }, Some(1));
    let mut opened = vec![];
    for round in 1..=2u8 {
        let mut s = fast.open(OpenMode::WRITE).unwrap();
        opened.push(s.info().opened_handle);
        let new = vec![round; old.len()];
        assert_eq!(s.overwrite(k, &new).unwrap(), old.len() as u64);
        s.commit().unwrap();
        assert_ne!(on_disk(&target, k), new, "a commit without sync is not yet durable");
        s.close().unwrap();
        assert_eq!(on_disk(&target, k), new, "round {round}: the kept writer's close synced it");
    }
    assert_eq!(opened, [true, false], "the second session found the database kept");
    // Another engine on the file (redb allows one handle per file in a
    // process) shares the kept database, and its survey closes it.
    let mut durable = RedbEngine::new(&target, KvParams { sync: KvSync::Durable }, Some(1));
    assert!(!durable.open(OpenMode::WRITE).unwrap().info().opened_handle, "shared with the other engine");
    durable.survey(true).unwrap();
    assert!(durable.open(OpenMode::WRITE).unwrap().info().opened_handle, "the survey closed it");
    fast.drop_own_caches().unwrap();
    assert!(fast.open(OpenMode::WRITE).unwrap().info().opened_handle, "a cold run closed it");
    drop((fast, durable));
    // kvtest's one transaction per run keeps nothing.
    let e = RedbEngine::new(&target, KvParams { sync: KvSync::Durable }, None);
    let once = |e: &RedbEngine| e.open(OpenMode::WRITE).unwrap().info().opened_handle;
    assert_eq!((once(&e), once(&e)), (true, true));
}

#[test]
fn round_trip_reads_writes_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("blobs.redb");
    let rows = round_trip(KIND, &target, |p, k, n| Box::new(RedbEngine::new(p, k, n)));
    let db = open_db(&target, true).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn.open_table(TABLE).unwrap();
    for (k, v) in &rows {
        assert_eq!(table.get(key_bytes(*k)).unwrap().unwrap().value(), &v[..], "key {k}");
    }
}

/// Whether the session has a write transaction open (redb's one write
/// lock held).
fn holds_write_lock(s: &RedbSession) -> bool {
    matches!(s.txn, Txn::Write(_) | Txn::Batched(Some(_), _))
}

/// A client committing every write whose overwrite or delete finds no
/// blob (a sparse dataset) holds no write transaction after it: the open
/// loop's client would sleep to its next due time holding redb's write
/// lock, every other writer queued behind it. A miss inside a batch that
/// holds writes keeps the batch open, writes and all.
#[test]
fn a_write_that_finds_no_blob_leaves_the_write_lock_free() {
    let (_tmp, target, rows) = built(10);
    let (k, len) = (rows[0].0, rows[0].1.len());
    let content = vec![7u8; len];
    let durable = KvParams { sync: KvSync::Durable };
    let e = RedbEngine::new(&target, durable, Some(1));
    let mut s = e.session(OpenMode::client(0)).unwrap();
    assert_eq!(s.overwrite(99, &content).unwrap(), 0);
    assert!(!holds_write_lock(&s), "a missed overwrite");
    assert!(!s.delete(99).unwrap());
    assert!(!holds_write_lock(&s), "a missed delete");
    assert_eq!(s.overwrite(k, &content).unwrap(), len as u64);
    assert!(!holds_write_lock(&s), "a write of a batch of 1 commits");
    drop((s, e));
    let e = RedbEngine::new(&target, durable, Some(2));
    let mut s = e.session(OpenMode::client(0)).unwrap();
    assert_eq!(s.overwrite(k, &content).unwrap(), len as u64);
    assert_eq!(s.overwrite(99, &content).unwrap(), 0);
    assert!(holds_write_lock(&s), "the batch holds its first write");
    s.commit().unwrap();
    assert!(!holds_write_lock(&s));
}
