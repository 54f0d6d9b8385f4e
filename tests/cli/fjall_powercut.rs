//! fjall on the power-cut layer, one flush at a time: why `fjall-durable`
//! fails some strict cuts (docs/crash-safety.md, "fjall and the blob
//! files"). lsm-tree 3.1.10 fsyncs a new blob file but not `blobs/`, so a
//! cut after a memtable flush leaves a durable version naming a blob file
//! with no durable name, and fjall refuses to open. With the one missing
//! directory fsync made by hand, the same sequence survives: the layer is
//! not what loses the file. When the first test fails, fjall has closed
//! the gap: update the doc.

use std::path::{Path, PathBuf};

use blobbench::powercut::{FaultPlan, Model, Mounted};
use fjall::{Database, KeyspaceCreateOptions, KvSeparationOptions, PersistMode};
use rand::rngs::SmallRng;
use rand::SeedableRng;

fn options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default().with_kv_separation(Some(KvSeparationOptions::default()))
}

/// A store built on the disk directly, then a durable write and a flush on
/// the mount, then a strict cut (`sync_blobs`: fsync `blobs/` before it).
/// What opening the store from the disk afterwards gives: key 2's value.
fn write_flush_cut(sync_blobs: bool) -> fjall::Result<Option<Vec<u8>>> {
    let dir = tempfile::tempdir().unwrap();
    let (disk, mnt) = (dir.path().join("disk"), dir.path().join("mnt"));
    std::fs::create_dir(&disk).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let db = Database::builder(disk.join("db")).open().unwrap();
    let ks = db.keyspace("blobs", options).unwrap();
    ks.insert(1u32.to_be_bytes(), vec![1u8; 4096]).unwrap();
    ks.rotate_memtable_and_wait().unwrap(); // blob file 0, as a built dataset has
    drop((ks, db));

    let m = Mounted::mount(&disk, &mnt, FaultPlan::none()).unwrap_or_else(|e| panic!("{e}"));
    let db = Database::builder(mnt.join("db")).open().unwrap();
    let ks = db.keyspace("blobs", options).unwrap();
    ks.insert(2u32.to_be_bytes(), vec![2u8; 4096]).unwrap();
    db.persist(PersistMode::SyncAll).unwrap(); // acknowledged durable
    ks.rotate_memtable_and_wait().unwrap(); // the flush: a new blob file, table and version
    let blobs = blobs_dir(&mnt.join("db"));
    assert_eq!(std::fs::read_dir(&blobs).unwrap().count(), 2, "the flush wrote a second blob file");
    if sync_blobs {
        std::fs::File::open(&blobs).unwrap().sync_all().unwrap();
    }
    m.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap_or_else(|e| panic!("{e}"));
    // The machine is off: fjall's threads only meet EIO from here on.
    std::mem::forget((ks, db));

    let db = Database::builder(disk.join("db")).open()?;
    let ks = db.keyspace("blobs", options)?;
    let value = ks.get(2u32.to_be_bytes())?.map(|v| v.to_vec());
    Ok(value)
}

/// The tree's `blobs/` directory (the one keyspace besides fjall's meta keyspace).
fn blobs_dir(db: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(db.join("keyspaces"))
        .unwrap()
        .map(|e| e.unwrap().path().join("blobs"))
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

#[test]
fn a_flush_then_a_cut_leaves_fjall_unopenable() {
    let err = write_flush_cut(false).expect_err("fjall 3.1.13 should refuse: its new blob file has no durable name");
    assert!(format!("{err:?}").contains("Unrecoverable"), "{err:?}");
}

#[test]
fn the_same_with_blobs_fsynced_keeps_the_acknowledged_write() {
    let value = write_flush_cut(true).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(value, Some(vec![2u8; 4096]));
}
