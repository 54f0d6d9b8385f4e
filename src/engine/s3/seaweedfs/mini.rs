//! SeaweedFS on one host: one `weed mini` process (master, volume server,
//! filer and S3 gateway in one; one copy of each object), its data in the
//! dataset's `seaweedfs/data`, every port it opens (HTTP and gRPC) on
//! loopback and picked free at each start. `seaweedfs/run/` holds its pid
//! and ports, `log/` its log.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use super::weed::{self, find_weed, BUCKET};
use crate::engine::s3::client::Store;
use crate::engine::s3::launch::{self, PortTaken, Procs, STOP_GRACE};
use crate::engine::s3::ports::{Ports, Wanted};
use crate::engine::s3::process::{runs_with, start_with_retries, stop_all, Lifetime, Start};
use crate::engine::s3::provider::{setting, Provider};
use crate::engine::throwaway::{self, Lease, Shared};
use crate::records::{ServerPlace, ServerSetting};
use crate::{Error, Result};

/// The store's directory inside a local dataset's directory.
pub const DIR: &str = "seaweedfs";
/// Starts tried on new ports when one was taken meanwhile.
const START_TRIES: usize = 3;
/// What `weed` logs when a port it was given is taken (and serves on
/// without it).
pub const PORT_TAKEN: PortTaken = PortTaken::AnyLine("Port allocation failed");

/// Every port `weed mini` opens; the admin server's gRPC port is its HTTP
/// port + 10000, where its own workers look for it whatever the flag says.
const PORTS: Wanted = Wanted {
    single: &["s3", "s3.grpc", "master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc"],
    pairs: &[["admin", "admin.grpc"]],
    offset: 10_000,
};

/// `weed mini`'s flags for `ports`.
fn port_args(ports: &Ports) -> Vec<String> {
    let mut args = Vec::new();
    for name in ["s3", "master", "volume", "filer", "admin"] {
        args.push(format!("-{name}.port={}", ports.get(name)));
        args.push(format!("-{name}.port.grpc={}", ports.get(&format!("{name}.grpc"))));
    }
    args
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
    procs: Procs,
    version: String,
    /// Another process's `weed`, used beside it: a drop leaves it running.
    joined: bool,
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
        let version = weed::version(&weed);
        let previous = Ports::read(&layout.ports_file());
        start_with_retries(START_TRIES, |first| {
            // Recorded at each try: a failed try's drop removes it.
            throwaway::record_owner(layout.dataset())?;
            let ports = Ports::pick(PORTS, previous.clone().filter(|_| first))?;
            let procs = Procs::new("SeaweedFS", &layout.root, lifetime, PORT_TAKEN);
            let mini = Mini { layout: layout.clone(), ports, procs, version: version.clone(), joined: false };
            mini.spawn(&weed)?;
            let client = weed::client(&mini.endpoint())?;
            let master = ([127, 0, 0, 1], mini.ports.get("master")).into();
            let data = [mini.layout.data()];
            mini.procs.wait_until_up(|| weed::serving(&client, master, &data, 1))?;
            Ok(mini)
        })
    }

    fn spawn(&self, weed: &Path) -> std::result::Result<(), Start> {
        let l = &self.layout;
        let mut cmd = weed::command(Command::new(weed), "mini");
        cmd.arg(format!("-dir={}", l.data().display()))
            .arg(format!("-bucket={BUCKET}"))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-admin.ui=false", "-webdav=false"])
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false"])
            .args(port_args(&self.ports))
            .current_dir(l.data());
        self.procs.spawn("weed", cmd, &l.log(), &l.pid())?;
        self.ports.write(&l.ports_file())?;
        Ok(())
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.get("s3"))
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    /// Stops `weed`, its errors returned, unlike a drop's.
    pub fn stop(self) -> Result<()> {
        Provider::stop(&self)
    }
}

impl Provider for Mini {
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

    /// Another user's line in the owner file stays (`release_owner` takes
    /// only this process off it).
    fn stop(&self) -> Result<()> {
        let stopped = self.procs.stop();
        throwaway::release_owner(self.layout.dataset());
        stopped
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
        let ports = Ports::read(&layout.ports_file()).filter(|_| layout.running_pid().is_some());
        let Some(ports) = ports else {
            return Err(Error::bad_input(dir, "another blobbench process uses its SeaweedFS, which does not run"));
        };
        let version = find_weed().map(|w| weed::version(&w)).unwrap_or_default();
        let procs = Procs::new("SeaweedFS", &layout.root, Lifetime::LastUser, PORT_TAKEN);
        Ok(Mini { layout, ports, procs, version, joined: true })
    }

    fn stop(self) -> Result<()> {
        if !self.joined {
            return Mini::stop(self);
        }
        // Its starter has left it to this process, the last user.
        let pids: Vec<i32> = self.layout.running_pid().into_iter().collect();
        let stopped = stop_all(&pids, STOP_GRACE, &self.layout.root);
        let _ = std::fs::remove_file(self.layout.pid());
        throwaway::release_owner(self.layout.dataset());
        stopped
    }

    fn leave(mut self) {
        self.joined = true;
    }
}

/// Ends the `weed` a killed run left in `layout`; refuses while its owner,
/// another blobbench, still runs.
fn stop_stale(layout: &Layout) -> Result<()> {
    let pids: Vec<i32> = layout.running_pid().into_iter().collect();
    launch::stop_stale(layout.dataset(), &layout.root, &pids)
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

/// The recorded processes still running for the dataset in `dir`.
pub fn running(dir: &Path) -> Result<Vec<i32>> {
    Ok(Layout::of(dir)?.running_pid().into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_is_picked_apart_and_given_as_a_flag() {
        let p = Ports::pick(PORTS, None).unwrap();
        let mut all = p.all();
        assert_eq!(all.len(), 10);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 10, "ten different ports: {p:?}");
        let args = port_args(&p);
        assert!(args.contains(&format!("-admin.port.grpc={}", p.get("admin") + 10_000)), "{args:?}");
        assert!(args.contains(&format!("-s3.port={}", p.get("s3"))), "{args:?}");
    }
}
