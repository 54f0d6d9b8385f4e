//! External blobs as a blob store: each read looks the blob's file name up
//! in a database (`ext(k, name)`, see `build.rs`) with a prepared
//! statement, then reads the file with open/fstat/read/close. The per-blob
//! calls are raw SQLite and libc calls into reused buffers, so the timed
//! loop holds the lookup and the file read and nothing else.
//!
//! Writes look the name up the same way, then write the named file with the
//! run's file write method (the same calls as one file per blob, through
//! [`FileWriter`]); a put of a key without a name inserts one ('%06d'),
//! a delete removes the name and the file.

use std::ffi::{c_int, CStr};
use std::path::{Path, PathBuf};

use rusqlite::{ffi, Connection, OpenFlags};

use crate::engine::api::{Session, SessionInfo};
use crate::engine::files::calls::{read_posix, FileWriter, PosixReadError};
use crate::engine::keep::Lease;
use crate::engine::sqlite::error::last_error;
use crate::engine::sqlite::raw::Db;
use crate::records::FileParams;
use crate::{Error, Result};

/// The store's statement slots in its [`Db`]: the name lookup, then the
/// INSERT of a missing name and the DELETE of a row, prepared for writes.
const LOOKUP: usize = 0;
const INSERT: usize = 1;
const REMOVE: usize = 2;

pub struct ExternalStore {
    db: Db<3>,
    /// Where the connection came from and goes back to (`engine::keep`).
    lease: Lease<Connection>,
    /// The run's file writes; None for a read session.
    writer: Option<FileWriter>,
    /// The temporary name `replace` writes first: the file name + ".tmp".
    tmp: Vec<u8>,
    db_path: PathBuf,
    /// The blob directory, '/', then the current name and a NUL.
    file: Vec<u8>,
    prefix: usize,
    buf: Vec<u8>,
    last_len: usize,
}

/// Opens the name database `names_db` read-write without SQLite's mutex,
/// with a page cache of `cache_pages` pages.
pub(super) fn connect(names_db: &Path, cache_pages: i64) -> Result<Connection> {
    let err = |what: &'static str| move |e| crate::engine::sqlite::error::db_error(names_db, what, e);
    if !names_db.is_file() {
        return Err(Error::NotFound(names_db.to_path_buf()));
    }
    let conn =
        Connection::open_with_flags(names_db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(err("cannot open database"))?;
    conn.execute_batch(&format!("PRAGMA cache_size={cache_pages}")).map_err(err("cannot set pragmas"))?;
    Ok(conn)
}

impl ExternalStore {
    /// Opens the name database with a page cache of `cache_pages` pages,
    /// prepares the lookup and begins the read transaction (as `DbSession`
    /// does for blobs inside the database). Names are relative to `dir`.
    pub fn open(names_db: &Path, dir: &Path, cache_pages: i64) -> Result<Self> {
        Self::open_for(names_db, dir, cache_pages, None)
    }

    /// [`ExternalStore::open`], writing files with `writes` when given.
    pub fn open_for(names_db: &Path, dir: &Path, cache_pages: i64, writes: Option<FileParams>) -> Result<Self> {
        Self::on((connect(names_db, cache_pages)?, Lease::once()), names_db, dir, writes)
    }

    /// The session's setup on `conn` (from [`connect`], or kept open by an
    /// earlier session): prepare, BEGIN.
    pub(super) fn on(
        (conn, lease): (Connection, Lease<Connection>),
        names_db: &Path,
        dir: &Path,
        writes: Option<FileParams>,
    ) -> Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let err = |what: &'static str| move |e| crate::engine::sqlite::error::db_error(names_db, what, e);
        let mut file = dir.as_os_str().as_bytes().to_vec();
        if file.contains(&0) {
            return Err(Error::bad_input(dir, "path contains a NUL byte"));
        }
        file.push(b'/');
        let prefix = file.len();
        file.reserve(256);
        let mut store = ExternalStore {
            db: Db::new(conn),
            lease,
            writer: writes.map(|params| FileWriter { params }),
            tmp: Vec::with_capacity(file.capacity() + 8),
            db_path: names_db.to_path_buf(),
            file,
            prefix,
            buf: vec![0u8; 64 * 1024],
            last_len: 0,
        };
        let what = "cannot prepare the name lookup (not a name database?)";
        store.prepare(LOOKUP, c"SELECT name FROM ext WHERE k=?1", what)?;
        if store.writer.is_some() {
            let what = "cannot prepare a name statement";
            store.prepare(INSERT, c"INSERT INTO ext(k, name) VALUES(?1, printf('%06d', ?1))", what)?;
            store.prepare(REMOVE, c"DELETE FROM ext WHERE k=?1", what)?;
        }
        store.db.conn().execute_batch("BEGIN").map_err(err("cannot begin a transaction"))?;
        Ok(store)
    }

    fn prepare(&mut self, slot: usize, sql: &CStr, what: &str) -> Result<()> {
        if self.db.prepare(slot, sql) != ffi::SQLITE_OK {
            return Err(last_error(&self.db, &self.db_path, what));
        }
        Ok(())
    }

    /// Ends the run's transaction, finalizing the statements first.
    pub fn commit(&mut self) -> Result<()> {
        self.db.release();
        self.db
            .conn()
            .execute_batch("COMMIT")
            .map_err(|e| crate::engine::sqlite::error::db_error(&self.db_path, "commit failed", e))
    }

    /// Closes the connection, or keeps it open for the engine's next
    /// session when this one was opened to keep it.
    pub fn close(self) -> Result<()> {
        let ExternalStore { db, db_path, lease, .. } = self;
        let conn = db.into_conn();
        let idle = conn.is_autocommit();
        match lease.end(conn, idle) {
            Some(conn) => conn
                .close()
                .map_err(|(_, e)| crate::engine::sqlite::error::db_error(&db_path, "cannot close the database", e)),
            None => Ok(()),
        }
    }

    /// The content of the blob read last (for checking, off the hot path).
    pub fn last_read(&self) -> &[u8] {
        &self.buf[..self.last_len]
    }

    /// The file named last, for error messages.
    #[cold]
    fn file_path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let end = self.file.len().saturating_sub(1).max(self.prefix);
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.file[..end]))
    }

    #[cold]
    fn bad_name(&self, key: u32) -> Error {
        Error::bad_input(&self.db_path, format!("the file name of key {key} is NULL or holds a NUL byte"))
    }
}

