//! The throwaway OpenStack Swift cluster blobbench starts when no `--s3
//! URL` is given: Swift's S3 API (`s3api`) and test authentication
//! (`tempauth`) in a proxy beside blobbench, with memcached, in front of
//! the storage servers (object, container and account), all on ports
//! picked free at each start. Two shapes ([`Shape`]): on one host, one of
//! each storage server serving every device (three by default, one per
//! replica, each in its own zone), everything in the dataset's `swift/`
//! directory; or on three storage hosts (`swift-3hosts/`), each with its
//! own storage servers and its own device in its own directory, so that a
//! host can be lost with its disk while the others serve.
//!
//! Debian's servers run directly (`swift-*-server CONF -v`; there is no
//! `swift-init`), each in a session of its own. A build's die with it (a
//! parent-death signal), so a killed export takes them with it; a run's
//! live until their last user stops them (`engine::throwaway`), and a run
//! killed while alone on them leaves pid files whose owner is dead: the
//! next start (or a study's [`reap_killed`]) ends those servers. A cluster
//! stops when its [`Cluster`] is dropped (end of run, error, Ctrl-C).

mod config;
mod loss;
mod programs;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

pub use config::{Layout, Shape, ACCOUNT, DIR, HOSTS, HOSTS_DIR, REGION, SECRET, USER};
use programs::{current_user, port_taken, NO_GREENDNS, STORAGE};
pub use programs::{Programs, INSTALL};

use rusty_s3::Credentials;

use super::client::Store;
use super::launch::{self, OwnedHere, PortTaken, Procs, STOP_GRACE};
use super::net::Net;
use super::place::{Beside, HostsNet, Place};
use super::ports::Ports;
use super::process::{runs_with, start_with_retries, stop_all, Lifetime, Start};
use super::provider::{setting, Provider};
use crate::engine::throwaway::hosts::{self, HostId, Hosts};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{Addressing, ServerPlace, ServerSetting};
use crate::{Error, Result};

/// Starts tried on new ports when one was taken meanwhile.
const START_TRIES: usize = 3;
/// Where the proxy and memcached listen, beside blobbench.
const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// Whether a throwaway cluster could be started here (each error says
/// what to install).
pub fn check_installed() -> Result<()> {
    Programs::find().map(drop)
}

/// The shape of the cluster the dataset in `dir` holds, by its directory.
fn shape_of(dir: &Path) -> Shape {
    if dir.join(HOSTS_DIR).is_dir() {
        Shape::Hosts
    } else {
        Shape::OneHost
    }
}

/// A running cluster, started by this process; stopped when dropped.
#[derive(Debug)]
pub struct Cluster {
    /// The dataset's directory (absolute), which holds the owner file.
    dir: PathBuf,
    layout: Layout,
    ports: Ports,
    programs: Programs,
    /// The servers and memcached, as started (none when joined).
    procs: Procs,
    /// Swift's version, as the proxy's `/info` gives it.
    version: String,
    /// Started by another blobbench process, which stops it: this one's
    /// drop leaves it running.
    joined: bool,
    /// Owned by this process's machine-loss test (see [`Cluster::start_owned`]).
    owned: Option<OwnedHere>,
    /// The storage hosts (on hosts), made by this process: removed with
    /// the cluster.
    hosts: Option<Hosts>,
}

/// The clusters this process runs, by directory (see [`Cluster::shared`]).
static RUNNING: Shared<Cluster> = Shared::new();

impl Cluster {
    /// Makes a new cluster's directories in the dataset directory `dir`
    /// with `replicas` devices (its rings are made at its first start).
    pub fn init(dir: &Path, shape: Shape, replicas: u8) -> Result<()> {
        Programs::find()?;
        Layout::of(dir, shape)?.create(replicas)
    }

