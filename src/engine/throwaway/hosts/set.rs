//! A set of hosts made for one cluster: made, lost, replaced, removed.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use super::host::{Host, HostId, LostHost, Network};
use super::kill::kill_all;
use super::net::Switch;
use super::reap::reap_orphans;
use super::record::{Owner, Record, MARKER};
use crate::{Error, Result};

/// The directory made inside the caller's, holding one directory per host
/// (and `lost/`, the lost hosts' directories).
pub const DIR: &str = "hosts";
/// The lost hosts' directories, inside [`DIR`].
const LOST: &str = "lost";
/// Set to `loopback` to make hosts share loopback even as root (the tests
/// exercise both networks on one machine).
pub const NETWORK_VAR: &str = "BLOBBENCH_HOSTS";

/// A set of hosts made for one cluster; all of it removed when dropped.
#[derive(Debug)]
pub struct Hosts {
    root: PathBuf,
    pub(super) record: Record,
    network: Network,
    switch: Option<Switch>,
    hosts: Vec<Host>,
    losses: usize,
}

impl Hosts {
    /// Makes one host per name (lowercase letters and digits, up to 12;
    /// not `sw`) in `parent/hosts/NAME`: namespaces and links as root
    /// (unless [`NETWORK_VAR`] says `loopback`), else loopback. `parent`
    /// exists; `parent/hosts` must not. Ends first what killed runs left.
    pub fn create(parent: &Path, names: &[&str]) -> Result<Hosts> {
        Hosts::make(parent, names, chosen_network(), Owner::me())
    }

    /// As [`Hosts::create`], on loopback whatever the privileges (`why`
    /// says why, for the result).
    pub fn create_loopback(parent: &Path, names: &[&str], why: &str) -> Result<Hosts> {
        Hosts::make(parent, names, Network::Loopback { why: why.into() }, Owner::me())
    }

    pub(super) fn make(parent: &Path, names: &[&str], network: Network, owner: Owner) -> Result<Hosts> {
        if names.is_empty() {
            return Err(Error::invalid("a cluster needs at least one host"));
        }
        for (i, name) in names.iter().enumerate() {
            let plain = !name.is_empty()
                && name.len() <= 12
                && *name != "sw"
                && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if !plain || names[..i].contains(name) {
                return Err(Error::invalid(format!(
                    "host name {name:?}: lowercase letters and digits, up to 12, not sw, each once"
                )));
            }
        }
        let _ = reap_orphans();
        let root = std::path::absolute(parent.join(DIR)).map_err(|e| Error::io(parent, "cannot resolve", e))?;
        if root.exists() {
            return Err(Error::Exists(root));
        }
        let record = Record::write(&root, owner)?;
        let mut hosts = Hosts { root, record, network, switch: None, hosts: Vec::new(), losses: 0 };
        make_dir(&hosts.root)?;
        std::fs::write(hosts.root.join(MARKER), hosts.record.tag())
            .map_err(|e| Error::io(&hosts.root, "cannot mark the hosts directory", e))?;
        if hosts.network.is_namespaces() {
            let switch = Switch::create(hosts.record.tag())?;
            hosts.network = Network::Namespaces { subnet: switch.subnet_text() };
            hosts.switch = Some(switch);
        }
        for (i, name) in names.iter().enumerate() {
            let host = hosts.make_host(i, name)?;
            hosts.hosts.push(host);
        }
        Ok(hosts)
    }

    /// How the hosts are joined.
    pub fn network(&self) -> &Network {
        &self.network
    }

    pub fn ids(&self) -> Vec<HostId> {
        (0..self.hosts.len()).map(HostId).collect()
    }

    pub fn host(&self, id: HostId) -> &Host {
        &self.hosts[id.0]
    }

    /// The host named `name`.
    pub fn named(&self, name: &str) -> Option<HostId> {
        self.hosts.iter().position(|h| h.name == name).map(HostId)
    }

    /// Where blobbench's clients connect from: the root namespace's end
    /// of the client link, or 127.0.0.1.
    pub fn client_addr(&self) -> Ipv4Addr {
        self.switch.as_ref().map_or(Ipv4Addr::LOCALHOST, Switch::client_addr)
    }

    /// The subnet servers may admit (PostgreSQL's `pg_hba.conf`): every
    /// host's and the client's address.
    pub fn subnet(&self) -> String {
        self.switch.as_ref().map_or_else(|| "127.0.0.1/32".to_string(), Switch::subnet_text)
    }

