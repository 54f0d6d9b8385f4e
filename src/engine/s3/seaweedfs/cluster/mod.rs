//! SeaweedFS replicated across two hosts (`--s3-server seaweedfs-2hosts`):
//! a master, a volume server on each of two storage hosts and a filer with
//! its S3 gateway, each its own `weed` process. The master's default
//! replication is `001` (one more copy on another server of the same
//! rack), so every volume has a replica on each host, and a volume server
//! answers a write only once the other replica has it too (SeaweedFS's
//! replicated write: the write fails when any replica fails). Neither
//! copy is synced to disk before the answer.
//!
//! The master and the filer (the bucket's metadata: which volume holds
//! each object) run beside blobbench, as the proxy of Swift's cluster:
//! a loss strikes a storage host, whose volume server holds a copy of
//! every object. The filer's store is one copy on this machine.
//!
//! Files, in the dataset's `seaweedfs-2hosts/`: `master/` (its state),
//! `filer/` (its metadata store), `run/` and `log/` (the master's and the
//! filer's pids and logs, and every port of the last start), and
//! `disks/h1`, `disks/h2`: each storage host's disk (`data/`, the volumes;
//! its volume server's `run/` and `log/`).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

mod layout;
mod loss;

pub use layout::{Layout, DIR, HOSTS};

use super::mini::PORT_TAKEN;
use super::weed::{self, find_weed};
use crate::engine::s3::client::Store;
use crate::engine::s3::launch::{self, OwnedHere, Procs, STOP_GRACE};
use crate::engine::s3::place::{HostsNet, Place};
use crate::engine::s3::ports::{Ports, Wanted};
use crate::engine::s3::process::{start_with_retries, stop_all, Lifetime, Start};
use crate::engine::s3::provider::{setting, Provider};
use crate::engine::throwaway::hosts::{self, HostId, Hosts};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{ServerPlace, ServerSetting};
use crate::{Error, Result};

/// The master's default replication: one more copy on another server of
/// the same rack, so two copies in all, one per host.
const REPLICATION: &str = "001";
/// Starts tried on new ports when one was taken meanwhile.
const START_TRIES: usize = 3;
/// Volumes grow to this size before the master directs writes elsewhere
/// (SeaweedFS's default is 30 GB; volumes are sparse files either way).
const VOLUME_SIZE_MB: u32 = 1024;
/// Volumes a volume server may hold.
const MAX_VOLUMES: u32 = 16;
/// How long the filer is given to stop before it is SIGKILLed.
const FILER_GRACE: Duration = Duration::from_secs(2);

/// Every port, each gRPC port its HTTP port + 10000: SeaweedFS's own
/// convention, which some of its clients assume whatever the flags say
/// (the filer's S3 gateway looks for the filer's gRPC there, and never
/// starts otherwise).
const PORTS: Wanted = Wanted {
    single: &[],
    pairs: &[
        ["master", "master.grpc"],
        ["filer", "filer.grpc"],
        ["s3", "s3.grpc"],
        ["h1.volume", "h1.volume.grpc"],
        ["h2.volume", "h2.volume.grpc"],
    ],
    offset: 10_000,
};

/// A running replicated store, started by this process (stopped when
/// dropped) or joined.
#[derive(Debug)]
pub struct Cluster {
    layout: Layout,
    ports: Ports,
    procs: Procs,
    version: String,
    /// Another process's store, used beside it: a drop leaves it running.
    joined: bool,
    /// Owned by this process's machine-loss test (see [`Cluster::start_owned`]).
    owned: Option<OwnedHere>,
    /// The storage hosts, made by this process: removed with the store.
    hosts: Option<Hosts>,
}

static RUNNING: Shared<Cluster> = Shared::new();

impl Cluster {
    /// Makes a new store's directories in `dir/seaweedfs-2hosts`.
    pub fn init(dir: &Path) -> Result<()> {
        find_weed()?;
        Layout::of(dir)?.create()
    }

    /// The store of the dataset in `dir` as engines share it.
    pub fn shared(dir: &Path) -> Result<Arc<Lease<Cluster>>> {
        RUNNING.get_or_start(dir)
    }

    /// Starts the store of the dataset in `dir` for this process alone.
    pub fn start(dir: &Path) -> Result<Cluster> {
        Cluster::launch(dir, Lifetime::ThisProcess, HostsNet::Chosen)
    }

    /// Starts the cluster of the dataset in `dir` for this process's
    /// machine-loss test, which owns it: this process's engines on the
    /// dataset use it meanwhile, and stop it never.
    pub fn start_owned(dir: &Path, net: HostsNet) -> Result<Cluster> {
        let mut cluster = Cluster::launch(dir, Lifetime::ThisProcess, net)?;
        cluster.owned = Some(OwnedHere::new(dir));
        Ok(cluster)
    }

