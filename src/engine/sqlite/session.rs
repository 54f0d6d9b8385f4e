//! A kvtest database as a blob store. Setup (open, pragmas, BEGIN) and
//! teardown (COMMIT, close) are separate calls so the caller can time each
//! phase; the per-blob calls are the raw SQLite calls kvtest.c makes.
//! One of several clients writing at once takes its locks per batch
//! (`client.rs`).

mod client;
pub(crate) mod writers;

use std::ffi::{c_int, CStr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{ffi, Connection, OpenFlags};

use crate::engine::api::{take, Session, SessionInfo, SqliteStats};
use crate::engine::keep::Lease;
use crate::engine::sqlite::error::{conn_error, db_error, failure_error, last_error, open_io_cause};
use crate::engine::sqlite::raw::{self, Db};

use crate::records::{CommitEvery, DbAccess, DbParams, Journal, WriteBatch};
use crate::{Error, Result};

/// The session's statement slots in its [`Db`]: the SQL read, the
/// same-size UPDATE of SQL overwrites, INSERT OR REPLACE and DELETE (the
/// last three prepared only when the session writes).
const READ: usize = 0;
const UPDATE: usize = 1;
const PUT: usize = 2;
const DELETE: usize = 3;

/// How a session's transactions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Txn {
    /// kvtest's way: BEGIN in the setup, COMMIT in the commit.
    PerRun,
    /// A session that only reads, with a commit granularity given
    /// (kvtest's --multitrans): each statement its own transaction.
    PerStatement,
    /// A writer that commits every N writes: a transaction is always open
    /// (BEGIN is deferred, so an idle one costs nothing), committed and
    /// begun again when a batch fills, and at the session's commit.
    Batched(WriteBatch),
    /// One of several clients writing at once: no transaction is held
    /// between batches (a deferred one that read would be refused its
    /// write lock once another client committed); the first write of a
    /// batch takes the lock with `BEGIN IMMEDIATE`, waiting while another
    /// client holds it, and the batch's last write commits. Reads between
    /// batches are transactions of their own (`client.rs`).
    Immediate { batch: WriteBatch, open: bool },
}

pub struct DbSession {
    db: Db<4>,
    /// Where the connection came from and goes back to (`engine::keep`).
    lease: Lease<Connection>,
    access: DbAccess,
    update: bool,
    txn: Txn,
    /// Blob sizes by key, for counting the bytes an SQL update wrote.
    sizes: Option<Arc<Vec<u32>>>,
    buf: Vec<u8>,
    path: PathBuf,
    /// What the database reports after the pragmas (kvtest prints these).
    pub page_size: i64,
    pub cache_size: i64,
    pub journal_mode: Journal,
    /// Largest key, when asked for (kvtest's default --max-id).
    pub max_key: Option<u32>,
    /// Times `BEGIN IMMEDIATE` found another client holding the lock.
    busy_waits: u64,
    /// One of several clients using the database at once: no transaction
    /// is held between its writes' batches (`client.rs`).
    concurrent: bool,
}

/// Opens `path` read-write without SQLite's mutex, as kvtest does.
pub(crate) fn connect(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(
        |e| {
            let what = "cannot open database";
            open_io_cause(path, what, &e).unwrap_or_else(|| db_error(path, what, e))
        },
    )
}

