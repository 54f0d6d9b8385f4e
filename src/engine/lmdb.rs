//! LMDB through heed: one B+tree in a memory-mapped `data.mdb` (with its
//! `lock.mdb`), keys the 4-byte big-endian kvtest key, values the blobs.
//!
//! One **read** is `mdb_get` inside the run's read transaction (the value
//! is a slice of the map) plus a copy of the value into the session's reused
//! buffer, as SQLite's and the files' reads copy theirs. A reader given a
//! commit granularity (kvtest's `--multitrans`) begins and ends a read
//! transaction per read.
//!
//! One **overwrite** is `mdb_get` (for the blob's size) and `mdb_put` inside
//! the run's write transaction; with `commit_every` N the first write of a
//! batch begins a write transaction and the Nth commits it, inside that
//! write (a read between writes reads in the open batch, or in a read
//! transaction of its own). Durability, chosen when the
//! environment opens: `durable` is LMDB's default commit (the data and the
//! meta page are fsynced), `fast` opens with `MDB_NOSYNC` (the commit writes
//! into the page cache and returns; a system crash can lose the last
//! commits and, when pages reach the disk out of order, corrupt the tree,
//! as LMDB documents and `crashtest --power-cut --model torn-4k` shows).
//!
//! The environment opens in a session's setup phase and closes when the
//! last session of the engine closes (heed allows one per path and
//! process), unless a read session kept it (`engine::keep`): then it stays
//! open, its map's pages mapped, until a cold run or a write session
//! closes it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, RoTxn, RwTxn, WithoutTls};

use super::keep::Shared;
use super::kv::{self, copy_out, key_bytes, key_of, KvBackend};
use crate::engine::api::{take, Engine, OpenMode, Session, SessionInfo, Survey};
use crate::engine::report::{ExportReport, KvStat};
use crate::records::{CommitEvery, EngineKind, KvParams, KvSync, WriteBatch};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Lmdb's kind: named here and in the kind enum only.
pub(crate) const KIND: EngineKind = EngineKind::Lmdb;

pub(super) static BACKEND: KvBackend = KvBackend {
    kind: KIND,
    is_dataset: claims,
    build,
    open: |path, params, commit_every| Box::new(LmdbEngine::new(path, params, commit_every)),
    stat,
    write_configs: &kv::write_configs(
        KIND,
        ["LMDB, one transaction per write, default commit (synced)", "LMDB, one transaction per write, MDB_NOSYNC"],
        Some([(0, 0, 0), (0, 857, 26)]),
    ),
};

/// An LMDB dataset: a directory with LMDB's data and lock files.
fn is_dataset(path: &Path) -> bool {
    path.join(DATA_FILE).is_file() && path.join(LOCK_FILE).is_file()
}

fn claims(path: &Path, is_dir: bool, _head: &[u8]) -> bool {
    is_dir && is_dataset(path)
}

const DATA_FILE: &str = "data.mdb";
const LOCK_FILE: &str = "lock.mdb";

const MIB: u64 = 1 << 20;

/// The unnamed database, valid as long as its environment is open.
type Db = Database<'static, Bytes, Bytes>;

/// An open environment and its one (unnamed) database.
struct Handle {
    env: Env<WithoutTls>,
    db: Db,
}

pub struct LmdbEngine {
    path: PathBuf,
    params: KvParams,
    commit_every: CommitEvery,
    shared: Shared<Handle>,
}

impl LmdbEngine {
    pub fn new(path: &Path, params: KvParams, commit_every: CommitEvery) -> Self {
        LmdbEngine { path: path.to_path_buf(), params, commit_every, shared: Shared::new() }
    }

    /// The open environment (kept open after its sessions with `keep`),
    /// and whether this call opened it. `alone`: refuse an environment
    /// another process has open; a client of several (`OpenMode::client`)
    /// expects the other clients' processes there.
    fn handle(&self, keep: bool, alone: bool) -> Result<(Arc<Handle>, bool)> {
        self.shared.get_or_open(keep, || open_handle(&self.path, self.params.sync, alone))
    }
}

