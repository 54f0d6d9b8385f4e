//! The one thin layer over SQLite's C API, for the paths rusqlite cannot
//! serve: timed loops that must make kvtest's exact calls, and the
//! concurrency study's "shared connection" (rusqlite's `Connection` is
//! deliberately not `Sync`, but that study uses one connection from every
//! thread at once, with SQLite's own mutex as the only lock).
//!
//! [`Conn`] is neither `Send` nor `Sync`: a per-thread connection is opened
//! inside its thread and dies there. [`SharedConn`] is the one type that
//! crosses threads, and it can only be made in serialized mode.

use std::ffi::{c_int, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;

use rusqlite::{ffi, Connection};

use crate::{Error, Result};

/// One database connection, owned by the thread that opened it.
pub struct Conn {
    raw: *mut ffi::sqlite3,
    path: PathBuf,
}

impl Conn {
    /// Opens `path` with `flags` (SQLITE_OPEN_*), with extended result codes
    /// so that a step's return value alone tells BUSY from LOCKED, even when
    /// another thread has since changed the connection's last error.
    pub fn open(path: &Path, flags: c_int) -> Result<Conn> {
        let c = crate::util::fsutil::cstring(path)?;
        let mut raw = ptr::null_mut();
        // SAFETY: NUL-terminated path, out-pointer we own; on failure the
        // handle (if any) is still closed by Conn's Drop below.
        let rc = unsafe { ffi::sqlite3_open_v2(c.as_ptr(), &mut raw, flags, ptr::null()) };
        let conn = Conn { raw, path: path.to_path_buf() };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error("cannot open database", rc));
        }
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_extended_result_codes(raw, 1) };
        Ok(conn)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs SQL without results (pragmas, DDL). Off the hot path.
    pub fn exec(&self, sql: &str) -> Result<()> {
        let c = CString::new(sql).map_err(|_| Error::invalid("SQL contains a NUL byte"))?;
        // SAFETY: valid handle and NUL-terminated SQL; no callback.
        let rc = unsafe { ffi::sqlite3_exec(self.raw, c.as_ptr(), None, ptr::null_mut(), ptr::null_mut()) };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(&format!("{sql} failed"), rc));
        }
        Ok(())
    }

    pub fn busy_timeout(&self, ms: u32) {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_busy_timeout(self.raw, ms.min(i32::MAX as u32) as c_int) };
    }

    /// A statement for the calling thread. It borrows the connection, so it
    /// is finalized before the connection closes.
    pub fn prepare(&self, sql: &CStr) -> Result<Stmt<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid handle, NUL-terminated SQL, out-pointer we own.
        let rc = unsafe { ffi::sqlite3_prepare_v2(self.raw, sql.as_ptr(), -1, &mut raw, ptr::null_mut()) };
        if rc != ffi::SQLITE_OK || raw.is_null() {
            // SAFETY: finalize accepts null.
            unsafe { ffi::sqlite3_finalize(raw) };
            return Err(self.error(&format!("cannot prepare {}", sql.to_string_lossy()), rc));
        }
        Ok(Stmt { raw, _conn: self })
    }

    /// The connection's own mutex: present only in serialized mode
    /// (SQLITE_OPEN_FULLMUTEX), where every API call already takes it.
    pub fn mutex(&self) -> *mut ffi::sqlite3_mutex {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_db_mutex(self.raw) }
    }

    /// An error naming the file and the action. The text comes from the
    /// result code (static, thread-safe), not from sqlite3_errmsg, which
    /// another thread may be rewriting on a shared connection.
    #[cold]
    pub fn error(&self, what: &str, rc: c_int) -> Error {
        let e = rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(errstr(rc)));
        Error::sqlite(&self.path, what, e)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: statements borrow the connection, so all are finalized
        // by now; close accepts null and the handle of a failed open.
        unsafe { ffi::sqlite3_close(self.raw) };
    }
}

