//! Small filesystem helpers shared by the commands: atomic replacement of
//! output files, free space, and the bytes a file really occupies.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Writes `bytes` to `path` through a temporary file in the same directory
/// and a rename, so readers see the old file or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".blobbench-")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, "cannot create a file in this directory", e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(path, "cannot write", e))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(path, "cannot write", e))?;
    tmp.persist(path).map_err(|e| Error::io(path, "cannot write", e.error))?;
    Ok(())
}

/// The directory a path lives in ("." for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks that a file can be created in `path`'s directory, so that a
/// command fails before an hour of measuring rather than after.
pub fn check_writable_output(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Error::bad_input(path, "is a directory, expected a file name"));
    }
    let dir = parent_dir(path);
    check_dir(dir)?;
    tempfile::Builder::new()
        .prefix(".blobbench-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(|e| Error::io(dir, "cannot write output here", e))
}

/// Checks that `dir` exists and is a directory, and says which it is not.
pub fn check_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::bad_input(dir, "is not a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::bad_input(dir, "no such directory")),
        Err(e) => Err(Error::io(dir, "cannot access", e)),
    }
}

/// Bytes actually allocated on disk for one file or directory (st_blocks).
pub fn allocated_bytes(meta: &std::fs::Metadata) -> u64 {
    meta.blocks() * 512
}

/// Refuses a file or directory this process may not write (a write run
/// would fail midway, or worse, measure nothing).
pub fn check_writable_file(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "cannot stat", e))?;
    let c = cstring(path)?;
    // SAFETY: NUL-terminated path.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    if meta.permissions().readonly() || !writable {
        return Err(Error::bad_input(path, "is read-only; --update needs write access"));
    }
    Ok(())
}

/// Free bytes available to this user on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Result<u64> {
    let c = cstring(path)?;
    // SAFETY: statvfs writes into the struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::io(path, "cannot read free space", std::io::Error::last_os_error()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Flushes every dirty page of the filesystem holding `path` (syncfs), so
/// that writeback of data just written does not run during a measurement.
pub fn sync_filesystem(path: &Path) -> Result<()> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    // SAFETY: syncfs only reads the descriptor, which `f` keeps open.
    if unsafe { libc::syncfs(f.as_raw_fd()) } != 0 {
        return Err(Error::io(path, "cannot flush to disk", std::io::Error::last_os_error()));
    }
    Ok(())
}

pub fn cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::bad_input(path, "path contains a NUL byte"))
}

/// A sibling of `path` to build into before renaming over it.
pub fn temp_sibling(path: &Path, tag: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    parent_dir(path).join(format!(".{name}.{tag}-{}", std::process::id()))
}

/// The directories one `create_dir_all` made (not those that were there),
/// removed again when dropped if they are still empty: a command that
/// fails, or leaves nothing, does not leave a directory it made itself,
/// and never removes one the user had.
#[derive(Debug)]
pub struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    pub fn create(dir: &Path) -> Result<CreatedDirs> {
        let missing: Vec<PathBuf> =
            dir.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf).collect();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "cannot create directory", e))?;
        Ok(CreatedDirs(missing))
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        // Deepest first; remove_dir refuses a directory that holds anything.
        for d in &self.0 {
            if std::fs::remove_dir(d).is_err() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary left behind");
    }

    #[test]
    fn unwritable_output_is_caught_early() {
        assert!(check_writable_output(Path::new("/nonexistent-dir/x.json")).is_err());
        let file = tempfile::NamedTempFile::new().unwrap();
        let under = check_writable_output(&file.path().join("x.json")).unwrap_err().to_string();
        assert!(under.ends_with("is not a directory"), "{under}");
        let dir = tempfile::tempdir().unwrap();
        assert!(check_writable_output(dir.path()).is_err(), "a directory is not a file name");
        assert!(check_writable_output(&dir.path().join("ok.json")).is_ok());
        assert!(free_bytes(dir.path()).unwrap() > 0);
    }

    #[test]
    fn created_dirs_go_when_empty_and_others_stay() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        drop(CreatedDirs::create(&deep).unwrap());
        assert!(!dir.path().join("a").exists(), "every level it made is gone");
        std::fs::create_dir(dir.path().join("a")).unwrap();
        let made = CreatedDirs::create(&deep).unwrap();
        std::fs::write(dir.path().join("a/b/kept"), b"x").unwrap();
        drop(made);
        assert!(!deep.exists() && dir.path().join("a/b/kept").exists(), "a directory holding anything stays");
        drop(CreatedDirs::create(dir.path()).unwrap());
        assert!(dir.path().is_dir(), "a directory that was there is never removed");
    }
}
