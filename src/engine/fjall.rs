//! fjall: an LSM tree in a directory, keyspace `blobs` from the 4-byte
//! big-endian kvtest key to the blob, with fjall's key-value separation on
//! (`KvSeparationOptions::default()`: values of 1 KiB or more live in blob
//! files apart from the tree, as blob stores keep them).
//!
//! One **read** is `Snapshot::get` in the run's snapshot (fjall's read
//! transaction: one per run) plus a copy of the value into the session's
//! reused buffer, as SQLite's and the files' reads copy theirs; a reader
//! given a commit granularity (kvtest's `--multitrans`) reads with
//! `Keyspace::get` on the latest data (a snapshot per read).
//!
//! fjall's plain keyspace has no write transaction: each **overwrite** is
//! `Keyspace::size_of` (for the size) and `Keyspace::insert`, which appends
//! to the journal and flushes it to the OS (`PersistMode::Buffer`, fjall's
//! default), visible at once. A commit: `durable` is
//! `Database::persist(SyncAll)` (the journal fsynced), `fast` does nothing
//! more (a system crash can lose the writes since the last sync). With
//! `commit_every` N a durable writer persists after every Nth write, inside
//! it; without, once in the run's commit. fjall also persists with `SyncAll`
//! when the database closes, after its background flushes and compactions
//! stop, which the session's close phase times, counted with the writes.
//!
//! The database opens in a session's setup phase and closes when the
//! engine's last session closes (fjall locks its directory), unless a read
//! session kept it (`engine::keep`): then it stays open, its block cache
//! and open files kept, until a cold run or a write session closes it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, KvSeparationOptions, PersistMode, Readable, Snapshot};

use super::keep::Shared;
use super::kv::{self, copy_out, key_bytes, key_of, KvBackend};
use crate::engine::api::{take, Engine, OpenMode, Session, SessionInfo, Survey};
use crate::engine::report::{ExportReport, KvStat};
use crate::records::{CommitEvery, EngineKind, KvParams, KvSync, WriteBatch};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Fjall's kind: named here and in the kind enum only.
pub(crate) const KIND: EngineKind = EngineKind::Fjall;

pub(super) static BACKEND: KvBackend = KvBackend {
    kind: KIND,
    is_dataset: claims,
    build,
    open: |path, params, commit_every| Box::new(FjallEngine::new(path, params, commit_every)),
    stat,
    write_configs: &kv::write_configs(
        KIND,
        ["fjall, one insert per write + persist(SyncAll)", "fjall, one insert per write, buffered journal"],
        // The 2026-11-24 re-run: the durable store would not open after
        // one cut, losing its 100 acknowledged blobs.
        Some([(100, 0, 1), (0, 0, 3)]),
    ),
};

fn claims(path: &Path, is_dir: bool, _head: &[u8]) -> bool {
    is_dir && is_dataset(path)
}

const KEYSPACE: &str = "blobs";
/// fjall's marker file: its format version, starting with "FJL".
const VERSION_FILE: &str = "version";

/// Whether `dir` holds a fjall database (its version marker and keyspaces).
fn is_dataset(dir: &Path) -> bool {
    let mut head = [0u8; 3];
    let marked = std::fs::File::open(dir.join(VERSION_FILE))
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"FJL");
    marked && dir.join("keyspaces").is_dir()
}

fn keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default().with_kv_separation(Some(KvSeparationOptions::default()))
}

/// An open database and its keyspace.
struct Handle {
    ks: Keyspace,
    db: Database,
}

pub struct FjallEngine {
    path: PathBuf,
    params: KvParams,
    commit_every: CommitEvery,
    shared: Shared<Handle>,
}

impl FjallEngine {
    pub fn new(path: &Path, params: KvParams, commit_every: CommitEvery) -> Self {
        FjallEngine { path: path.to_path_buf(), params, commit_every, shared: Shared::new() }
    }

    /// The open database (kept open after its sessions with `keep`), and
    /// whether this call opened it.
    fn handle(&self, keep: bool) -> Result<(Arc<Handle>, bool)> {
        self.shared.get_or_open(keep, || open_handle(&self.path))
    }
}

fn open_handle(dir: &Path) -> Result<Handle> {
    if !dir.is_dir() || !is_dataset(dir) {
        return Err(Error::bad_input(dir, "is not a fjall dataset (no fjall version marker)"));
    }
    let db = Database::builder(dir).open().map_err(|e| fjall_error(dir, "cannot open the fjall database", e))?;
    if !db.keyspace_exists(KEYSPACE) {
        return Err(Error::bad_input(dir, "has no keyspace blobs; not a blobbench fjall dataset"));
    }
    let ks = db.keyspace(KEYSPACE, keyspace_options).map_err(|e| fjall_error(dir, "cannot open keyspace blobs", e))?;
    Ok(Handle { ks, db })
}