/// kvtest's settings on a connection just opened: mmap_size, cache_size,
/// synchronous, the journal mode (checked), wal_autocheckpoint.
fn set_pragmas(conn: &Connection, path: &Path, p: &DbParams) -> Result<()> {
    let err = |what: &'static str| move |e| db_error(path, what, e);
    conn.execute_batch(&format!("PRAGMA mmap_size={}; PRAGMA cache_size={};", p.mmap_bytes, p.cache_size))
        .map_err(err("cannot set pragmas"))?;
    if let Some(sync) = p.sync {
        conn.execute_batch(&format!("PRAGMA synchronous={}", sync.pragma())).map_err(err("cannot set synchronous"))?;
    }
    if let Some(mode) = p.journal_mode {
        let set: String = conn
            .query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0))
            .map_err(err("cannot set journal mode"))?;
        if Journal::parse(&set) != Some(mode) {
            return Err(Error::bad_input(path, format!("journal mode {mode} could not be set (still {set})")));
        }
    }
    if p.nocheckpoint {
        conn.execute_batch("PRAGMA wal_autocheckpoint=0").map_err(err("cannot set wal_autocheckpoint"))?;
    }
    Ok(())
}

/// What closing the last connection to a WAL database does before it
/// deletes the WAL: copy every frame into the database (a passive
/// checkpoint; no other connection is open) and sync it. Nothing in
/// another journal mode.
fn checkpoint(conn: &Connection, path: &Path) -> Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        .map_err(|e| conn_error(conn, path, "checkpoint failed", e))
}

impl DbSession {
    /// kvtest's setup on a connection of the session's own. A writer with
    /// `commit_every` N commits every N writes.
    pub fn open(
        path: &Path,
        p: &DbParams,
        (update, commit_every): (bool, CommitEvery),
        find_max: bool,
        sizes: Option<Arc<Vec<u32>>>,
    ) -> Result<Self> {
        Self::on((connect(path)?, Lease::once()), path, p, (update, commit_every, false), find_max, sizes)
    }

    /// kvtest's setup, in kvtest's order, on `conn`: mmap_size,
    /// cache_size, synchronous and journal mode on a connection just
    /// opened (a kept one has them from the session that opened it), then
    /// max(k) when `find_max`, then BEGIN (none for a reader given a commit
    /// granularity: kvtest's --multitrans; none for one of several
    /// clients, `concurrent`, which takes its write lock per batch).
    pub(crate) fn on(
        (conn, lease): (Connection, Lease<Connection>),
        path: &Path,
        p: &DbParams,
        (update, commit_every, concurrent): (bool, CommitEvery, bool),
        find_max: bool,
        sizes: Option<Arc<Vec<u32>>>,
    ) -> Result<Self> {
        let err = |what: &str| {
            let what = what.to_string();
            move |e| db_error(path, &what, e)
        };
        if lease.opened {
            set_pragmas(&conn, path, p)?;
        }
        let page_size: i64 =
            conn.query_row("PRAGMA page_size", [], |r| r.get(0)).map_err(err("cannot read page size"))?;
        let cache_size: i64 =
            conn.query_row("PRAGMA cache_size", [], |r| r.get(0)).map_err(err("cannot read cache size"))?;
        let journal_mode: String =
            conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(err("cannot read journal mode"))?;
        let journal_mode = Journal::parse(&journal_mode)
            .ok_or_else(|| Error::bad_input(path, format!("reports an unknown journal mode {journal_mode:?}")))?;
        let max_key = if find_max {
            let m: Option<i64> =
                conn.query_row("SELECT max(k) FROM kv", [], |r| r.get(0)).map_err(err("cannot read kv"))?;
            m.map(|m| m.clamp(0, i64::from(i32::MAX)) as u32)
        } else {
            None
        };
        let mut session = DbSession {
            db: Db::new(conn),
            lease,
            access: p.access,
            update,
            txn: match (commit_every, update) {
                // A client commits every write (`OpenMode::client`), its
                // lock taken by the write, never in the setup: the clients
                // open before their shared start, and a lock taken there
                // would keep the others waiting for it.
                (None, true) if concurrent => Txn::Immediate { batch: WriteBatch::new(1), open: false },
                (None, _) => Txn::PerRun,
                (Some(_), false) => Txn::PerStatement,
                (Some(n), true) if concurrent => Txn::Immediate { batch: WriteBatch::new(n), open: false },
                (Some(n), true) => Txn::Batched(WriteBatch::new(n)),
            },
            sizes,
            buf: vec![0u8; 64 * 1024],
            path: path.to_path_buf(),
            page_size,
            cache_size,
            journal_mode,
            max_key,
            busy_waits: 0,
            concurrent,
        };
        if p.access == DbAccess::Sql {
            // Reads are prepared in write sessions too: a mixed script reads.
            session.prepare(READ, c"SELECT v FROM kv WHERE k=?1", "cannot prepare the query")?;
        }
        let what = "cannot prepare a write statement";
        if update && p.access == DbAccess::Sql {
            session.prepare(UPDATE, c"UPDATE kv SET v=substr(?2,1,length(v)) WHERE k=?1", what)?;
        }
        if update {
            session.prepare(PUT, c"INSERT OR REPLACE INTO kv(k, v) VALUES(?1, ?2)", what)?;
            session.prepare(DELETE, c"DELETE FROM kv WHERE k=?1", what)?;
        }
        if concurrent {
            client::no_busy_handler(session.db.conn(), path)?;
            if update {
                client::check_journal(session.journal_mode, path)?;
            }
        }
        if matches!(session.txn, Txn::PerRun | Txn::Batched(_)) {
            session.db.conn().execute_batch("BEGIN").map_err(err("cannot begin a transaction"))?;
        }
        Ok(session)
    }