/// SQLite's text for a result code.
pub fn errstr(rc: c_int) -> String {
    // SAFETY: sqlite3_errstr returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::sqlite3_errstr(rc)) }.to_string_lossy().into_owned()
}

/// The linked SQLite's source id (version, date and check-in hash).
pub fn source_id() -> String {
    // SAFETY: sqlite3_sourceid returns a pointer to a static NUL-terminated string.
    let id = unsafe { ffi::sqlite3_sourceid() };
    if id.is_null() {
        return String::new();
    }
    // SAFETY: as above, non-null.
    unsafe { CStr::from_ptr(id) }.to_string_lossy().into_owned()
}

/// The OS error (errno) behind `conn`'s last failed I/O; 0 when none.
pub fn system_errno(conn: &Connection) -> c_int {
    // SAFETY: the handle is valid while `conn` lives.
    unsafe { ffi::sqlite3_system_errno(conn.handle()) }
}

/// BUSY or LOCKED (any extended variant): contention, counted rather than fatal.
#[inline]
pub fn is_contention(rc: c_int) -> bool {
    matches!(rc & 0xff, ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED)
}

/// One connection used by several threads at once.
pub struct SharedConn(Conn);

// SAFETY: a SharedConn exists only for a connection opened with
// SQLITE_OPEN_FULLMUTEX in a library built thread-safe (both checked in
// `open`). In that serialized mode SQLite takes the connection's mutex inside
// every API call, so calls on the handle from several threads are serialized
// by SQLite itself; the Rust side holds no state of its own besides the
// handle and the path, which are never written after opening. Statements
// (`Stmt`) borrow from it but are not Send: each stays with the thread that
// prepared it, as SQLite requires of an unserialized statement handle.
unsafe impl Send for SharedConn {}
// SAFETY: as above.
unsafe impl Sync for SharedConn {}

impl SharedConn {
    pub fn open(path: &Path, flags: c_int) -> Result<SharedConn> {
        let flags = (flags & !ffi::SQLITE_OPEN_NOMUTEX) | ffi::SQLITE_OPEN_FULLMUTEX;
        // SAFETY: no preconditions.
        if unsafe { ffi::sqlite3_threadsafe() } == 0 {
            return Err(Error::invalid("this SQLite was built without thread support; a shared connection is unsafe"));
        }
        let conn = Conn::open(path, flags)?;
        if conn.mutex().is_null() {
            return Err(Error::bad_input(path, "connection did not open in serialized mode; refusing to share it"));
        }
        Ok(SharedConn(conn))
    }

    pub fn conn(&self) -> &Conn {
        &self.0
    }
}

/// Holds a serialized connection's own mutex across several calls (a whole
/// transaction); SQLite's mutex is recursive, so calls inside still work.
/// For a connection without a mutex (per-thread, NOMUTEX) it does nothing.
pub struct MutexGuard(*mut ffi::sqlite3_mutex);

impl MutexGuard {
    pub fn enter(conn: &Conn) -> MutexGuard {
        let m = conn.mutex();
        if !m.is_null() {
            // SAFETY: the connection's live mutex.
            unsafe { ffi::sqlite3_mutex_enter(m) };
        }
        MutexGuard(m)
    }
}

impl Drop for MutexGuard {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: entered in `enter` by this thread.
            unsafe { ffi::sqlite3_mutex_leave(self.0) };
        }
    }
}

/// A prepared statement, used only by the thread that prepared it.
pub struct Stmt<'c> {
    raw: *mut ffi::sqlite3_stmt,
    _conn: &'c Conn,
}

