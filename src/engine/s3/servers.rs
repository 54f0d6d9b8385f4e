//! The throwaway S3 servers blobbench can start in a dataset's directory
//! (`--s3-server`), each a [`Provider`] once running.
//!
//! A third throwaway server (Ceph RGW, MinIO) is a module like `seaweedfs/`
//! (find its programs, start on loopback ports it picks, wait for its
//! bucket, stop, kill, reap), a variant of [`Server`] with its row in each
//! `match` below, and its crash facts in `docs/s3.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::provider::Provider;
use super::{seaweedfs, swift};
use crate::engine::throwaway;
use crate::{Error, Result};

/// A throwaway S3 server blobbench can start (`--s3-server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Swift,
    Seaweedfs,
}

impl Server {
    /// Every server, the default first.
    pub const ALL: [Server; 2] = [Server::Swift, Server::Seaweedfs];

    pub fn name(self) -> &'static str {
        match self {
            Server::Swift => "swift",
            Server::Seaweedfs => "seaweedfs",
        }
    }

    /// The server `--s3-server NAME` names (None: the default); an unknown
    /// name is one line listing the known ones.
    pub fn from_setting(name: Option<&str>) -> Result<Server> {
        let Some(name) = name else { return Ok(Server::ALL[0]) };
        Server::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| Error::invalid(format!("unknown --s3-server '{name}' (expected {})", names().join(", "))))
    }

    /// The throwaway server of the dataset in `dir`, by the directory it
    /// keeps there.
    pub fn of_dataset(dir: &Path) -> Option<Server> {
        Server::ALL.into_iter().find(|s| dir.join(s.dir()).is_dir())
    }

    /// Its directory inside a dataset's.
    fn dir(self) -> &'static str {
        match self {
            Server::Swift => swift::DIR,
            Server::Seaweedfs => seaweedfs::DIR,
        }
    }

    /// Replicas when `--s3-replicas` is not given, and the most it can keep.
    pub fn replicas(self) -> (u8, u8) {
        match self {
            Server::Swift => (3, 3),
            Server::Seaweedfs => (1, 1),
        }
    }

    /// Whether it has a PUT on disk before it answers. Swift fsyncs each
    /// object; `weed mini` made no sync call at all over 100 PUTs (strace
    /// -f), so a power cut can lose what it acknowledged. The process-kill
    /// crash test cannot see this (the kernel keeps what was written).
    pub fn syncs_puts(self) -> bool {
        match self {
            Server::Swift => true,
            Server::Seaweedfs => false,
        }
    }

    /// Whether it could be started here (the error says what to install).
    pub fn check_installed(self) -> Result<()> {
        match self {
            Server::Swift => swift::check_installed(),
            Server::Seaweedfs => seaweedfs::check_installed(),
        }
    }

    /// Makes a new server's directories in `dir` with `replicas`.
    pub fn init(self, dir: &Path, replicas: u8) -> Result<()> {
        match self {
            Server::Swift => swift::Cluster::init(dir, replicas),
            Server::Seaweedfs => seaweedfs::Mini::init(dir),
        }
    }

    /// Starts the server of the dataset in `dir` for this caller alone.
    pub(super) fn start(self, dir: &Path) -> Result<Arc<dyn Provider>> {
        let running: Arc<dyn Provider> = match self {
            Server::Swift => Arc::new(swift::Cluster::start(dir)?),
            Server::Seaweedfs => Arc::new(seaweedfs::Mini::start(dir)?),
        };
        Ok(running)
    }

    /// The server of the dataset in `dir` as this process's engines share it.
    pub(super) fn shared(self, dir: &Path) -> Result<Arc<dyn Provider>> {
        let running: Arc<dyn Provider> = match self {
            Server::Swift => swift::Cluster::shared(dir)?,
            Server::Seaweedfs => seaweedfs::Mini::shared(dir)?,
        };
        Ok(running)
    }

    /// The directory holding its objects, whether or not it runs.
    pub fn data_dir(self, dir: &Path) -> Result<PathBuf> {
        match self {
            Server::Swift => Ok(swift::Layout::of(dir)?.devices()),
            Server::Seaweedfs => Ok(seaweedfs::Layout::of(dir)?.data()),
        }
    }

    /// Ends what a killed run left running for the dataset in `dir`.
    pub fn stop_any(self, dir: &Path) -> Result<()> {
        match self {
            Server::Swift => swift::stop_any(dir),
            Server::Seaweedfs => seaweedfs::stop_any(dir),
        }
    }

    /// Whether any of its processes runs for the dataset in `dir`.
    pub fn any_running(self, dir: &Path) -> bool {
        match self {
            Server::Swift => swift::any_running(dir),
            Server::Seaweedfs => seaweedfs::any_running(dir),
        }
    }
}

/// The names `--s3-server` takes, the default first.
pub fn names() -> Vec<&'static str> {
    Server::ALL.iter().map(|s| s.name()).collect()
}

/// The crash test's fault for the dataset in `dir`: SIGKILL of its
/// throwaway server's processes (none yet: nothing to kill).
pub fn kill_servers(dir: &Path) -> Result<()> {
    match Server::of_dataset(dir) {
        Some(Server::Swift) => swift::kill_servers(dir),
        Some(Server::Seaweedfs) => seaweedfs::kill_servers(dir),
        None => Ok(()),
    }
}

/// Ends every throwaway server a killed blobbench left under `workdir`.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    Ok(swift::reap_killed(workdir)? + seaweedfs::reap_killed(workdir)?)
}

/// Ends whatever throwaway server still runs for the dataset in `dir`.
pub fn stop_any(dir: &Path) -> Result<()> {
    Server::ALL.into_iter().try_for_each(|s| s.stop_any(dir))
}

/// Removes the throwaway dataset in `dir` (`drop DIR`) once no blobbench
/// process uses its server, and only what blobbench made there: its
/// descriptor, its server's directory, the owner and lock files (the
/// server's, and the dataset's own of `drop`). Whether
/// `dir` itself went (other files keep it).
pub fn drop_local(dir: &Path) -> Result<bool> {
    let own: Vec<&str> =
        [super::DESCRIPTOR, super::lock::HOLDER].into_iter().chain(Server::ALL.map(Server::dir)).collect();
    throwaway::remove_dataset(dir, &own, stop_any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_named_once_and_unknown_names_refused_in_one_line() {
        assert_eq!(Server::from_setting(None).unwrap(), Server::ALL[0]);
        for s in Server::ALL {
            assert_eq!(Server::from_setting(Some(s.name())).unwrap(), s);
        }
        let e = Server::from_setting(Some("minio")).unwrap_err().to_string();
        assert!(e.contains("unknown --s3-server 'minio'") && e.contains(&names().join(", ")), "{e}");
        assert!(!e.contains('\n'));
    }
}
