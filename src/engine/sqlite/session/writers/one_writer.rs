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

use super::super::DbSession;
use crate::engine::api::{Session, SessionInfo, SqliteStats};
use crate::Result;

/// The writer connection the clients of one engine share, opened by the
/// first client that needs it.
pub(crate) struct OneWriter(Mutex<Option<Arc<Mutex<DbSession>>>>);

impl OneWriter {
    pub fn new() -> Self {
        OneWriter(Mutex::new(None))
    }

    /// The shared writer, opened by `open` when there is none yet.
    pub fn get_or_open(&self, open: impl FnOnce() -> Result<DbSession>) -> Result<Arc<Mutex<DbSession>>> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = slot.as_ref() {
            return Ok(Arc::clone(w));
        }
        let w = Arc::new(Mutex::new(open()?));
        *slot = Some(Arc::clone(&w));
        Ok(w)
    }

    /// Commits the writes of the shared writer's last batch and closes it
    /// (a cold run, or the engine's end). A client session still open
    /// keeps it until it closes (then its last batch is rolled back with
    /// the connection; no client is open when the engine finishes).
    pub fn finish(&self) -> Result<()> {
        let taken = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(Ok(writer)) = taken.map(Arc::try_unwrap) else { return Ok(()) };
        let mut writer = writer.into_inner().unwrap_or_else(PoisonError::into_inner);
        writer.commit()?;
        writer.close()
    }
}

/// One client's session in the one-writer configuration: its own read
/// session, and the shared writer.
pub(crate) struct OneWriterClient {
    read: DbSession,
    writer: Arc<Mutex<DbSession>>,
}

impl OneWriterClient {
    pub fn new(read: DbSession, writer: Arc<Mutex<DbSession>>) -> Self {
        OneWriterClient { read, writer }
    }

    /// The shared writer, for one write: the mutex is the store's
    /// configuration (its queue of writers), not the harness's.
    #[inline]
    fn writer(&self) -> MutexGuard<'_, DbSession> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
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
    /// writer's (committed when it fills, or when the engine finishes).
    fn commit(&mut self) -> Result<()> {
        self.read.commit()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.read.close()
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { close_checkpoints: false, close_finishes_writes: false, ..self.read.info() }
    }

    fn sqlite_stats(&self) -> Option<SqliteStats> {
        Some(self.read.stats())
    }
}