    fn launch(dir: &Path, lifetime: Lifetime, net: HostsNet) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        if !layout.disks().is_dir() {
            return Err(Error::bad_input(dir, "holds no replicated SeaweedFS store (no seaweedfs-2hosts/disks)"));
        }
        let weed = find_weed()?;
        stop_stale(&layout)?;
        let version = weed::version(&weed);
        let previous = Ports::read(&layout.ports_file());
        start_with_retries(START_TRIES, |first| {
            let ports = Ports::pick(PORTS, previous.clone().filter(|_| first))?;
            let names: Vec<String> = Layout::hosts();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let hosts = Some(net.create(&layout.root, &names)?);
            let procs = Procs::new("the replicated SeaweedFS", &layout.root, lifetime, PORT_TAKEN);
            let version = version.clone();
            let cluster = Cluster { layout: layout.clone(), ports, procs, version, joined: false, hosts, owned: None };
            throwaway::record_owner(layout.dataset())?;
            cluster.spawn(&weed)?;
            cluster.wait_until_up()?;
            Ok(cluster)
        })
    }

    fn hosts(&self) -> &Hosts {
        self.hosts.as_ref().expect("a started store has its hosts")
    }

    /// Where the master and the filer listen: beside blobbench, on the end
    /// of the hosts' network that is this machine's (loopback, or the
    /// client link), so that the volume servers reach the master.
    fn here(&self) -> IpAddr {
        IpAddr::V4(self.hosts().client_addr())
    }

    /// `IP:PORT.GRPC`: without its gRPC port, the others look for it at
    /// PORT + 10000.
    fn master(&self) -> String {
        format!("{}:{}.{}", self.here(), self.ports.get("master"), self.ports.get("master.grpc"))
    }

    /// Starts the master and the filer beside blobbench, and a volume
    /// server on each storage host.
    fn spawn(&self, weed: &Path) -> Result<()> {
        let (l, p, here) = (&self.layout, &self.ports, self.here());
        let mut cmd = weed::command(Command::new(weed), "master");
        cmd.args(at(here, p, "master"))
            .arg(format!("-mdir={}", l.master().display()))
            .arg(format!("-defaultReplication={REPLICATION}"))
            .arg(format!("-volumeSizeLimitMB={VOLUME_SIZE_MB}"))
            // One master: no Raft election to wait for at each start
            // (10 s, its election timeout, on a restart).
            .args(["-peers=none", "-telemetry=false"]);
        self.procs.spawn("master", cmd, &l.log("master"), &l.pid("master"))?;
        for id in self.hosts().ids() {
            self.spawn_volume(weed, id)?;
        }
        let mut cmd = weed::command(Command::new(weed), "filer");
        cmd.args(at(here, p, "filer"))
            .arg(format!("-master={}", self.master()))
            .arg(format!("-defaultStoreDir={}", l.filer().display()))
            .arg(format!("-defaultReplicaPlacement={REPLICATION}"))
            // Every object on the volume servers: none kept in the
            // filer's own store, which is one copy beside blobbench.
            .arg("-saveToFilerLimit=0")
            .args(["-s3", "-s3.ip.bind=127.0.0.1", "-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-s3.port={}", p.get("s3")))
            .arg(format!("-s3.port.grpc={}", p.get("s3.grpc")))
            .current_dir(l.filer());
        self.procs.spawn("filer", cmd, &l.log("filer"), &l.pid("filer"))?;
        p.write(&l.ports_file())
    }

    /// Starts the volume server of storage host `id` on its disk.
    fn spawn_volume(&self, weed: &Path, id: HostId) -> Result<()> {
        let host = self.hosts().host(id);
        let (l, name) = (&self.layout, host.name());
        let disk = l.disk(name);
        let mut cmd = weed::command(Place::command(host, weed)?, "volume");
        cmd.args(at(Place::addr(host), &self.ports, &format!("{name}.volume")))
            .arg(format!("-id={name}"))
            .arg(format!("-dir={}", l.volumes(name).display()))
            .arg(format!("-master={}", self.master()))
            .arg(format!("-max={MAX_VOLUMES}"))
            .arg("-preStopSeconds=0");
        let (log, pid) = (disk.join("log").join("volume.log"), disk.join("run").join("volume.pid"));
        Place::adopt(host, self.procs.spawn(&format!("{name}.volume"), cmd, &log, &pid)?);
        Ok(())
    }

    /// Waits until the gateway lists the bucket (making it, the first
    /// time) and the master knows both copies of every volume.
    fn wait_until_up(&self) -> std::result::Result<(), Start> {
        let client = weed::client(&self.endpoint())?;
        let master = SocketAddr::new(self.here(), self.ports.get("master"));
        let data: Vec<PathBuf> = Layout::hosts().iter().map(|h| self.layout.volumes(h)).collect();
        self.procs.wait_until_up(|| {
            if client.any_under("").is_err() {
                let _ = client.create_bucket();
            }
            weed::serving(&client, master, &data, usize::from(HOSTS))
        })
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.get("s3"))
    }

    /// Stops every process and removes the hosts, its errors returned,
    /// unlike a drop's.
    pub fn stop(mut self) -> Result<()> {
        self.stop_all()
    }
}

