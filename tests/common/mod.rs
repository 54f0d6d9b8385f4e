//! Helpers shared by the CLI tests: tiny kvtest databases and the engines'
//! datasets built from them through the library, and a way to read an
//! engine's dataset back through the engine's own crate.

#![allow(dead_code)]

use std::path::Path;

use blobbench::records::EngineKind;
use rusqlite::Connection;

/// A kvtest database at `path` with keys 1..=n, values of varied sizes.
pub fn kv_db(path: &Path, n: u32) -> Vec<(u32, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let rows: Vec<(u32, Vec<u8>)> = (1..=n)
        .map(|k| (k, (0..(k as usize * 331) % 5000 + 100).map(|i| ((i as u32 * 7) ^ k) as u8).collect()))
        .collect();
    for (k, v) in &rows {
        conn.execute("INSERT INTO kv VALUES(?1, ?2)", rusqlite::params![k, v]).unwrap();
    }
    rows
}

/// Every (key, value) of a kvtest database, in key order.
pub fn kv_rows(path: &Path) -> Vec<(u32, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, Vec<u8>>(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Builds `kind`'s dataset at `target` from the kvtest database `db`.
pub fn engine_dataset(kind: EngineKind, db: &Path, target: &Path) {
    blobbench::engine::dataset::build(kind, db, target, false, &blobbench::util::progress::Silent).unwrap();
}

/// Every (key, value) of an engine's dataset, read with the engine's crate.
pub fn engine_rows(kind: EngineKind, path: &Path) -> Vec<(u32, Vec<u8>)> {
    let key = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap());
    match kind {
        EngineKind::Lmdb => {
            use heed::types::Bytes;
            // SAFETY: the test owns the environment; nothing else writes it.
            let env = unsafe { heed::EnvOpenOptions::new().open(path) }.unwrap();
            let txn = env.read_txn().unwrap();
            let db = env
                .open_databases_and_commit(txn, |o, t| {
                    o.open_database::<Bytes, Bytes>(t, None).map(heed::CommitOrAbort::<_, ()>::Commit)
                })
                .unwrap()
                .unwrap_commit()
                .unwrap();
            let txn = env.read_txn().unwrap();
            let rows = db.iter(&txn).unwrap().map(|r| r.unwrap()).map(|(k, v)| (key(k), v.to_vec())).collect();
            drop(txn);
            env.prepare_for_closing().wait();
            rows
        }
        EngineKind::Redb => {
            use redb::{ReadableDatabase, ReadableTable};
            let def: redb::TableDefinition<[u8; 4], &[u8]> = redb::TableDefinition::new("blobs");
            let db = redb::Database::open(path).unwrap();
            let txn = db.begin_read().unwrap();
            let table = txn.open_table(def).unwrap();
            let rows = table.iter().unwrap().map(|r| r.unwrap()).map(|(k, v)| (key(&k.value()), v.value().to_vec()));
            rows.collect()
        }
        EngineKind::Fjall => {
            let db = fjall::Database::builder(path).open().unwrap();
            let ks = db.keyspace("blobs", fjall::KeyspaceCreateOptions::default).unwrap();
            ks.iter().map(|g| g.into_inner().unwrap()).map(|(k, v)| (key(&k), v.to_vec())).collect()
        }
        other => panic!("{other:?} is not a key-value engine"),
    }
}

/// A child process holding an engine's dataset open; it exits when dropped.
pub struct Holder(std::process::Child);

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// Re-runs the current test binary's ignored `hold_engine_dataset` test,
/// which opens `path` as `kind` and keeps it open until its stdin closes;
/// returns once the child says the dataset is open.
pub fn hold_in_child(kind: EngineKind, path: &Path) -> Holder {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "hold_engine_dataset", "--nocapture", "--test-threads", "1"])
        .env("BLOBBENCH_HOLD", format!("{}:{}", kind.name(), path.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.unwrap().contains("HELD")), "the holder never opened {}", path.display());
    Holder(child)
}

/// The child's side of [`hold_in_child`].
pub fn hold_from_env() {
    use std::io::{Read, Write};
    let spec = std::env::var("BLOBBENCH_HOLD").expect("run by hold_in_child");
    let (name, path) = spec.split_once(':').unwrap();
    let kind = EngineKind::KEY_VALUE.into_iter().find(|k| k.name() == name).unwrap();
    let held = hold(kind, Path::new(path));
    println!("HELD");
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(held);
}

/// Holds an engine's dataset open in this process until dropped.
pub fn hold(kind: EngineKind, path: &Path) -> Box<dyn std::any::Any> {
    match kind {
        // SAFETY: as above.
        EngineKind::Lmdb => Box::new(unsafe { heed::EnvOpenOptions::new().open(path) }.unwrap()),
        EngineKind::Redb => Box::new(redb::Database::open(path).unwrap()),
        EngineKind::Fjall => Box::new(fjall::Database::builder(path).open().unwrap()),
        other => panic!("{other:?} is not a key-value engine"),
    }
}
