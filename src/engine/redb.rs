//! redb: a copy-on-write B-tree in one file, table `blobs` from the 4-byte
//! big-endian kvtest key to the blob.
//!
//! One **read** is `ReadOnlyTable::get` inside the run's read transaction
//! plus a copy of the value into the session's reused buffer (as SQLite's
//! and the files' reads copy theirs); redb serves pages from its own cache
//! (default size). A reader given a commit granularity (kvtest's
//! `--multitrans`) begins its own read transaction per read and opens the
//! table in it.
//!
//! One **overwrite** is `Table::get` (for the size) and `Table::insert` in
//! the run's write transaction; with `commit_every` N the first write of a
//! batch begins a write transaction and opens the table, and the Nth
//! commits it, inside that write. Durability:
//! `durable` commits with `Durability::Immediate` (fsynced before commit
//! returns), `fast` with `Durability::None` (kept in memory and the file
//! without sync; redb makes it durable when the database closes, which the
//! session's close phase times, counted with the writes).
//!
//! The database opens in a session's setup phase and closes when the
//! last session on the file closes (redb allows one handle per file in a
//! process, so the process's engines on one file share it), unless a read
//! session or a writer with a commit granularity kept it (`engine::keep`):
//! then it stays open, redb's cache (per database, in the heap) filled by
//! the sessions before, until a cold run or another write session closes
//! it. A run that only reads opens it read-only (`ReadOnlyDatabase`), so a
//! read benchmark never rewrites the file's header or free-space state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use redb::{
    Database, DatabaseError, Durability, ReadOnlyDatabase, ReadOnlyTable, ReadTransaction, ReadableDatabase,
    ReadableTable, Table, TableDefinition, WriteTransaction,
};

use super::keep::Shared;
use super::kv::{self, copy_out, key_bytes, KvBackend};
use crate::engine::api::{take, Engine, OpenMode, Session, SessionInfo, Survey};
use crate::engine::report::{ExportReport, KvStat};
use crate::records::{CommitEvery, EngineKind, KvParams, KvSync, WriteBatch};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Redb's kind: named here and in the kind enum only.
pub(crate) const KIND: EngineKind = EngineKind::Redb;

pub(super) static BACKEND: KvBackend = KvBackend {
    kind: KIND,
    is_dataset: claims,
    build,
    open: |path, params, commit_every| Box::new(RedbEngine::new(path, params, commit_every)),
    stat,
    write_configs: &kv::write_configs(
        KIND,
        ["redb, one transaction per write, Durability::Immediate", "redb, one transaction per write, Durability::None"],
        Some([(0, 0, 0), (0, 0, 0)]),
    ),
};

/// A redb dataset: one file that starts with redb's magic number.
fn is_dataset(path: &Path) -> bool {
    let mut head = [0u8; MAGIC.len()];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok() && head == MAGIC
}

fn claims(_path: &Path, is_dir: bool, head: &[u8]) -> bool {
    !is_dir && head.starts_with(MAGIC)
}

/// The first bytes of every redb file.
const MAGIC: &[u8] = b"redb\x1a\x0a\xa9\x0d\x0a";

const TABLE: TableDefinition<[u8; 4], &[u8]> = TableDefinition::new("blobs");

pub struct RedbEngine {
    path: PathBuf,
    params: KvParams,
    commit_every: CommitEvery,
    /// The file's handle, shared with the process's other engines on it.
    shared: Arc<Shared<Handle>>,
}

/// The handle of the redb file at `path`, one per file in the process:
/// redb allows one `Database` per file in a process, and a run may hold
/// several engines on one file (the suite's fast and durable write arms,
/// in interleaved rounds), so a handle one engine keeps is the others'
/// too, and any of them closes it (a cold run, a write session that needs
/// a writable one). It goes when the file's last engine does.
fn shared_for(path: &Path) -> Arc<Shared<Handle>> {
    type Files = BTreeMap<PathBuf, Weak<Shared<Handle>>>;
    static FILES: Mutex<Files> = Mutex::new(BTreeMap::new());
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    files.retain(|_, shared| shared.strong_count() > 0);
    if let Some(shared) = files.get(&key).and_then(Weak::upgrade) {
        return shared;
    }
    let shared = Arc::new(Shared::new());
    files.insert(key, Arc::downgrade(&shared));
    shared
}