impl Engine for LmdbEngine {
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
        let files = [self.path.join(DATA_FILE), self.path.join(LOCK_FILE)];
        if !files.iter().all(|f| f.is_file()) {
            return Err(Error::bad_input(&self.path, "is not an LMDB dataset (no data.mdb and lock.mdb)"));
        }
        if for_writes {
            kv::check_writable(&files)?;
        }
        let (h, _) = self.handle(false, true)?;
        let err = |e| lmdb_error(&self.path, "cannot read", e);
        let txn = h.env.read_txn().map_err(err)?;
        let Some((last, _)) = h.db.last(&txn).map_err(err)? else {
            return Err(kv::empty(&self.path, KIND));
        };
        let max_key = key_of(last).ok_or_else(|| kv::foreign_key(&self.path, KIND, last.len()))?;
        let blob_max = if for_writes { scan(&self.path, &h, &txn)?.max as u32 } else { 0 };
        Ok(Survey { max_key: Some(max_key), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        Ok(Box::new(self.session(mode)?))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(vec![self.path.join(DATA_FILE)])
    }

    /// Closes the kept environment, unmapping its map.
    fn drop_own_caches(&self) -> Result<()> {
        self.shared.release();
        Ok(())
    }
}

impl LmdbEngine {
    /// A session on the environment (opened here unless open or kept).
    fn session(&self, mode: OpenMode) -> Result<LmdbSession> {
        if mode.write && mode.client.is_none() {
            self.shared.release();
        }
        let (handle, opened) = self.handle(mode.keep, mode.client.is_none())?;
        let err = |e| lmdb_error(&self.path, "cannot begin a transaction", e);
        let batch = |n| Txn::Batched(WriteTxn::new(handle.clone(), |_| None), WriteBatch::new(n));
        let txn = match (self.commit_every, mode.write) {
            (Some(_), false) => Txn::PerRead,
            (Some(n), true) => batch(n),
            // A client commits every write (`OpenMode::client`), its
            // transaction begun by the write, never in open: the clients
            // open before their shared start, and LMDB's writer lock taken
            // there would keep the others in `mdb_txn_begin` for good.
            (None, true) if mode.client.is_some() => batch(1),
            (None, false) => Txn::Read(handle.env.clone().static_read_txn().map_err(err)?),
            (None, true) => {
                Txn::Write(WriteTxn::try_new(handle.clone(), |h| h.env.write_txn().map(Some)).map_err(err)?)
            }
        };
        Ok(LmdbSession { txn, write: mode.write, handle, opened, path: self.path.clone(), buf: Vec::new() })
    }
}

/// Opens the environment at `dir`, with `alone` refusing one another
/// process has open (a writer there would make ours wait forever; readers
/// skew timings).
fn open_handle(dir: &Path, sync: KvSync, alone: bool) -> Result<Handle> {
    if let Some(pid) = alone.then(|| lock_holder(&dir.join(LOCK_FILE))).transpose()?.flatten() {
        return Err(Error::bad_input(dir, format!("is open in another process (pid {pid}); close it first")));
    }
    let data = dir.join(DATA_FILE);
    let len = check_meta(&data)?;
    let env = open_env(dir, map_size(len), sync == KvSync::Fast)?;
    let err = |e| lmdb_error(dir, "cannot open the database", e);
    let txn = env.read_txn().map_err(err)?;
    let db = env
        .open_databases_and_commit(txn, |opener, txn| {
            opener.open_database::<Bytes, Bytes>(txn, None).map(heed::CommitOrAbort::<_, ()>::Commit)
        })
        .map_err(err)?
        .unwrap_commit()
        .ok_or_else(|| kv::empty(dir, KIND))?;
    Ok(Handle { env, db })
}

/// LMDB's meta page magic (`MDB_MAGIC`).
const META_MAGIC: u32 = 0xBEEF_C0DE;

/// Checks `data.mdb`'s two meta pages before LMDB maps it (LMDB would
/// rewrite `lock.mdb` on a file that is not its own, and fault with
/// SIGBUS on a tree cut short); returns the file's length. Layout (lmdb.h,
/// 64-bit): a 16-byte page header, then `mm_magic` at 16, the free DB's
/// `md_pad` (the page size) at 40, `mm_last_pg` at 136, `mm_txnid` at 144.
fn check_meta(data: &Path) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(data).map_err(|e| Error::io(data, "cannot open", e))?;
    let len = f.metadata().map_err(|e| Error::io(data, "cannot stat", e))?.len();
    let mut page = [0u8; 152];
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let not_lmdb = || Error::bad_input(data, "is not an LMDB data file (no LMDB meta page)");
    f.read_exact_at(&mut page, 0).map_err(|_| not_lmdb())?;
    let psize = u64::from(u32_at(&page, 40));
    if u32_at(&page, 16) != META_MAGIC || !(512..=65536).contains(&psize) {
        return Err(not_lmdb());
    }
    let mut second = [0u8; 152];
    f.read_exact_at(&mut second, psize).map_err(|_| not_lmdb())?;
    if u32_at(&second, 16) != META_MAGIC {
        return Err(not_lmdb());
    }
    let newest = if u64_at(&second, 144) > u64_at(&page, 144) { &second } else { &page };
    if (u64_at(newest, 136) + 1) * psize > len {
        return Err(Error::bad_input(data, "is truncated (shorter than its last page)"));
    }
    Ok(len)
}

