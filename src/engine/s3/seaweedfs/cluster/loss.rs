//! The replicated SeaweedFS losing a storage host (the machine-loss
//! test's [`Replicated`]): the host goes with its volume server and its
//! disk; the other volume server holds a copy of every volume and serves
//! reads. Writes stop: every volume's placement (`001`) wants a copy on
//! two servers, one is left, so the master marks every volume unwritable
//! and can grow no new one (SeaweedFS fails a write it cannot replicate
//! rather than keep one copy). Restoring puts a new host in its place with
//! a copy of the survivor's volumes, as `volume.fix.replication` would
//! copy them, and writes go on.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::super::weed::{self, find_weed};
use super::{Cluster, Layout, HOSTS};
use crate::engine::s3::process::Start;
use crate::engine::throwaway::hosts::{HostId, Hosts, LostHost, Replicated};
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

impl Replicated for Cluster {
    fn describe(&self) -> String {
        format!(
            "SeaweedFS {}, a volume server on each of {HOSTS} storage hosts, replication 001: a PUT returns once both \
             copies are written, neither synced, so it may survive a host's loss but fails the replicated class's \
             power-cut half (a power cut of every host loses what no disk has yet)",
            self.version
        )
    }

    fn hosts(&self) -> &Hosts {
        Cluster::hosts(self)
    }

    /// Either storage host: each holds a copy of every volume.
    fn losable(&self) -> Vec<HostId> {
        let hosts = Cluster::hosts(self);
        hosts.ids().into_iter().filter(|&id| !hosts.host(id).is_lost()).collect()
    }

    /// The host's link down, its volume server killed, its directory and
    /// its disk moved aside (kept for the logs until the store stops).
    fn lose(&mut self, host: HostId) -> Result<LostHost> {
        let hosts = self.hosts.as_mut().ok_or_else(|| Error::invalid("a joined store has no hosts to lose"))?;
        let name = hosts.host(host).name().to_string();
        let lost = hosts.lose(host)?;
        self.procs.forget(&[format!("{name}.volume")]);
        let disk = self.layout.disk(&name);
        std::fs::rename(&disk, lost.moved_to.join("disk"))
            .map_err(|e| Error::io(&disk, "cannot move the lost host's disk aside", e))?;
        Ok(lost)
    }

    /// Nothing: the master drops the lost volume server when its heartbeat
    /// stream breaks, and reads go to the other copy.
    fn fail_over(&mut self) -> Result<()> {
        Ok(())
    }

    fn endpoints(&self) -> Vec<SocketAddr> {
        vec![SocketAddr::new([127, 0, 0, 1].into(), self.ports.get("s3"))]
    }

    /// A new host in place of each lost one, holding a copy of the
    /// survivor's volumes, its volume server started; done once the master
    /// knows both copies of every volume again.
    fn restore(&mut self) -> Result<()> {
        let weed = find_weed()?;
        let hosts = Cluster::hosts(self);
        let lost: Vec<HostId> = hosts.ids().into_iter().filter(|&id| hosts.host(id).is_lost()).collect();
        let survivor = hosts.ids().into_iter().find(|id| !lost.contains(id));
        let Some(survivor) = survivor.map(|id| hosts.host(id).name().to_string()) else {
            return Err(Error::invalid("every storage host is lost: nothing to restore from"));
        };
        let master = SocketAddr::new(self.here(), self.ports.get("master"));
        for &id in &lost {
            self.wait_until_dropped(master, id)?;
            self.hosts.as_mut().expect("checked above").replace(id)?;
            let name = Cluster::hosts(self).host(id).name().to_string();
            copy_volumes(&self.layout, &survivor, &name)?;
            self.spawn_volume(&weed, id)?;
        }
        let client = weed::client(&self.endpoint())?;
        let data: Vec<_> = Layout::hosts().iter().map(|h| self.layout.volumes(h)).collect();
        let copies = usize::from(HOSTS);
        self.procs.wait_until_up(|| weed::serving(&client, master, &data, copies)).map_err(Start::into_error)
    }
}

impl Cluster {
    /// Waits until the master has dropped host `id`'s volume server: a
    /// lost host's heartbeat stream ends only when its keep-alive fails
    /// (about 70 s in a namespace, at once on loopback), and a new server
    /// at the same address before then is taken for the old one.
    fn wait_until_dropped(&self, master: SocketAddr, id: HostId) -> Result<()> {
        let host = Cluster::hosts(self).host(id);
        let url = format!("{}:{}", host.addr(), self.ports.get(&format!("{}.volume", host.name())));
        let started = Instant::now();
        while weed::master_counts(master, &url) != Some(false) {
            if stop_requested() {
                return Err(Error::Interrupted);
            }
            if started.elapsed() > DROP_BOUND {
                let bound = DROP_BOUND.as_secs();
                return Err(Error::invalid(format!(
                    "SeaweedFS's master still counts the lost volume server {url} after {bound} s"
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }
}

/// How long the master may take to drop a lost volume server.
const DROP_BOUND: Duration = Duration::from_secs(300);

/// Makes host `to`'s disk anew with a copy of host `from`'s volumes (their
/// data, index and info files; not the directory's own id).
fn copy_volumes(layout: &Layout, from: &str, to: &str) -> Result<()> {
    let (source, target) = (layout.volumes(from), layout.volumes(to));
    let disk = layout.disk(to);
    for d in [target.clone(), disk.join("run"), disk.join("log")] {
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
    }
    let entries = std::fs::read_dir(&source).map_err(|e| Error::io(&source, "cannot list the volumes", e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let volume_file = [".dat", ".idx", ".vif"].iter().any(|ext| name.to_string_lossy().ends_with(ext));
        if volume_file {
            let to = target.join(&name);
            std::fs::copy(entry.path(), &to).map_err(|e| Error::io(&to, "cannot copy a volume", e))?;
        }
    }
    Ok(())
}
