//! One file per blob as a blob store. Reads and writes call libc directly:
//! `stdio` and `truncate` are kvtest's own sequences of calls, `posix`,
//! `inplace` and `replace` the leaner or safer alternatives. Paths are
//! rewritten in a reused buffer, so the loop does not allocate (kvtest's
//! does, with sqlite3_mprintf).

use std::path::Path;

use crate::engine::api::Session;
use crate::engine::files::calls::{miss_or_error, os_error, read_posix, FileWriter, PosixReadError};
use crate::engine::files::names::BlobPath;
use crate::records::{CommitEvery, EngineKind, FileParams, FileRead, FileWrite, WriteBatch};
use crate::{Error, Result};

pub struct FileStore {
    path: BlobPath,
    tmp: BlobPath,
    params: FileParams,
    buf: Vec<u8>,
    dirs: DirSync,
}

/// The directory fsyncs a run's writes owe (`FileParams::sync_dir`): each
/// directory whose entries changed (a rename, a new file, a removal) is
/// fsynced once per commit, every N writes with `commit_every` N, else in
/// the session's commit. What a batch means for files: each file is still
/// written and fsynced on its own; only the directory's fsync is shared by
/// the writes of a batch, which is what the OS allows (one fsync of a
/// directory makes every rename in it durable).
struct DirSync {
    /// The directories' paths, rewritten per key without allocating.
    path: BlobPath,
    batch: Option<WriteBatch>,
    /// Directories changed since the last fsync, by the key that named one
    /// (every key of a directory shares it: the whole store when flat,
    /// key / 100 in a tree).
    dirty: Vec<u32>,
    layout: EngineKind,
}

impl DirSync {
    /// The directory a key's file is in, as a number.
    #[inline]
    fn of(&self, key: u32) -> u32 {
        if self.layout == EngineKind::Tree {
            key / 100
        } else {
            0
        }
    }

    /// Notes that the entries of `key`'s directory changed.
    #[inline]
    fn changed(&mut self, key: u32) {
        let d = self.of(key);
        if !self.dirty.iter().any(|&k| self.of(k) == d) {
            self.dirty.push(key);
        }
    }

    /// Counts a write made; when it fills the batch, fsyncs the batch's
    /// directories.
    #[inline]
    fn wrote(&mut self) -> Result<()> {
        if self.batch.as_mut().is_some_and(WriteBatch::wrote) {
            self.sync()?;
        }
        Ok(())
    }

    /// fsyncs every directory changed since the last time.
    fn sync(&mut self) -> Result<()> {
        for key in std::mem::take(&mut self.dirty) {
            let p = self.path.set_dir(key);
            // SAFETY: a NUL-terminated path; the descriptor is closed on
            // every path out.
            unsafe {
                let fd = libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
                if fd < 0 {
                    return Err(os_error(p, "cannot open the directory"));
                }
                let synced = libc::fsync(fd) == 0;
                let err = (!synced).then(|| os_error(p, "cannot fsync the directory"));
                libc::close(fd);
                if let Some(e) = err {
                    return Err(e);
                }
            }
        }
        if let Some(b) = self.batch.as_mut() {
            b.committed();
        }
        Ok(())
    }
}

impl FileStore {
    /// A store on `dir` writing with `params`; with `params.sync_dir` it
    /// fsyncs changed directories once per `commit_every` writes (or in
    /// its commit).
    pub fn new(dir: &Path, layout: EngineKind, params: FileParams, commit_every: CommitEvery) -> Result<Self> {
        Ok(FileStore {
            path: BlobPath::new(dir, layout, b"")?,
            tmp: BlobPath::new(dir, layout, b".tmp")?,
            params,
            buf: vec![0u8; 64 * 1024],
            dirs: DirSync {
                path: BlobPath::new(dir, layout, b"")?,
                batch: commit_every.filter(|_| params.sync_dir).map(WriteBatch::new),
                dirty: Vec::with_capacity(4),
                layout,
            },
        })
    }