fn open_env(dir: &Path, map: u64, no_sync: bool) -> Result<Env<WithoutTls>> {
    let mut opts = EnvOpenOptions::new().read_txn_without_tls();
    opts.map_size(map as usize).max_dbs(0);
    if no_sync {
        // SAFETY: NO_SYNC only trades durability of the last commits after a
        // system crash; it is the setting measured ("fast").
        unsafe { opts.flags(EnvFlags::NO_SYNC) };
    }
    // SAFETY: the map is only modified through LMDB, and `open_handle`
    // refuses an environment another process has open, but to clients of
    // one store, which all write it through LMDB's own locks.
    unsafe { opts.open(dir) }.map_err(|e| lmdb_error(dir, "cannot open the LMDB environment", e))
}

/// The map for a `len`-byte data file: room for writes to double it, and
/// at least 1 GiB more, in whole MiB (map sizes are page multiples).
fn map_size(len: u64) -> u64 {
    (len.max(1 << 30) + len).div_ceil(MIB) * MIB
}

/// The pid of another process holding LMDB's lock on `lock` (every process
/// with the environment open holds a shared lock on its first byte).
fn lock_holder(lock: &Path) -> Result<Option<i32>> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(lock).map_err(|e| Error::io(lock, "cannot open", e))?;
    // SAFETY: a zeroed flock is valid; F_GETLK only reads the descriptor
    // and fills `fl`, and takes no lock (so it cannot drop one of ours).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_len = 1;
    if unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) } != 0 {
        return Err(Error::io(lock, "cannot query the lock", std::io::Error::last_os_error()));
    }
    Ok((fl.l_type != libc::F_UNLCK as libc::c_short).then_some(fl.l_pid))
}

type OptRwTxn<'a> = Option<RwTxn<'a>>;

self_cell::self_cell!(
    /// The run's write transaction with the environment it borrows (heed's
    /// RwTxn borrows its Env; self_cell keeps both in one place, soundly).
    struct WriteTxn {
        owner: Arc<Handle>,
        #[covariant]
        dependent: OptRwTxn,
    }
);