    /// Ends the run's transaction: kvtest finalizes its statement and blob
    /// handle, then commits (a batched writer commits its last batch).
    pub fn commit(&mut self) -> Result<()> {
        self.db.release();
        let in_txn = match self.txn {
            Txn::PerStatement => false,
            Txn::Immediate { open, .. } => open,
            Txn::PerRun | Txn::Batched(_) => true,
        };
        if in_txn {
            let conn = self.db.conn();
            conn.execute_batch("COMMIT").map_err(|e| conn_error(conn, &self.path, "commit failed", e))?;
        }
        match &mut self.txn {
            Txn::Batched(batch) => batch.committed(),
            Txn::Immediate { batch, open } => {
                batch.committed();
                *open = false;
            }
            Txn::PerRun | Txn::PerStatement => {}
        }
        Ok(())
    }

    /// Counts a write that changed the database; when it fills the batch,
    /// commits the batch and begins the next transaction (the blob handle
    /// is closed and the statements reset first, as COMMIT needs).
    #[inline]
    fn wrote(&mut self) -> Result<()> {
        let sql = match &mut self.txn {
            Txn::Batched(batch) => batch.wrote().then_some("COMMIT; BEGIN"),
            Txn::Immediate { batch, open } => {
                let full = batch.wrote();
                *open &= !full;
                full.then_some("COMMIT")
            }
            Txn::PerRun | Txn::PerStatement => None,
        };
        sql.map_or(Ok(()), |sql| self.commit_batch(sql))
    }

    #[cold]
    fn commit_batch(&mut self, sql: &str) -> Result<()> {
        self.db.end_statements();
        let conn = self.db.conn();
        conn.execute_batch(sql).map_err(|e| conn_error(conn, &self.path, "commit failed", e))
    }

    /// Closes the connection (for the last connection to a WAL database
    /// this runs the checkpoint), or keeps it open for the engine's next
    /// session when this one was opened to keep it. A writer that keeps
    /// its connection runs that checkpoint itself, so its close phase does
    /// the same deferred work as a closing writer's.
    pub fn close(self) -> Result<()> {
        let DbSession { db, path, lease, update, .. } = self;
        let conn = db.into_conn();
        let idle = conn.is_autocommit();
        if update && idle && lease.keeps() {
            checkpoint(&conn, &path)?;
        }
        match lease.end(conn, idle) {
            Some(conn) => conn.close().map_err(|(c, e)| conn_error(&c, &path, "cannot close the database", e)),
            None => Ok(()),
        }
    }