    /// The store of client `i` of several writing at once: its temporary
    /// files are named `KEY.cI.tmp`, so two clients replacing one blob
    /// never write into the same temporary file.
    pub fn for_client(self, dir: &Path, i: u32) -> Result<Self> {
        let tmp = BlobPath::new(dir, self.dirs.layout, format!(".c{i}.tmp").as_bytes())?;
        Ok(FileStore { tmp, ..self })
    }

    /// After a write that changed the entries of `key`'s directory (when
    /// `entries`): notes it for the directory fsync, and counts the write.
    #[inline]
    fn wrote(&mut self, key: u32, entries: bool) -> Result<()> {
        if !self.params.sync_dir {
            return Ok(());
        }
        if entries {
            self.dirs.changed(key);
        }
        self.dirs.wrote()
    }

    /// Creates the directory a tree key's file goes in (off the hot path:
    /// only when a put meets a missing directory).
    #[cold]
    fn make_parent(&self) -> Result<()> {
        let path = self.path.path();
        let Some(parent) = path.parent().filter(|p| !p.exists()) else {
            return Err(Error::io(&path, "cannot create", std::io::Error::from(std::io::ErrorKind::NotFound)));
        };
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "cannot create directory", e))
    }

    #[inline]
    fn read_stdio(&mut self, key: u32) -> Result<u64> {
        let path = self.path.set(key);
        let p = path.as_ptr();
        // SAFETY: p is a NUL-terminated path; every handle and buffer is
        // released before returning.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(p, &mut st) != 0 {
                return miss_or_error(path, "cannot stat");
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Ok(0);
            }
            let size = st.st_size as usize;
            let f = libc::fopen(p, c"rb".as_ptr());
            if f.is_null() {
                return miss_or_error(path, "cannot open");
            }
            let data = libc::malloc(size.max(1));
            if data.is_null() {
                libc::fclose(f);
                let e = std::io::Error::from_raw_os_error(libc::ENOMEM);
                return Err(Error::io(&self.path.path(), "cannot allocate a buffer for the blob", e));
            }
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
}

