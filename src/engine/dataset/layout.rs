//! What a path holds (database, flat directory, tree), kvtest's file names for
//! each key, and opening a database as a kvtest dataset with its schema checked.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::records::EngineKind;
use crate::{Error, Result};

const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Decides what `path` is, as kvtest does (a directory with a `00`
/// subdirectory is a tree), but by the SQLite header rather than by a file
/// size that is a multiple of 512.
pub fn detect(path: &Path) -> Result<EngineKind> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NotFound(path.to_path_buf())),
        Err(e) => return Err(Error::io(path, "cannot access", e)),
    };
    if meta.is_dir() {
        if path.join(crate::engine::external::NAMES_DB).is_file()
            && path.join(crate::engine::external::BLOBS_DIR).is_dir()
        {
            return Ok(EngineKind::External);
        }
        if let Some(kind) = crate::engine::detect_key_value_dir(path) {
            return Ok(kind);
        }
        return Ok(if path.join("00").is_dir() { EngineKind::Tree } else { EngineKind::Flat });
    }
    if !meta.is_file() {
        return Err(Error::bad_input(path, "is neither a regular file nor a directory"));
    }
    if meta.len() == 0 {
        return Err(Error::bad_input(path, "is an empty file, not an SQLite database"));
    }
    let mut head = [0u8; 16];
    let n = read_prefix(path, &mut head)?;
    if n == head.len() && &head == SQLITE_HEADER {
        return Ok(EngineKind::Db);
    }
    if let Some(kind) = crate::engine::detect_key_value_file(&head[..n]) {
        return Ok(kind);
    }
    Err(Error::bad_input(path, "is not an SQLite database (no SQLite header)"))
}

fn read_prefix(path: &Path, buf: &mut [u8]) -> Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(Error::io(path, "cannot read", e)),
        }
    }
    Ok(n)
}

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
    if detect(path)? != EngineKind::Db {
        return Err(Error::bad_input(path, "is a directory, expected an SQLite database"));
    }
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
pub(crate) fn conn_error(conn: &Connection, path: &Path, what: &str, e: rusqlite::Error) -> Error {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        // SQLite reports ENOSPC as SQLITE_FULL and clears the errno.
        return Error::io(path, what, std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
        // SAFETY: the handle is valid while `conn` lives.
        let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
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
pub(crate) fn open_io_cause(path: &Path, what: &str, e: &rusqlite::Error) -> Option<Error> {
    if e.sqlite_error_code() != Some(rusqlite::ErrorCode::SystemIoFailure) {
        return None;
    }
    let probe = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut [0u8; 4096]));
    probe.err().map(|os| Error::io(path, what, os))
}

/// Maps an error met while reading a kvtest database to a clear message.
pub(crate) fn db_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase)
        | Some(rusqlite::ErrorCode::DatabaseCorrupt)
        | Some(rusqlite::ErrorCode::DatabaseBusy)
        | Some(rusqlite::ErrorCode::DatabaseLocked) => describe_open_error(path, e),
        _ => Error::sqlite(path, what, e),
    }
}

/// The path of one blob file, rewritten in place for each key so that the
/// timed loop builds paths without allocating. Holds a NUL-terminated C path.
pub struct BlobPath {
    buf: Vec<u8>,
    prefix: usize,
    layout: EngineKind,
    suffix: &'static [u8],
}

impl BlobPath {
    /// `suffix` is appended after the name (".tmp" for replace-by-rename).
    pub fn new(dir: &Path, layout: EngineKind, suffix: &'static [u8]) -> Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let mut buf = dir.as_os_str().as_bytes().to_vec();
        if buf.contains(&0) {
            return Err(Error::bad_input(dir, "path contains a NUL byte"));
        }
        buf.push(b'/');
        let prefix = buf.len();
        buf.reserve(32 + suffix.len());
        Ok(BlobPath { buf, prefix, layout, suffix })
    }

    /// Points at `key`'s file: %06d flat, %02d/%02d/%02d in a tree.
    #[inline]
    pub fn set(&mut self, key: u32) -> &CStr {
        self.buf.truncate(self.prefix);
        push_name(&mut self.buf, self.layout, key);
        self.buf.extend_from_slice(self.suffix);
        self.buf.push(0);
        // SAFETY: the prefix was checked for NUL bytes, names are digits and
        // '/', and exactly one NUL ends the buffer.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf) }
    }

    /// The current path, for error messages (off the hot path).
    pub fn path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let end = self.buf.len().saturating_sub(1);
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.buf[..end]))
    }
}