impl Stmt<'_> {
    /// Steps; returns SQLite's (extended) result code.
    #[inline]
    pub fn step(&self) -> c_int {
        // SAFETY: live statement of a live connection.
        unsafe { ffi::sqlite3_step(self.raw) }
    }

    /// Resets for the next use; releases the statement's read transaction.
    #[inline]
    pub fn reset(&self) {
        // SAFETY: as above. Its return value repeats the last step's error,
        // which the caller has already seen.
        unsafe { ffi::sqlite3_reset(self.raw) };
    }

    #[inline]
    pub fn bind_i64(&self, i: c_int, v: i64) {
        // SAFETY: as above; out-of-range indexes return an error, no UB.
        unsafe { ffi::sqlite3_bind_int64(self.raw, i, v) };
    }

    #[inline]
    pub fn bind_f64(&self, i: c_int, v: f64) {
        // SAFETY: as above.
        unsafe { ffi::sqlite3_bind_double(self.raw, i, v) };
    }

    /// Binds text; SQLite copies it into the statement's own buffer
    /// (SQLITE_TRANSIENT), which it reuses once large enough.
    #[inline]
    pub fn bind_text(&self, i: c_int, text: &str) {
        // SAFETY: as above; SQLite copies the bytes before returning.
        unsafe {
            ffi::sqlite3_bind_text(self.raw, i, text.as_ptr().cast(), text.len() as c_int, ffi::SQLITE_TRANSIENT())
        };
    }

    #[inline]
    pub fn column_i64(&self, i: c_int) -> i64 {
        // SAFETY: as above; valid after SQLITE_ROW.
        unsafe { ffi::sqlite3_column_int64(self.raw, i) }
    }

    #[inline]
    pub fn column_f64(&self, i: c_int) -> f64 {
        // SAFETY: as above.
        unsafe { ffi::sqlite3_column_double(self.raw, i) }
    }

    /// Bytes of a text column, without copying: the cost of reading a value
    /// a caller would use.
    #[inline]
    pub fn column_text_len(&self, i: c_int) -> usize {
        // SAFETY: as above; column_text makes the value text, column_bytes sizes it.
        unsafe {
            let p = ffi::sqlite3_column_text(self.raw, i);
            if p.is_null() {
                0
            } else {
                ffi::sqlite3_column_bytes(self.raw, i) as usize
            }
        }
    }
}

impl Drop for Stmt<'_> {
    fn drop(&mut self) {
        // SAFETY: our statement, finalized once.
        unsafe { ffi::sqlite3_finalize(self.raw) };
    }
}

/// A connection opened through rusqlite (for its pragmas and queries) with
/// `N` raw statement slots and one blob handle, through which a session
/// makes kvtest's per-blob calls. They are owned together and reachable
/// only by borrowing the `Db`, so they are finalized before the connection
/// closes (`close`, or field order on drop) and move between threads with
/// it, never apart from it.
pub struct Db<const N: usize> {
    /// Declared before `conn` so they are finalized before it closes.
    stmts: [OwnedStmt; N],
    blob: BlobHandle,
    conn: Connection,
    raw: *mut ffi::sqlite3,
}

// SAFETY: the connection (rusqlite's `Connection` is Send) and every handle
// made on it move together; `Db` is not Sync and lends its statements and
// blob only by reference, so no two threads can call into the connection at
// once, which is all SQLite's multi-thread mode (NOMUTEX) asks.
unsafe impl<const N: usize> Send for Db<N> {}

