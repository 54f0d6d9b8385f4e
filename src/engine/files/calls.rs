//! The libc calls on one blob file, shared by every store that keeps a
//! blob per file (one file per blob, external blobs) so they all make
//! exactly the same calls: the write methods of a run's `FileParams`
//! ([`FileWriter`]) and the posix read ([`read_posix`]).

use std::ffi::{c_void, CStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use crate::engine::api::take;
use crate::records::{FileParams, FileWrite};
use crate::{Error, Result};

/// The path a C string names, for error messages.
#[cold]
fn c_path(p: &CStr) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(p.to_bytes()))
}

/// The OS error just met on `p`, while doing `what`.
#[cold]
pub(super) fn os_error(p: &CStr, what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    Error::io(&c_path(p), what, e)
}

/// Errors where the file is simply absent are misses; any other failure
/// (permissions, I/O errors, a full disk) is reported.
#[cold]
pub(super) fn miss_or_error(p: &CStr, what: &str) -> Result<u64> {
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(0)
    } else {
        Err(Error::io(&c_path(p), what, e))
    }
}

/// The write calls of one run's `FileParams`, on files named by the
/// caller: shared by every store that writes blob files (one file per blob,
/// external blobs), so they all make exactly the same calls.
pub(crate) struct FileWriter {
    pub params: FileParams,
}

impl FileWriter {
    /// Overwrites the file `p` with as many bytes of `content` as it has
    /// (`t` is the temporary name `replace` writes first); 0 when there is
    /// no such file.
    #[inline]
    pub fn overwrite(&self, p: &CStr, t: &CStr, key: u32, content: &[u8]) -> Result<u64> {
        match self.params.write {
            FileWrite::Truncate => self.write_truncate(p, key, content),
            FileWrite::Inplace => self.write_inplace(p, key, content),
            FileWrite::Replace => self.write_replace(p, t, key, content),
        }
    }

