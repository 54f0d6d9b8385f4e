//! SQLite's durable writer in the configuration that fits concurrency
//! across connections: WAL with synchronous FULL, a connection per writer,
//! each write its own `BEGIN IMMEDIATE` ... `COMMIT` under a busy handler
//! that waits as `sqlite3_busy_timeout` does and counts its waits. The
//! engine's session begins deferred transactions with no busy handler
//! (kvtest's way), and its clients give up after a fixed timeout, so this
//! writer is the study's own, as its row writers are. It writes what the
//! engine's one-writer row writes (the same UPDATE, the same page cache),
//! so that the two SQLite rows differ only in their connections.

use std::cell::Cell;
use std::path::Path;
use std::sync::Barrier;
use std::time::Instant;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::drivers::session::ContentPool;
use crate::engine::sqlite::busy_delay;
use crate::measure::{op_clock, Latency, LatencySink};
use crate::records::{DbParams, Journal};
use crate::{Error, Result};

thread_local! {
    /// Busy waits of this thread's writer: bumped by its busy handler,
    /// which runs only while SQLite waits for the write lock.
    static BUSY_WAITS: Cell<u64> = const { Cell::new(0) };
}

/// What one writer thread did in one run.
pub struct WriterTally {
    pub ops: u64,
    /// Writes that still found the database locked after the busy timeout
    /// (rolled back and not counted as writes).
    pub failed: u64,
    pub busy_waits: u64,
    pub opened_from: Instant,
    pub loop_start: Instant,
    pub loop_end: Instant,
    pub latency: Option<Latency>,
}

/// A writer's connection: WAL, FULL, the engine's page cache and mmap
/// (kvtest's), the counting busy handler. A writer keeps it between runs,
/// as a long-running application's writer threads keep theirs (and as the
/// engine's one writer connection is kept): while one connection is open
/// the WAL stays in place and is written over from its start after each
/// checkpoint, where a WAL deleted at every close grows again from nothing,
/// every commit extending the file (a slower fsync).
pub fn connect(path: &Path, timeout_ms: u32) -> Result<Connection> {
    let err = |what: &'static str| move |e: rusqlite::Error| Error::bad_input(path, format!("{what}: {e}"));
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).map_err(err("cannot open database"))?;
    conn.busy_handler(Some(move |count: i32| match busy_delay(count.max(0) as u32, timeout_ms) {
        Some(ms) => {
            BUSY_WAITS.with(|w| w.set(w.get() + 1));
            std::thread::sleep(std::time::Duration::from_millis(ms));
            true
        }
        None => false,
    }))
    .map_err(err("cannot set a busy handler"))?;
    let p = DbParams::default();
    let pragmas =
        format!("PRAGMA mmap_size={}; PRAGMA cache_size={}; PRAGMA synchronous=FULL", p.mmap_bytes, p.cache_size);
    conn.execute_batch(&pragmas).map_err(err("cannot set the pragmas"))?;
    Ok(conn)
}

/// Puts the database in WAL (it persists in the file) before any writer
/// or reader opens it.
pub fn to_wal(path: &Path) -> Result<()> {
    let conn = connect(path, 5000)?;
    let mode: String = conn
        .query_row(&format!("PRAGMA journal_mode={}", Journal::Wal), [], |r| r.get(0))
        .map_err(|e| Error::bad_input(path, format!("cannot set WAL: {e}")))?;
    if Journal::parse(&mode) != Some(Journal::Wal) {
        return Err(Error::bad_input(path, format!("journal mode WAL could not be set (still {mode})")));
    }
    Ok(())
}

/// What one writer overwrites: its own keys, in a shuffled order, cycled
/// from the first in every run; each write's content from the pool at a
/// new offset, starting at another offset in every run (so no write
/// rewrites the bytes its blob holds, which would commit nothing).
pub struct WriterWork<'a> {
    pub keys: &'a [u32],
    pub count: u64,
    pub content: &'a ContentPool,
}

/// Prepares its statements on `conn` (the writer's own, from [`connect`]),
/// waits at `barrier` for the other clients, then makes `count` durable
/// overwrites of the database at `path`, each its own IMMEDIATE
/// transaction. The loop is the three statements and one clock read per
/// write.
pub fn run(
    conn: &Connection,
    path: &Path,
    w: &WriterWork<'_>,
    latency: bool,
    barrier: &Barrier,
) -> Result<WriterTally> {
    let opened_from = Instant::now();
    let err = |what: &'static str| move |e: rusqlite::Error| Error::bad_input(path, format!("{what}: {e}"));
    let prepared = (|| {
        Ok::<_, rusqlite::Error>((
            conn.prepare("BEGIN IMMEDIATE")?,
            // The engine's same-size overwrite by SQL (`DbSession`).
            conn.prepare("UPDATE kv SET v=substr(?2,1,length(v)) WHERE k=?1")?,
            conn.prepare("COMMIT")?,
        ))
    })();
    barrier.wait();
    let (mut begin, mut update, mut commit) = prepared.map_err(err("cannot prepare the writer's statements"))?;
    let mut hist = latency.then(Latency::new);
    let (blob, mut content) = (w.content.blob_max(), w.content.writes());
    let (mut ops, mut failed, mut i) = (0u64, 0u64, 0usize);
    BUSY_WAITS.with(|b| b.set(0));
    let clock = op_clock();
    let loop_start = Instant::now();
    let mut prev = clock.raw();
    while ops < w.count {
        let key = w.keys[i];
        i = if i + 1 == w.keys.len() { 0 } else { i + 1 };
        let content = content.next(blob);
        let wrote = begin.execute([]).and_then(|_| update.execute((i64::from(key), content))).and_then(|n| {
            commit.execute([])?;
            Ok(n)
        });
        match wrote {
            // A commit that changed no row wrote nothing: not a durable write.
            Ok(0) => return Err(Error::bad_input(path, format!("key {key} has no blob to overwrite"))),
            Ok(_) => {
                ops += 1;
                if let Some(h) = hist.as_mut() {
                    let now = clock.raw();
                    h.record(clock.delta_as_nanos(prev, now));
                    prev = now;
                }
            }
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {
                failed += 1;
                if !conn.is_autocommit() {
                    conn.execute_batch("ROLLBACK").map_err(err("cannot roll back"))?;
                }
                prev = clock.raw();
                if failed > w.count {
                    return Err(Error::bad_input(path, "every write stayed busy past the busy timeout"));
                }
            }
            Err(e) => return Err(err("cannot write")(e)),
        }
    }
    let loop_end = Instant::now();
    Ok(WriterTally {
        ops,
        failed,
        busy_waits: BUSY_WAITS.with(Cell::get),
        opened_from,
        loop_start,
        loop_end,
        latency: hist,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::DatasetSpec;
    use crate::util::progress::Silent;

    /// What the durable figures rest on: each writer connection commits in
    /// WAL with synchronous FULL (2), which syncs the WAL at every commit.
    #[test]
    fn a_writer_connection_is_in_wal_with_synchronous_full() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kv.db");
        let spec = DatasetSpec { count: 3, size: 100, ..DatasetSpec::default() };
        crate::engine::sqlite::init::init(&db, &spec, false, &Silent).unwrap();
        to_wal(&db).unwrap();
        let conn = connect(&db, 0).unwrap();
        let pragma =
            |name: &str| conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, rusqlite::types::Value>(0));
        assert_eq!(pragma("journal_mode").unwrap(), rusqlite::types::Value::Text("wal".into()));
        assert_eq!(pragma("synchronous").unwrap(), rusqlite::types::Value::Integer(2));
    }
}
