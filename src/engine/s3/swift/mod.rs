//! The throwaway OpenStack Swift cluster blobbench starts when no `--s3
//! URL` is given: Swift's S3 API (`s3api`) and test authentication
//! (`tempauth`) in front of one object, one container and one account
//! server, each serving every device directory (three by default, one per
//! replica, each in its own zone), and memcached, all on loopback ports
//! picked free at each start. Everything lives in the dataset's `swift/`
//! directory: `etc/` (configuration, rings), `devices/`, `run/` (pid
//! files), `log/`.
//!
//! Debian's servers run directly (`swift-*-server CONF -v`; there is no
//! `swift-init`), each in a session of its own. A build's die with it (a
//! parent-death signal), so a killed export takes them with it; a run's
//! live until their last user stops them (`engine::throwaway`), and a run
//! killed while alone on them leaves pid files whose owner is dead: the
//! next start (or a study's [`reap_killed`]) ends those servers. A cluster
//! stops when its [`Cluster`] is dropped (end of run, error, Ctrl-C).

mod config;
mod programs;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use config::{Layout, Ports};
pub use programs::{check_installed, Programs, ACCOUNT, DIR, INSTALL, REGION, SECRET, USER};
use programs::{NO_GREENDNS, SERVERS};

use rusty_s3::Credentials;

use super::client::Store;
use super::net::Net;
use super::process::{
    cpu_of, runs_with, signal_and_wait, spawn_server, start_with_retries, stop_all, Lifetime, Start, START_BOUND,
};
use super::provider::{setting, Provider};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{Addressing, ServerPlace, ServerSetting};
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// Starts tried on new ports when one was taken meanwhile.
const START_TRIES: usize = 3;
/// How long a clean stop may take before the servers are SIGKILLed.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// A running cluster, started by this process; stopped when dropped.
#[derive(Debug)]
pub struct Cluster {
    /// The dataset's directory (absolute), which holds the owner file.
    dir: PathBuf,
    layout: Layout,
    ports: Ports,
    programs: Programs,
    /// The servers and memcached, by name, as started.
    children: Mutex<Vec<(String, Child)>>,
    /// Swift's version, as the proxy's `/info` gives it.
    version: String,
    /// Started by another blobbench process, which stops it: this one's
    /// drop leaves it running.
    joined: bool,
    lifetime: Lifetime,
}

/// The clusters this process runs, by directory (see [`Cluster::shared`]).
static RUNNING: Shared<Cluster> = Shared::new();

impl Cluster {
    /// Makes a new cluster's directories in `dir/swift` with `replicas`
    /// devices (its rings are made at its first start).
    pub fn init(dir: &Path, replicas: u8) -> Result<()> {
        Programs::find()?;
        Layout::of(dir)?.create(replicas)
    }

    /// The cluster of the dataset in `dir` as engines share it: the one
    /// another engine of this process or another blobbench process already
    /// started, or a new one. It stops when the last of them lets go of it
    /// ([`throwaway::Shared`]).
    pub fn shared(dir: &Path) -> Result<Arc<Lease<Cluster>>> {
        RUNNING.get_or_start(dir)
    }

    /// Starts the cluster in `dir/swift`, first ending servers a killed
    /// run left there, and waits until every server answers; a start whose
    /// port was taken meanwhile is tried again on new ports.
    pub fn start(dir: &Path) -> Result<Cluster> {
        Cluster::launch(dir, Lifetime::ThisProcess)
    }