/// The open database: read-only for a run that only reads.
enum Handle {
    Read(ReadOnlyDatabase),
    Write(Database),
}

impl Handle {
    fn open(path: &Path, write: bool) -> Result<Handle> {
        if write {
            open_db(path, false).map(Handle::Write)
        } else {
            open_read_only(path).map(Handle::Read)
        }
    }

    fn begin_read(&self, path: &Path) -> Result<ReadTransaction> {
        let t = match self {
            Handle::Read(db) => db.begin_read(),
            Handle::Write(db) => db.begin_read(),
        };
        t.map_err(|e| redb_error(path, "cannot begin", e))
    }

    fn writable(&self, path: &Path) -> Result<&Database> {
        match self {
            Handle::Write(db) => Ok(db),
            Handle::Read(_) => Err(Error::invalid(format!(
                "{}: opened read-only by this run's readers; a writer cannot share it",
                path.display()
            ))),
        }
    }
}

impl RedbEngine {
    pub fn new(path: &Path, params: KvParams, commit_every: CommitEvery) -> Self {
        RedbEngine { path: path.to_path_buf(), params, commit_every, shared: shared_for(path) }
    }

    fn durability(&self) -> Durability {
        match self.params.sync {
            KvSync::Durable => Durability::Immediate,
            KvSync::Fast => Durability::None,
        }
    }
}

impl Engine for RedbEngine {
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
            kv::check_writable(std::slice::from_ref(&self.path))?;
        }
        // A write run checks every page on open (outside every timer), so a
        // corrupt file is an error rather than a panic later; a read run
        // opens read-only and reads every entry instead, changing nothing.
        // Its own handle: what an engine on the file kept is closed first.
        self.shared.release();
        let db = if for_writes {
            Handle::Write(open_db(&self.path, true)?)
        } else {
            Handle::Read(open_read_only(&self.path)?)
        };
        let txn = db.begin_read(&self.path)?;
        let table = open_read_table(&self.path, &txn)?;
        let err = |e| redb_error(&self.path, "cannot read", e);
        let Some((last, _)) = table.last().map_err(err)? else {
            return Err(kv::empty(&self.path, KIND));
        };
        let max_key = u32::from_be_bytes(last.value());
        let blob_max = scan(&self.path, &table)?.max as u32;
        Ok(Survey { max_key: Some(max_key), blob_max: if for_writes { blob_max } else { 0 } })
    }

    /// A writer with a commit granularity keeps the database open between
    /// its sessions, as a long-running application does, so redb's cache
    /// (the tree pages each write's `get` walks) stays filled; any other
    /// write session first closes what was kept (a read-only handle cannot
    /// write).
    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        // A client's writer keeps the database too: the other clients of
        // its run share it (redb allows one handle per file and process).
        let keeps_writer = mode.write && (self.commit_every.is_some() || mode.client.is_some());
        if mode.write {
            self.shared.release_unless(|h| keeps_writer && matches!(h, Handle::Write(_)));
        }
        let keep = mode.keep || keeps_writer;
        let (db, opened) = self.shared.get_or_open(keep, || Handle::open(&self.path, mode.write))?;
        if mode.write {
            db.writable(&self.path)?;
        }
        let txn = match (self.commit_every, mode.write) {
            (Some(_), false) => Txn::PerRead,
            (Some(n), true) => Txn::Batched(None, WriteBatch::new(n)),
            // A client commits every write (`OpenMode::client`), its
            // transaction begun by the write, never in open: the clients
            // open before their shared start, and redb's write lock taken
            // there would keep the others in `begin_write` for good.
            (None, true) if mode.client.is_some() => Txn::Batched(None, WriteBatch::new(1)),
            (None, false) => {
                let t = db.begin_read(&self.path)?;
                Txn::Read { table: Box::new(open_read_table(&self.path, &t)?), _txn: Box::new(t) }
            }
            (None, true) => Txn::Write(write_cell(&self.path, &db, self.durability())?),
        };
        let (path, durability) = (self.path.clone(), self.durability());
        // Commits without sync leave redb's sync to the database's close,
        // or, for a kept writer, to its session's close.
        let deferred = mode.write && self.params.sync == KvSync::Fast;
        let (write, buf) = (mode.write, Vec::new());
        Ok(Box::new(RedbSession { txn, write, deferred, kept: keep, durability, db, opened, path, buf }))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(vec![self.path.clone()])
    }

    /// Closes the kept database, and with it redb's cache.
    fn drop_own_caches(&self) -> Result<()> {
        self.shared.release();
        Ok(())
    }
}

