//! Swift on three hosts losing one (the machine-loss test's
//! [`Replicated`]): the storage host goes with its servers and its disk;
//! the proxy, beside blobbench, goes on with the two others (a PUT needs
//! a quorum of two), error-limiting the lost host's servers by itself.
//! Restoring puts a new host in its place whose device holds the newest
//! copy of each object the survivors have, as Swift's replicators would
//! make it (blobbench does not run them).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::config::Node;
use super::programs::STORAGE;
use super::{healthy, Cluster, Shape, HOSTS, LOOPBACK};
use crate::engine::s3::launch::STOP_GRACE;
use crate::engine::s3::process::Start;
use crate::engine::throwaway::hosts::{HostId, Hosts, LostHost, Replicated};
use crate::{Error, Result};

impl Cluster {
    /// The storage node of host `id`.
    fn node(&self, id: HostId) -> Result<Node> {
        self.layout.nodes()?.into_iter().nth(id.0).ok_or_else(|| Error::invalid(format!("no storage host {}", id.0)))
    }

    fn hosts_mut(&mut self) -> Result<&mut Hosts> {
        self.hosts.as_mut().ok_or_else(|| Error::invalid("this Swift cluster runs on one host: it has no host to lose"))
    }
}

impl Replicated for Cluster {
    fn describe(&self) -> String {
        format!(
            "OpenStack Swift {}, {HOSTS} storage hosts with a replica each, a PUT acknowledged by the proxy's write \
             quorum (2 of 3), each replica fsync'd by its object server before it answers",
            self.version
        )
    }

    fn hosts(&self) -> &Hosts {
        self.hosts.as_ref().expect("only a cluster on hosts is replicated")
    }

    /// Every storage host: each holds one of three replicas.
    fn losable(&self) -> Vec<HostId> {
        let hosts = Replicated::hosts(self);
        hosts.ids().into_iter().filter(|&id| !hosts.host(id).is_lost()).collect()
    }

    /// The host's link down, its servers killed, its directory and its
    /// disk moved aside (kept for the logs until the cluster stops).
    fn lose(&mut self, host: HostId) -> Result<LostHost> {
        let node = self.node(host)?;
        let lost = self.hosts_mut()?.lose(host)?;
        self.procs.forget(&STORAGE.map(|s| node.program(s)));
        let aside = lost.moved_to.join("disk");
        std::fs::rename(&node.root, &aside)
            .map_err(|e| Error::io(&node.root, "cannot move the lost host's disk aside", e))?;
        Ok(lost)
    }

    /// Nothing: the proxy sends each request to the hosts that answer.
    fn fail_over(&mut self) -> Result<()> {
        Ok(())
    }

    fn endpoints(&self) -> Vec<SocketAddr> {
        vec![SocketAddr::new(LOOPBACK, self.ports.get("proxy"))]
    }

    /// A new host in place of each lost one, its device made of the
    /// survivors' newest copies, its servers started and answering.
    fn restore(&mut self) -> Result<()> {
        if self.layout.shape != Shape::Hosts {
            return Err(Error::invalid("this Swift cluster runs on one host: it has no host to restore"));
        }
        let nodes = self.layout.nodes()?;
        let hosts = Replicated::hosts(self);
        let lost: Vec<HostId> = hosts.ids().into_iter().filter(|&id| hosts.host(id).is_lost()).collect();
        let survivors: Vec<&Node> =
            nodes.iter().enumerate().filter(|(i, _)| !lost.contains(&HostId(*i))).map(|(_, n)| n).collect();
        if survivors.is_empty() {
            return Err(Error::invalid("every storage host is lost: nothing to restore from"));
        }
        for &id in &lost {
            self.hosts_mut()?.replace(id)?;
            let node = &nodes[id.0];
            rebuild_disk(node, &survivors)?;
        }
        self.layout.write(&self.programs, &self.ports, &self.addrs())?;
        for &id in &lost {
            self.spawn_node(&nodes[id.0], self.place(id.0))?;
        }
        let storage = self.storage_ports(&nodes);
        self.procs.wait_until_up(|| storage.iter().all(|&(addr, port)| healthy(addr, port))).map_err(Start::into_error)
    }

