//! A session as one of several clients writing one database at once
//! (`OpenMode::client`, `advise --clients`). Apart because it is a
//! different transaction discipline from kvtest's: a session alone holds
//! its transaction from setup to commit, but a client must not hold one
//! between batches (another client's commit would make a deferred one that
//! read unable to write), so it takes the write lock per batch with
//! `BEGIN IMMEDIATE` and waits in its own loop, counting each wait, where
//! SQLite's busy handler would wait unseen.

use std::time::Duration;

use rusqlite::{Connection, ErrorCode};

use super::{DbSession, Txn};
use crate::engine::sqlite::busy::busy_delay;
use crate::engine::sqlite::error::{conn_error, db_error};
use crate::records::Journal;
use crate::{Error, Result};

/// How long a client waits for the write lock before giving up, in
/// milliseconds, with the pauses of SQLite's own busy handler
/// ([`busy_delay`]): the waits of `sqlite3_busy_timeout`, but counted.
const BUSY_TIMEOUT_MS: u32 = 10_000;

/// Turns SQLite's own busy handler off on a client's connection: rusqlite
/// waits 5 s in it by default; a client waits in `begin_immediate`
/// instead, which counts.
pub(super) fn no_busy_handler(conn: &Connection, path: &std::path::Path) -> Result<()> {
    conn.busy_timeout(Duration::ZERO).map_err(|e| db_error(path, "cannot set the busy timeout", e))
}

/// Refuses a journal mode in which a reader blocks the writers: with a
/// rollback journal (or none), a commit needs every reader's lock gone,
/// and the clients that read between batches hold theirs, so a writing
/// client's commit fails with "database is locked". Only WAL lets readers
/// and one writer go on together.
pub(crate) fn check_journal(journal: Journal, path: &std::path::Path) -> Result<()> {
    if journal == Journal::Wal {
        return Ok(());
    }
    Err(Error::bad_input(
        path,
        format!(
            "is in journal mode {journal}, where one client's read blocks another's commit when several clients \
             write; use --jmode wal"
        ),
    ))
}

/// Whether an (extended) SQLite result code is a lock another connection
/// holds.
pub(super) fn is_lock(code: std::ffi::c_int) -> bool {
    matches!(code & 0xff, rusqlite::ffi::SQLITE_BUSY | rusqlite::ffi::SQLITE_LOCKED)
}

/// A lock one of several clients could not take: another client of this
/// run may hold it as well as another process, so the message names both.
#[cold]
pub(super) fn locked(path: &std::path::Path, what: &str) -> Error {
    Error::bad_input(path, format!("{what}: the database is locked by another client of this run or another process"))
}

impl DbSession {
    /// A client between batches (a reading client always is): no
    /// transaction is open, so reads end their own and writes must take
    /// the lock first.
    #[inline]
    pub(super) fn between_batches(&self) -> bool {
        self.concurrent && !matches!(self.txn, Txn::Immediate { open: true, .. })
    }

    /// Before a write of one of several clients: takes the write lock with
    /// `BEGIN IMMEDIATE` unless its batch holds it, waiting (and counting
    /// each wait) while another client does, up to [`BUSY_TIMEOUT_MS`].
    #[inline]
    pub(super) fn will_write(&mut self) -> Result<()> {
        if self.between_batches() && matches!(self.txn, Txn::Immediate { .. }) {
            self.begin_immediate()
        } else {
            Ok(())
        }
    }