    fn launch(dir: &Path, lifetime: Lifetime) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        if !layout.devices().is_dir() {
            return Err(Error::bad_input(dir, "holds no Swift cluster (no swift/devices)"));
        }
        let programs = Programs::find()?;
        stop_stale(&layout)?;
        let previous = config::last_ports(&layout);
        start_with_retries(START_TRIES, |first| {
            let ports = Ports::pick(previous.filter(|_| first))?;
            Cluster::start_on(layout.clone(), programs.clone(), ports, lifetime)
        })
    }

    /// One try at starting the cluster on `ports`.
    fn start_on(
        layout: Layout,
        programs: Programs,
        ports: Ports,
        lifetime: Lifetime,
    ) -> std::result::Result<Cluster, Start> {
        layout.write(&programs, ports)?;
        let dir = layout.dataset().to_path_buf();
        // Recorded at each try: a failed try's drop removes it.
        throwaway::record_owner(&dir)?;
        let children = Mutex::new(Vec::new());
        let version = String::new();
        let mut cluster = Cluster { dir, layout, ports, programs, children, version, joined: false, lifetime };
        // Dropped on any error below: what did start is stopped.
        cluster.spawn_memcached()?;
        for (i, server) in SERVERS.iter().enumerate() {
            let mut cmd = Command::new(&cluster.programs.servers[i]);
            cmd.arg(cluster.layout.conf(server)).arg("-v").env(NO_GREENDNS.0, NO_GREENDNS.1);
            cluster.spawn(server, cmd)?;
        }
        cluster.wait_until_up()?;
        cluster.version = swift_version(ports.proxy).unwrap_or_default();
        Ok(cluster)
    }

    /// Swift's version (empty when the proxy did not say).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The S3 endpoint: the proxy's URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.proxy)
    }

    /// Stops every server (SIGTERM, then SIGKILL after a grace period) and
    /// waits for them; its errors returned, unlike a drop's.
    pub fn stop(self) -> Result<()> {
        self.stop_children()
    }

    /// The device directories (a cold run drops their pages).
    pub fn devices(&self) -> PathBuf {
        self.layout.devices()
    }

    /// Restarts memcached on its port, emptying the proxy's cache of
    /// account and container information (a cold run's first requests
    /// then ask the backends, as after a restart).
    pub fn restart_memcached(&self) -> Result<()> {
        let old = {
            let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
            children.iter().position(|(n, _)| n == "memcached").map(|i| children.remove(i).1)
        };
        if let Some(mut child) = old {
            stop_all(&[child.id() as i32], STOP_GRACE, &self.layout.root)?;
            let _ = child.wait();
        }
        self.spawn_memcached()?;
        wait_for(&self.layout, || port_answers(self.ports.memcached), || self.exited(), || self.cpu())
            .map_err(Start::into_error)
    }

    fn spawn_memcached(&self) -> Result<()> {
        let mut cmd = Command::new(&self.programs.memcached);
        // -U 0: no UDP; -u: memcached refuses root without it.
        cmd.args(["-l", "127.0.0.1", "-U", "0", "-u", &config::current_user(), "-p"])
            .arg(self.ports.memcached.to_string());
        self.spawn("memcached", cmd)
    }

    /// Starts one program, its output appended to its log, and records its pid.
    fn spawn(&self, name: &str, mut cmd: Command) -> Result<()> {
        let log_path = self.layout.log(name);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| Error::io(&log_path, "cannot open the log", e))?;
        let err = log.try_clone().map_err(|e| Error::io(&log_path, "cannot open the log", e))?;
        cmd.current_dir("/").stdin(Stdio::null()).stdout(log).stderr(err);
        let child =
            spawn_server(cmd, self.lifetime).map_err(|e| Error::io(&log_path, &format!("cannot start {name}"), e))?;
        let pid = child.id() as i32;
        self.children.lock().unwrap_or_else(|e| e.into_inner()).push((name.to_string(), child));
        throwaway::write_pid_file(&self.layout.pid(name), pid)
    }

    /// Waits until every server answers its `/healthcheck` (the proxy
    /// answers before its backends are up, so each is asked).
    fn wait_until_up(&self) -> std::result::Result<(), Start> {
        let up = || port_answers(self.ports.memcached) && SERVERS.iter().all(|s| healthy(self.ports.of(s)));
        wait_for(&self.layout, up, || self.exited(), || self.cpu())
    }

    /// The CPU the cluster's programs have used (a start is bounded by it).
    fn cpu(&self) -> Duration {
        let children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        cpu_of(&children.iter().map(|(_, c)| c.id() as i32).collect::<Vec<_>>())
    }

    /// A program that ended by itself, with the last line of its log.
    fn exited(&self) -> Option<String> {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let (name, status) =
            children.iter_mut().find_map(|(n, c)| c.try_wait().ok().flatten().map(|s| (n.clone(), s)))?;
        let log = std::fs::read_to_string(self.layout.log(&name)).unwrap_or_default();
        let last = log.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output").to_string();
        Some(format!("{name} ended ({status}): {last}"))
    }

    fn stop_children(&self) -> Result<()> {
        let mut children = std::mem::take(&mut *self.children.lock().unwrap_or_else(|e| e.into_inner()));
        let pids: Vec<i32> = children.iter().map(|(_, c)| c.id() as i32).collect();
        let stopped = stop_all(&pids, STOP_GRACE, &self.layout.root);
        for (_, c) in &mut children {
            let _ = c.wait();
        }
        for name in SERVERS.iter().chain(&["memcached"]) {
            let _ = std::fs::remove_file(self.layout.pid(name));
        }
        throwaway::release_owner(&self.dir);
        stopped
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
        vec![setting("replicas", replicas), setting("endpoint", self.endpoint())]
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.devices())
    }

    /// Restarts memcached, which empties the proxy's cache of account and
    /// container information. Swift's servers keep no objects in memory:
    /// the device directories' page cache, dropped next, is the rest.
    fn drop_caches(&self) -> Result<()> {
        self.restart_memcached()
    }

    fn stop(&self) -> Result<()> {
        self.stop_children()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.joined {
            let _ = self.stop_children();
        }
    }
}

