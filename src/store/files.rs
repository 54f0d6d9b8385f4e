//! One file per blob as a blob store. Reads and writes call libc directly:
//! `stdio` and `truncate` are kvtest's own sequences of calls, `posix`,
//! `inplace` and `replace` the leaner or safer alternatives. Paths are
//! rewritten in a reused buffer, so the loop does not allocate (kvtest's
//! does, with sqlite3_mprintf).

use std::ffi::{c_void, CStr};
use std::path::Path;

use super::BlobStore;
use crate::dataset::BlobPath;
use crate::workload::{FileParams, FileRead, FileWrite, Layout};
use crate::{Error, Result};

pub struct FileStore {
    path: BlobPath,
    tmp: BlobPath,
    params: FileParams,
    buf: Vec<u8>,
}

impl FileStore {
    pub fn new(dir: &Path, layout: Layout, params: FileParams) -> Result<Self> {
        Ok(FileStore {
            path: BlobPath::new(dir, layout, b"")?,
            tmp: BlobPath::new(dir, layout, b".tmp")?,
            params,
            buf: vec![0u8; 64 * 1024],
        })
    }

    #[cold]
    fn os_error(&self, what: &str) -> Error {
        let e = std::io::Error::last_os_error();
        Error::io(&self.path.path(), what, e)
    }

    /// Errors where the file is simply absent are misses; any other failure
    /// (permissions, I/O errors, a full disk) is reported.
    #[cold]
    fn miss_or_error(&self, what: &str) -> Result<u64> {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::NotFound {
            Ok(0)
        } else {
            Err(Error::io(&self.path.path(), what, e))
        }
    }

    #[inline]
    fn read_stdio(&mut self, key: u32) -> Result<u64> {
        let p = self.path.set(key).as_ptr();
        // SAFETY: p is a NUL-terminated path; every handle and buffer is
        // released before returning.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p, &mut st) != 0 {
                return self.miss_or_error("cannot stat");
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Ok(0);
            }
            let size = st.st_size as usize;
            let f = libc::fopen(p, c"rb".as_ptr());
            if f.is_null() {
                return self.miss_or_error("cannot open");
            }
            let data = libc::malloc(size.max(1));
            let got = libc::fread(data, size, 1, f);
            // A read error is reported; a file that shrank meanwhile is a miss.
            let failed = got != 1 && libc::ferror(f) != 0;
            let err = failed.then(std::io::Error::last_os_error);
            libc::fclose(f);
            if let Some(e) = err {
                libc::free(data);
                return Err(Error::io(&self.path.path(), "cannot read", e));
            }
            libc::free(data);
            Ok(if got == 1 { size as u64 } else { 0 })
        }
    }

    #[inline]
    fn read_posix(&mut self, key: u32) -> Result<u64> {
        let p = self.path.set(key);
        match read_posix(p, &mut self.buf) {
            Ok(n) => Ok(n),
            Err(PosixReadError { err, .. }) if err.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(PosixReadError { what, err }) => Err(Error::io(&self.path.path(), what, err)),
        }
    }

    #[inline]
    fn write_truncate(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let p = self.path.set(key).as_ptr();
        // SAFETY: NUL-terminated path; content holds at least `size` bytes.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p, &mut st) != 0 {
                return self.miss_or_error("cannot stat");
            }
            let size = st.st_size as usize;
            let f = libc::fopen(p, c"wb".as_ptr());
            if f.is_null() {
                return Err(self.os_error("cannot open for writing"));
            }
            let wrote = libc::fwrite(content.as_ptr().cast(), 1, size, f);
            // kvtest calls fsync before fclose without fflush, so part of the
            // data may still sit in stdio's buffer; flush it first.
            let synced = !self.params.fsync || (libc::fflush(f) == 0 && libc::fsync(libc::fileno(f)) == 0);
            let closed = libc::fclose(f) == 0;
            if wrote != size || !synced || !closed {
                return Err(self.os_error("cannot write"));
            }
            Ok(size as u64)
        }
    }

    #[inline]
    fn write_inplace(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let p = self.path.set(key).as_ptr();
        // SAFETY: as above.
        unsafe {
            let fd = libc::open(p, libc::O_WRONLY);
            if fd < 0 {
                return self.miss_or_error("cannot open for writing");
            }
            let mut st: libc::stat = std::mem::zeroed();
            let ok = libc::fstat(fd, &mut st) == 0 && write_all_at(fd, &content[..st.st_size as usize]);
            let ok = ok && (!self.params.fsync || libc::fsync(fd) == 0);
            let err = if ok { None } else { Some(self.os_error("cannot write")) };
            libc::close(fd);
            match err {
                Some(e) => Err(e),
                None => Ok(st.st_size as u64),
            }
        }
    }

    #[inline]
    fn write_replace(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let p = self.path.set(key).as_ptr();
        let t = self.tmp.set(key).as_ptr();
        // SAFETY: as above.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p, &mut st) != 0 {
                return self.miss_or_error("cannot stat");
            }
            let size = st.st_size as usize;
            let fd = libc::open(t, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644 as libc::c_uint);
            if fd < 0 {
                return Err(self.os_error("cannot create a temporary file"));
            }
            let ok = write_all_at(fd, &content[..size]) && (!self.params.fsync || libc::fsync(fd) == 0);
            let err = if ok { None } else { Some(self.os_error("cannot write")) };
            let closed = libc::close(fd) == 0;
            if let Some(e) = err {
                libc::unlink(t);
                return Err(e);
            }
            if !closed || libc::rename(t, p) != 0 {
                let e = self.os_error("cannot rename the new version into place");
                libc::unlink(t);
                return Err(e);
            }
            Ok(size as u64)
        }
    }
}