impl Engine for FjallEngine {
    /// In process: no server.
    fn server_info(&self) -> Option<crate::records::ServerInfo> {
        None
    }

    fn kind(&self) -> EngineKind {
        KIND
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        if for_writes {
            kv::check_writable(&kv::dataset_files(&self.path)?)?;
        }
        let (h, _) = self.handle(false)?;
        let Some(last) = h.ks.last_key_value() else {
            return Err(kv::empty(&self.path, KIND));
        };
        let last = last.key().map_err(|e| fjall_error(&self.path, "cannot read", e))?;
        let max_key = key_of(&last).ok_or_else(|| kv::foreign_key(&self.path, KIND, last.len()))?;
        let blob_max = if for_writes { scan(&self.path, &h)?.max as u32 } else { 0 };
        Ok(Survey { max_key: Some(max_key), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        if mode.write && mode.client.is_none() {
            self.shared.release();
        }
        let (handle, opened) = self.handle(mode.keep)?;
        let snapshot = (self.commit_every.is_none() && !mode.write).then(|| handle.db.snapshot());
        // Only a durable writer committing every N has anything to do per batch.
        let durable = self.params.sync == KvSync::Durable;
        // A client commits every write unless told otherwise (`OpenMode::client`).
        let every = self.commit_every.or(mode.client.map(|_| 1));
        let batch = every.filter(|_| mode.write && durable).map(WriteBatch::new);
        Ok(Box::new(FjallSession {
            snapshot,
            handle,
            opened,
            write: mode.write,
            batch,
            params: self.params,
            path: self.path.clone(),
            buf: Vec::new(),
        }))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        kv::dataset_files(&self.path)
    }

    /// Closes the kept database, and with it fjall's block cache.
    fn drop_own_caches(&self) -> Result<()> {
        self.shared.release();
        Ok(())
    }
}

pub struct FjallSession {
    /// The run's snapshot (a reader without a commit granularity).
    snapshot: Option<Snapshot>,
    handle: Arc<Handle>,
    /// This session opened the database (none was kept open).
    opened: bool,
    write: bool,
    /// A durable writer's writes since its last persist, when it persists
    /// every N.
    batch: Option<WriteBatch>,
    params: KvParams,
    path: PathBuf,
    buf: Vec<u8>,
}

impl FjallSession {
    /// After a write: persists the batch it fills, for a durable writer
    /// that commits every N writes.
    #[inline]
    fn written(&mut self, wrote: fjall::Result<()>) -> Result<()> {
        wrote.map_err(|e| fjall_error(&self.path, "cannot write", e))?;
        if self.batch.as_mut().is_some_and(WriteBatch::wrote) {
            self.handle.db.persist(PersistMode::SyncAll).map_err(|e| fjall_error(&self.path, "cannot persist", e))?;
        }
        Ok(())
    }

    #[inline]
    fn check_write(&self) -> Result<()> {
        if self.write {
            Ok(())
        } else {
            Err(Error::invalid("the session was opened for reading; it cannot write"))
        }
    }
}

impl Session for FjallSession {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    fn last_read(&self) -> Option<&[u8]> {
        Some(&self.buf)
    }

    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        let k = key_bytes(key);
        let got = match &self.snapshot {
            Some(s) => s.get(&self.handle.ks, k),
            None => self.handle.ks.get(k),
        };
        let v = got.map_err(|e| fjall_error(&self.path, "cannot read", e))?;
        Ok(v.map_or(0, |v| copy_out(&mut self.buf, &v)))
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        self.check_write()?;
        let k = key_bytes(key);
        let size = self.handle.ks.size_of(k).map_err(|e| fjall_error(&self.path, "cannot read", e))?;
        let Some(len) = size else {
            return Ok(0);
        };
        let content = take(content, len as usize, key)?;
        self.written(self.handle.ks.insert(k, content))?;
        Ok(u64::from(len))
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        self.check_write()?;
        self.written(self.handle.ks.insert(key_bytes(key), content))
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        self.check_write()?;
        let k = key_bytes(key);
        let present = self.handle.ks.contains_key(k).map_err(|e| fjall_error(&self.path, "cannot read", e))?;
        if present {
            self.written(self.handle.ks.remove(k))?;
        }
        Ok(present)
    }

    /// `durable`: `persist(SyncAll)` (the journal fsynced) of the run's
    /// writes, or of the last batch's when there are any; `fast`: nothing.
    fn commit(&mut self) -> Result<()> {
        self.snapshot = None;
        let pending = self.batch.is_none_or(|b| b.pending() > 0);
        if self.write && self.params.sync == KvSync::Durable && pending {
            self.handle.db.persist(PersistMode::SyncAll).map_err(|e| fjall_error(&self.path, "cannot persist", e))?;
        }
        if let Some(b) = self.batch.as_mut() {
            b.committed();
        }
        Ok(())
    }

    fn info(&self) -> SessionInfo {
        // Closing the database waits for its background flushes and
        // compactions and syncs the journal: work the writes left to it.
        SessionInfo { close_finishes_writes: self.write, opened_handle: self.opened, ..SessionInfo::default() }
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// fjall's error as ours, naming the path (off the hot path).
#[cold]
fn fjall_error(path: &Path, what: &str, e: fjall::Error) -> Error {
    match e {
        fjall::Error::Locked => {
            Error::bad_input(path, format!("{what}: it is open in another process; close it first"))
        }
        fjall::Error::Io(io) => Error::io(path, what, io),
        e => Error::bad_input(path, format!("{what}: {e}")),
    }
}

/// Sizes of every entry; a key that is not a kvtest key is an error.
fn scan(path: &Path, h: &Handle) -> Result<kv::Scan> {
    let mut s = kv::Scan::default();
    for guard in h.ks.iter() {
        let (k, v) = guard.into_inner().map_err(|e| fjall_error(path, "cannot read", e))?;
        key_of(&k).ok_or_else(|| kv::foreign_key(path, KIND, k.len()))?;
        s.add(v.len() as u64);
    }
    Ok(s)
}

/// What `stat` says about the fjall dataset at `dir`.
fn stat(dir: &Path) -> Result<KvStat> {
    let s = {
        let (h, _) = FjallEngine::new(dir, KvParams::default(), None).handle(false)?;
        scan(dir, &h)?
    };
    kv::kv_stat(KIND, dir, s)
}

/// Builds a fjall dataset at `target` from the kvtest database `db`: inserts
/// (each flushed to the OS, fjall's default), then the memtable flushed to a
/// table and `persist(SyncAll)`, so the build is durable and opens without
/// replay. The keyspace keeps fjall's default journal persist: fjall stores
/// a keyspace's options with it, so a by-hand persist set here would hold
/// every later run's writes in a user-space buffer, which a killed process
/// loses (and which times a write fjall's users do not get).
fn build(db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    let started = Instant::now();
    let staging = kv::stage(KIND, target, force, is_dataset)?;
    let dir = &staging.path;
    let copied = {
        let out = Database::builder(dir).open().map_err(|e| fjall_error(dir, "cannot create the fjall database", e))?;
        let ks = out
            .keyspace(KEYSPACE, keyspace_options)
            .map_err(|e| fjall_error(dir, "cannot create keyspace blobs", e))?;
        let copied = crate::engine::kvtest_db::copy_rows(db, progress, &mut |key, value| {
            ks.insert(key_bytes(key), value).map_err(|e| fjall_error(dir, "cannot write", e))
        })?;
        out.persist(PersistMode::SyncAll).map_err(|e| fjall_error(dir, "cannot persist", e))?;
        ks.rotate_memtable_and_wait().map_err(|e| fjall_error(dir, "cannot flush", e))?;
        out.persist(PersistMode::SyncAll).map_err(|e| fjall_error(dir, "cannot persist", e))?;
        copied
    };
    staging.finish()?;
    Ok(kv::report(KIND, copied, started))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::test_support::round_trip;

    /// A fast write is in the journal file as soon as the insert returns
    /// (fjall's default: flushed to the OS, so a killed process loses
    /// none); the build's by-hand journal persist, which fjall stores with
    /// the keyspace, must not carry over into the runs.
    #[test]
    fn a_fast_write_reaches_the_journal_file_before_the_session_ends() {
        use crate::engine::api::OpenMode;
        use crate::engine::kv::test_support::tiny_kv;
        let tmp = tempfile::tempdir().unwrap();
        let (db, rows) = tiny_kv(tmp.path(), 5);
        let target = tmp.path().join("fjall");
        crate::engine::registry::build(KIND, &db, &target, false, &crate::util::progress::Silent).unwrap();
        let mut e = FjallEngine::new(&target, KvParams { sync: KvSync::Fast }, Some(1));
        e.survey(true).unwrap();
        let mut s = e.open(OpenMode::WRITE).unwrap();
        let marker: Vec<u8> = b"blobbench-marker-".iter().copied().cycle().take(rows[0].1.len()).collect();
        s.overwrite(1, &marker).unwrap();
        let on_disk = kv::dataset_files(&target)
            .unwrap()
            .iter()
            .any(|f| std::fs::read(f).unwrap().windows(marker.len()).any(|w| w == &marker[..]));
        assert!(on_disk, "the overwrite is in a file before commit or close");
        s.commit().unwrap();
        s.close().unwrap();
    }

    #[test]
    fn round_trip_reads_writes_and_deletes() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("fjall");
        let rows = round_trip(KIND, &target, |p, k, n| Box::new(FjallEngine::new(p, k, n)));
        let h = open_handle(&target).unwrap();
        for (k, v) in &rows {
            assert_eq!(&*h.ks.get(key_bytes(*k)).unwrap().unwrap(), &v[..], "key {k}");
        }
    }
}
