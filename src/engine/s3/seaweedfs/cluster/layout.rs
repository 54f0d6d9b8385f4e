//! Where a replicated SeaweedFS store's files are, in the dataset's
//! `seaweedfs-2hosts/`.

use std::path::{Path, PathBuf};

use crate::engine::s3::process::runs_with;
use crate::engine::throwaway;
use crate::{Error, Result};

/// The store's directory inside a local dataset's directory.
pub const DIR: &str = "seaweedfs-2hosts";
/// The storage hosts, each a volume server with a copy of every volume.
pub const HOSTS: u8 = 2;

/// Where a replicated store's files are.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn of(dir: &Path) -> Result<Layout> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        Ok(Layout { root: dir.join(DIR) })
    }

    pub(super) fn dataset(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    pub(super) fn master(&self) -> PathBuf {
        self.root.join("master")
    }
    pub(super) fn filer(&self) -> PathBuf {
        self.root.join("filer")
    }
    pub(super) fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    pub(super) fn log(&self, name: &str) -> PathBuf {
        self.root.join("log").join(format!("{name}.log"))
    }
    pub(super) fn pid(&self, name: &str) -> PathBuf {
        self.run().join(format!("{name}.pid"))
    }
    pub(super) fn ports_file(&self) -> PathBuf {
        self.run().join("ports.json")
    }

    /// The storage hosts' disks.
    pub fn disks(&self) -> PathBuf {
        self.root.join("disks")
    }

    /// Storage host `host`'s disk (`h1`, `h2`).
    pub(super) fn disk(&self, host: &str) -> PathBuf {
        self.disks().join(host)
    }

    /// The volumes on storage host `host`'s disk.
    pub(super) fn volumes(&self, host: &str) -> PathBuf {
        self.disk(host).join("data")
    }

    pub(super) fn hosts() -> Vec<String> {
        (1..=HOSTS).map(|i| format!("h{i}")).collect()
    }

    pub(super) fn create(&self) -> Result<()> {
        let mut dirs = vec![self.master(), self.filer(), self.run(), self.root.join("log")];
        for host in Layout::hosts() {
            let disk = self.disk(&host);
            dirs.extend([self.volumes(&host), disk.join("run"), disk.join("log")]);
        }
        for d in dirs {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
        }
        Ok(())
    }

    /// Each recorded process still running as this store's: the master
    /// and filer by their directories, a volume server by its host's.
    pub(super) fn running(&self) -> Vec<i32> {
        let mut found = Vec::new();
        let ours = |file: PathBuf, arg: String| throwaway::confirmed_pid(&file, |pid| runs_with(pid, &arg));
        found.extend(ours(self.pid("master"), format!("-mdir={}", self.master().display())));
        found.extend(ours(self.pid("filer"), format!("-defaultStoreDir={}", self.filer().display())));
        for host in Layout::hosts() {
            let (pid, dir) = (self.disk(&host).join("run").join("volume.pid"), self.volumes(&host));
            found.extend(ours(pid, format!("-dir={}", dir.display())));
        }
        found
    }

    pub(super) fn pid_files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.pid("master"), self.pid("filer")];
        files.extend(Layout::hosts().iter().map(|h| self.disk(h).join("run").join("volume.pid")));
        files
    }
}