/// Why [`read_posix`] failed: the step and the OS error.
pub(super) struct PosixReadError {
    pub what: &'static str,
    pub err: std::io::Error,
}

/// open, fstat, read the whole file into `buf` (grown when too small),
/// close; returns the bytes read. Shared by every store that reads a blob
/// file this way, so they all make exactly the same calls.
#[inline]
pub(super) fn read_posix(path: &CStr, buf: &mut Vec<u8>) -> std::result::Result<u64, PosixReadError> {
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
unsafe fn write_all_at(fd: libc::c_int, mut data: &[u8]) -> bool {
    let mut offset = 0i64;
    while !data.is_empty() {
        let n = libc::pwrite(fd, data.as_ptr().cast(), data.len(), offset);
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

impl BlobStore for FileStore {
    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        match self.params.read {
            FileRead::Stdio => self.read_stdio(key),
            FileRead::Posix => self.read_posix(key),
        }
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        match self.params.write {
            FileWrite::Truncate => self.write_truncate(key, content),
            FileWrite::Inplace => self.write_inplace(key, content),
            FileWrite::Replace => self.write_replace(key, content),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(read: FileRead, write: FileWrite) -> FileParams {
        FileParams { read, write, fsync: false }
    }

    #[test]
    fn reads_and_overwrites_each_way() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("000001"), vec![1u8; 5000]).unwrap();
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for read in [FileRead::Stdio, FileRead::Posix] {
            let mut s = FileStore::new(dir.path(), Layout::Flat, params(read, FileWrite::Truncate)).unwrap();
            assert_eq!(s.read(1).unwrap(), 5000);
            assert_eq!(s.read(2).unwrap(), 0, "absent key is a miss");
        }
        for write in [FileWrite::Truncate, FileWrite::Inplace, FileWrite::Replace] {
            std::fs::write(dir.path().join("000001"), vec![1u8; 5000]).unwrap();
            let mut s = FileStore::new(dir.path(), Layout::Flat, params(FileRead::Posix, write)).unwrap();
            assert_eq!(s.overwrite(1, &content).unwrap(), 5000);
            assert_eq!(std::fs::read(dir.path().join("000001")).unwrap(), &content[..5000], "{write:?}");
            assert_eq!(s.overwrite(9, &content).unwrap(), 0);
            assert!(!dir.path().join("000001.tmp").exists());
        }
    }
}
