//! Opening a kvtest database (table `kv(k INTEGER PRIMARY KEY, v BLOB)`)
//! with its schema checked, and reading its rows in key order: what every
//! builder starts from.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::engine::sqlite::error::{conn_error, db_error, open_io_cause};
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// The first bytes of every SQLite database file.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// An open kvtest database whose schema has been checked.
pub struct KvConnection {
    pub conn: Connection,
    pub path: PathBuf,
}

/// Opens `path` as a kvtest database: it must be an SQLite file with table
/// `kv(k INTEGER PRIMARY KEY, v BLOB)`. Touching the schema also lets SQLite
/// recover a hot journal, as kvtest does before it starts its timer.
///
/// A read-only connection cannot roll back the hot journal a crashed writer
/// left behind, so SQLite refuses it; the database is then opened once
/// read-write for SQLite to recover it, as any reader (kvtest, the sqlite3
/// shell) would. That restores the last committed state and loses nothing
/// that was committed.
pub fn open_kv(path: &Path, writable: bool) -> Result<KvConnection> {
    check_sqlite_file(path)?;
    let open = |flags: OpenFlags| {
        Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(|e| {
            let what = "cannot open database";
            open_io_cause(path, what, &e).unwrap_or_else(|| Error::sqlite(path, what, e))
        })
    };
    let flags = if writable { OpenFlags::SQLITE_OPEN_READ_WRITE } else { OpenFlags::SQLITE_OPEN_READ_ONLY };
    let mut conn = open(flags)?;
    let mut columns = kv_columns(&conn);
    if !writable && columns.as_ref().is_err_and(needs_rollback) {
        drop(conn);
        let recovered = kv_columns(&open(OpenFlags::SQLITE_OPEN_READ_WRITE)?);
        if recovered.as_ref().is_err_and(needs_rollback) {
            return Err(Error::bad_input(
                path,
                "has a hot journal left by a crashed writer, and SQLite needs write access to roll it back",
            ));
        }
        conn = open(flags)?;
        columns = kv_columns(&conn);
    }
    check_kv_schema(columns.map_err(|e| conn_error(&conn, path, "cannot read the database", e))?, path)?;
    Ok(KvConnection { conn, path: path.to_path_buf() })
}

/// SQLite refused a read-only connection because a journal must be rolled
/// back (or a WAL recovered) first.
fn needs_rollback(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK
            || f.extended_code == rusqlite::ffi::SQLITE_READONLY_RECOVERY)
}

/// Columns of table kv: name, declared type, primary-key flag.
fn kv_columns(conn: &Connection) -> rusqlite::Result<Vec<(String, String, i64)>> {
    conn.prepare("SELECT name, upper(type), pk FROM pragma_table_info('kv') ORDER BY cid")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
}

fn check_kv_schema(columns: Vec<(String, String, i64)>, path: &Path) -> Result<()> {
    if columns.is_empty() {
        return Err(Error::bad_input(path, "has no table kv (not a kvtest database)"));
    }
    let expected = columns.len() == 2
        && columns[0].0.eq_ignore_ascii_case("k")
        && columns[0].1 == "INTEGER"
        && columns[0].2 == 1
        && columns[1].0.eq_ignore_ascii_case("v");
    if !expected {
        let found: Vec<String> = columns.iter().map(|(n, t, _)| format!("{n} {t}").trim().to_string()).collect();
        return Err(Error::bad_input(
            path,
            format!("table kv has columns ({}), expected (k INTEGER PRIMARY KEY, v BLOB)", found.join(", ")),
        ));
    }
    Ok(())
}

/// Refuses, in one line, a path that is not an SQLite database file.
fn check_sqlite_file(path: &Path) -> Result<()> {
    use std::io::Read;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NotFound(path.to_path_buf())),
        Err(e) => return Err(Error::io(path, "cannot access", e)),
    };
    if meta.is_dir() {
        return Err(Error::bad_input(path, "is a directory, expected an SQLite database"));
    }
    if meta.len() == 0 {
        return Err(Error::bad_input(path, "is an empty file, not an SQLite database"));
    }
    let mut head = [0u8; 16];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    match f.read_exact(&mut head) {
        Ok(()) if &head == SQLITE_HEADER => Ok(()),
        Ok(()) => Err(Error::bad_input(path, "is not an SQLite database (no SQLite header)")),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(Error::bad_input(path, "is not an SQLite database (no SQLite header)"))
        }
        Err(e) => Err(Error::io(path, "cannot read", e)),
    }
}

/// Calls `put(key, value)` for every row of the kvtest database `db` in key
/// order, reporting progress; returns the entries and bytes copied.
pub fn copy_rows(
    db: &Path,
    progress: &dyn Progress,
    put: &mut dyn FnMut(u32, &[u8]) -> Result<()>,
) -> Result<(u64, u64)> {
    let kv = open_kv(db, false)?;
    let sql_err = |e| db_error(db, "cannot read blobs", e);
    let total: i64 = kv.conn.query_row("SELECT count(*) FROM kv", [], |r| r.get(0)).map_err(sql_err)?;
    progress.start("export", total.max(0) as u64);
    let mut stmt = kv.conn.prepare("SELECT k, v FROM kv ORDER BY k").map_err(sql_err)?;
    let mut rows = stmt.query([]).map_err(sql_err)?;
    let (mut entries, mut bytes) = (0u64, 0u64);
    while let Some(row) = rows.next().map_err(sql_err)? {
        let key: i64 = row.get(0).map_err(sql_err)?;
        let Ok(key) = u32::try_from(key) else {
            return Err(Error::bad_input(db, format!("key {key} is outside 0..{}", u32::MAX)));
        };
        let value = match row.get_ref(1).map_err(sql_err)? {
            rusqlite::types::ValueRef::Blob(b) => b,
            other => {
                let ty = other.data_type().to_string().to_lowercase();
                return Err(Error::bad_input(db, format!("value of key {key} is {ty}, not a BLOB")));
            }
        };
        put(key, value)?;
        entries += 1;
        bytes += value.len() as u64;
        if entries.is_multiple_of(1024) {
            progress.advance(1024);
            if stop_requested() {
                return Err(Error::Interrupted);
            }
        }
    }
    progress.advance(entries % 1024);
    progress.finish();
    Ok((entries, bytes))
}