/// Opens the database file; `check` verifies every page first.
fn open_db(path: &Path, check: bool) -> Result<Database> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "cannot access", e))?;
    if !meta.is_file() {
        return Err(Error::bad_input(path, "is not a redb file"));
    }
    Database::builder()
        .set_check_integrity_on_open(check)
        .open(path)
        .map_err(|e| redb_error(path, "cannot open the redb database", e))
}

/// Opens the file read-only. A file left needing recovery by a crashed
/// writer is recovered first by one read-write open, as SQLite rolls back
/// a hot journal before a read-only connection can read: that restores the
/// last commit and loses nothing committed.
fn open_read_only(path: &Path) -> Result<ReadOnlyDatabase> {
    let open = || ReadOnlyDatabase::open(path);
    let db = match open() {
        Err(DatabaseError::RepairAborted) => {
            drop(open_db(path, false)?);
            open()
        }
        other => other,
    };
    db.map_err(|e| redb_error(path, "cannot open the redb database", e))
}

fn begin_write(path: &Path, db: &Database, durability: Durability) -> Result<WriteTransaction> {
    let mut t = db.begin_write().map_err(|e| redb_error(path, "cannot begin", e))?;
    t.set_durability(durability).map_err(|e| redb_error(path, "cannot set durability", e))?;
    Ok(t)
}

/// A write transaction with its table open.
fn write_cell(path: &Path, db: &Handle, durability: Durability) -> Result<WriteCell> {
    let t = begin_write(path, db.writable(path)?, durability)?;
    WriteCell::try_new(t, |t| t.open_table(TABLE).map_err(|e| redb_error(path, "cannot open table blobs", e)))
}

fn open_read_table(path: &Path, txn: &ReadTransaction) -> Result<ReadOnlyTable<[u8; 4], &'static [u8]>> {
    txn.open_table(TABLE).map_err(|e| match e {
        redb::TableError::TableDoesNotExist(_) => {
            Error::bad_input(path, "has no table blobs; not a blobbench redb dataset")
        }
        e => redb_error(path, "cannot open table blobs", e),
    })
}

type BlobTable<'t> = Table<'t, [u8; 4], &'static [u8]>;

self_cell::self_cell!(
    /// The run's write transaction with its open table (a redb Table
    /// borrows its transaction; self_cell keeps both together, soundly, so
    /// the table is opened once per run rather than once per write).
    struct WriteCell {
        owner: WriteTransaction,
        #[not_covariant]
        dependent: BlobTable,
    }
);

enum Txn {
    /// A reader given a commit granularity: each read has its own.
    PerRead,
    /// The table before the transaction: dropped first.
    Read {
        table: Box<ReadOnlyTable<[u8; 4], &'static [u8]>>,
        _txn: Box<ReadTransaction>,
    },
    Write(WriteCell),
    /// A writer committing every N writes: the open batch, if any (begun
    /// by its first write), and the count.
    Batched(Option<WriteCell>, WriteBatch),
    Done,
}