impl<const N: usize> Db<N> {
    /// Takes over `conn`; every slot starts empty.
    pub fn new(conn: Connection) -> Db<N> {
        // SAFETY: the handle is only used while `conn`, owned by this Db,
        // is open; it is never closed through the raw pointer.
        let raw = unsafe { conn.handle() };
        Db { stmts: std::array::from_fn(|_| OwnedStmt(ptr::null_mut())), blob: BlobHandle(ptr::null_mut()), conn, raw }
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Prepares `sql` into statement slot `slot` (finalizing what was there);
    /// SQLite's result code (the connection's last error says why).
    pub fn prepare(&mut self, slot: usize, sql: &CStr) -> c_int {
        let mut raw = ptr::null_mut();
        // SAFETY: live connection, NUL-terminated SQL, out-pointer we own.
        let rc = unsafe { ffi::sqlite3_prepare_v2(self.raw, sql.as_ptr(), -1, &mut raw, ptr::null_mut()) };
        // The old statement is finalized here, the new one (or null) kept.
        self.stmts[slot] = OwnedStmt(raw);
        rc
    }

    /// The statement in `slot` (empty: every call answers SQLITE_MISUSE or NULL).
    #[inline]
    pub fn stmt(&self, slot: usize) -> &OwnedStmt {
        &self.stmts[slot]
    }

    /// Column `i` of `slot`'s current row as bytes (text or blob), None when
    /// NULL. Borrowing the Db mutably keeps the statement from stepping or
    /// resetting, which would free the bytes, while they are in use.
    #[inline]
    pub fn column_bytes(&mut self, slot: usize, i: c_int) -> Option<&[u8]> {
        let s = self.stmts[slot].0;
        // SAFETY: a live statement of this connection, or null (NULL back);
        // the pointer and length describe SQLite's copy of the value, valid
        // until the next step or reset, which the borrow rules out.
        unsafe {
            let p = ffi::sqlite3_column_text(s, i);
            if p.is_null() {
                return None;
            }
            let len = ffi::sqlite3_column_bytes(s, i) as usize;
            Some(std::slice::from_raw_parts(p, len))
        }
    }

    /// Finalizes every statement and closes the blob handle (kvtest does
    /// so before COMMIT).
    pub fn release(&mut self) {
        for s in &mut self.stmts {
            *s = OwnedStmt(ptr::null_mut());
        }
        self.blob_close();
    }

    /// Resets every statement and closes the blob handle, keeping the
    /// statements prepared: what a COMMIT in the middle of a session needs
    /// (no statement or blob left active).
    pub fn end_statements(&mut self) {
        for s in &self.stmts {
            s.reset();
        }
        self.blob_close();
    }

    /// Releases the handles and gives the connection back, to be closed
    /// with its errors seen (`Connection::close`).
    pub fn into_conn(self) -> Connection {
        let Db { stmts, blob, conn, .. } = self;
        drop((stmts, blob));
        conn
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    #[inline]
    pub fn changes(&self) -> c_int {
        // SAFETY: live connection.
        unsafe { ffi::sqlite3_changes(self.raw) }
    }

    /// The connection's last error message. Off the hot path.
    #[cold]
    pub fn errmsg(&self) -> String {
        // SAFETY: live connection; errmsg returns a NUL-terminated string
        // that we copy before the next call.
        unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.raw)) }.to_string_lossy().into_owned()
    }

    /// The connection's last error. Off the hot path.
    #[cold]
    pub fn last_failure(&self) -> Failure {
        // SAFETY: live connection.
        let (code, errno) = unsafe { (ffi::sqlite3_extended_errcode(self.raw), ffi::sqlite3_system_errno(self.raw)) };
        Failure { code, errno, message: self.errmsg() }
    }

    /// Steps statement `slot` with `content` bound to parameter `i` without
    /// a copy (SQLITE_STATIC, as kvtest does), then resets it and unbinds
    /// `content` (a bind needs a reset statement), so the statement never
    /// holds a pointer to memory it may outlive. The step's result code, or
    /// its error as it was before the unbind (a bind clears the
    /// connection's last error).
    #[inline]
    pub fn step_with_blob(&self, slot: usize, i: c_int, content: &[u8]) -> std::result::Result<c_int, Failure> {
        let s = self.stmts[slot].0;
        // SAFETY: a live statement of this connection, or null (MISUSE);
        // `content` lives across the step and is unbound before it may go away.
        let rc = unsafe {
            ffi::sqlite3_bind_blob(s, i, content.as_ptr().cast(), content.len() as c_int, None);
            ffi::sqlite3_step(s)
        };
        let failed = rc != ffi::SQLITE_DONE && rc != ffi::SQLITE_ROW;
        let failure = failed.then(|| self.last_failure());
        // SAFETY: as above.
        unsafe {
            ffi::sqlite3_reset(s);
            ffi::sqlite3_bind_null(s, i);
        }
        failure.map_or(Ok(rc), Err)
    }

    /// One of the connection's counters (SQLITE_DBSTATUS_*), its current value.
    pub fn db_status(&self, op: c_int) -> i64 {
        let (mut cur, mut hi) = (0 as c_int, 0 as c_int);
        // SAFETY: live connection, plain out-parameters.
        unsafe { ffi::sqlite3_db_status(self.raw, op, &mut cur, &mut hi, 0) };
        i64::from(cur)
    }

    /// Points the blob handle at column `column` of row `row` of `table`:
    /// opens it the first time (writable when `write`), then moves it with
    /// sqlite3_blob_reopen, as kvtest does. A failed reopen aborts the
    /// handle, so the caller closes it (`blob_close`) before the next key.
    #[inline]
    pub fn blob_seek(&mut self, table: &CStr, column: &CStr, row: i64, write: bool) -> c_int {
        let b = &mut self.blob.0;
        // SAFETY: live connection; names are NUL-terminated; the handle is
        // null (opened into our out-pointer) or a live one of this connection.
        unsafe {
            if b.is_null() {
                let main = c"main".as_ptr();
                ffi::sqlite3_blob_open(self.raw, main, table.as_ptr(), column.as_ptr(), row, c_int::from(write), b)
            } else {
                ffi::sqlite3_blob_reopen(*b, row)
            }
        }
    }

    /// Closes the blob handle, if open.
    pub fn blob_close(&mut self) {
        self.blob = BlobHandle(ptr::null_mut());
    }

    /// Size of the blob the handle points at; 0 when none is open.
    #[inline]
    pub fn blob_bytes(&self) -> usize {
        if self.blob.0.is_null() {
            return 0;
        }
        // SAFETY: a live blob handle of this connection.
        unsafe { ffi::sqlite3_blob_bytes(self.blob.0) as usize }
    }

    /// Reads the whole blob the handle points at into the start of `buf`,
    /// growing `buf` as kvtest does (to the blob's size + 100 bytes when it
    /// is not larger); the blob's size, or SQLite's error code
    /// (SQLITE_MISUSE when no blob is open).
    #[inline]
    pub fn blob_read_all(&mut self, buf: &mut Vec<u8>) -> std::result::Result<usize, c_int> {
        let b = self.blob.0;
        if b.is_null() {
            return Err(ffi::SQLITE_MISUSE);
        }
        // SAFETY: a live blob handle of this connection.
        let n = unsafe { ffi::sqlite3_blob_bytes(b) };
        let len = n as usize;
        if len >= buf.len() {
            buf.resize(len + 100, 0);
        }
        // SAFETY: a live blob handle; `buf` holds more than n bytes.
        let rc = unsafe { ffi::sqlite3_blob_read(b, buf.as_mut_ptr().cast(), n, 0) };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        Ok(len)
    }

    /// Writes `content` over the blob's first bytes (SQLITE_ERROR when the
    /// blob is shorter: a blob handle never resizes).
    #[inline]
    pub fn blob_write(&mut self, content: &[u8]) -> c_int {
        if self.blob.0.is_null() {
            return ffi::SQLITE_MISUSE;
        }
        // SAFETY: a live blob handle; SQLite reads content.len() bytes.
        unsafe { ffi::sqlite3_blob_write(self.blob.0, content.as_ptr().cast(), content.len() as c_int, 0) }
    }
}