/// The run's transaction.
enum Txn {
    /// A reader given a commit granularity: each read has its own.
    PerRead,
    Read(RoTxn<'static, WithoutTls>),
    Write(WriteTxn),
    /// A writer committing every N writes: the open batch, if any (begun
    /// by its first write), and the count.
    Batched(WriteTxn, WriteBatch),
    Done,
}

pub struct LmdbSession {
    // Declared before `handle`, so dropped before the environment it uses.
    txn: Txn,
    write: bool,
    handle: Arc<Handle>,
    /// This session opened the environment (none was kept open).
    opened: bool,
    path: PathBuf,
    buf: Vec<u8>,
}

/// Runs `f` in a write transaction: the run's, or the open batch's (begun
/// here by its first write). Takes the session's fields apart so callers
/// can lend `f` the path without cloning it.
#[inline]
fn in_write<R>(
    txn: &mut Txn,
    write: bool,
    handle: &Handle,
    path: &Path,
    f: impl FnOnce(&Db, &mut RwTxn) -> Result<R>,
) -> Result<R> {
    let db = handle.db;
    match txn {
        Txn::Write(w) => w.with_dependent_mut(|_, t| match t {
            Some(t) => f(&db, t),
            None => Err(Error::invalid("the transaction was already committed")),
        }),
        Txn::Batched(w, _) if write => w.with_dependent_mut(|h, t| {
            let t = match t {
                Some(t) => t,
                None => t.insert(h.env.write_txn().map_err(|e| lmdb_error(path, "cannot begin", e))?),
            };
            f(&db, t)
        }),
        _ => Err(Error::invalid("the session was opened for reading; it cannot write")),
    }
}

impl LmdbSession {
    /// Counts a write made; when it fills the batch, commits the batch.
    #[inline]
    fn wrote(&mut self) -> Result<()> {
        if let Txn::Batched(w, batch) = &mut self.txn {
            if batch.wrote() {
                commit_open(w).map_err(|e| lmdb_error(&self.path, "commit failed", e))?;
            }
        }
        Ok(())
    }

    /// An overwrite or a delete found no blob. A transaction that holds
    /// no write of its batch (this miss began it) ends here: left open,
    /// it would hold LMDB's one write lock while its client waits for its
    /// next due time, every other writer waiting behind it.
    #[cold]
    fn missed(&mut self) {
        if let Txn::Batched(w, batch) = &mut self.txn {
            if batch.pending() == 0 {
                w.with_dependent_mut(|_, t| drop(t.take()));
            }
        }
    }
}

/// Commits the open write transaction, if any.
fn commit_open(w: &mut WriteTxn) -> heed::Result<()> {
    w.with_dependent_mut(|_, t| t.take().map_or(Ok(()), RwTxn::commit))
}

impl Session for LmdbSession {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    fn last_read(&self) -> Option<&[u8]> {
        Some(&self.buf)
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { opened_handle: self.opened, ..SessionInfo::default() }
    }

    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        let k = key_bytes(key);
        let (db, buf) = (self.handle.db, &mut self.buf);
        let got = match &self.txn {
            Txn::Read(t) => db.get(t, &k).map(|v| v.map_or(0, |v| copy_out(buf, v))),
            Txn::Write(w) => w.with_dependent(|_, t| match t {
                Some(t) => db.get(t, &k).map(|v| v.map_or(0, |v| copy_out(buf, v))),
                None => Ok(0),
            }),
            Txn::Batched(w, _) if w.borrow_dependent().is_some() => w.with_dependent(|_, t| match t {
                Some(t) => db.get(t, &k).map(|v| v.map_or(0, |v| copy_out(buf, v))),
                None => Ok(0),
            }),
            Txn::PerRead | Txn::Batched(..) => {
                let t = self.handle.env.read_txn().map_err(|e| lmdb_error(&self.path, "cannot begin", e))?;
                db.get(&t, &k).map(|v| v.map_or(0, |v| copy_out(buf, v)))
            }
            Txn::Done => return Err(Error::invalid("the transaction was already committed")),
        };
        got.map_err(|e| lmdb_error(&self.path, "cannot read", e))
    }