/// kvtest's relative name of `key`'s file.
pub fn blob_name(layout: EngineKind, key: u32) -> String {
    let mut v = Vec::with_capacity(16);
    push_name(&mut v, layout, key);
    String::from_utf8(v).expect("digits")
}

#[inline]
fn push_name(buf: &mut Vec<u8>, layout: EngineKind, key: u32) {
    match layout {
        EngineKind::Tree => {
            push_padded(buf, key / 10_000, 2);
            buf.push(b'/');
            push_padded(buf, (key / 100) % 100, 2);
            buf.push(b'/');
            push_padded(buf, key % 100, 2);
        }
        _ => push_padded(buf, key, 6),
    }
}

#[inline]
fn push_padded(buf: &mut Vec<u8>, mut v: u32, width: usize) {
    let mut digits = [b'0'; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        v /= 10;
        n += 1;
        if v == 0 {
            break;
        }
    }
    n = n.max(width);
    buf.extend(digits[..n].iter().rev());
}

/// Keys of the blob files present under `dir`, ascending. Names that are
/// not kvtest names are ignored.
pub fn list_keys(dir: &Path, layout: EngineKind) -> Result<Vec<u32>> {
    let mut keys = Vec::new();
    match layout {
        EngineKind::Flat => {
            for name in dir_names(dir)? {
                if let Some(k) = parse_digits(&name, 6) {
                    keys.push(k);
                }
            }
        }
        EngineKind::Tree => {
            for a in dir_names(dir)? {
                let Some(ka) = parse_digits(&a, 2) else {
                    continue;
                };
                let da = dir.join(&a);
                if !da.is_dir() {
                    continue;
                }
                for b in dir_names(&da)? {
                    let Some(kb) = parse_digits(&b, 2).filter(|&v| v < 100) else {
                        continue;
                    };
                    let db = da.join(&b);
                    if !db.is_dir() {
                        continue;
                    }
                    for c in dir_names(&db)? {
                        if let Some(kc) = parse_digits(&c, 2).filter(|&v| v < 100) {
                            keys.push(ka * 10_000 + kb * 100 + kc);
                        }
                    }
                }
            }
        }
        other => {
            return Err(Error::bad_input(
                dir,
                format!("is a {} dataset, expected a directory of blob files", other.name()),
            ))
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

/// Every blob file under `dir` (for cache eviction).
pub fn blob_files(dir: &Path, layout: EngineKind) -> Result<Vec<PathBuf>> {
    Ok(list_keys(dir, layout)?.into_iter().map(|k| dir.join(blob_name(layout, k))).collect())
}

fn dir_names(dir: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "cannot list directory", e))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, "cannot list directory", e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

fn parse_digits(name: &str, min_width: usize) -> Option<u32> {
    if name.len() < min_width || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvtest_names() {
        assert_eq!(blob_name(EngineKind::Flat, 1), "000001");
        assert_eq!(blob_name(EngineKind::Flat, 1_234_567), "1234567");
        assert_eq!(blob_name(EngineKind::Tree, 1), "00/00/01");
        assert_eq!(blob_name(EngineKind::Tree, 123_456), "12/34/56");
        assert_eq!(blob_name(EngineKind::Tree, 1_000_000), "100/00/00");
    }

    #[test]
    fn blob_path_rewrites_in_place() {
        let mut p = BlobPath::new(Path::new("/d"), EngineKind::Tree, b".tmp").unwrap();
        assert_eq!(p.set(10_203).to_str().unwrap(), "/d/01/02/03.tmp");
        let cap = p.buf.capacity();
        assert_eq!(p.set(7).to_str().unwrap(), "/d/00/00/07.tmp");
        assert_eq!(p.buf.capacity(), cap, "no reallocation per key");
        assert_eq!(p.path(), Path::new("/d/00/00/07.tmp"));
    }

    #[test]
    fn detect_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(matches!(detect(&d.join("missing")), Err(Error::NotFound(_))));
        assert_eq!(detect(d).unwrap(), EngineKind::Flat);
        std::fs::create_dir(d.join("00")).unwrap();
        assert_eq!(detect(d).unwrap(), EngineKind::Tree);
        let empty = d.join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(detect(&empty).unwrap_err().to_string().contains("empty"));
        let text = d.join("t.txt");
        std::fs::write(&text, b"hello world, this is text\n").unwrap();
        assert!(detect(&text).unwrap_err().to_string().contains("not an SQLite database"));
    }
}