    /// SQLite's memory and page-cache counters (kvtest's --stats).
    pub fn stats(&self) -> SqliteStats {
        let (memory_used, memory_max) = raw::status(ffi::SQLITE_STATUS_MEMORY_USED);
        let (allocations, allocations_max) = raw::status(ffi::SQLITE_STATUS_MALLOC_COUNT);
        let (pcache_pages, pcache_pages_max) = raw::status(ffi::SQLITE_STATUS_PAGECACHE_USED);
        let (pcache_overflow, pcache_overflow_max) = raw::status(ffi::SQLITE_STATUS_PAGECACHE_OVERFLOW);
        SqliteStats {
            memory_used,
            memory_max,
            allocations,
            allocations_max,
            pcache_pages,
            pcache_pages_max,
            pcache_overflow,
            pcache_overflow_max,
            largest_allocation: raw::status(ffi::SQLITE_STATUS_MALLOC_SIZE).1,
            largest_pcache_allocation: raw::status(ffi::SQLITE_STATUS_PAGECACHE_SIZE).1,
            pager_heap: self.db.db_status(ffi::SQLITE_DBSTATUS_CACHE_USED),
            cache_hits: self.db.db_status(ffi::SQLITE_DBSTATUS_CACHE_HIT),
            cache_misses: self.db.db_status(ffi::SQLITE_DBSTATUS_CACHE_MISS),
            cache_writes: self.db.db_status(ffi::SQLITE_DBSTATUS_CACHE_WRITE),
        }
    }

    fn prepare(&mut self, slot: usize, sql: &CStr, what: &str) -> Result<()> {
        if self.db.prepare(slot, sql) != ffi::SQLITE_OK {
            return Err(self.error(what));
        }
        Ok(())
    }

    /// Runs a write statement (INSERT OR REPLACE, DELETE) whose parameters
    /// are bound, `content` as the second when given; returns the rows it
    /// changed.
    #[inline]
    fn step_write(&self, slot: usize, key: u32, content: Option<&[u8]>, what: &str) -> Result<i32> {
        let stmt = self.db.stmt(slot);
        if stmt.is_none() {
            return Err(Error::invalid("the session was opened for reading; it cannot write"));
        }
        stmt.bind_int(1, key as c_int);
        let what = || format!("cannot {what} the blob of key {key}");
        let rc = match content {
            Some(content) => {
                self.db.step_with_blob(slot, 2, content).map_err(|f| failure_error(f, &self.path, &what()))?
            }
            None => {
                let rc = stmt.step();
                stmt.reset();
                rc
            }
        };
        if rc != ffi::SQLITE_DONE {
            return Err(self.error(&what()));
        }
        Ok(self.db.changes())
    }

    /// The connection's last error as ours. Off the hot path.
    #[cold]
    fn error(&self, what: &str) -> Error {
        if self.concurrent && client::is_lock(self.db.last_failure().code) {
            return client::locked(&self.path, what);
        }
        last_error(&self.db, &self.path, what)
    }

    /// A failed blob open is a miss when the row does not exist, an error
    /// otherwise (a value that is not a BLOB, a locked or corrupt database).
    ///
    /// A failed reopen leaves the handle aborted: every later reopen would
    /// fail too (each key a miss, forever), so the handle is closed and the
    /// next key opens a new one.
    #[cold]
    fn blob_open_failed(&mut self, key: u32) -> Result<u64> {
        let result = if self.db.errmsg().starts_with("no such rowid") {
            Ok(0)
        } else {
            Err(self.error(&format!("cannot open the blob of key {key}")))
        };
        self.db.blob_close();
        result
    }

    /// A client between batches reads through a read-only handle: a
    /// writable one would take the write lock.
    #[inline]
    fn seek_blob(&mut self, key: u32) -> c_int {
        let write = self.update && !self.between_batches();
        self.db.blob_seek(c"kv", c"v", i64::from(key), write)
    }