pub struct RedbSession {
    txn: Txn,
    write: bool,
    /// The close syncs what the commits did not (`Durability::None`).
    deferred: bool,
    /// The database stays open after this session.
    kept: bool,
    durability: Durability,
    db: Arc<Handle>,
    /// This session opened the database (none was kept open).
    opened: bool,
    path: PathBuf,
    buf: Vec<u8>,
}

impl RedbSession {
    /// Runs `f` on the writable table: the run's, or the open batch's
    /// (begun here by its first write).
    #[inline]
    fn in_write<R>(&mut self, f: impl FnOnce(&mut BlobTable<'_>, &Path) -> Result<R>) -> Result<R> {
        let path = &self.path;
        match &mut self.txn {
            Txn::Write(w) => w.with_dependent_mut(|_, t| f(t, path)),
            Txn::Batched(open, _) if self.write => {
                let w = match open {
                    Some(w) => w,
                    None => open.insert(write_cell(path, &self.db, self.durability)?),
                };
                w.with_dependent_mut(|_, t| f(t, path))
            }
            _ => Err(Error::invalid("the session was opened for reading; it cannot write")),
        }
    }

    /// Counts a write made; when it fills the batch, commits the batch.
    #[inline]
    fn wrote(&mut self) -> Result<()> {
        if let Txn::Batched(open, batch) = &mut self.txn {
            if batch.wrote() {
                commit_open(&self.path, open)?;
            }
        }
        Ok(())
    }
}

/// Commits the open batch, if any.
fn commit_open(path: &Path, open: &mut Option<WriteCell>) -> Result<()> {
    match open.take() {
        Some(w) => w.into_owner().commit().map_err(|e| redb_error(path, "commit failed", e)),
        None => Ok(()),
    }
}

impl Session for RedbSession {
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
        let (path, buf) = (&self.path, &mut self.buf);
        let err = |e| redb_error(path, "cannot read", e);
        match &mut self.txn {
            Txn::Read { table, .. } => Ok(table.get(k).map_err(err)?.map_or(0, |v| copy_out(buf, v.value()))),
            Txn::Write(w) => {
                w.with_dependent(|_, t| Ok(t.get(k).map_err(err)?.map_or(0, |v| copy_out(buf, v.value()))))
            }
            Txn::Batched(Some(w), _) => {
                w.with_dependent(|_, t| Ok(t.get(k).map_err(err)?.map_or(0, |v| copy_out(buf, v.value()))))
            }
            Txn::PerRead | Txn::Batched(None, _) => {
                let t = self.db.begin_read(path)?;
                let table = open_read_table(path, &t)?;
                let n = table.get(k).map_err(err)?.map_or(0, |v| copy_out(buf, v.value()));
                Ok(n)
            }
            Txn::Done => Err(Error::invalid("the transaction was already committed")),
        }
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let k = key_bytes(key);
        let n = self.in_write(|t, path| {
            let err = |e| redb_error(path, "cannot write", e);
            let Some(len) = t.get(k).map_err(err)?.map(|v| v.value().len()) else {
                return Ok(0);
            };
            t.insert(k, take(content, len, key)?).map_err(err)?;
            Ok(len as u64)
        })?;
        if n > 0 {
            self.wrote()?;
        }
        Ok(n)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        let k = key_bytes(key);
        self.in_write(|t, path| t.insert(k, content).map(drop).map_err(|e| redb_error(path, "cannot write", e)))?;
        self.wrote()
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        let k = key_bytes(key);
        let deleted =
            self.in_write(|t, path| Ok(t.remove(k).map_err(|e| redb_error(path, "cannot delete", e))?.is_some()))?;
        if deleted {
            self.wrote()?;
        }
        Ok(deleted)
    }

