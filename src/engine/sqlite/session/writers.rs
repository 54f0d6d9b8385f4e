//! SQLite's ways of writing with several clients of one process at once
//! (`DbWriters`), each a row of [`WRITERS`] and, when the clients share a
//! writer, a module here with its client session and a slot in
//! [`SharedWriters`]. A new way: its variant in `records/config.rs`, its row,
//! slot and arm here, and its module beside `one_writer.rs`; as a child of
//! the session module it may drive [`DbSession`]'s transaction itself.

pub(crate) mod one_writer;

use one_writer::{OneWriter, OneWriterClient};

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;

use super::{connect, DbSession};
use crate::engine::api::{OpenMode, Session};
use crate::engine::backend::WritersConfig;
use crate::engine::keep::{Idle, Lease};
use crate::records::{CommitEvery, DbParams, DbWriters};
use crate::{Error, Result};

/// SQLite's ways of writing with several clients of one process at once,
/// the ones sharing a connection first (advise ranks them in this order).
pub const WRITERS: &[WritersConfig] = &[
    WritersConfig {
        id: DbWriters::One,
        title: "one writer connection",
        how: "every client's writes go through one connection the process shares behind a mutex (a writer waiting \
              for it sleeps until it is free and is woken then)",
        concurrent: "SQLite WAL + FULL, one writer connection for all writers behind a mutex in the process, a \
                     commit per write; each reader on its own connection",
        threads_only: Some(
            "one writer connection is shared by the threads of one process; client processes cannot share a \
             connection, so each writes through its own",
        ),
        needs_commit_every: true,
    },
    WritersConfig {
        id: DbWriters::PerClient,
        title: "a connection per client",
        how: "each commit's writes as BEGIN IMMEDIATE, sleeping on SQLite's busy schedule (1, 2, 5, 10 ... ms) \
              while another client holds the write lock (busy waits counted)",
        concurrent: "SQLite WAL + FULL, a connection per writer, BEGIN IMMEDIATE under the busy timeout",
        threads_only: None,
        needs_commit_every: false,
    },
];

/// The row of a way of writing.
pub fn writers(id: DbWriters) -> &'static WritersConfig {
    WRITERS.iter().find(|w| w.id == id).expect("every way of writing has a row")
}

/// The writers an engine's clients share, one slot per way that shares
/// one, each opened by the first client that needs it.
pub(crate) struct SharedWriters {
    one: OneWriter,
}

impl SharedWriters {
    pub fn new() -> Self {
        SharedWriters { one: OneWriter::new() }
    }

    /// Commits the shared writers' last writes and closes them (a cold run,
    /// or the engine's end).
    pub fn finish(&self) -> Result<()> {
        self.one.finish()
    }
}

/// What the engine lends a client's session: its database, settings,
/// blob sizes and kept read connections.
pub(crate) struct Lent<'a> {
    pub path: &'a Path,
    pub params: &'a DbParams,
    pub commit_every: CommitEvery,
    pub sizes: &'a Option<Arc<Vec<u32>>>,
    pub idle: &'a Idle<Connection>,
}

impl SharedWriters {
    /// A client's session when its way of writing shares a writer (None:
    /// the client writes through a connection of its own, as any session).
    pub fn client_session(&self, e: Lent<'_>, mode: OpenMode) -> Option<Result<Box<dyn Session>>> {
        match e.params.writers {
            DbWriters::One => Some(self.one_writer_client(e, mode)),
            DbWriters::PerClient => None,
        }
    }

    /// A client's session with one writer connection for the process
    /// ([`DbWriters::One`]): reads on a connection of its own (kept
    /// between runs), writes through the shared writer, opened by the
    /// first client and committing every N writes of all clients.
    fn one_writer_client(&self, e: Lent<'_>, mode: OpenMode) -> Result<Box<dyn Session>> {
        let path = &e.path;
        // A client that only reads opens as a reader: it never needs the
        // writer, nor a commit granularity.
        if !mode.write {
            let conn = e.idle.lease(mode.keep, || connect(path))?;
            let read = (false, e.commit_every, true);
            return Ok(Box::new(DbSession::on(conn, path, e.params, read, mode.find_max, None)?));
        }
        let Some(n) = e.commit_every else {
            return Err(Error::invalid(
                "SQLite's one writer connection commits every N writes of all its clients: give --commit-every N",
            ));
        };
        let conn = e.idle.lease(mode.keep, || connect(path))?;
        let read = DbSession::on(conn, path, e.params, (false, Some(n), true), mode.find_max, None)?;
        super::client::check_journal(read.journal_mode, path)?;
        Ok(Box::new(OneWriterClient::new(read, &self.one, || {
            let conn = (connect(path)?, Lease::once());
            DbSession::on(conn, path, e.params, (true, Some(n), false), false, e.sizes.clone())
        })?))
    }
}
