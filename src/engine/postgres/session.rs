//! One connection's timed calls.
//!
//! - **read**: one prepared `SELECT v FROM t WHERE k=$1` (`postgres`) or
//!   `SELECT lo_get(o) FROM t WHERE k=$1` (`postgres-lo`); the server sends
//!   the value in binary format, and it is copied into the reused buffer.
//!   Reads run outside any explicit transaction, as pgbench's do.
//! - **overwrite** (same size): one write (`UPDATE`, or `lo_put` at offset
//!   0) of as many bytes as the blob has, its size known from the survey
//!   (`engine::sizes`; an application knows what it stores): one round
//!   trip, as the reference loop's (`examples/reference_loops.rs`).
//! - **put**: one upsert (`INSERT ... ON CONFLICT`), which for large objects
//!   also unlinks the old object and makes the new one (`lo_from_bytea`).
//! - **delete**: one `DELETE` (plus `lo_unlink` of the object).
//! - **round_trip**: a prepared `SELECT 1`, the protocol and socket floor.
//!
//! Write sessions run one transaction per run (`BEGIN` in the setup, `COMMIT`
//! in the commit) or, with `commit_every` N, one per N writes: each write
//! its own statement's transaction for N = 1, else `COMMIT; BEGIN` (one
//! round trip) after every Nth write, inside it. Durability is the
//! session's `synchronous_commit`: `on` (durable) or `off` (fast); `fsync`
//! stays on.

use std::sync::Arc;

use postgres::{Client, Statement};

use super::conn::{pg_error, Server};
use crate::engine::api::{check_write, take, Session, SessionInfo};
use crate::engine::keep::Lease;
use crate::engine::kv::copy_out;
use crate::engine::sizes::KnownSizes;
use crate::records::{CommitEvery, EngineKind, KvParams, KvSync, WriteBatch};
use crate::{Error, Result};

/// `synchronous_commit` for a durability.
pub(super) fn sync_setting(sync: KvSync) -> &'static str {
    match sync {
        KvSync::Durable => "on",
        KvSync::Fast => "off",
    }
}

/// The prepared statements of one engine's table.
struct Statements {
    read: Statement,
    overwrite: Statement,
    put: Statement,
    delete: Statement,
    ping: Statement,
}

/// The SQL of each operation, for `kind`'s table `t`.
/// The statements of a session on table `t`. A client of several
/// (`OpenMode::client`) overwrites a large object under its row's lock:
/// PostgreSQL updates a large object's pages in place without waiting for
/// another writer of the same object, and fails with "tuple concurrently
/// updated" where a row update would wait.
fn sql(kind: EngineKind, t: &str, client: bool) -> [String; 4] {
    // lo_open's INV_READ (0x40000).
    match kind {
        EngineKind::PostgresLo => {
            [
                format!("SELECT lo_get(o) FROM {t} WHERE k = $1"),
                if client {
                    format!("WITH locked AS (SELECT o FROM {t} WHERE k = $1 FOR UPDATE) SELECT lo_put(o, 0, $2) FROM locked")
                } else {
                    format!("SELECT lo_put(o, 0, $2) FROM {t} WHERE k = $1")
                },
                format!(
                    "INSERT INTO {t}(k, o) SELECT $1::int8, lo_from_bytea(0, $2::bytea) \
                 FROM (SELECT count(lo_unlink(o)) FROM {t} WHERE k = $1::int8) AS old \
                 ON CONFLICT (k) DO UPDATE SET o = EXCLUDED.o"
                ),
                format!("DELETE FROM {t} WHERE k = $1 RETURNING lo_unlink(o)"),
            ]
        }
        _ => [
            format!("SELECT v FROM {t} WHERE k = $1"),
            format!("UPDATE {t} SET v = $2 WHERE k = $1"),
            format!("INSERT INTO {t}(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"),
            format!("DELETE FROM {t} WHERE k = $1"),
        ],
    }
}

pub(super) struct PgSession {
    client: Client,
    /// Where the connection came from and goes back to (`engine::keep`).
    lease: Lease<Client>,
    st: Statements,
    server: Arc<Server>,
    sizes: Arc<KnownSizes>,
    write: bool,
    /// A transaction was begun in the setup and awaits `commit`.
    in_txn: bool,
    /// Writes since the last commit, when every N are committed (N > 1).
    batch: Option<WriteBatch>,
    buf: Vec<u8>,
}