    /// Commits the run's write transaction, or the last batch, with the
    /// run's durability (`Immediate` or `None`); ends a read transaction.
    fn commit(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.txn, Txn::Done) {
            Txn::Write(w) => w.into_owner().commit().map_err(|e| redb_error(&self.path, "commit failed", e)),
            Txn::Batched(mut open, _) => commit_open(&self.path, &mut open),
            Txn::PerRead => {
                self.txn = Txn::PerRead;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { close_finishes_writes: self.deferred, opened_handle: self.opened, ..SessionInfo::default() }
    }

    /// A kept writer's close makes its commits without sync durable, as
    /// the database's close would (an empty `Immediate` commit syncs every
    /// commit before it); otherwise dropping the session's handle does.
    fn close(self: Box<Self>) -> Result<()> {
        if self.deferred && self.kept {
            let t = begin_write(&self.path, self.db.writable(&self.path)?, Durability::Immediate)?;
            t.commit().map_err(|e| redb_error(&self.path, "commit failed", e))?;
        }
        Ok(())
    }
}

/// redb's error as ours, naming the path (off the hot path).
#[cold]
fn redb_error(path: &Path, what: &str, e: impl Into<redb::Error>) -> Error {
    match e.into() {
        redb::Error::DatabaseAlreadyOpen => {
            Error::bad_input(path, format!("{what}: the database is open in another process; close it first"))
        }
        redb::Error::Io(io) => Error::io(path, what, io),
        e => Error::bad_input(path, format!("{what}: {e}")),
    }
}

/// Sizes of every entry.
fn scan(path: &Path, table: &ReadOnlyTable<[u8; 4], &'static [u8]>) -> Result<kv::Scan> {
    let err = |e| redb_error(path, "cannot read", e);
    let mut s = kv::Scan::default();
    for item in table.iter().map_err(err)? {
        let (_, v) = item.map_err(err)?;
        s.add(v.value().len() as u64);
    }
    Ok(s)
}

/// What `stat` says about the redb dataset at `path`.
fn stat(path: &Path) -> Result<KvStat> {
    let db = open_read_only(path)?;
    let txn = db.begin_read().map_err(|e| redb_error(path, "cannot read", e))?;
    let s = scan(path, &open_read_table(path, &txn)?)?;
    drop(txn);
    drop(db);
    kv::kv_stat(KIND, path, s)
}

/// Rows per write transaction while building.
const BUILD_BATCH: u64 = 1024;

/// Builds a redb dataset at `target` from the kvtest database `db`: batches
/// commit with `Durability::None`, the last one with `Immediate`, which
/// makes the whole build durable.
fn build(db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    let started = Instant::now();
    let staging = kv::stage(KIND, target, force, is_dataset)?;
    let file = &staging.path;
    let out = Database::create(file).map_err(|e| redb_error(file, "cannot create the redb database", e))?;
    let mut txn = Some(begin_write(file, &out, Durability::None)?);
    let mut rows = 0u64;
    let copied = crate::engine::kvtest_db::copy_rows(db, progress, &mut |key, value| {
        let t = match txn.as_mut() {
            Some(t) => t,
            None => txn.insert(begin_write(file, &out, Durability::None)?),
        };
        let mut table = t.open_table(TABLE).map_err(|e| redb_error(file, "cannot open table blobs", e))?;
        table.insert(key_bytes(key), value).map_err(|e| redb_error(file, "cannot write", e))?;
        drop(table);
        rows += 1;
        if rows.is_multiple_of(BUILD_BATCH) {
            if let Some(t) = txn.take() {
                t.commit().map_err(|e| redb_error(file, "commit failed", e))?;
            }
        }
        Ok(())
    })?;
    let mut last = match txn.take() {
        Some(t) => t,
        None => begin_write(file, &out, Durability::None)?,
    };
    last.set_durability(Durability::Immediate).map_err(|e| redb_error(file, "cannot set durability", e))?;
    // An empty database still gets its table, so it is recognised as ours.
    drop(last.open_table(TABLE).map_err(|e| redb_error(file, "cannot open table blobs", e))?);
    last.commit().map_err(|e| redb_error(file, "commit failed", e))?;
    out.close().map_err(|e| redb_error(file, "cannot close", e))?;
    staging.finish()?;
    Ok(kv::report(KIND, copied, started))
}

#[cfg(test)]
#[path = "redb_tests.rs"]
mod tests;