    /// The cluster of the dataset in `dir` as engines share it: the one
    /// another engine of this process or another blobbench process already
    /// started, or a new one. It stops when the last of them lets go of it
    /// ([`throwaway::Shared`]).
    pub fn shared(dir: &Path) -> Result<Arc<Lease<Cluster>>> {
        RUNNING.get_or_start(dir)
    }

    /// Starts the cluster of the dataset in `dir`, first ending servers a
    /// killed run left there, and waits until every server answers; a
    /// start whose port was taken meanwhile is tried again on new ports.
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
        let layout = Layout::of(dir, shape_of(dir))?;
        if !layout.data().is_dir() {
            return Err(Error::bad_input(dir, "holds no Swift cluster (no swift/devices)"));
        }
        let programs = Programs::find()?;
        stop_stale(&layout)?;
        let previous = Ports::read(&layout.ports_file());
        start_with_retries(START_TRIES, |first| {
            let ports = layout.pick_ports_from(previous.clone().filter(|_| first))?;
            Cluster::start_on(layout.clone(), programs.clone(), ports, lifetime, net)
        })
    }

    /// One try at starting the cluster on `ports`: on hosts, each storage
    /// node in a host of its own, made now.
    fn start_on(
        layout: Layout,
        programs: Programs,
        ports: Ports,
        lifetime: Lifetime,
        net: HostsNet,
    ) -> std::result::Result<Cluster, Start> {
        let nodes = layout.nodes()?;
        let hosts = match layout.shape {
            Shape::OneHost => None,
            Shape::Hosts => {
                let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
                Some(net.create(&layout.root, &names)?)
            }
        };
        let dir = layout.dataset().to_path_buf();
        let procs = Procs::new("the Swift cluster", &layout.root, lifetime, PortTaken::LastLineOfEnded(port_taken));
        let version = String::new();
        let mut cluster = Cluster { dir, layout, ports, programs, procs, version, joined: false, hosts, owned: None };
        // Dropped on any error below: what did start is stopped.
        cluster.layout.write(&cluster.programs, &cluster.ports, &cluster.addrs())?;
        // Recorded at each try: a failed try's drop removes it.
        throwaway::record_owner(&cluster.dir)?;
        cluster.spawn_memcached()?;
        for (i, node) in nodes.iter().enumerate() {
            cluster.spawn_node(node, cluster.place(i))?;
        }
        cluster.spawn_proxy()?;
        let storage: Vec<(IpAddr, u16)> = cluster.storage_ports(&nodes);
        let (proxy_port, memcached) = (cluster.ports.get("proxy"), cluster.ports.get("memcached"));
        cluster.procs.wait_until_up(|| {
            port_answers(LOOPBACK, memcached)
                && healthy(LOOPBACK, proxy_port)
                && storage.iter().all(|&(addr, port)| healthy(addr, port))
        })?;
        cluster.version = swift_version(proxy_port).unwrap_or_default();
        Ok(cluster)
    }

    /// Where storage node `i` runs: its host, or beside blobbench.
    fn place(&self, i: usize) -> &dyn Place {
        match &self.hosts {
            Some(hosts) => hosts.host(HostId(i)),
            None => &Beside,
        }
    }

    /// Each storage node's address, in [`Layout::nodes`]' order.
    fn addrs(&self) -> Vec<IpAddr> {
        let n = self.layout.nodes().map(|n| n.len()).unwrap_or(0);
        (0..n).map(|i| self.place(i).addr()).collect()
    }

    /// Every storage server's address and port, for a health check.
    fn storage_ports(&self, nodes: &[config::Node]) -> Vec<(IpAddr, u16)> {
        let addrs = self.addrs();
        nodes
            .iter()
            .zip(addrs)
            .flat_map(|(node, addr)| STORAGE.map(|s| (addr, self.ports.get(&node.program(s)))))
            .collect()
    }

    /// Starts `node`'s object, container and account servers at `place`.
    fn spawn_node(&self, node: &config::Node, place: &dyn Place) -> Result<()> {
        for server in STORAGE {
            let mut cmd = place.command(self.programs.server(server))?;
            cmd.arg(node.conf(server)).arg("-v").env(NO_GREENDNS.0, NO_GREENDNS.1);
            place.adopt(self.procs.spawn(&node.program(server), cmd, &node.log(server), &node.pid(server))?);
        }
        Ok(())
    }

    /// Starts the proxy beside blobbench (it answers once healthy).
    fn spawn_proxy(&self) -> Result<()> {
        let mut proxy = Command::new(self.programs.server("proxy"));
        proxy.arg(self.layout.proxy_conf()).arg("-v").env(NO_GREENDNS.0, NO_GREENDNS.1);
        self.procs.spawn("proxy", proxy, &self.layout.log("proxy"), &self.layout.pid("proxy")).map(drop)
    }

    /// Swift's version (empty when the proxy did not say).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The S3 endpoint: the proxy's URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.get("proxy"))
    }

    /// Stops every server (SIGTERM, then SIGKILL after a grace period) and
    /// waits for them; its errors returned, unlike a drop's.
    pub fn stop(mut self) -> Result<()> {
        self.stop_procs()
    }

    /// The directory holding every replica (a cold run drops its pages).
    pub fn data(&self) -> PathBuf {
        self.layout.data()
    }

    /// Restarts memcached on its port, emptying the proxy's cache of
    /// account and container information (a cold run's first requests
    /// then ask the backends, as after a restart).
    pub fn restart_memcached(&self) -> Result<()> {
        self.procs.stop_one("memcached", STOP_GRACE)?;
        self.spawn_memcached()?;
        let port = self.ports.get("memcached");
        self.procs.wait_until_up(|| port_answers(LOOPBACK, port)).map_err(Start::into_error)
    }

    fn spawn_memcached(&self) -> Result<()> {
        let mut cmd = Command::new(&self.programs.memcached);
        // -U 0: no UDP; -u: memcached refuses root without it.
        cmd.args(["-l", "127.0.0.1", "-U", "0", "-u", &current_user(), "-p"])
            .arg(self.ports.get("memcached").to_string());
        self.procs.spawn("memcached", cmd, &self.layout.log("memcached"), &self.layout.pid("memcached")).map(drop)
    }

    /// Stops the servers, then removes the hosts (their namespaces and
    /// directories; the disks stay in the dataset).
    fn stop_procs(&mut self) -> Result<()> {
        let stopped = self.procs.stop();
        let removed = self.hosts.take().map_or(Ok(()), Hosts::remove);
        throwaway::release_owner(&self.dir);
        stopped.and(removed)
    }
}

