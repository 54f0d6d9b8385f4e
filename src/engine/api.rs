//! What every engine offers the drivers: an [`Engine`] (a dataset opened
//! with one run's settings) and its [`Session`]s, whose calls are timed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::engine::throwaway::hosts::Replicated;
use crate::records::{EngineKind, Journal, ServerInfo};
use crate::Result;

/// What a session was opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenMode {
    /// Writes (overwrite, put, delete) will be made.
    pub write: bool,
    /// Ask the engine for its largest key inside the setup phase, as kvtest
    /// does for a database when no --max-id is given.
    pub find_max: bool,
    /// Keep the session's handle (connection, environment, database) open
    /// after it closes, for the engine's next session, as a long-running
    /// reader keeps its database open (see `engine::keep`). The drivers
    /// set it for the sessions of measured read runs; a write session
    /// never keeps, and closes what earlier sessions kept first, so that
    /// work an engine defers to its close (SQLite's closing checkpoint,
    /// redb's and fjall's final sync) happens in its own close phase.
    pub keep: bool,
    /// Read the newest copy a replicated store holds (an object store's
    /// proxy asking every replica), as the crash test's check after a
    /// kill does; a store with one copy reads as usual. Never set on a
    /// timed session.
    pub newest: bool,
    /// This session is client `i` of several using the store at once
    /// (`advise --clients N`); None for a session alone. Each engine takes
    /// the configuration that fits concurrency: SQLite's writer takes its
    /// write lock per batch (`BEGIN IMMEDIATE`, its busy waits counted)
    /// instead of holding a transaction open, the files write their
    /// temporary files under names of the client's own.
    pub client: Option<u32>,
}

impl OpenMode {
    pub const READ: OpenMode = OpenMode { write: false, find_max: false, keep: false, newest: false, client: None };
    pub const WRITE: OpenMode = OpenMode { write: true, find_max: false, keep: false, newest: false, client: None };
    pub const NEWEST_READ: OpenMode = OpenMode { newest: true, ..OpenMode::READ };

    /// The mode of a measured session: a read session keeps its handle.
    pub const fn measured(write: bool, find_max: bool) -> OpenMode {
        OpenMode { write, find_max, keep: !write, newest: false, client: None }
    }

    /// The mode of client `i` of several running a mix at once: it may
    /// write, and it keeps its handle between runs, as a long-running
    /// application's clients do (the kept handle is not closed by the
    /// other clients' write sessions, as a lone writer's would be). A
    /// client given no commit granularity commits every write, as the
    /// clients of a service do, and takes no lock before its first write:
    /// a run-long transaction per client (kvtest's one per run) would hold
    /// the store's write lock, or its rows', from a client's first write,
    /// and the others would wait for it or deadlock on each other's rows.
    pub const fn client(i: u32) -> OpenMode {
        OpenMode { write: true, find_max: false, keep: true, newest: false, client: Some(i) }
    }
}

/// What is learnt about a dataset before any timed run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Survey {
    /// Largest key present, when the engine knows it without a timed query
    /// (SQLite finds it inside its setup phase instead, as kvtest does).
    pub max_key: Option<u32>,
    /// Largest blob, when surveyed for writes: new content is cut from a
    /// pool at least this long.
    pub blob_max: u32,
}

/// What an engine reports about a session (kvtest prints SQLite's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub page_size: Option<i64>,
    pub cache_size: Option<i64>,
    pub journal_mode: Option<Journal>,
    /// Largest key, when the session was opened with `find_max`.
    pub max_key: Option<u32>,
    /// The close runs a checkpoint (an SQLite WAL): timed as its own phase
    /// when the run asks for that.
    pub close_checkpoints: bool,
    /// The close finishes work the session's writes deferred to it (an
    /// SQLite WAL's checkpoint, redb's sync after commits without one,
    /// fjall's journal sync): timed with the writes, never left out as a
    /// one-off cost. False for a session that did not write.
    pub close_finishes_writes: bool,
    /// This session opened the engine's handle (connection, environment,
    /// database) rather than finding one kept open: its setup phase holds
    /// that one-off open.
    pub opened_handle: bool,
}

/// A dataset opened with one run's settings.
pub trait Engine: Send + Sync {
    fn kind(&self) -> EngineKind;

    fn path(&self) -> &Path;

    /// Checks the dataset before any run (schema, keys present, write
    /// access when `for_writes`) and learns what the runs need. Called once,
    /// outside every timer; later sessions rely on what it found.
    fn survey(&mut self, for_writes: bool) -> Result<Survey>;

    /// The setup phase: open (or take the handle a kept session left
    /// open, [`OpenMode::keep`]), settings, begin the run's transaction.
    /// A write session first closes every kept handle.
    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>>;

    /// Every file whose pages a cold run must drop from the page cache.
    fn cache_files(&self) -> Result<Vec<PathBuf>>;

    /// Empties the caches a cold run must not find warm beyond the page
    /// cache: closes every handle kept open ([`OpenMode::keep`]), and with
    /// it the engine's own cache and maps, so the next session opens it
    /// again, as a restarted application would; a database server also
    /// drops its own buffers. Called before the page cache is emptied,
    /// outside every timer. Nothing for an engine that keeps nothing (one
    /// file per blob).
    fn drop_own_caches(&self) -> Result<()> {
        Ok(())
    }