    /// Bytes of `key`'s blob, for counting what an SQL update wrote.
    #[inline]
    fn size_of(&self, key: u32) -> u32 {
        self.sizes.as_ref().and_then(|s| s.get(key as usize)).copied().unwrap_or(0)
    }

    /// One read, by SQL or through the blob handle.
    #[inline]
    fn read_blob(&mut self, key: u32) -> Result<u64> {
        match self.access {
            DbAccess::Sql => {
                let s = self.db.stmt(READ);
                s.reset();
                s.bind_int(1, key as c_int);
                match s.step() {
                    ffi::SQLITE_ROW => Ok(s.column_blob_len(0) as u64),
                    ffi::SQLITE_DONE => Ok(0),
                    _ => Err(self.error("cannot read a blob")),
                }
            }
            DbAccess::BlobApi => {
                if self.seek_blob(key) != ffi::SQLITE_OK {
                    return self.blob_open_failed(key);
                }
                match self.db.blob_read_all(&mut self.buf) {
                    Ok(n) => Ok(n as u64),
                    Err(_) => Err(self.error(&format!("cannot read the blob of key {key}"))),
                }
            }
        }
    }

    /// One overwrite of the same size, by SQL or through the blob handle.
    #[inline]
    fn overwrite_blob(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        match self.access {
            DbAccess::Sql => {
                let s = self.db.stmt(UPDATE);
                s.reset();
                s.bind_int(1, key as c_int);
                // SQL's substr() takes only the bytes the blob has; a
                // shorter content is caught here as the blob API's is.
                let size = self.size_of(key);
                take(content, size as usize, key)?;
                let what = || format!("cannot update the blob of key {key}");
                match self.db.step_with_blob(UPDATE, 2, content) {
                    Ok(ffi::SQLITE_DONE) => {}
                    Ok(_) => return Err(self.error(&what())),
                    Err(f) => return Err(failure_error(f, &self.path, &what())),
                }
                if self.db.changes() == 0 {
                    return Ok(0);
                }
                self.wrote()?;
                Ok(u64::from(size))
            }
            DbAccess::BlobApi => {
                if self.seek_blob(key) != ffi::SQLITE_OK {
                    return self.blob_open_failed(key);
                }
                let n = self.db.blob_bytes();
                let content = take(content, n, key)?;
                if self.db.blob_write(content) != ffi::SQLITE_OK {
                    return Err(self.error(&format!("cannot write the blob of key {key}")));
                }
                self.wrote()?;
                Ok(n as u64)
            }
        }
    }
}