    /// Restarts the proxy, which forgets the errors the lost host and its
    /// replacement (refusing connections until its servers were up) gave
    /// it. Swift's proxy skips a host with more than 10 errors until 60 s
    /// after its last (`error_suppression_limit`, `_interval`), in its
    /// memory: a real host's replacement takes longer than that, but here
    /// the next loss comes seconds later, and with the new host still
    /// skipped it would leave one host of three, below the write quorum
    /// (every PUT 503 for up to a minute, as measured here before this).
    fn readmit(&mut self) -> Result<()> {
        if self.layout.shape != Shape::Hosts {
            return Ok(());
        }
        self.procs.stop_one("proxy", STOP_GRACE)?;
        self.spawn_proxy()?;
        let port = self.ports.get("proxy");
        self.procs.wait_until_up(|| healthy(LOOPBACK, port)).map_err(Start::into_error)
    }
}

/// Makes `node`'s disk anew from the `survivors`' devices: the first
/// survivor's device whole (objects, container and account databases),
/// then each object whose newest file (Swift names them by timestamp) is
/// newer on another survivor taken from there. Every device holds every
/// partition (three devices, three replicas), so this is the replica the
/// replicators would converge to.
fn rebuild_disk(node: &Node, survivors: &[&Node]) -> Result<()> {
    let device = node.devices().join(&node.devices[0]);
    for d in [node.etc(), node.run(), node.root.join("log"), node.devices()] {
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
    }
    let (first, rest) = survivors.split_first().expect("a survivor");
    copy_tree(&first.devices().join(&first.devices[0]), &device)?;
    for other in rest {
        let theirs = other.devices().join(&other.devices[0]).join("objects");
        for hash_dir in object_dirs(&theirs) {
            let relative = hash_dir.strip_prefix(&theirs).expect("under its objects");
            let ours = device.join("objects").join(relative);
            if newest(&hash_dir) > newest(&ours) {
                if ours.exists() {
                    std::fs::remove_dir_all(&ours).map_err(|e| Error::io(&ours, "cannot replace", e))?;
                }
                copy_tree(&hash_dir, &ours)?;
            }
        }
    }
    Ok(())
}

/// Every object's directory (`objects/PART/SUFFIX/HASH`) under `objects`.
fn object_dirs(objects: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let children = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default()
    };
    for part in children(objects) {
        for suffix in children(&part) {
            found.extend(children(&suffix));
        }
    }
    found
}

/// The newest timestamp among an object's files (`1764000000.12345.data`,
/// `.ts`, `.meta`); "" when it has none.
fn newest(hash_dir: &Path) -> String {
    let names = std::fs::read_dir(hash_dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect());
    let names: Vec<String> = names.unwrap_or_default();
    names.iter().filter_map(|n| n.rsplit_once('.').map(|(t, _)| t.to_string())).max().unwrap_or_default()
}

/// Copies `from` to `to` with `cp -a`, which keeps the extended attributes
/// Swift keeps each object's metadata in.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "cannot create", e))?;
    }
    let out = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| Error::io(from, "cannot run cp to copy", e))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || only_vanished(&err) {
        return Ok(());
    }
    Err(Error::bad_input(from, format!("cannot be copied: {}", err.trim())))
}

/// Whether every complaint of `cp` is of a file that went while it copied:
/// the survivors serve writes meanwhile, and Swift replaces an object's
/// file by a newer one (deleting the old), which its replicator brings to
/// the new disk later. Any other error fails the copy.
fn only_vanished(stderr: &str) -> bool {
    let mut lines = stderr.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some() && lines.all(|l| l.contains("No such file or directory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_whole_but_for_the_files_that_went_while_it_ran() {
        let gone = "cp: cannot stat '/d/objects/829/52e/x/1.data': No such file or directory\n";
        assert!(only_vanished(gone));
        assert!(!only_vanished(""), "a failure that says nothing is a failure");
        assert!(!only_vanished(&format!("{gone}cp: cannot create regular file '/n/x': No space left on device\n")));
    }

    #[test]
    fn the_newest_version_of_an_object_is_told_by_its_files_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for (d, files) in [(&a, ["1700000000.00001.data"]), (&b, ["1700000001.00000.ts"])] {
            std::fs::create_dir_all(d).unwrap();
            for f in files {
                std::fs::write(d.join(f), "").unwrap();
            }
        }
        assert!(newest(&b) > newest(&a), "a delete after the write is newer");
        assert_eq!(newest(&dir.path().join("none")), "");
        assert!(newest(&a) > newest(&dir.path().join("none")));
    }
}