    /// Checks after the timed runs that can still invalidate their figures
    /// (values that are not blobs). Outside every timer.
    fn verify_after_reads(&self) -> Result<()> {
        Ok(())
    }

    /// What the server said about itself (after `survey`); None for the
    /// in-process engines. Required, with [`Session::round_trip`], so a
    /// server engine cannot forget what it must report.
    fn server_info(&self) -> Option<ServerInfo>;

    /// The keys as an index kept apart from the blobs lists them (an
    /// object store's bucket listing, which a store may keep less durably
    /// than the objects); None where reading the blobs is the only way to
    /// know them. For checks outside every timer (the crash test's).
    fn listed_keys(&self) -> Result<Option<Vec<u32>>> {
        Ok(None)
    }

    /// A plain read may be served by an older copy than
    /// [`OpenMode::newest`] reads (an object store's replica that missed a
    /// write, until its replicators repair it). The crash test then reads
    /// twice and reports how often a plain read was stale.
    fn may_serve_stale(&self) -> bool {
        false
    }

    /// The cluster of hosts the store is replicated across, when it runs
    /// on one (a replicated configuration's: `EngineSettings::replica`),
    /// started now if it is not yet; None for a store with one copy. The
    /// machine-loss test loses its hosts.
    fn replicated(&self) -> Result<Option<Arc<Mutex<dyn Replicated + Send>>>> {
        Ok(None)
    }
}

/// One open session: the timed calls, then commit and close.
pub trait Session: Send {
    /// Reads blob `key`; returns its size, or 0 when there is no such blob.
    fn read(&mut self, key: u32) -> Result<u64>;

    /// Overwrites blob `key` with as many bytes of `content` as it already
    /// has (sizes never change, as in kvtest); returns that size, or 0 when
    /// there is no such blob. A `content` shorter than the blob is an error,
    /// never a read past its end.
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64>;

    /// Stores exactly `content` as blob `key`, replacing any blob there
    /// (its size may change) or inserting a new one.
    fn put(&mut self, key: u32, content: &[u8]) -> Result<()>;

    /// Removes blob `key`; false when there was none.
    fn delete(&mut self, key: u32) -> Result<bool>;

    /// Ends the run's transaction (nothing where there is none).
    fn commit(&mut self) -> Result<()>;

    /// Closes the session (an SQLite WAL is checkpointed here).
    fn close(self: Box<Self>) -> Result<()>;

    fn info(&self) -> SessionInfo {
        SessionInfo::default()
    }

    /// The bytes the last `read` copied out, from the start of a buffer at
    /// least as long as the size it returned; None where the session keeps
    /// no copy. For checks outside every timer (the crash test's).
    fn last_read(&self) -> Option<&[u8]> {
        None
    }

    /// SQLite's memory and cache counters (kvtest's --stats); None elsewhere.
    fn sqlite_stats(&self) -> Option<SqliteStats> {
        None
    }

    /// One round trip to a server that does no work (its
    /// [`EngineKind::round_trip_call`], PostgreSQL's `SELECT 1`): the
    /// protocol and socket floor under each read. Returns the bytes the
    /// answer carried (what a run counts as moved); None where there is no
    /// server (the in-process engines). Required, so a server engine
    /// cannot forget it.
    fn round_trip(&mut self) -> Result<Option<u64>>;

    /// Times this session found the store locked by another client and
    /// waited (SQLite's `BEGIN IMMEDIATE` answered busy); 0 where a store
    /// queues its writers itself.
    fn busy_waits(&self) -> u64 {
        0
    }
}

/// A content slice long enough for `len` bytes, or the error a too-short
/// one deserves (callers promise a long enough pool; this keeps a safe
/// function from reading past a slice whatever the caller passes).
#[inline]
pub(crate) fn take(content: &[u8], len: usize, key: u32) -> Result<&[u8]> {
    content.get(..len).ok_or_else(|| too_short(content.len(), len, key))
}

/// Ok for a session opened to write (`write`); a read session's write is
/// refused.
#[inline]
pub(crate) fn check_write(write: bool) -> Result<()> {
    if write {
        Ok(())
    } else {
        Err(crate::Error::invalid("a read session cannot write"))
    }
}

#[cold]
fn too_short(have: usize, need: usize, key: u32) -> crate::Error {
    crate::Error::invalid(format!("new content for key {key} has {have} bytes, the blob has {need}"))
}

/// kvtest's --stats figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SqliteStats {
    pub memory_used: i64,
    pub memory_max: i64,
    pub allocations: i64,
    pub allocations_max: i64,
    pub pcache_pages: i64,
    pub pcache_pages_max: i64,
    pub pcache_overflow: i64,
    pub pcache_overflow_max: i64,
    pub largest_allocation: i64,
    pub largest_pcache_allocation: i64,
    pub pager_heap: i64,
    pub cache_hits: i64,
    pub cache_misses: i64,
    pub cache_writes: i64,
}