impl Session for DbSession {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        let n = self.read_blob(key);
        self.read_done();
        n
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        self.will_write()?;
        let n = self.overwrite_blob(key, content)?;
        if n == 0 {
            self.missed()?;
        }
        Ok(n)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        self.will_write()?;
        self.step_write(PUT, key, Some(content), "store")?;
        self.wrote()
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        self.will_write()?;
        let deleted = self.step_write(DELETE, key, None, "delete")? > 0;
        if deleted {
            self.wrote()?;
        } else {
            self.missed()?;
        }
        Ok(deleted)
    }

    fn busy_waits(&self) -> u64 {
        self.busy_waits
    }

    fn commit(&mut self) -> Result<()> {
        DbSession::commit(self)
    }

    fn close(self: Box<Self>) -> Result<()> {
        DbSession::close(*self)
    }

    fn sqlite_stats(&self) -> Option<SqliteStats> {
        Some(self.stats())
    }

    fn info(&self) -> SessionInfo {
        SessionInfo {
            page_size: Some(self.page_size),
            cache_size: Some(self.cache_size),
            journal_mode: Some(self.journal_mode),
            max_key: self.max_key,
            close_checkpoints: self.journal_mode == Journal::Wal,
            // The closing checkpoint copies the writes' pages from the WAL.
            close_finishes_writes: self.update && self.journal_mode == Journal::Wal,
            opened_handle: self.lease.opened,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::DatasetSpec;
    use crate::util::progress::Silent;

    fn db(dir: &Path) -> PathBuf {
        let db = dir.join("kv.db");
        crate::engine::sqlite::init::init(
            &db,
            &DatasetSpec { count: 5, size: 1000, ..DatasetSpec::default() },
            false,
            &Silent,
        )
        .unwrap();
        db
    }

    #[test]
    fn short_content_is_an_error_never_a_read_past_the_slice() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let (sizes, _) = crate::engine::blob_sizes(&db).unwrap();
        for access in [DbAccess::Sql, DbAccess::BlobApi] {
            let params = DbParams { access, ..DbParams::default() };
            let mut s = DbSession::open(&db, &params, (true, None), false, Some(sizes.clone())).unwrap();
            let err = s.overwrite(1, &[7u8; 10]).unwrap_err().to_string();
            assert!(err.contains("10 bytes") && err.contains("1000"), "{access:?}: {err}");
            assert_eq!(s.overwrite(2, &[7u8; 1000]).unwrap(), 1000, "{access:?}");
            s.commit().unwrap();
            s.close().unwrap();
        }
    }

    #[test]
    fn blob_api_reads_on_after_a_missing_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let params = DbParams { access: DbAccess::BlobApi, ..DbParams::default() };
        let mut s = DbSession::open(&db, &params, (false, None), false, None).unwrap();
        assert_eq!(s.read(1).unwrap(), 1000);
        assert_eq!(s.read(99).unwrap(), 0, "a gap is a miss");
        assert_eq!(s.read(2).unwrap(), 1000, "the next key is found after a miss");
    }

    #[test]
    fn a_writer_commits_every_n_writes_inside_the_nth() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let (sizes, _) = crate::engine::blob_sizes(&db).unwrap();
        let seen = |k: u32| {
            let c = Connection::open(&db).unwrap();
            c.query_row("SELECT substr(v, 1, 1) FROM kv WHERE k=?1", [k], |r| r.get::<_, Vec<u8>>(0)).unwrap()[0]
        };
        for access in [DbAccess::Sql, DbAccess::BlobApi] {
            let params = DbParams { access, journal_mode: Some(Journal::Wal), ..DbParams::default() };
            let mut s = DbSession::open(&db, &params, (true, Some(2)), false, Some(sizes.clone())).unwrap();
            let tag = if access == DbAccess::Sql { 5u8 } else { 6 };
            s.overwrite(1, &[tag; 1000]).unwrap();
            assert_ne!(seen(1), tag, "{access:?}: one write of a batch of 2 is not committed yet");
            s.overwrite(2, &[tag; 1000]).unwrap();
            assert_eq!((seen(1), seen(2)), (tag, tag), "{access:?}: the second write committed the batch");
            s.overwrite(3, &[tag; 1000]).unwrap();
            assert_ne!(seen(3), tag, "{access:?}: the next batch is open");
            s.commit().unwrap();
            assert_eq!(seen(3), tag, "{access:?}: the session's commit commits the last batch");
            s.close().unwrap();
        }
    }

    #[test]
    fn put_and_delete_change_sizes_and_rows() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        let mut s = DbSession::open(&db, &DbParams::default(), (true, None), false, None).unwrap();
        s.put(3, &[1u8; 50]).unwrap();
        s.put(9, &[2u8; 70]).unwrap();
        assert!(s.delete(4).unwrap());
        assert!(!s.delete(4).unwrap());
        s.commit().unwrap();
        s.close().unwrap();
        let conn = Connection::open(&db).unwrap();
        let len = |k: u32| conn.query_row("SELECT length(v) FROM kv WHERE k=?1", [k], |r| r.get::<_, i64>(0)).ok();
        assert_eq!((len(3), len(9), len(4)), (Some(50), Some(70), None));
    }
}