impl Provider for Cluster {
    /// tempauth's test user on the proxy.
    fn store(&self, bucket: &str) -> Result<Store> {
        let credentials = Credentials::new(format!("{ACCOUNT}:{USER}"), SECRET);
        Store::new(&self.endpoint(), bucket, REGION, credentials, true, Net::loopback()?, Addressing::Path)
    }

    fn product(&self) -> (String, String) {
        ("OpenStack Swift".into(), self.version.clone())
    }

    fn place(&self) -> ServerPlace {
        ServerPlace::Local
    }

    fn settings(&self) -> Vec<ServerSetting> {
        let replicas = self.layout.replicas().unwrap_or(1);
        let mut settings = vec![setting("replicas", replicas), setting("endpoint", self.endpoint())];
        if self.layout.shape == Shape::Hosts {
            settings.push(setting("storage hosts", HOSTS));
        }
        settings
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.data())
    }

    /// Restarts memcached, which empties the proxy's cache of account and
    /// container information. Swift's servers keep no objects in memory:
    /// the device directories' page cache, dropped next, is the rest.
    fn drop_caches(&self) -> Result<()> {
        self.restart_memcached()
    }

    fn stop(&self) -> Result<()> {
        // A provider stops through a shared reference: the servers now, the
        // hosts with the cluster's drop.
        let stopped = self.procs.stop();
        throwaway::release_owner(&self.dir);
        stopped
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.joined {
            let _ = self.stop_procs();
        }
    }
}