impl Session for FileStore {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        match self.params.read {
            FileRead::Stdio => self.read_stdio(key),
            FileRead::Posix => self.read_posix(key),
        }
    }

    #[inline]
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let writer = FileWriter { params: self.params };
        let n = writer.overwrite(self.path.set(key), self.tmp.set(key), key, content)?;
        if n > 0 {
            // Only a rename changes the directory's entries.
            self.wrote(key, self.params.write == FileWrite::Replace)?;
        }
        Ok(n)
    }

    /// Stores `content` with the run's write method; a missing file (or
    /// tree directory) is created.
    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        let writer = FileWriter { params: self.params };
        match writer.put(self.path.set(key), self.tmp.set(key), content) {
            Err(Error::Io { ref source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.make_parent()?;
                self.put(key, content)
            }
            other => {
                other?;
                self.wrote(key, true)
            }
        }
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        let deleted = FileWriter { params: self.params }.delete(self.path.set(key))?;
        if deleted {
            self.wrote(key, true)?;
        }
        Ok(deleted)
    }

    /// Nothing to commit for the files themselves (each write is done when
    /// it returns); with `sync_dir`, the directories changed since the last
    /// fsync are fsynced.
    fn commit(&mut self) -> Result<()> {
        if self.params.sync_dir {
            self.dirs.sync()?;
        }
        Ok(())
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(read: FileRead, write: FileWrite) -> FileParams {
        FileParams { read, write, fsync: false, sync_dir: false }
    }

    #[test]
    fn a_blob_too_big_to_allocate_is_a_clear_error() {
        // malloc of 1 TiB fails under the kernel's default overcommit
        // heuristic; with overcommit always on it would succeed and the
        // read of the sparse file would run for hours.
        let overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap();
        assert_ne!(overcommit.trim(), "1", "this test needs vm.overcommit_memory 0 or 2");
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("000001")).unwrap();
        f.set_len(1 << 40).unwrap();
        let mut s =
            FileStore::new(dir.path(), EngineKind::Flat, params(FileRead::Stdio, FileWrite::Truncate), None).unwrap();
        let err = s.read(1).unwrap_err().to_string();
        assert!(err.contains("cannot allocate") && err.contains("000001"), "{err}");
    }

    #[test]
    fn short_content_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("000001"), vec![1u8; 5000]).unwrap();
        for write in [FileWrite::Truncate, FileWrite::Inplace, FileWrite::Replace] {
            let mut s = FileStore::new(dir.path(), EngineKind::Flat, params(FileRead::Posix, write), None).unwrap();
            let err = s.overwrite(1, &[0u8; 100]).unwrap_err().to_string();
            assert!(err.contains("100 bytes"), "{write:?}: {err}");
            assert_eq!(std::fs::read(dir.path().join("000001")).unwrap(), vec![1u8; 5000], "{write:?}: untouched");
        }
    }

    #[test]
    fn put_resizes_creates_and_delete_removes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("00")).unwrap();
        for write in [FileWrite::Truncate, FileWrite::Inplace, FileWrite::Replace] {
            let mut s = FileStore::new(dir.path(), EngineKind::Tree, params(FileRead::Posix, write), None).unwrap();
            s.put(10_203, &[3u8; 300]).unwrap();
            s.put(10_203, &[4u8; 100]).unwrap();
            assert_eq!(std::fs::read(dir.path().join("01/02/03")).unwrap(), vec![4u8; 100], "{write:?}: shrunk");
            assert!(s.delete(10_203).unwrap());
            assert!(!s.delete(10_203).unwrap(), "{write:?}: a second delete is a miss");
        }
    }

    #[test]
    fn a_rename_s_directory_is_fsynced_once_per_batch() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["01/02", "02/00"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        for f in ["01/02/03", "01/02/04"] {
            std::fs::write(dir.path().join(f), [1u8; 100]).unwrap();
        }
        let p = FileParams { read: FileRead::Posix, write: FileWrite::Replace, fsync: true, sync_dir: true };
        let mut s = FileStore::new(dir.path(), EngineKind::Tree, p, Some(3)).unwrap();
        s.overwrite(10_203, &[2u8; 100]).unwrap();
        s.overwrite(10_204, &[2u8; 100]).unwrap();
        assert_eq!(s.dirs.dirty, [10_203], "two renames in one directory: one directory to fsync");
        s.put(20_000, &[3u8; 50]).unwrap();
        assert!(s.dirs.dirty.is_empty(), "the third write filled the batch: its directories were fsynced");
        s.delete(10_203).unwrap();
        assert_eq!(s.dirs.dirty, [10_203]);
        s.commit().unwrap();
        assert!(s.dirs.dirty.is_empty(), "the session's commit fsyncs the rest");
        let mut plain =
            FileStore::new(dir.path(), EngineKind::Tree, FileParams { sync_dir: false, ..p }, Some(1)).unwrap();
        plain.overwrite(10_204, &[4u8; 100]).unwrap();
        assert!(plain.dirs.dirty.is_empty() && plain.dirs.batch.is_none(), "no directory fsync unless asked");
    }

    #[test]
    fn reads_and_overwrites_each_way() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("000001"), vec![1u8; 5000]).unwrap();
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for read in [FileRead::Stdio, FileRead::Posix] {
            let mut s = FileStore::new(dir.path(), EngineKind::Flat, params(read, FileWrite::Truncate), None).unwrap();
            assert_eq!(s.read(1).unwrap(), 5000);
            assert_eq!(s.read(2).unwrap(), 0, "absent key is a miss");
        }
        for write in [FileWrite::Truncate, FileWrite::Inplace, FileWrite::Replace] {
            std::fs::write(dir.path().join("000001"), vec![1u8; 5000]).unwrap();
            let mut s = FileStore::new(dir.path(), EngineKind::Flat, params(FileRead::Posix, write), None).unwrap();
            assert_eq!(s.overwrite(1, &content).unwrap(), 5000);
            assert_eq!(std::fs::read(dir.path().join("000001")).unwrap(), &content[..5000], "{write:?}");
            assert_eq!(s.overwrite(9, &content).unwrap(), 0);
            assert!(!dir.path().join("000001.tmp").exists());
        }
    }
}
