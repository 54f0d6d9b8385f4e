//! SQLite's one-writer configuration for the clients of one process
//! (`DbWriters::One`): every client reads on a connection of its own and
//! writes through one connection the process shares behind a mutex. A
//! writer that finds it taken sleeps in the mutex and is woken when the
//! one before it is done, where a connection per client polls SQLite's
//! lock on the busy schedule (1, 2, 5, 10 ... ms, woken by nothing). The
//! shared connection is a long-running writer's: it commits every N
//! writes of all clients together (each write returns once it is
//! committed when N is 1) and stays open between runs, until the engine
//! closes it ([`OneWriter::finish`]). It exists only within one process:
//! client processes cannot share a connection.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::super::{DbSession, Txn};
use crate::engine::api::{Session, SessionInfo, SqliteStats};
use crate::Result;

/// The shared writer and how many client sessions use it now.
struct Shared {
    writer: Mutex<DbSession>,
    /// Client sessions open on it; the last to close ends the run's open
    /// batch ([`OneWriterClient::close`]).
    open: Mutex<u32>,
}

/// The writer connection the clients of one engine share, opened by the
/// first client that needs it.
pub(crate) struct OneWriter(Mutex<Option<Arc<Shared>>>);

impl OneWriter {
    pub fn new() -> Self {
        OneWriter(Mutex::new(None))
    }

    /// A client session's share of the writer, opened by `open` when there
    /// is none yet.
    fn join(&self, open: impl FnOnce() -> Result<DbSession>) -> Result<Arc<Shared>> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let shared = match slot.as_ref() {
            Some(w) => Arc::clone(w),
            None => {
                let w = Arc::new(Shared { writer: Mutex::new(open()?), open: Mutex::new(0) });
                *slot = Some(Arc::clone(&w));
                w
            }
        };
        *shared.open.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Ok(shared)
    }

    /// Commits the writes of the shared writer's last batch and closes it
    /// (a cold run, or the engine's end). A client session still open
    /// keeps it until it closes (then its last batch is rolled back with
    /// the connection; no client is open when the engine finishes).
    pub fn finish(&self) -> Result<()> {
        let taken = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(Ok(shared)) = taken.map(Arc::try_unwrap) else { return Ok(()) };
        let mut writer = shared.writer.into_inner().unwrap_or_else(PoisonError::into_inner);
        writer.commit()?;
        writer.close()
    }
}

impl DbSession {
    /// Commits the shared writer's open batch, if it holds writes, and
    /// begins the next (a batched writer always has one open, deferred, so
    /// it holds no lock until it writes).
    fn end_batch(&mut self) -> Result<()> {
        let Txn::Batched(batch) = self.txn else { return Ok(()) };
        if batch.pending() == 0 {
            return Ok(());
        }
        self.commit_batch("COMMIT; BEGIN")?;
        if let Txn::Batched(batch) = &mut self.txn {
            batch.committed();
        }
        Ok(())
    }
}

/// One client's session in the one-writer configuration: its own read
/// session, and the shared writer.
pub(crate) struct OneWriterClient {
    read: DbSession,
    shared: Arc<Shared>,
}

impl OneWriterClient {
    /// Client `read`'s session, writing through `engine`'s one writer
    /// (opened by `open` when none is yet).
    pub fn new(read: DbSession, engine: &OneWriter, open: impl FnOnce() -> Result<DbSession>) -> Result<Self> {
        Ok(OneWriterClient { read, shared: engine.join(open)? })
    }

    /// The shared writer, for one write: the mutex is the store's
    /// configuration (its queue of writers), not the harness's.
    #[inline]
    fn writer(&self) -> MutexGuard<'_, DbSession> {
        self.shared.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Session for OneWriterClient {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    /// One read on the client's own connection, its transaction ended
    /// after it (a snapshot kept open would hide the other clients' writes
    /// and hold back the WAL's checkpoints).
    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        self.read.read(key)
    }

    /// One overwrite through the shared writer, committed with its batch.
    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        self.writer().overwrite(key, content)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        self.writer().put(key, content)
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        self.writer().delete(key)
    }

    /// The client's reads hold nothing; the writer's batch is the
    /// writer's (committed when it fills, or when the run's last client
    /// closes).
    fn commit(&mut self) -> Result<()> {
        self.read.commit()
    }

    /// The run's last client to close commits the writer's open batch: a
    /// batch left open between runs would hold the write lock against
    /// every other connection to the file (another configuration's rows
    /// on the same database) until the next run filled it.
    fn close(self: Box<Self>) -> Result<()> {
        let last = {
            let mut open = self.shared.open.lock().unwrap_or_else(PoisonError::into_inner);
            *open -= 1;
            *open == 0
        };
        if last {
            self.writer().end_batch()?;
        }
        self.read.close()
    }

    /// The last close commits the run's open batch: work the writes left
    /// to it, counted with them.
    fn info(&self) -> SessionInfo {
        SessionInfo { close_checkpoints: false, close_finishes_writes: true, ..self.read.info() }
    }

    fn sqlite_stats(&self) -> Option<SqliteStats> {
        Some(self.read.stats())
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::api::{Engine, OpenMode};
    use crate::engine::sqlite::SqliteEngine;
    use crate::records::{DatasetSpec, DbParams, DbWriters, Journal};
    use crate::util::progress::Silent;

    /// Two clients write one blob each into a batch of 4 and close: the
    /// run's last close commits the batch, so the write lock is free for
    /// any other connection at once and the writes are there.
    #[test]
    fn the_last_client_to_close_commits_the_writers_open_batch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.db");
        let spec = DatasetSpec { count: 5, size: 100, ..DatasetSpec::default() };
        crate::engine::sqlite::init::init(&path, &spec, false, &Silent).unwrap();
        let params = DbParams { journal_mode: Some(Journal::Wal), writers: DbWriters::One, ..DbParams::default() };
        let mut engine = SqliteEngine::new(&path, params, Some(4));
        engine.survey(true).unwrap();
        let mut clients = [engine.open(OpenMode::client(0)).unwrap(), engine.open(OpenMode::client(1)).unwrap()];
        for (i, c) in clients.iter_mut().enumerate() {
            assert_eq!(c.overwrite(i as u32 + 1, &[9u8; 100]).unwrap(), 100);
            c.commit().unwrap();
        }
        for c in clients {
            c.close().unwrap();
        }
        let other = rusqlite::Connection::open(&path).unwrap();
        other.busy_timeout(std::time::Duration::ZERO).unwrap();
        other.execute_batch("BEGIN IMMEDIATE; ROLLBACK").expect("no batch holds the write lock between runs");
        let first: Vec<u8> = other.query_row("SELECT substr(v, 1, 1) FROM kv WHERE k = 2", [], |r| r.get(0)).unwrap();
        assert_eq!(first, [9], "the batch was committed");
    }
}