/// A shared cluster outlives the process that started it while another
/// uses it.
impl throwaway::Server for Cluster {
    /// A new cluster; or, when this process's machine-loss test runs it,
    /// that one, used as another process's is.
    fn start(dir: &Path) -> Result<Cluster> {
        if launch::owned_here(dir) {
            return <Cluster as throwaway::Server>::join(dir);
        }
        Cluster::launch(dir, Lifetime::LastUser, HostsNet::Chosen)
    }

    /// The cluster another blobbench process started, on the ports it
    /// recorded.
    fn join(dir: &Path) -> Result<Cluster> {
        let layout = Layout::of(dir, shape_of(dir))?;
        let ports = Ports::read(&layout.ports_file()).filter(|_| !recorded_pids(&layout).is_empty());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its Swift cluster, which does not run"));
        };
        let programs = Programs::find()?;
        let version = swift_version(ports.get("proxy")).unwrap_or_default();
        let dir = layout.dataset().to_path_buf();
        let procs =
            Procs::new("the Swift cluster", &layout.root, Lifetime::LastUser, PortTaken::LastLineOfEnded(port_taken));
        Ok(Cluster { dir, layout, ports, programs, procs, version, joined: true, hosts: None, owned: None })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Cluster::stop(self);
        }
        if launch::owned_here(self.layout.dataset()) {
            // The machine-loss test stops it; this process uses it still.
            return throwaway::record_owner(self.layout.dataset());
        }
        // Its starter has left it to this process, the last user.
        let stopped = stop_all(&recorded_pids(&self.layout), STOP_GRACE, &self.layout.root);
        for file in pid_files(&self.layout) {
            let _ = std::fs::remove_file(file);
        }
        throwaway::release_owner(&self.dir);
        // The hosts' namespaces and directories were the starter's: gone
        // once it has ended (see `leave`).
        let _ = hosts::reap_orphans();
        stopped
    }

    /// Leaves the servers to the other processes that use them, and the
    /// hosts with them: their namespaces belong to this process's set,
    /// which the last user's stop (or any later start or study) ends once
    /// this process has ended.
    fn leave(mut self) {
        self.joined = true;
        std::mem::forget(self.hosts.take());
    }
}

/// Something accepts connections on `addr`'s `port`.
fn port_answers(addr: IpAddr, port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&(addr, port).into(), Duration::from_secs(1)).is_ok()
}

/// The server at `addr`'s `port` answers `GET /healthcheck` with 200.
fn healthy(addr: IpAddr, port: u16) -> bool {
    get(addr, port, "/healthcheck").is_some()
}

/// The version the proxy on loopback `port` reports at `/info` (Swift's
/// own API).
fn swift_version(port: u16) -> Option<String> {
    let info: serde_json::Value = serde_json::from_str(&get(LOOPBACK, port, "/info")?).ok()?;
    info["swift"]["version"].as_str().map(str::to_string)
}