impl ExternalStore {
    /// Looks the name of `key` up into `self.file` (directory, '/', name,
    /// NUL); false when the database has no name for it.
    #[inline]
    fn lookup(&mut self, key: u32) -> Result<bool> {
        let s = self.db.stmt(LOOKUP);
        s.reset();
        s.bind_int(1, key as c_int);
        match s.step() {
            ffi::SQLITE_ROW => {}
            ffi::SQLITE_DONE => return Ok(false),
            _ => return Err(last_error(&self.db, &self.db_path, "cannot look up a file name")),
        }
        let Some(name) = self.db.column_bytes(LOOKUP, 0) else {
            return Err(Error::bad_input(
                &self.db_path,
                format!("the file name of key {key} is NULL or holds a NUL byte"),
            ));
        };
        self.file.truncate(self.prefix);
        self.file.extend_from_slice(name);
        self.file.push(0);
        if self.file[..self.file.len() - 1].contains(&0) {
            return Err(self.bad_name(key));
        }
        Ok(true)
    }

    /// The looked-up file and its temporary name, for a write.
    #[inline]
    fn write_paths(&mut self) -> Result<(&FileWriter, &CStr, &CStr)> {
        let Some(writer) = &self.writer else {
            return Err(Error::invalid("the session was opened for reading; it cannot write"));
        };
        self.tmp.clear();
        self.tmp.extend_from_slice(&self.file[..self.file.len() - 1]);
        self.tmp.extend_from_slice(b".tmp\0");
        let p = CStr::from_bytes_with_nul(&self.file).map_err(|_| Error::invalid("bad file name"))?;
        let t = CStr::from_bytes_with_nul(&self.tmp).map_err(|_| Error::invalid("bad file name"))?;
        Ok((writer, p, t))
    }

    /// Runs a bound-free write statement for `key` (insert or remove).
    fn step_key(&self, slot: usize, key: u32, what: &str) -> Result<()> {
        let stmt = self.db.stmt(slot);
        if stmt.is_none() {
            return Err(Error::invalid("the session was opened for reading; it cannot write"));
        }
        stmt.reset();
        stmt.bind_int(1, key as c_int);
        let rc = stmt.step();
        stmt.reset();
        if rc != ffi::SQLITE_DONE {
            return Err(last_error(&self.db, &self.db_path, what));
        }
        Ok(())
    }
}