    /// Loses host `id`: its link down, its processes SIGKILLed, its
    /// directory moved aside. Losing a lost host is refused.
    pub fn lose(&mut self, id: HostId) -> Result<LostHost> {
        self.losses += 1;
        let n = self.losses;
        let lost_dir = self.root.join(LOST);
        let host = self.hosts.get_mut(id.0).ok_or_else(|| Error::invalid(format!("no host {}", id.0)))?;
        if host.lost {
            return Err(Error::bad_input(&host.dir, "this host is already lost"));
        }
        if let Some(link) = &host.link {
            link.down()?;
        }
        // The loss's moment: from here its peers reach it no more (in a
        // namespace the link is down; on loopback the kill follows). Taken
        // before the link went down, a write answered while `ip` ran would
        // count as one made after the loss.
        let at = Instant::now();
        host.lost = true;
        let pids = host.processes();
        kill_all(&pids, &host.dir)?;
        make_dir(&lost_dir)?;
        let moved_to = lost_dir.join(format!("{}.{n}", host.name));
        std::fs::rename(&host.dir, &moved_to)
            .map_err(|e| Error::io(&host.dir, "cannot move the lost host's directory aside", e))?;
        host.adopted.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(LostHost { host: id, name: host.name.clone(), at, killed: pids.len(), moved_to })
    }

    /// A new, empty host in place of the lost host `id`: the same name,
    /// address and directory path, a new namespace.
    pub fn replace(&mut self, id: HostId) -> Result<()> {
        let old = self.hosts.get(id.0).ok_or_else(|| Error::invalid(format!("no host {}", id.0)))?;
        if !old.lost {
            return Err(Error::bad_input(&old.dir, "only a lost host is replaced"));
        }
        let name = old.name.clone();
        if let Some(link) = &old.link {
            link.remove()?;
        }
        let host = self.make_host(id.0, &name)?;
        self.hosts[id.0] = host;
        Ok(())
    }

    /// Removes everything now, its errors returned (a drop ignores them):
    /// every host's processes killed, namespaces and links deleted,
    /// directories removed.
    pub fn remove(mut self) -> Result<()> {
        self.teardown()
    }

    fn make_host(&self, i: usize, name: &str) -> Result<Host> {
        let dir = self.root.join(name);
        make_dir(&dir)?;
        let (addr, link) = match &self.switch {
            Some(switch) => {
                let link = switch.attach(i, name)?;
                (link.addr(), Some(link))
            }
            None => (Ipv4Addr::LOCALHOST, None),
        };
        let set_tag = self.record.tag().to_string();
        Ok(Host { name: name.to_string(), dir, addr, link, adopted: Mutex::new(Vec::new()), lost: false, set_tag })
    }

    fn teardown(&mut self) -> Result<()> {
        let mut first: Option<Error> = None;
        for host in &self.hosts {
            if let Err(e) = kill_all(&host.processes(), &host.dir) {
                first.get_or_insert(e);
            }
            if let Some(link) = &host.link {
                if let Err(e) = link.remove() {
                    first.get_or_insert(e);
                }
            }
        }
        self.hosts.clear();
        if let Some(switch) = self.switch.take() {
            if let Err(e) = switch.remove() {
                first.get_or_insert(e);
            }
        }
        if self.root.join(MARKER).exists() {
            if let Err(e) = std::fs::remove_dir_all(&self.root) {
                first.get_or_insert(Error::io(&self.root, "cannot remove the hosts' directories", e));
            }
        }
        match first {
            Some(e) => Err(e),
            None => {
                self.record.remove();
                Ok(())
            }
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Namespaces as root, unless [`NETWORK_VAR`] asks for loopback.
pub(super) fn chosen_network() -> Network {
    if std::env::var(NETWORK_VAR).is_ok_and(|v| v == "loopback") {
        return Network::Loopback { why: format!("{NETWORK_VAR}=loopback") };
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Network::Loopback { why: "not root: network namespaces need root".into() };
    }
    Network::Namespaces { subnet: String::new() }
}

/// A directory others may enter but not list (a server's user, as root,
/// must reach its data directory inside).
fn make_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o711).create(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        r => r.map_err(|e| Error::io(dir, "cannot create the host's directory", e)),
    }
}
