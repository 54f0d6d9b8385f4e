//! SQLite's errors as one-line messages about the file: the OS error behind
//! "disk I/O error", and what "not a database" or "locked" mean for a user.

use std::path::Path;

use rusqlite::{ffi, Connection};

use super::raw::{Db, Failure};

use crate::Error;

/// Turns SQLite's first complaint about a file into a message about the file.
fn describe_open_error(path: &Path, e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode::*;
    match e.sqlite_error_code() {
        Some(NotADatabase) => Error::bad_input(path, "is not an SQLite database (file is not a database)"),
        Some(DatabaseCorrupt) => Error::bad_input(path, "database disk image is malformed (corrupt or truncated)"),
        Some(DatabaseBusy) | Some(DatabaseLocked) => Error::bad_input(path, "database is locked by another process"),
        _ => Error::sqlite(path, "cannot read the database", e),
    }
}

/// An error from `conn`. SQLite reports a failed read or write as "disk I/O
/// error"; the OS error behind it ("File too large", "Input/output error")
/// is what the user needs, so it replaces SQLite's words when known.
pub fn conn_error(conn: &Connection, path: &Path, what: &str, e: rusqlite::Error) -> Error {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        // SQLite reports ENOSPC as SQLITE_FULL and clears the errno.
        return Error::io(path, what, std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
        let errno = super::raw::system_errno(conn);
        if errno != 0 {
            return Error::io(path, what, std::io::Error::from_raw_os_error(errno));
        }
    }
    db_error(path, what, e)
}

/// An error of opening a database. When SQLite says "disk I/O error" its
/// handle is gone with the OS error, so the file's first page is read
/// again to name the cause ("Input/output error").
/// None when the error is not an I/O error or the read succeeds.
pub fn open_io_cause(path: &Path, what: &str, e: &rusqlite::Error) -> Option<Error> {
    if e.sqlite_error_code() != Some(rusqlite::ErrorCode::SystemIoFailure) {
        return None;
    }
    let probe = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut [0u8; 4096]));
    probe.err().map(|os| Error::io(path, what, os))
}

/// Maps an error met while reading a kvtest database to a clear message.
pub fn db_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase)
        | Some(rusqlite::ErrorCode::DatabaseCorrupt)
        | Some(rusqlite::ErrorCode::DatabaseBusy)
        | Some(rusqlite::ErrorCode::DatabaseLocked) => describe_open_error(path, e),
        _ => Error::sqlite(path, what, e),
    }
}

/// The last error of a [`Db`]'s connection as ours. Off the hot path.
#[cold]
pub(crate) fn last_error<const N: usize>(db: &Db<N>, path: &Path, what: &str) -> Error {
    failure_error(db.last_failure(), path, what)
}

/// A connection's error as ours. SQLite's "disk I/O error" hides the cause
/// ("File too large", "Input/output error"), so the OS error replaces it
/// when known.
#[cold]
pub(crate) fn failure_error(f: Failure, path: &Path, what: &str) -> Error {
    if f.code & 0xff == ffi::SQLITE_IOERR && f.errno != 0 {
        return Error::io(path, what, std::io::Error::from_raw_os_error(f.errno));
    }
    if f.code & 0xff == ffi::SQLITE_FULL {
        // SQLite reports ENOSPC as SQLITE_FULL and clears the errno; no
        // max_page_count is ever set here, so it is the disk.
        return Error::io(path, what, std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    db_error(path, what, rusqlite::Error::SqliteFailure(ffi::Error::new(f.code), Some(f.message)))
}