/// The body of a plain `GET path` to `addr`'s `port`, when it answers 200
/// within a few seconds.
fn get(addr: IpAddr, port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&(addr, port).into(), Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.lines().next()?;
    (status.starts_with("HTTP/1.") && status.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// Every program's pid file: the proxy's and memcached's, then each
/// storage node's servers'.
fn pid_files(layout: &Layout) -> Vec<PathBuf> {
    let mut files = vec![layout.pid("proxy"), layout.pid("memcached")];
    for node in layout.nodes().unwrap_or_default() {
        files.extend(STORAGE.map(|s| node.pid(s)));
    }
    files
}

/// The pids the cluster's pid files name that are still the processes
/// recorded there (their start times match) and run this cluster's
/// programs (a server names its configuration; memcached is memcached, on
/// this cluster's port): the servers (`with_memcached`: and memcached).
fn recorded(layout: &Layout, with_memcached: bool) -> Vec<i32> {
    let ports = Ports::read(&layout.ports_file());
    let mut found = Vec::new();
    let conf_of =
        |file: &Path, conf: PathBuf| throwaway::confirmed_pid(file, |pid| runs_with(pid, &conf.to_string_lossy()));
    found.extend(conf_of(&layout.pid("proxy"), layout.proxy_conf()));
    for node in layout.nodes().unwrap_or_default() {
        found.extend(STORAGE.iter().filter_map(|s| conf_of(&node.pid(s), node.conf(s))));
    }
    if with_memcached {
        let port = ports.map(|p| p.get("memcached").to_string());
        let ours = |pid| port.as_deref().is_some_and(|p| runs_with(pid, p)) && is_memcached(pid);
        found.extend(throwaway::confirmed_pid(&layout.pid("memcached"), ours));
    }
    found
}

/// Every process of the cluster still running, memcached included.
fn recorded_pids(layout: &Layout) -> Vec<i32> {
    recorded(layout, true)
}

/// Whether process `pid` runs a program named memcached.
fn is_memcached(pid: i32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    program.rsplit(|&b| b == b'/').next() == Some(b"memcached")
}

/// Ends servers a killed run left in `layout`; refuses when their owner
/// is another blobbench still running.
fn stop_stale(layout: &Layout) -> Result<()> {
    launch::stop_stale(layout.dataset(), &layout.root, &recorded_pids(layout))
}

/// Ends whatever Swift servers run for the dataset in `dir` (a killed
/// run's), if any. Called before a dataset is removed or replaced.
pub fn stop_any(dir: &Path) -> Result<()> {
    stop_stale(&Layout::of(dir, shape_of(dir))?)
}

/// The crash test's fault: SIGKILLs the proxy and every storage server of
/// the cluster in `dir`, as a crash of the machine's services ends them,
/// and waits until they are gone (memcached, a cache, is left to the next
/// start, which ends it).
pub fn kill_servers(dir: &Path) -> Result<()> {
    let layout = Layout::of(dir, shape_of(dir))?;
    launch::kill_and_wait(&recorded(&layout, false), &layout.root, "the killed server")
}

/// Ends every cluster a killed blobbench left running in the work
/// directories under `workdir` (see [`throwaway::orphaned`]); returns
/// how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let layout = |dir: &Path| Layout::of(dir, shape_of(dir));
    launch::reap_killed(workdir, |dir| Ok(layout(dir)?.root), |dir| Ok(recorded_pids(&layout(dir)?)))
}

/// Whether any server of the cluster in `dir` runs (for tests and checks
/// that a command left none behind).
pub fn any_running(dir: &Path) -> bool {
    Layout::of(dir, shape_of(dir)).is_ok_and(|l| !recorded_pids(&l).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// memcached's pid file is trusted only while it names that very
    /// process, and memcached: a recycled pid whose arguments happen to
    /// hold its port number is never signalled.
    #[test]
    fn a_recycled_memcached_pid_is_never_taken_for_the_clusters() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::of(tmp.path(), Shape::OneHost).unwrap();
        layout.create(1).unwrap();
        let ports = r#"{"proxy":1,"object":2,"container":3,"account":4,"memcached":54321}"#;
        std::fs::write(layout.ports_file(), ports).unwrap();
        let mut other = Command::new("sleep").arg("54321").spawn().unwrap();
        let pid = other.id() as i32;
        std::fs::write(layout.pid("memcached"), format!("{pid}\n")).unwrap();
        assert!(recorded_pids(&layout).is_empty(), "not memcached, though its port is in its arguments");
        std::fs::write(layout.pid("memcached"), format!("{pid} 1\n")).unwrap();
        assert!(recorded_pids(&layout).is_empty(), "not the process recorded");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
