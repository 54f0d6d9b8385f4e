//! Each set of hosts is recorded before anything of it is made, in a
//! machine-wide directory ([`registry_dir`]): a file named by its tag
//! (`PID-START-N`: its owner's pid and start time, and the owner's count
//! of sets) holding where its directories are and its owner's pid
//! namespace. The set removes its record last.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::engine::throwaway::start_time;
use crate::{Error, Result};

/// The file marking a hosts directory as blobbench's (the reaper removes
/// no other), holding its set's tag.
pub(super) const MARKER: &str = ".blobbench-hosts";
/// The processes adopted into each host, one `HOST PID START` a line, for
/// the reaper of a killed run's loopback hosts.
pub(super) const PROCS: &str = ".procs";

/// The sets this process has made, for their tags.
static SETS: AtomicU32 = AtomicU32::new(0);

/// One set's record; removed by [`Record::remove`] once the set is gone.
#[derive(Debug)]
pub(super) struct Record {
    tag: String,
    pub(super) file: PathBuf,
}

/// The process a set belongs to: its pid and start time.
#[derive(Debug, Clone, Copy)]
pub(super) struct Owner {
    pub pid: i32,
    pub started: u64,
}

impl Owner {
    pub fn me() -> Owner {
        let pid = std::process::id() as i32;
        Owner { pid, started: start_time(pid).unwrap_or(0) }
    }
}

impl Record {
    /// Records a new set of `owner`'s whose directories will be at `root`.
    pub fn write(root: &Path, owner: Owner) -> Result<Record> {
        let tag = format!("{}-{}-{}", owner.pid, owner.started, SETS.fetch_add(1, Ordering::Relaxed));
        let file = registry_dir()?.join(&tag);
        let text = format!("{}\n{}\n", root.display(), pid_namespace());
        std::fs::write(&file, text).map_err(|e| Error::io(&file, "cannot record the hosts", e))?;
        Ok(Record { tag, file })
    }

    pub fn tag(&self) -> &str {
        &self.tag
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Where the records live: `/run/blobbench-hosts` as root (namespaces are
/// machine-wide), else a private directory under the temporary one.
pub(super) fn registry_dir() -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = if uid == 0 {
        PathBuf::from("/run/blobbench-hosts")
    } else {
        std::env::temp_dir().join(format!("blobbench-hosts-{uid}"))
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(Error::io(&dir, "cannot create the hosts' records directory", e))
        }
        _ => {}
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| Error::io(&dir, "cannot read", e))?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(Error::bad_input(&dir, "is not a private directory of this user; remove it"));
    }
    Ok(dir)
}

/// This process's pid namespace (a pid means nothing in another one).
pub(super) fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid").map(|l| l.display().to_string()).unwrap_or_default()
}