/// One of SQLite's process-wide counters (SQLITE_STATUS_*): current and highest.
pub fn status(op: c_int) -> (i64, i64) {
    let (mut cur, mut hi) = (0i64, 0i64);
    // SAFETY: plain out-parameters.
    unsafe { ffi::sqlite3_status64(op, &mut cur, &mut hi, 0) };
    (cur, hi)
}

/// A connection's last error as SQLite reported it: the extended result
/// code, the OS error (errno) behind a failed I/O (0 when none) and the
/// message. `sqlite::error::failure_error` words it.
pub struct Failure {
    pub code: c_int,
    pub errno: c_int,
    pub message: String,
}

/// A statement in a [`Db`]'s slot, or null (empty): every method is safe on
/// both, SQLite answering SQLITE_MISUSE or NULL for null.
pub struct OwnedStmt(*mut ffi::sqlite3_stmt);

impl OwnedStmt {
    pub fn is_none(&self) -> bool {
        self.0.is_null()
    }

    #[inline]
    pub fn reset(&self) {
        // SAFETY: a live statement of its connection, or null (a no-op).
        unsafe { ffi::sqlite3_reset(self.0) };
    }

    #[inline]
    pub fn bind_int(&self, i: c_int, v: c_int) -> c_int {
        // SAFETY: as in reset; a bad index is an error code, not UB.
        unsafe { ffi::sqlite3_bind_int(self.0, i, v) }
    }

