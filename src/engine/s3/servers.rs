//! The throwaway S3 servers blobbench can start in a dataset's directory
//! (`--s3-server`), each a [`Provider`] once running.
//!
//! A third throwaway server (Ceph RGW, MinIO) is a module like `seaweedfs/`
//! (find its programs, start on loopback ports it picks, wait for its
//! bucket, stop, kill, reap), a variant of [`Server`] with its row in each
//! `match` below, and its crash facts in `docs/s3.md`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::place::HostsNet;
use super::provider::Provider;
use super::{seaweedfs, swift};
use crate::engine::throwaway;
use crate::engine::throwaway::hosts::Replicated;
use crate::records::{EngineSettings, Replica, S3Params};
use crate::{Error, Result};

/// A throwaway S3 server blobbench can start (`--s3-server`): a store,
/// on one host or spread over hosts of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// Swift on one host: one object, container and account server serving
    /// every replica's device.
    Swift,
    /// Swift on three storage hosts, each its own servers and device: a
    /// replica per host, a PUT acknowledged by the proxy's write quorum.
    SwiftHosts,
    /// SeaweedFS's `weed mini`: one process, one copy.
    Seaweedfs,
    /// SeaweedFS with a volume server on each of two hosts, every object
    /// on both before the PUT returns.
    SeaweedfsHosts,
}

impl Server {
    /// Every server, the default first.
    pub const ALL: [Server; 4] = [Server::Swift, Server::SwiftHosts, Server::Seaweedfs, Server::SeaweedfsHosts];

    pub fn name(self) -> &'static str {
        match self {
            Server::Swift => "swift",
            Server::SwiftHosts => "swift-3hosts",
            Server::Seaweedfs => "seaweedfs",
            Server::SeaweedfsHosts => "seaweedfs-2hosts",
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
    pub(super) fn dir(self) -> &'static str {
        match self {
            Server::Swift => swift::DIR,
            Server::SwiftHosts => swift::HOSTS_DIR,
            Server::Seaweedfs => seaweedfs::DIR,
            Server::SeaweedfsHosts => seaweedfs::HOSTS_DIR,
        }
    }

    /// The hosts holding its data: one, or one per replica.
    pub fn hosts(self) -> u8 {
        match self {
            Server::Swift | Server::Seaweedfs => 1,
            Server::SwiftHosts => swift::HOSTS,
            Server::SeaweedfsHosts => seaweedfs::HOSTS,
        }
    }

    /// The same store on one host: what its replication across hosts is
    /// paired against.
    pub fn alone(self) -> Server {
        match self {
            Server::Swift | Server::SwiftHosts => Server::Swift,
            Server::Seaweedfs | Server::SeaweedfsHosts => Server::Seaweedfs,
        }
    }

    /// Replicas when `--s3-replicas` is not given, and the most it can keep
    /// (on hosts: one per host, no other count).
    pub fn replicas(self) -> (u8, u8) {
        match self {
            Server::Swift => (3, 3),
            Server::Seaweedfs => (1, 1),
            Server::SwiftHosts | Server::SeaweedfsHosts => (self.hosts(), self.hosts()),
        }
    }

    /// Whether it has a PUT on disk before it answers. Swift fsyncs each
    /// object; `weed` made no sync call at all over 100 PUTs (strace -f),
    /// so a power cut can lose what it acknowledged, on every host at once.
    /// The process-kill crash test cannot see this (the kernel keeps what
    /// was written).
    pub fn syncs_puts(self) -> bool {
        match self {
            Server::Swift | Server::SwiftHosts => true,
            Server::Seaweedfs | Server::SeaweedfsHosts => false,
        }
    }

    /// The server a replicated layout runs on.
    pub fn of_replica(replica: Replica) -> Result<Server> {
        match replica {
            Replica::SwiftThreeHosts => Ok(Server::SwiftHosts),
            Replica::SeaweedfsTwoHosts => Ok(Server::SeaweedfsHosts),
            other => Err(Error::invalid(format!("S3 has no layout {}", other.suffix()))),
        }
    }

    /// Whether it could be started here (the error says what to install).
    pub fn check_installed(self) -> Result<()> {
        match self {
            Server::Swift | Server::SwiftHosts => swift::check_installed(),
            Server::Seaweedfs | Server::SeaweedfsHosts => seaweedfs::check_installed(),
        }
    }

    /// Makes a new server's directories in `dir` with `replicas`.
    pub fn init(self, dir: &Path, replicas: u8) -> Result<()> {
        match self {
            Server::Swift => swift::Cluster::init(dir, swift::Shape::OneHost, replicas),
            Server::SwiftHosts => swift::Cluster::init(dir, swift::Shape::Hosts, replicas),
            Server::Seaweedfs => seaweedfs::Mini::init(dir),
            Server::SeaweedfsHosts => seaweedfs::Cluster::init(dir),
        }
    }

    /// Starts the server of the dataset in `dir` for this caller alone.
    pub(super) fn start(self, dir: &Path) -> Result<Arc<dyn Provider>> {
        let running: Arc<dyn Provider> = match self {
            Server::Swift | Server::SwiftHosts => Arc::new(swift::Cluster::start(dir)?),
            Server::Seaweedfs => Arc::new(seaweedfs::Mini::start(dir)?),
            Server::SeaweedfsHosts => Arc::new(seaweedfs::Cluster::start(dir)?),
        };
        Ok(running)
    }