/// A shared cluster outlives the process that started it while another
/// uses it.
impl throwaway::Server for Cluster {
    fn start(dir: &Path) -> Result<Cluster> {
        Cluster::launch(dir, Lifetime::LastUser)
    }

    /// The cluster another blobbench process started, on the ports it
    /// recorded.
    fn join(dir: &Path) -> Result<Cluster> {
        let layout = Layout::of(dir)?;
        let ports = config::last_ports(&layout).filter(|_| !recorded_pids(&layout, &ALL).is_empty());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its Swift cluster, which does not run"));
        };
        let programs = Programs::find()?;
        let version = swift_version(ports.proxy).unwrap_or_default();
        let dir = layout.dataset().to_path_buf();
        let children = Mutex::new(Vec::new());
        Ok(Cluster { dir, layout, ports, programs, children, version, joined: true, lifetime: Lifetime::LastUser })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Cluster::stop(self);
        }
        // Its starter has left it to this process, the last user.
        let stopped = stop_all(&recorded_pids(&self.layout, &ALL), STOP_GRACE, &self.layout.root);
        for name in ALL {
            let _ = std::fs::remove_file(self.layout.pid(name));
        }
        throwaway::release_owner(&self.dir);
        stopped
    }

    fn leave(mut self) {
        self.joined = true;
    }
}

