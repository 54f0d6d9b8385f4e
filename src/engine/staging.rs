//! Building a dataset under a temporary name beside its target, flushing
//! it, then renaming it into place: an interrupted build never looks
//! complete, and a dataset being replaced stays whole until the new one is
//! on disk. Every builder (init, export, the engines' builds) goes through
//! here.

use std::path::{Path, PathBuf};

use crate::util::fsutil;
use crate::{Error, Result};

/// A dataset being built at [`Staging::path`]: removed on drop unless
/// [`Staging::finish`] renamed it into place.
#[derive(Debug)]
pub struct Staging {
    pub path: PathBuf,
    target: PathBuf,
    replacing: bool,
    sidecars: &'static [&'static str],
    done: bool,
}

/// The files SQLite keeps beside a database (a journal or WAL of an old
/// database must never be applied to the new one).
pub const SQLITE_SIDECARS: &[&str] = &["-journal", "-wal", "-shm"];

impl Staging {
    /// Checks `target` and picks the temporary name (tagged `tag`). An
    /// absent target or an empty directory is taken; anything else only
    /// with `force`, and only when `mine` accepts it as a previous dataset
    /// of the same kind (its error says why not). `what` names that kind in
    /// the messages.
    pub fn begin(target: &Path, force: bool, what: &str, mine: &dyn Fn(&Path) -> Result<()>) -> Result<Self> {
        fsutil::check_dir(fsutil::parent_dir(target))?;
        let replacing = check_target(target, force, what, mine)?;
        let path = fsutil::temp_sibling(target, what);
        remove_any(&path)?;
        Ok(Staging { path, target: target.to_path_buf(), replacing, sidecars: &[], done: false })
    }

    /// Also removes `suffixes` of the temporary and of the replaced target
    /// (an SQLite database's journal and WAL).
    pub fn with_sidecars(mut self, suffixes: &'static [&'static str]) -> Self {
        self.sidecars = suffixes;
        self
    }

    /// Flushes the built dataset, renames it into place (moving a previous
    /// one aside first and deleting it after), then flushes the directory.
    pub fn finish(mut self) -> Result<()> {
        let dir = fsutil::parent_dir(&self.target).to_path_buf();
        fsutil::sync_filesystem(&dir)?;
        let target = self.target.clone();
        if self.replacing {
            let trash = fsutil::temp_sibling(&target, "old");
            std::fs::rename(&target, &trash).map_err(|e| Error::io(&target, "cannot move the old dataset aside", e))?;
            remove_sidecars(&target, self.sidecars);
            if let Err(e) = std::fs::rename(&self.path, &target) {
                let _ = std::fs::rename(&trash, &target);
                return Err(Error::io(&target, "cannot rename the new dataset into place", e));
            }
            self.done = true;
            remove_any(&trash)?;
        } else {
            std::fs::rename(&self.path, &target)
                .map_err(|e| Error::io(&target, "cannot rename the new dataset into place", e))?;
            self.done = true;
        }
        fsutil::sync_filesystem(&dir)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = remove_any(&self.path);
            remove_sidecars(&self.path, self.sidecars);
        }
    }
}

fn remove_sidecars(path: &Path, suffixes: &[&str]) {
    for suffix in suffixes {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

fn remove_any(path: &Path) -> Result<()> {
    let r = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => Err(e),
    };
    r.map_err(|e| Error::io(path, "cannot remove", e))
}

/// Whether `target` exists and will be replaced.
fn check_target(target: &Path, force: bool, what: &str, mine: &dyn Fn(&Path) -> Result<()>) -> Result<bool> {
    let meta = match std::fs::symlink_metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(target, "cannot access", e)),
    };
    let empty_dir = meta.is_dir()
        && std::fs::read_dir(target).map_err(|e| Error::io(target, "cannot list directory", e))?.next().is_none();
    if empty_dir {
        return Ok(true);
    }
    if !force {
        let is = if meta.is_dir() { "is not empty" } else { "exists" };
        return Err(Error::bad_input(target, format!("{is} (use --force to replace a previous {what} dataset)")));
    }
    mine(target)?;
    Ok(true)
}

/// The refusal for a target that is not a dataset of kind `what`.
pub fn not_mine(target: &Path, what: &str) -> Error {
    Error::bad_input(target, format!("is not a {what} dataset; refusing to replace it even with --force"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_replacement_keeps_the_old_dataset() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, b"old").unwrap();
        let refuse = |p: &Path| Err(not_mine(p, "x"));
        assert!(Staging::begin(&target, false, "x", &refuse).unwrap_err().to_string().contains("--force"));
        assert!(Staging::begin(&target, true, "x", &refuse).unwrap_err().to_string().contains("not a x dataset"));
        let accept = |_: &Path| Ok(());
        let s = Staging::begin(&target, true, "x", &accept).unwrap();
        std::fs::write(&s.path, b"new").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "the target is never deleted before the rename");
        let s = Staging::begin(&target, true, "x", &accept).unwrap();
        std::fs::write(&s.path, b"new").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing left beside it");
    }
}