    /// Reads the old value's length inside the write transaction: an
    /// overwrite keeps each blob's size (kvtest's update) and a key with
    /// no blob is a miss, as redb's and fjall's are. Against a reference
    /// loop that knows every size from the start (`reference_loops
    /// clients lmdb-size-first` against `lmdb`, rounds interleaved) the
    /// read cost nothing measurable with durable commits.
    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let k = key_bytes(key);
        let path = &self.path;
        let n = in_write(&mut self.txn, self.write, &self.handle, path, |db, t| {
            let err = |e| lmdb_error(path, "cannot write", e);
            let Some(len) = db.get(t, &k).map_err(err)?.map(<[u8]>::len) else {
                return Ok(0);
            };
            db.put(t, &k, take(content, len, key)?).map_err(err)?;
            Ok(len as u64)
        })?;
        if n > 0 {
            self.wrote()?;
        } else {
            self.missed();
        }
        Ok(n)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        let k = key_bytes(key);
        let path = &self.path;
        in_write(&mut self.txn, self.write, &self.handle, path, |db, t| {
            db.put(t, &k, content).map_err(|e| lmdb_error(path, "cannot write", e))
        })?;
        self.wrote()
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        let k = key_bytes(key);
        let path = &self.path;
        let deleted = in_write(&mut self.txn, self.write, &self.handle, path, |db, t| {
            db.delete(t, &k).map_err(|e| lmdb_error(path, "cannot delete", e))
        })?;
        if deleted {
            self.wrote()?;
        } else {
            self.missed();
        }
        Ok(deleted)
    }

    /// Commits the run's write transaction, or the last batch (fsynced
    /// unless the environment was opened with `MDB_NOSYNC`); ends a read
    /// transaction.
    fn commit(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.txn, Txn::Done) {
            Txn::Write(mut w) | Txn::Batched(mut w, _) => {
                commit_open(&mut w).map_err(|e| lmdb_error(&self.path, "commit failed", e))
            }
            Txn::PerRead => {
                self.txn = Txn::PerRead;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// heed's error as ours, naming the path (off the hot path).
#[cold]
fn lmdb_error(path: &Path, what: &str, e: heed::Error) -> Error {
    match e {
        heed::Error::Io(io) => Error::io(path, what, io),
        heed::Error::EnvAlreadyOpened => {
            Error::bad_input(path, format!("{what}: the LMDB environment is already open in this process"))
        }
        e => Error::bad_input(path, format!("{what}: {e}")),
    }
}

/// Sizes of every entry; a key that is not a kvtest key is an error.
fn scan(path: &Path, h: &Handle, txn: &RoTxn<WithoutTls>) -> Result<kv::Scan> {
    let err = |e| lmdb_error(path, "cannot read", e);
    let mut s = kv::Scan::default();
    for item in h.db.iter(txn).map_err(err)? {
        let (k, v) = item.map_err(err)?;
        key_of(k).ok_or_else(|| kv::foreign_key(path, KIND, k.len()))?;
        s.add(v.len() as u64);
    }
    Ok(s)
}

/// What `stat` says about the LMDB dataset at `dir`.
fn stat(dir: &Path) -> Result<KvStat> {
    let (h, _) = LmdbEngine::new(dir, KvParams::default(), None).handle(false, true)?;
    let txn = h.env.read_txn().map_err(|e| lmdb_error(dir, "cannot read", e))?;
    let s = scan(dir, &h, &txn)?;
    drop(txn);
    kv::kv_stat(KIND, dir, s)
}

/// Rows per write transaction while building (bounded dirty memory).
const BUILD_BATCH: u64 = 1024;

/// Builds an LMDB dataset at `target` from the kvtest database `db`. The map
/// is sized at twice the database plus 1 GiB (see [`map_size`]; LMDB keeps
/// it in its meta page, and `stat` shows it); batches commit without sync
/// and one `mdb_env_sync(force)` makes the whole build durable at the end.
fn build(db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    let started = Instant::now();
    let staging = kv::stage(KIND, target, force, is_dataset)?;
    let dir = &staging.path;
    std::fs::create_dir(dir).map_err(|e| Error::io(dir, "cannot create directory", e))?;
    let env = open_env(dir, map_size(kv::kv_db_bytes(db)), true)?;
    let err = |e| lmdb_error(dir, "cannot write", e);
    let table: Db = env
        .create_databases_and_commit(env.write_txn().map_err(err)?, |opener, txn| {
            opener.create_database::<Bytes, Bytes>(txn, None).map(heed::CommitOrAbort::<_, ()>::Commit)
        })
        .map_err(err)?
        .unwrap_commit();
    let mut txn: Option<RwTxn> = None;
    let mut rows = 0u64;
    let copied = crate::engine::kvtest_db::copy_rows(db, progress, &mut |key, value| {
        let t = match txn.as_mut() {
            Some(t) => t,
            None => txn.insert(env.write_txn().map_err(err)?),
        };
        table.put(t, &key_bytes(key), value).map_err(err)?;
        rows += 1;
        if rows.is_multiple_of(BUILD_BATCH) {
            txn.take().map_or(Ok(()), RwTxn::commit).map_err(err)?;
        }
        Ok(())
    })?;
    txn.take().map_or(Ok(()), RwTxn::commit).map_err(err)?;
    drop(txn);
    env.force_sync().map_err(err)?;
    env.prepare_for_closing().wait();
    staging.finish()?;
    Ok(kv::report(KIND, copied, started))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::test_support::round_trip;

    fn engine(dir: &Path) -> LmdbEngine {
        LmdbEngine::new(dir, KvParams { sync: KvSync::Fast }, None)
    }

    #[test]
    fn round_trip_reads_writes_and_deletes() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("lmdb");
        let rows = round_trip(KIND, &target, |p, k, n| Box::new(LmdbEngine::new(p, k, n)));
        let e = engine(&target);
        let (h, _) = e.handle(false, true).unwrap();
        let t = h.env.read_txn().unwrap();
        for (k, v) in &rows {
            assert_eq!(h.db.get(&t, &key_bytes(*k)).unwrap().unwrap(), &v[..], "key {k}");
        }
    }

    /// Whether the session has a write transaction open (LMDB's one
    /// write lock held).
    fn holds_write_lock(s: &LmdbSession) -> bool {
        match &s.txn {
            Txn::Write(w) | Txn::Batched(w, _) => w.borrow_dependent().is_some(),
            _ => false,
        }
    }

    /// A client committing every write whose overwrite or delete finds no
    /// blob (a sparse dataset) holds no write transaction after it: the
    /// open loop's client would sleep to its next due time holding LMDB's
    /// write lock, every other writer queued behind it. A miss inside a
    /// batch that holds writes keeps the batch open, writes and all.
    #[test]
    fn a_write_that_finds_no_blob_leaves_the_write_lock_free() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("lmdb");
        round_trip(KIND, &target, |p, k, n| Box::new(LmdbEngine::new(p, k, n)));
        let content = vec![7u8; 20_000];
        let durable = KvParams { sync: KvSync::Durable };
        let e = LmdbEngine::new(&target, durable, Some(1));
        let mut s = e.session(OpenMode::client(0)).unwrap();
        assert_eq!(s.overwrite(99, &content).unwrap(), 0);
        assert!(!holds_write_lock(&s), "a missed overwrite");
        assert!(!s.delete(99).unwrap());
        assert!(!holds_write_lock(&s), "a missed delete");
        assert!(s.overwrite(3, &content).unwrap() > 0);
        assert!(!holds_write_lock(&s), "a write of a batch of 1 commits");
        drop((s, e));
        let e = LmdbEngine::new(&target, durable, Some(2));
        let mut s = e.session(OpenMode::client(0)).unwrap();
        assert!(s.overwrite(3, &content).unwrap() > 0);
        assert_eq!(s.overwrite(99, &content).unwrap(), 0);
        assert!(holds_write_lock(&s), "the batch holds its first write");
        s.commit().unwrap();
        assert!(!holds_write_lock(&s));
    }
}