impl Session for ExternalStore {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        if !self.lookup(key)? {
            return Ok(0);
        }
        let path = CStr::from_bytes_with_nul(&self.file).map_err(|_| Error::invalid("bad file name"))?;
        match read_posix(path, &mut self.buf) {
            Ok(n) => {
                self.last_len = n as usize;
                Ok(n)
            }
            // The database names the file, so a missing one is an error, not a miss.
            Err(PosixReadError { what, err }) => Err(Error::io(&self.file_path(), what, err)),
        }
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        if !self.lookup(key)? {
            return Ok(0);
        }
        let (writer, p, t) = self.write_paths()?;
        writer.overwrite(p, t, key, content)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        if !self.lookup(key)? {
            self.step_key(INSERT, key, "cannot insert a file name")?;
            if !self.lookup(key)? {
                return Err(self.bad_name(key));
            }
        }
        let (writer, p, t) = self.write_paths()?;
        writer.put(p, t, content).map(drop)
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        if !self.lookup(key)? {
            return Ok(false);
        }
        self.step_key(REMOVE, key, "cannot remove a file name")?;
        let (writer, p, _) = self.write_paths()?;
        writer.delete(p)
    }

    fn commit(&mut self) -> Result<()> {
        ExternalStore::commit(self)
    }

    fn close(self: Box<Self>) -> Result<()> {
        ExternalStore::close(*self)
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { opened_handle: self.lease.opened, ..SessionInfo::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::external::build::init_names;
    use crate::engine::files::{export::write_files, FLAT_KIND};
    use crate::engine::sqlite::init::init;
    use crate::records::DatasetSpec;
    use crate::util::progress::Silent;

    #[test]
    fn reads_the_file_the_database_names() {
        let dir = tempfile::tempdir().unwrap();
        let (db, files, names) = (dir.path().join("kv.db"), dir.path().join("blobs"), dir.path().join("names.db"));
        let spec = DatasetSpec { count: 20, size: 3000, variance: 1000, ..DatasetSpec::default() };
        init(&db, &spec, false, &Silent).unwrap();
        write_files(&db, &files, FLAT_KIND, &Silent).unwrap();
        init_names(&db, &names, 4096).unwrap();
        let kv = Connection::open(&db).unwrap();
        let blob = |k: u32| -> Vec<u8> { kv.query_row("SELECT v FROM kv WHERE k=?1", [k], |r| r.get(0)).unwrap() };

        let mut store = ExternalStore::open(&names, &files, 100).unwrap();
        for k in 1..=20 {
            let n = store.read(k).unwrap();
            assert_eq!(store.last_read(), blob(k).as_slice(), "key {k}, byte for byte");
            assert_eq!(n as usize, blob(k).len());
        }
        assert_eq!(store.read(21).unwrap(), 0, "a key without a name is a miss");
        store.commit().unwrap();
        store.close().unwrap();

        // The name really comes from the database: point key 1 at key 2's file.
        Connection::open(&names).unwrap().execute("UPDATE ext SET name='000002' WHERE k=1", []).unwrap();
        let mut store = ExternalStore::open(&names, &files, 100).unwrap();
        store.read(1).unwrap();
        assert_eq!(store.last_read(), blob(2).as_slice());

        // A name whose file is gone is an error naming the file.
        std::fs::remove_file(files.join("000003")).unwrap();
        let err = store.read(3).unwrap_err().to_string();
        assert!(err.contains("000003") && err.contains("cannot open"), "{err}");
    }

    #[test]
    fn writes_the_file_the_database_names() {
        let dir = tempfile::tempdir().unwrap();
        let (db, files, names) = (dir.path().join("kv.db"), dir.path().join("blobs"), dir.path().join("names.db"));
        init(&db, &DatasetSpec { count: 5, size: 3000, ..DatasetSpec::default() }, false, &Silent).unwrap();
        write_files(&db, &files, FLAT_KIND, &Silent).unwrap();
        init_names(&db, &names, 4096).unwrap();
        for write in [
            crate::records::FileWrite::Truncate,
            crate::records::FileWrite::Inplace,
            crate::records::FileWrite::Replace,
        ] {
            let params = FileParams { write, ..FileParams::default() };
            let mut s = ExternalStore::open_for(&names, &files, 100, Some(params)).unwrap();
            let content = vec![write as u8 + 1; 5000];
            assert_eq!(s.overwrite(2, &content).unwrap(), 3000);
            assert!(s.overwrite(2, &content[..10]).is_err(), "short content is an error");
            s.put(9, &content[..77]).unwrap();
            assert!(s.delete(4).unwrap());
            assert!(!s.delete(4).unwrap());
            s.commit().unwrap();
            s.close().unwrap();
            assert_eq!(std::fs::read(files.join("000002")).unwrap(), &content[..3000]);
            assert_eq!(std::fs::read(files.join("000009")).unwrap(), &content[..77]);
            assert!(!files.join("000004").exists());
            let mut r = ExternalStore::open(&names, &files, 100).unwrap();
            assert_eq!(r.read(9).unwrap(), 77);
            assert_eq!(r.read(4).unwrap(), 0, "the name is gone too");
            assert!(r.put(1, b"x").is_err(), "a read session cannot write");
            r.close().unwrap();
            let mut w = ExternalStore::open_for(&names, &files, 100, Some(params)).unwrap();
            w.put(4, &content[..3000]).unwrap();
            w.delete(9).unwrap();
            w.commit().unwrap();
            w.close().unwrap();
        }
    }

    #[test]
    fn a_database_without_names_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kv.db");
        init(&db, &DatasetSpec { count: 2, size: 10, ..DatasetSpec::default() }, false, &Silent).unwrap();
        let err = ExternalStore::open(&db, dir.path(), 10).err().unwrap().to_string();
        assert!(err.contains("name lookup"), "{err}");
    }
}
