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
use std::sync::Arc;

use super::mini::PORT_TAKEN;
use super::weed::{self, find_weed};
use crate::engine::s3::client::Store;
use crate::engine::s3::launch::{self, Procs, STOP_GRACE};
use crate::engine::s3::place::{Beside, Place};
use crate::engine::s3::ports::{Ports, Wanted};
use crate::engine::s3::process::{runs_with, start_with_retries, stop_all, Lifetime, Start};
use crate::engine::s3::provider::{setting, Provider};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{ServerPlace, ServerSetting};
use crate::{Error, Result};

/// The store's directory inside a local dataset's directory.
pub const DIR: &str = "seaweedfs-2hosts";
/// The storage hosts, each a volume server with a copy of every volume.
pub const HOSTS: u8 = 2;
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

    fn dataset(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    fn master(&self) -> PathBuf {
        self.root.join("master")
    }
    fn filer(&self) -> PathBuf {
        self.root.join("filer")
    }
    fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    fn log(&self, name: &str) -> PathBuf {
        self.root.join("log").join(format!("{name}.log"))
    }
    fn pid(&self, name: &str) -> PathBuf {
        self.run().join(format!("{name}.pid"))
    }
    fn ports_file(&self) -> PathBuf {
        self.run().join("ports.json")
    }

    /// The storage hosts' disks.
    pub fn disks(&self) -> PathBuf {
        self.root.join("disks")
    }

    /// Storage host `host`'s disk (`h1`, `h2`).
    fn disk(&self, host: &str) -> PathBuf {
        self.disks().join(host)
    }

    /// The volumes on storage host `host`'s disk.
    fn volumes(&self, host: &str) -> PathBuf {
        self.disk(host).join("data")
    }

    fn hosts() -> Vec<String> {
        (1..=HOSTS).map(|i| format!("h{i}")).collect()
    }

    fn create(&self) -> Result<()> {
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
    fn running(&self) -> Vec<i32> {
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

    fn pid_files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.pid("master"), self.pid("filer")];
        files.extend(Layout::hosts().iter().map(|h| self.disk(h).join("run").join("volume.pid")));
        files
    }
}

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
        Cluster::launch(dir, Lifetime::ThisProcess)
    }

    fn launch(dir: &Path, lifetime: Lifetime) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        if !layout.disks().is_dir() {
            return Err(Error::bad_input(dir, "holds no replicated SeaweedFS store (no seaweedfs-2hosts/disks)"));
        }
        let weed = find_weed()?;
        stop_stale(&layout)?;
        let version = weed::version(&weed);
        let previous = Ports::read(&layout.ports_file());
        start_with_retries(START_TRIES, |first| {
            throwaway::record_owner(layout.dataset())?;
            let ports = Ports::pick(PORTS, previous.clone().filter(|_| first))?;
            let procs = Procs::new("the replicated SeaweedFS", &layout.root, lifetime, PORT_TAKEN);
            let cluster = Cluster { layout: layout.clone(), ports, procs, version: version.clone(), joined: false };
            let beside: Arc<dyn Place> = Arc::new(Beside);
            let hosts: Vec<Arc<dyn Place>> = Layout::hosts().iter().map(|_| Arc::new(Beside) as Arc<dyn Place>).collect();
            cluster.spawn(&weed, beside.as_ref(), &hosts)?;
            cluster.wait_until_up(beside.addr())?;
            Ok(cluster)
        })
    }

    /// Starts the master and the filer at `beside`, and a volume server on
    /// each storage host of `hosts`.
    fn spawn(&self, weed: &Path, beside: &dyn Place, hosts: &[Arc<dyn Place>]) -> std::result::Result<(), Start> {
        let (l, p) = (&self.layout, &self.ports);
        let here = beside.addr();
        // `IP:PORT.GRPC`: without its gRPC port, the others look for it
        // at PORT + 10000.
        let master = format!("{here}:{}.{}", p.get("master"), p.get("master.grpc"));
        let mut cmd = weed::command(beside.command(weed)?, "master");
        cmd.args(at(here, p, "master"))
            .arg(format!("-mdir={}", l.master().display()))
            .arg(format!("-defaultReplication={REPLICATION}"))
            .arg(format!("-volumeSizeLimitMB={VOLUME_SIZE_MB}"))
            .arg("-telemetry=false");
        beside.adopt(self.procs.spawn("master", cmd, &l.log("master"), &l.pid("master"))?);
        for (host, place) in Layout::hosts().iter().zip(hosts) {
            let disk = l.disk(host);
            let mut cmd = weed::command(place.command(weed)?, "volume");
            cmd.args(at(place.addr(), p, &format!("{host}.volume")))
                .arg(format!("-id={host}"))
                .arg(format!("-dir={}", l.volumes(host).display()))
                .arg(format!("-master={master}"))
                .arg(format!("-max={MAX_VOLUMES}"))
                .arg("-preStopSeconds=0");
            let (log, pid) = (disk.join("log").join("volume.log"), disk.join("run").join("volume.pid"));
            place.adopt(self.procs.spawn(&format!("{host}.volume"), cmd, &log, &pid)?);
        }
        let mut cmd = weed::command(beside.command(weed)?, "filer");
        cmd.args(at(here, p, "filer"))
            .arg(format!("-master={master}"))
            .arg(format!("-defaultStoreDir={}", l.filer().display()))
            .arg(format!("-defaultReplicaPlacement={REPLICATION}"))
            // Every object on the volume servers: none kept in the
            // filer's own store, which is one copy beside blobbench.
            .arg("-saveToFilerLimit=0")
            .args(["-s3", "-s3.ip.bind=127.0.0.1", "-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-s3.port={}", p.get("s3")))
            .arg(format!("-s3.port.grpc={}", p.get("s3.grpc")))
            .current_dir(l.filer());
        beside.adopt(self.procs.spawn("filer", cmd, &l.log("filer"), &l.pid("filer"))?);
        p.write(&l.ports_file())?;
        Ok(())
    }

    /// Waits until the gateway lists the bucket (making it, the first
    /// time) and the master knows both copies of every volume.
    fn wait_until_up(&self, master: IpAddr) -> std::result::Result<(), Start> {
        let client = weed::client(&self.endpoint())?;
        let master = SocketAddr::new(master, self.ports.get("master"));
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

    /// Stops every process, its errors returned, unlike a drop's.
    pub fn stop(self) -> Result<()> {
        Provider::stop(&self)
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
            setting("replication", format!("{REPLICATION}: a copy on each volume server, both written before a PUT returns")),
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

    fn stop(&self) -> Result<()> {
        let stopped = self.procs.stop();
        throwaway::release_owner(self.layout.dataset());
        stopped
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.joined {
            let _ = Provider::stop(self);
        }
    }
}

impl throwaway::Server for Cluster {
    fn start(dir: &Path) -> Result<Cluster> {
        Cluster::launch(dir, Lifetime::LastUser)
    }

    fn join(dir: &Path) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        let ports = Ports::read(&layout.ports_file()).filter(|_| !layout.running().is_empty());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its SeaweedFS, which does not run"));
        };
        let version = find_weed().map(|w| weed::version(&w)).unwrap_or_default();
        let procs = Procs::new("the replicated SeaweedFS", &layout.root, Lifetime::LastUser, PORT_TAKEN);
        Ok(Cluster { layout, ports, procs, version, joined: true })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Cluster::stop(self);
        }
        let stopped = stop_all(&self.layout.running(), STOP_GRACE, &self.layout.root);
        for file in self.layout.pid_files() {
            let _ = std::fs::remove_file(file);
        }
        throwaway::release_owner(self.layout.dataset());
        stopped
    }

    fn leave(mut self) {
        self.joined = true;
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