impl PgSession {
    /// On `client` (connected for this session, or kept open by an
    /// earlier one): prepares, sets the durability and, for a write
    /// session with one transaction per run or per N > 1 writes, begins it.
    pub fn open(
        (mut client, lease): (Client, Lease<Client>),
        server: Arc<Server>,
        sizes: Arc<KnownSizes>,
        (write, one_of_several): (bool, bool),
        kv: KvParams,
        commit_every: CommitEvery,
    ) -> Result<PgSession> {
        let err = |e| pg_error(&server.label, "cannot prepare the session", e);
        let [read, overwrite, put, delete] = sql(server.desc.engine, server.table(), one_of_several);
        let st = Statements {
            read: client.prepare(&read).map_err(err)?,
            overwrite: client.prepare(&overwrite).map_err(err)?,
            put: client.prepare(&put).map_err(err)?,
            delete: client.prepare(&delete).map_err(err)?,
            ping: client.prepare("SELECT 1").map_err(err)?,
        };
        let mut setup = format!("SET synchronous_commit = {}", sync_setting(kv.sync));
        // One write per transaction is each statement's own.
        let in_txn = write && commit_every != Some(1);
        if in_txn {
            setup.push_str("; BEGIN");
        }
        client.batch_execute(&setup).map_err(err)?;
        let batch = commit_every.filter(|&n| write && n > 1).map(WriteBatch::new);
        Ok(PgSession { client, lease, st, server, sizes, write, in_txn, batch, buf: Vec::new() })
    }

    /// Counts a write made; when it fills the batch, commits it and begins
    /// the next transaction.
    fn wrote(&mut self) -> Result<()> {
        if self.batch.as_mut().is_some_and(WriteBatch::wrote) {
            self.client.batch_execute("COMMIT; BEGIN").map_err(|e| self.err("cannot commit", e))?;
        }
        Ok(())
    }

    fn err(&self, what: &str, e: postgres::Error) -> Error {
        pg_error(&self.server.label, what, e)
    }
}

impl Session for PgSession {
    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        match self.client.query_opt(&self.st.read, &[&i64::from(key)]) {
            Ok(Some(row)) => Ok(copy_out(&mut self.buf, row.get::<_, &[u8]>(0))),
            Ok(None) => Ok(0),
            Err(e) => Err(self.err("cannot read", e)),
        }
    }

    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        check_write(self.write)?;
        let Some(len) = self.sizes.get(key) else { return Ok(0) };
        let len = len as usize;
        let value = take(content, len, key)?;
        let n = self
            .client
            .execute(&self.st.overwrite, &[&i64::from(key), &value])
            .map_err(|e| self.err("cannot write", e))?;
        if n == 0 {
            // Another connection deleted it (the concurrency study).
            self.sizes.remove(key);
            return Ok(0);
        }
        self.wrote()?;
        Ok(len as u64)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        check_write(self.write)?;
        let len = u32::try_from(content.len()).map_err(|_| Error::invalid(format!("blob {key} is over 4 GB")))?;
        self.client.execute(&self.st.put, &[&i64::from(key), &content]).map_err(|e| self.err("cannot write", e))?;
        self.sizes.insert(key, len);
        self.wrote()
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        check_write(self.write)?;
        let n = self.client.execute(&self.st.delete, &[&i64::from(key)]).map_err(|e| self.err("cannot delete", e))?;
        if n > 0 {
            self.sizes.remove(key);
            self.wrote()?;
        }
        Ok(n > 0)
    }

    fn commit(&mut self) -> Result<()> {
        if std::mem::take(&mut self.in_txn) {
            self.client.batch_execute("COMMIT").map_err(|e| self.err("cannot commit", e))?;
        }
        Ok(())
    }

    /// Closes the connection, or keeps it open for the engine's next
    /// session when this one was opened to keep it.
    fn close(self: Box<Self>) -> Result<()> {
        let PgSession { client, lease, server, in_txn, st, .. } = *self;
        // Its statements go with the session; a kept connection has none.
        drop(st);
        let idle = !in_txn && !client.is_closed();
        match lease.end(client, idle) {
            Some(client) => client.close().map_err(|e| pg_error(&server.label, "cannot close the connection", e)),
            None => Ok(()),
        }
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { opened_handle: self.lease.opened, ..SessionInfo::default() }
    }

    fn last_read(&self) -> Option<&[u8]> {
        Some(&self.buf)
    }

    #[inline]
    /// The answer is one int4.
    fn round_trip(&mut self) -> Result<Option<u64>> {
        self.client.query_one(&self.st.ping, &[]).map_err(|e| self.err("cannot run SELECT 1", e))?;
        Ok(Some(4))
    }
}