    /// The server of the dataset in `dir` as this process's engines share it.
    pub(super) fn shared(self, dir: &Path) -> Result<Arc<dyn Provider>> {
        let running: Arc<dyn Provider> = match self {
            Server::Swift | Server::SwiftHosts => swift::Cluster::shared(dir)?,
            Server::Seaweedfs => seaweedfs::Mini::shared(dir)?,
            Server::SeaweedfsHosts => seaweedfs::Cluster::shared(dir)?,
        };
        Ok(running)
    }

    /// The directory holding its objects, whether or not it runs.
    pub fn data_dir(self, dir: &Path) -> Result<PathBuf> {
        match self {
            Server::Swift => Ok(swift::Layout::of(dir, swift::Shape::OneHost)?.data()),
            Server::SwiftHosts => Ok(swift::Layout::of(dir, swift::Shape::Hosts)?.data()),
            Server::Seaweedfs | Server::SeaweedfsHosts => seaweedfs::data_dir(dir),
        }
    }

    /// Ends what a killed run left running for the dataset in `dir`.
    pub fn stop_any(self, dir: &Path) -> Result<()> {
        match self {
            Server::Swift | Server::SwiftHosts => swift::stop_any(dir),
            Server::Seaweedfs | Server::SeaweedfsHosts => seaweedfs::stop_any(dir),
        }
    }

    /// Whether any of its processes runs for the dataset in `dir`.
    pub fn any_running(self, dir: &Path) -> bool {
        match self {
            Server::Swift | Server::SwiftHosts => swift::any_running(dir),
            Server::Seaweedfs | Server::SeaweedfsHosts => seaweedfs::any_running(dir),
        }
    }
}

/// The names `--s3-server` takes, the default first.
pub fn names() -> Vec<&'static str> {
    Server::ALL.iter().map(|s| s.name()).collect()
}

/// The throwaway server of the dataset in `dir` started for a machine-loss
/// test, which owns it (this process's engines on the dataset use it
/// meanwhile, its client processes join it): its storage hosts to lose,
/// joined as `net` says. A server on one host is refused in one line: it
/// has no replica.
pub fn start_replicated(dir: &Path, net: HostsNet) -> Result<Arc<Mutex<dyn Replicated + Send>>> {
    match Server::of_dataset(dir) {
        Some(Server::SwiftHosts) => Ok(Arc::new(Mutex::new(swift::Cluster::start_owned(dir, net)?))),
        Some(Server::SeaweedfsHosts) => Ok(Arc::new(Mutex::new(seaweedfs::Cluster::start_owned(dir, net)?))),
        Some(one) => Err(Error::invalid(format!(
            "S3 on --s3-server {} keeps every copy on one host: a machine loss there loses everything, with no \
             replica on another host to serve; a machine loss needs --s3-server {}",
            one.name(),
            replicated_names().join(" or ")
        ))),
        None => Err(Error::bad_input(dir, "holds no throwaway S3 server: a machine loss needs one of blobbench's own")),
    }
}

/// The cluster a replicated configuration's engine runs on
/// (`EngineSettings::replica`), started at its first use and owned by the
/// engine: the machine-loss test takes it with `Engine::replicated`.
#[derive(Default)]
pub(super) struct OwnedCluster {
    replica: Option<Replica>,
    running: Mutex<Option<Arc<Mutex<dyn Replicated + Send>>>>,
}

impl OwnedCluster {
    pub fn new(replica: Option<Replica>) -> OwnedCluster {
        OwnedCluster { replica, running: Mutex::new(None) }
    }

    /// The cluster of the dataset in `dir`, started now if it is not yet;
    /// None when the engine is not a replicated configuration's. The
    /// dataset must be on the layout's server.
    pub fn get(&self, dir: &Path) -> Result<Option<Arc<Mutex<dyn Replicated + Send>>>> {
        let Some(replica) = self.replica else { return Ok(None) };
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cluster) = running.as_ref() {
            return Ok(Some(cluster.clone()));
        }
        let server = Server::of_replica(replica)?;
        if Server::of_dataset(dir) != Some(server) {
            let name = server.name();
            return Err(Error::bad_input(
                dir,
                format!("is not on --s3-server {name}: export it with --s3-server {name}"),
            ));
        }
        let cluster = start_replicated(dir, HostsNet::Chosen)?;
        *running = Some(cluster.clone());
        Ok(Some(cluster))
    }
}

/// `settings`' S3 part, its server the replicated layout's when it has one
/// (a replicated configuration's dataset is built on it).
pub fn params_for(settings: &EngineSettings) -> Result<S3Params> {
    let mut s3 = settings.s3.clone();
    if let Some(replica) = settings.replica {
        s3.server = Some(Server::of_replica(replica)?.name().to_string());
    }
    Ok(s3)
}

/// The servers spread over hosts of their own.
pub fn replicated_names() -> Vec<&'static str> {
    Server::ALL.into_iter().filter(|s| s.hosts() > 1).map(Server::name).collect()
}

/// The crash test's fault for the dataset in `dir`: SIGKILL of its
/// throwaway server's processes (none yet: nothing to kill).
pub fn kill_servers(dir: &Path) -> Result<()> {
    match Server::of_dataset(dir) {
        Some(Server::Swift | Server::SwiftHosts) => swift::kill_servers(dir),
        Some(Server::Seaweedfs | Server::SeaweedfsHosts) => seaweedfs::kill_servers(dir),
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