/// Polls `up` until it holds; fails when `exited` names a program that
/// ended (a port taken when that program could not bind its own), at
/// Ctrl-C, or past [`START_BOUND`] (`cpu`: what the servers used).
fn wait_for(
    layout: &Layout,
    up: impl Fn() -> bool,
    exited: impl Fn() -> Option<String>,
    cpu: impl Fn() -> Duration,
) -> std::result::Result<(), Start> {
    let started = Instant::now();
    loop {
        if up() {
            return Ok(());
        }
        if let Some(why) = exited() {
            let taken = port_taken(&why);
            let e = Error::bad_input(&layout.root, format!("the Swift cluster did not start: {why}"));
            return Err(if taken { Start::PortTaken(e) } else { Start::Failed(e) });
        }
        if stop_requested() {
            return Err(Start::Failed(Error::Interrupted));
        }
        if let Some(why) = START_BOUND.exceeded(started.elapsed(), cpu()) {
            return Err(Start::Failed(Error::bad_input(
                &layout.root,
                format!("the Swift cluster did not start: {why} (see its log/)"),
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether the last line of a program that ended says its port was taken:
/// Swift's servers give up binding after their `bind_timeout` ("Could not
/// bind to 127.0.0.1:PORT after trying for 30 seconds"), memcached at once
/// ("failed to listen on TCP port PORT: Address already in use").
fn port_taken(last_line: &str) -> bool {
    last_line.contains("Could not bind to") || last_line.contains("Address already in use")
}

/// Something accepts connections on the loopback port.
fn port_answers(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok()
}

/// The server on `port` answers `GET /healthcheck` with 200.
fn healthy(port: u16) -> bool {
    get(port, "/healthcheck").is_some()
}

/// The version the proxy on `port` reports at `/info` (Swift's own API).
fn swift_version(port: u16) -> Option<String> {
    let info: serde_json::Value = serde_json::from_str(&get(port, "/info")?).ok()?;
    info["swift"]["version"].as_str().map(str::to_string)
}

/// The body of a plain `GET path` to the loopback `port`, when it answers
/// 200 within a few seconds.
fn get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.lines().next()?;
    (status.starts_with("HTTP/1.") && status.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// The pids the files in `run/` name that are still the processes recorded
/// there (their start times match) and run this cluster's programs (a
/// server names this cluster's configuration; memcached is memcached, on
/// this cluster's port).
fn recorded_pids(layout: &Layout, names: &[&str]) -> Vec<i32> {
    let ports = config::last_ports(layout);
    names
        .iter()
        .filter_map(|name| {
            let ours = |pid: i32| match *name {
                "memcached" => ports.is_some_and(|p| runs_with(pid, &p.memcached.to_string())) && is_memcached(pid),
                server => runs_with(pid, &layout.conf(server).to_string_lossy()),
            };
            throwaway::confirmed_pid(&layout.pid(name), ours)
        })
        .collect()
}

/// Whether process `pid` runs a program named memcached.
fn is_memcached(pid: i32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    program.rsplit(|&b| b == b'/').next() == Some(b"memcached")
}

const ALL: [&str; 5] = ["object", "container", "account", "proxy", "memcached"];

/// Ends servers a killed run left in `layout`; refuses when their owner
/// is another blobbench still running.
fn stop_stale(layout: &Layout) -> Result<()> {
    let pids = recorded_pids(layout, &ALL);
    if pids.is_empty() {
        return Ok(());
    }
    throwaway::check_not_in_use(layout.dataset(), &layout.root)?;
    let left = signal_and_wait(&pids, libc::SIGKILL, Duration::from_secs(10));
    match left.first() {
        None => Ok(()),
        Some(pid) => Err(Error::bad_input(&layout.root, format!("a killed run's server (pid {pid}) did not end"))),
    }
}

/// Ends whatever Swift servers run for the dataset in `dir` (a killed
/// run's), if any. Called before a dataset is removed or replaced.
pub fn stop_any(dir: &Path) -> Result<()> {
    stop_stale(&Layout::of(dir)?)
}

/// The crash test's fault: SIGKILLs the proxy, object, container and
/// account servers of the cluster in `dir/swift`, as a crash of the
/// machine's services ends them, and waits until they are gone (memcached,
/// a cache, is left to the next start, which ends it).
pub fn kill_servers(dir: &Path) -> Result<()> {
    let layout = Layout::of(dir)?;
    let pids = recorded_pids(&layout, &SERVERS);
    let left = signal_and_wait(&pids, libc::SIGKILL, Duration::from_secs(10));
    match left.first() {
        None => Ok(()),
        Some(pid) => {
            Err(Error::bad_input(&layout.root, format!("the killed server (pid {pid}) did not end within 10 s")))
        }
    }
}

/// Ends every cluster a killed blobbench left running in the work
/// directories under `workdir` (see [`throwaway::orphaned`]); returns
/// how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let mut ended = 0;
    for dir in throwaway::orphaned(workdir) {
        let layout = Layout::of(&dir)?;
        if !recorded_pids(&layout, &ALL).is_empty() {
            stop_stale(&layout)?;
            ended += 1;
        }
    }
    Ok(ended)
}

/// Whether any server of the cluster in `dir` runs (for tests and checks
/// that a command left none behind).
pub fn any_running(dir: &Path) -> bool {
    Layout::of(dir).is_ok_and(|l| !recorded_pids(&l, &ALL).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_or_memcached_that_lost_its_port_is_told_from_other_failures() {
        let swift =
            "proxy ended (exit status: 1): Exception: Could not bind to 127.0.0.1:6011 after trying for 30 seconds";
        let memcached = "memcached ended (exit status: 71): failed to listen on TCP port 11211: Address already in use";
        assert!(port_taken(swift) && port_taken(memcached));
        assert!(!port_taken("object ended (exit status: 1): ImportError: No module named swift"));
    }

    /// memcached's pid file is trusted only while it names that very
    /// process, and memcached: a recycled pid whose arguments happen to
    /// hold its port number is never signalled.
    #[test]
    fn a_recycled_memcached_pid_is_never_taken_for_the_clusters() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::of(tmp.path()).unwrap();
        layout.create(1).unwrap();
        let ports = Ports { proxy: 1, object: 2, container: 3, account: 4, memcached: 54_321 };
        std::fs::write(layout.ports_file(), serde_json::to_string(&ports).unwrap()).unwrap();
        let mut other = Command::new("sleep").arg("54321").spawn().unwrap();
        let pid = other.id() as i32;
        std::fs::write(layout.pid("memcached"), format!("{pid}\n")).unwrap();
        assert!(
            recorded_pids(&layout, &["memcached"]).is_empty(),
            "not memcached, though its port is in its arguments"
        );
        std::fs::write(layout.pid("memcached"), format!("{pid} 1\n")).unwrap();
        assert!(recorded_pids(&layout, &["memcached"]).is_empty(), "not the process recorded");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