    #[cold]
    fn begin_immediate(&mut self) -> Result<()> {
        // A read's statement or blob handle would pin its snapshot.
        self.db.end_statements();
        let mut waits = 0u32;
        loop {
            let conn = self.db.conn();
            let e = match conn.execute_batch("BEGIN IMMEDIATE") {
                Ok(()) => break,
                Err(e) => e,
            };
            let busy = e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy);
            match busy.then(|| busy_delay(waits, BUSY_TIMEOUT_MS)).flatten() {
                Some(ms) => {
                    std::thread::sleep(Duration::from_millis(ms));
                    waits += 1;
                    self.busy_waits += 1;
                }
                None if busy => {
                    let what = format!("cannot take the write lock (BEGIN IMMEDIATE) within {BUSY_TIMEOUT_MS} ms");
                    return Err(locked(&self.path, &what));
                }
                None => return Err(conn_error(conn, &self.path, "cannot take the write lock (BEGIN IMMEDIATE)", e)),
            }
        }
        if let Txn::Immediate { open, .. } = &mut self.txn {
            *open = true;
        }
        Ok(())
    }

    /// After a write of one of several clients that found no blob: the
    /// lock it took for a batch that holds no write yet is given back
    /// (a COMMIT of nothing); kept, the client would hold it while it
    /// waits for its next due time, every other writer waiting behind it.
    #[cold]
    pub(super) fn missed(&mut self) -> Result<()> {
        if let Txn::Immediate { batch, open } = &mut self.txn {
            if *open && batch.pending() == 0 {
                *open = false;
                return self.commit_batch("COMMIT");
            }
        }
        Ok(())
    }

    /// After a read of one of several clients outside a batch: ends its
    /// statement and blob handle, so that the read's transaction ends.
    #[inline]
    pub(super) fn read_done(&mut self) {
        if self.between_batches() {
            self.db.end_statements();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::connect;
    use super::*;
    use crate::engine::api::Session;
    use crate::engine::keep::Lease;
    use crate::records::{DatasetSpec, DbParams};
    use crate::util::progress::Silent;

    /// Two clients of one WAL database of 5 blobs of 100 bytes (in the
    /// directory returned), each committing every `commit_every` writes.
    fn two_writing_clients(commit_every: u32) -> (tempfile::TempDir, DbSession, DbSession) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kv.db");
        let spec = DatasetSpec { count: 5, size: 100, ..DatasetSpec::default() };
        crate::engine::sqlite::init::init(&db, &spec, false, &Silent).unwrap();
        let params = DbParams { journal_mode: Some(crate::records::Journal::Wal), ..DbParams::default() };
        let client = || {
            let conn = (connect(&db).unwrap(), Lease::once());
            DbSession::on(conn, &db, &params, (true, Some(commit_every), true), false, None).unwrap()
        };
        let (a, b) = (client(), client());
        (dir, a, b)
    }

    #[test]
    fn a_client_holds_the_write_lock_only_within_its_batch() {
        let (_dir, mut a, mut b) = two_writing_clients(2);
        a.put(1, &[1; 100]).unwrap();
        a.put(2, &[1; 100]).unwrap();
        b.put(3, &[2; 100]).unwrap();
        assert_eq!(a.read(3).unwrap(), 100, "a reads between its batches while b holds the lock");
        b.put(4, &[2; 100]).unwrap();
        a.put(5, &[1; 100]).unwrap();
        assert_eq!((a.busy_waits(), b.busy_waits()), (0, 0), "each took the lock when the other's batch was done");
        for s in [a, b] {
            let mut s = s;
            s.commit().unwrap();
            s.close().unwrap();
        }
    }

    /// A client committing every write whose overwrite or delete finds no
    /// blob (a sparse dataset) gives the write lock back: kept, the open
    /// loop's client would hold it while it sleeps to its next due time,
    /// and here b's write would wait out the busy timeout and fail.
    #[test]
    fn a_write_that_finds_no_blob_gives_the_write_lock_back() {
        let (_dir, mut a, mut b) = two_writing_clients(1);
        assert_eq!(a.overwrite(99, &[1; 100]).unwrap(), 0);
        assert!(!a.delete(98).unwrap());
        b.overwrite(3, &[2; 100]).unwrap();
        assert_eq!(b.busy_waits(), 0, "a's misses left the lock free");
        a.overwrite(4, &[1; 100]).unwrap();
        assert_eq!(a.busy_waits(), 0, "b's write committed alone");
        for s in [a, b] {
            let mut s = s;
            s.commit().unwrap();
            s.close().unwrap();
        }
    }
}