    /// Stores exactly `content` as the file `p`, creating it when missing.
    /// A missing directory is an `Error::Io` of kind NotFound.
    #[inline]
    pub fn put(&self, p: &CStr, t: &CStr, content: &[u8]) -> Result<u64> {
        match self.params.write {
            FileWrite::Truncate => self.truncate_write(p, content),
            FileWrite::Inplace => {
                // SAFETY: NUL-terminated path.
                let fd = unsafe { libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o644 as libc::c_uint) };
                if fd < 0 {
                    return Err(os_error(p, "cannot open for writing"));
                }
                // SAFETY: a descriptor just opened, owned by nothing else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                self.finish_inplace(fd, p, content, Some(content.len()))
            }
            FileWrite::Replace => self.replace_write(p, t, content),
        }
    }

    /// Removes the file `p`; false when there was none.
    pub fn delete(&self, p: &CStr) -> Result<bool> {
        // SAFETY: NUL-terminated path.
        if unsafe { libc::unlink(p.as_ptr()) } == 0 {
            return Ok(true);
        }
        miss_or_error(p, "cannot remove").map(|_| false)
    }

    #[inline]
    fn write_truncate(&self, p: &CStr, key: u32, content: &[u8]) -> Result<u64> {
        // SAFETY: NUL-terminated path; content holds at least `size` bytes.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p.as_ptr(), &mut st) != 0 {
                return miss_or_error(p, "cannot stat");
            }
            let size = st.st_size as usize;
            let content = take(content, size, key)?;
            self.truncate_write(p, content)
        }
    }

    /// fopen("wb"), fwrite, (fflush and fsync), fclose: kvtest's write.
    #[inline]
    fn truncate_write(&self, p: &CStr, content: &[u8]) -> Result<u64> {
        let size = content.len();
        // SAFETY: NUL-terminated path; the stream is closed on every path.
        unsafe {
            let f = libc::fopen(p.as_ptr(), c"wb".as_ptr());
            if f.is_null() {
                return Err(os_error(p, "cannot open for writing"));
            }
            let wrote = libc::fwrite(content.as_ptr().cast(), 1, size, f);
            // kvtest calls fsync before fclose without fflush, so part of the
            // data may still sit in stdio's buffer; flush it first.
            let synced = !self.params.fsync || (libc::fflush(f) == 0 && libc::fsync(libc::fileno(f)) == 0);
            let closed = libc::fclose(f) == 0;
            if wrote != size || !synced || !closed {
                return Err(os_error(p, "cannot write"));
            }
            Ok(size as u64)
        }
    }

    #[inline]
    fn write_inplace(&self, p: &CStr, key: u32, content: &[u8]) -> Result<u64> {
        // SAFETY: NUL-terminated path.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_WRONLY) };
        if fd < 0 {
            return miss_or_error(p, "cannot open for writing");
        }
        // SAFETY: a descriptor just opened, owned by nothing else; it is
        // closed when `fd` drops, on every path.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid descriptor and a zeroed out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(os_error(p, "cannot stat"));
        }
        let content = take(content, st.st_size as usize, key)?;
        self.finish_inplace(fd, p, content, None)
    }

    /// pwrite over the old bytes, cut the file to `len` when given, fsync
    /// when asked; the file closes when `fd` drops.
    #[inline]
    fn finish_inplace(&self, fd: OwnedFd, p: &CStr, content: &[u8], len: Option<usize>) -> Result<u64> {
        let raw = fd.as_raw_fd();
        // SAFETY: `raw` is open for as long as `fd` lives.
        let ok = write_all_at(fd.as_fd(), content)
            && len.is_none_or(|n| unsafe { libc::ftruncate(raw, n as libc::off_t) } == 0)
            && (!self.params.fsync || unsafe { libc::fsync(raw) } == 0);
        if ok {
            Ok(content.len() as u64)
        } else {
            Err(os_error(p, "cannot write"))
        }
    }

    #[inline]
    fn write_replace(&self, p: &CStr, t: &CStr, key: u32, content: &[u8]) -> Result<u64> {
        // SAFETY: as above.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p.as_ptr(), &mut st) != 0 {
                return miss_or_error(p, "cannot stat");
            }
            let content = take(content, st.st_size as usize, key)?;
            self.replace_write(p, t, content)
        }
    }

    /// Write a temporary file, (fsync), rename it over `p`.
    #[inline]
    fn replace_write(&self, p: &CStr, t: &CStr, content: &[u8]) -> Result<u64> {
        let size = content.len();
        // SAFETY: NUL-terminated paths; the descriptor is closed on every path.
        unsafe {
            let fd = libc::open(t.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644 as libc::c_uint);
            if fd < 0 {
                return Err(os_error(p, "cannot create a temporary file"));
            }
            let ok = write_all_at(BorrowedFd::borrow_raw(fd), content) && (!self.params.fsync || libc::fsync(fd) == 0);
            let err = if ok { None } else { Some(os_error(p, "cannot write")) };
            let closed = libc::close(fd) == 0;
            if let Some(e) = err {
                libc::unlink(t.as_ptr());
                return Err(e);
            }
            if !closed || libc::rename(t.as_ptr(), p.as_ptr()) != 0 {
                let e = os_error(p, "cannot rename the new version into place");
                libc::unlink(t.as_ptr());
                return Err(e);
            }
            Ok(size as u64)
        }
    }
}

/// Why [`read_posix`] failed: the step and the OS error.
pub(crate) struct PosixReadError {
    pub what: &'static str,
    pub err: std::io::Error,
}

/// open, fstat, read the whole file into `buf` (grown when too small),
/// close; returns the bytes read. Shared by every store that reads a blob
/// file this way, so they all make exactly the same calls.
#[inline]
pub(crate) fn read_posix(path: &CStr, buf: &mut Vec<u8>) -> std::result::Result<u64, PosixReadError> {
    let fail = |what| PosixReadError { what, err: std::io::Error::last_os_error() };
    // SAFETY: path is NUL-terminated; reads go into `buf` within its length
    // and the descriptor is closed on every path out.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
        if fd < 0 {
            return Err(fail("cannot open"));
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            let err = fail("cannot stat");
            libc::close(fd);
            return Err(err);
        }
        let size = st.st_size as usize;
        if size > buf.len() {
            buf.resize(size, 0);
        }
        let mut done = 0usize;
        while done < size {
            let n = libc::read(fd, buf.as_mut_ptr().add(done).cast::<c_void>(), size - done);
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // An I/O error is not a short file: report it.
                let err = fail("cannot read");
                libc::close(fd);
                return Err(err);
            }
            if n == 0 {
                break;
            }
            done += n as usize;
        }
        libc::close(fd);
        Ok(done as u64)
    }
}

/// pwrite until everything is written; false on error.
#[inline]
fn write_all_at(fd: BorrowedFd<'_>, mut data: &[u8]) -> bool {
    let mut offset = 0i64;
    while !data.is_empty() {
        // SAFETY: an open descriptor and a slice's own pointer and length.
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), data.as_ptr().cast(), data.len(), offset) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        data = &data[n as usize..];
        offset += n as i64;
    }
    true
}