/// `-ip`, `-ip.bind`, `-port` and `-port.grpc` of the program whose ports
/// are named `name`, at `addr`.
fn at(addr: IpAddr, ports: &Ports, name: &str) -> Vec<String> {
    vec![
        format!("-ip={addr}"),
        format!("-ip.bind={addr}"),
        format!("-port={}", ports.get(name)),
        format!("-port.grpc={}", ports.get(&format!("{name}.grpc"))),
    ]
}

impl Provider for Cluster {
    fn store(&self, bucket: &str) -> Result<Store> {
        weed::store(&self.endpoint(), bucket)
    }

    fn product(&self) -> (String, String) {
        ("SeaweedFS".into(), self.version.clone())
    }

    fn place(&self) -> ServerPlace {
        ServerPlace::Local
    }

    fn settings(&self) -> Vec<ServerSetting> {
        vec![
            setting("replicas", HOSTS),
            setting("storage hosts", HOSTS),
            setting(
                "replication",
                format!("{REPLICATION}: a copy on each volume server, both written before a PUT returns"),
            ),
            setting("endpoint", self.endpoint()),
        ]
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.layout.disks())
    }

    /// Nothing: its caches live inside its processes (see `Mini`).
    fn drop_caches(&self) -> Result<()> {
        Ok(())
    }

    /// The processes now; the hosts with the store's drop. The filer
    /// first, and SIGKILLed after a short grace: on SIGTERM it waits 15 s
    /// for its own subscription to its metadata to end (it never does)
    /// before it closes its store. A kill loses nothing the filer
    /// acknowledged: its store (LevelDB) writes each change to its log
    /// before the answer, and a process kill keeps the page cache.
    fn stop(&self) -> Result<()> {
        let filer = self.procs.stop_one("filer", FILER_GRACE);
        let stopped = filer.and(self.procs.stop());
        throwaway::release_owner(self.layout.dataset());
        stopped
    }
}

impl Cluster {
    /// Stops the processes, then removes the hosts (their namespaces and
    /// directories; the disks stay in the dataset).
    fn stop_all(&mut self) -> Result<()> {
        let stopped = Provider::stop(self);
        stopped.and(self.hosts.take().map_or(Ok(()), Hosts::remove))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.joined {
            let _ = self.stop_all();
        }
    }
}

impl throwaway::Server for Cluster {
    /// A new cluster; or, when this process's machine-loss test runs it,
    /// that one, used as another process's is.
    fn start(dir: &Path) -> Result<Cluster> {
        if launch::owned_here(dir) {
            return <Cluster as throwaway::Server>::join(dir);
        }
        Cluster::launch(dir, Lifetime::LastUser, HostsNet::Chosen)
    }

    fn join(dir: &Path) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        let ports = Ports::read(&layout.ports_file()).filter(|_| !layout.running().is_empty());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its SeaweedFS, which does not run"));
        };
        let version = find_weed().map(|w| weed::version(&w)).unwrap_or_default();
        let procs = Procs::new("the replicated SeaweedFS", &layout.root, Lifetime::LastUser, PORT_TAKEN);
        Ok(Cluster { layout, ports, procs, version, joined: true, hosts: None, owned: None })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Cluster::stop(self);
        }
        if launch::owned_here(self.layout.dataset()) {
            // The machine-loss test stops it; this process uses it still.
            return throwaway::record_owner(self.layout.dataset());
        }
        let stopped = stop_all(&self.layout.running(), STOP_GRACE, &self.layout.root);
        for file in self.layout.pid_files() {
            let _ = std::fs::remove_file(file);
        }
        throwaway::release_owner(self.layout.dataset());
        // The hosts were the starter's: gone once it has ended (`leave`).
        let _ = hosts::reap_orphans();
        stopped
    }

    /// Leaves the processes, and the hosts with them, to the other users
    /// (see Swift's cluster).
    fn leave(mut self) {
        self.joined = true;
        std::mem::forget(self.hosts.take());
    }
}

fn stop_stale(layout: &Layout) -> Result<()> {
    launch::stop_stale(layout.dataset(), &layout.root, &layout.running())
}

/// Ends the store of the dataset in `dir` a killed run left, if any.
pub fn stop_any(dir: &Path) -> Result<()> {
    stop_stale(&Layout::of(dir)?)
}

/// The crash test's fault: SIGKILL of every process of the store.
pub fn kill_servers(dir: &Path) -> Result<()> {
    let layout = Layout::of(dir)?;
    launch::kill_and_wait(&layout.running(), &layout.root, "the killed server")
}

/// The recorded processes still running for the dataset in `dir`.
pub fn running(dir: &Path) -> Result<Vec<i32>> {
    Ok(Layout::of(dir)?.running())
}