    #[inline]
    pub fn step(&self) -> c_int {
        // SAFETY: as in reset.
        unsafe { ffi::sqlite3_step(self.0) }
    }

    /// Size of blob column `i` of the current row, touching its bytes'
    /// pointer as kvtest does (sqlite3_column_bytes, then _blob), no copy.
    #[inline]
    pub fn column_blob_len(&self, i: c_int) -> usize {
        // SAFETY: as in reset; valid after SQLITE_ROW.
        unsafe {
            let n = ffi::sqlite3_column_bytes(self.0, i);
            std::hint::black_box(ffi::sqlite3_column_blob(self.0, i));
            n as usize
        }
    }
}

impl Drop for OwnedStmt {
    fn drop(&mut self) {
        // SAFETY: a live statement of its Db's connection, which is still
        // open (statements are dropped first), or null.
        unsafe { ffi::sqlite3_finalize(self.0) };
    }
}

/// The blob handle of a [`Db`], or null.
struct BlobHandle(*mut ffi::sqlite3_blob);

impl Drop for BlobHandle {
    fn drop(&mut self) {
        // SAFETY: a live blob handle of its Db's connection (still open), or
        // null, which sqlite3_blob_close accepts.
        unsafe { ffi::sqlite3_blob_close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(dir: &Path) -> Db<1> {
        let conn = Connection::open(dir.join("t.db")).unwrap();
        conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v CHECK (v IS NULL OR length(v) < 4))").unwrap();
        let mut db = Db::new(conn);
        assert_eq!(db.prepare(0, c"INSERT OR REPLACE INTO t(k, v) VALUES(?1, ?2)"), ffi::SQLITE_OK);
        db
    }

    /// The statement lets go of the caller's bytes after the step: a later
    /// step without a new bind stores NULL, never a dangling pointer's bytes.
    #[test]
    fn a_blob_bound_for_one_step_is_unbound_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        db.stmt(0).bind_int(1, 1);
        assert_eq!(db.step_with_blob(0, 2, b"abc").ok(), Some(ffi::SQLITE_DONE));
        db.stmt(0).bind_int(1, 2);
        assert_eq!(db.stmt(0).step(), ffi::SQLITE_DONE);
        db.stmt(0).reset();
        let v: Option<Vec<u8>> = db.conn().query_row("SELECT v FROM t WHERE k=2", [], |r| r.get(0)).unwrap();
        assert_eq!(v, None);
    }

    /// A failed step's error is kept although the unbind after it clears
    /// the connection's last error.
    #[test]
    fn a_failed_step_keeps_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = db(dir.path());
        db.stmt(0).bind_int(1, 1);
        let f = db.step_with_blob(0, 2, b"too long").expect_err("the CHECK fails");
        assert_eq!(f.code & 0xff, ffi::SQLITE_CONSTRAINT);
        assert!(f.message.contains("CHECK constraint failed"), "{}", f.message);
    }
}
