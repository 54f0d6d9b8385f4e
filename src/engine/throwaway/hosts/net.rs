//! The hosts' network as root: a "switch" namespace holding a bridge, one
//! namespace per host joined to it by a veth pair, and one veth pair from
//! the root namespace to it for blobbench's clients, all through
//! iproute2's `ip`. Each veth pair is made in one call with its ends
//! already in their namespaces, so no half-made link is ever left in the
//! root namespace; deleting a namespace deletes its links and their peers.

use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::kill::kill_all;
use super::record::registry_dir;
use crate::{Error, Result};

/// Where `ip netns` keeps its namespaces.
pub(super) const NETNS_DIR: &str = "/run/netns";
/// Every namespace's name starts so (then its set's tag).
pub(super) const NS_PREFIX: &str = "blobbench-";
/// A host's address is this plus its place; the client's is `.1`.
const FIRST_HOST: u8 = 10;
/// What to install when `ip` is missing.
const INSTALL: &str = "the hosts' network namespaces need iproute2's `ip` (Debian: apt-get install iproute2)";

/// The switch namespace, its bridge and the client link.
#[derive(Debug)]
pub(super) struct Switch {
    ns: String,
    /// The subnet's first three octets (a /24).
    net: [u8; 3],
    tag: String,
}

/// A host's namespace and its port on the bridge.
#[derive(Debug)]
pub(super) struct Link {
    ns: String,
    switch_ns: String,
    port: String,
    addr: Ipv4Addr,
}

impl Switch {
    /// The switch namespace of the set `tag` and the client link, on a
    /// /24 no route of this machine covers (chosen under a machine-wide
    /// lock, so two blobbench processes never pick one subnet).
    pub fn create(tag: &str) -> Result<Switch> {
        let ns = format!("{NS_PREFIX}{tag}-sw");
        ip(&["netns", "add", &ns])?;
        let mut switch = Switch { ns, net: [0; 3], tag: tag.to_string() };
        let made = switch.build();
        if let Err(e) = made {
            let _ = switch.remove();
            return Err(e);
        }
        Ok(switch)
    }

    fn build(&mut self) -> Result<()> {
        let ns = self.ns.clone();
        ip(&["-n", &ns, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &ns, "link", "set", "br0", "addrgenmode", "none", "up"])?;
        let client = client_link_name(&self.tag);
        {
            let _lock = SubnetLock::take()?;
            self.net = free_subnet(&ip_output(&["-4", "-o", "route", "show", "table", "all"])?)?;
            ip(&["link", "add", &client, "type", "veth", "peer", "name", "up0", "netns", &ns])?;
            ip(&["link", "set", &client, "addrgenmode", "none"])?;
            ip(&["addr", "add", &format!("{}/24", self.client_addr()), "dev", &client])?;
            ip(&["link", "set", &client, "up"])?;
        }
        ip(&["-n", &ns, "link", "set", "up0", "addrgenmode", "none", "master", "br0", "up"])
    }

    pub fn client_addr(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.net[0], self.net[1], self.net[2], 1)
    }

    pub fn subnet_text(&self) -> String {
        format!("{}.{}.{}.0/24", self.net[0], self.net[1], self.net[2])
    }

    /// The namespace of host `name` (`i`th of its set), linked to the
    /// bridge, its address up.
    pub fn attach(&self, i: usize, name: &str) -> Result<Link> {
        let place = u8::try_from(i).ok().and_then(|i| i.checked_add(FIRST_HOST)).filter(|&a| a < 255);
        let Some(last) = place else { return Err(Error::invalid("too many hosts for one subnet")) };
        let link = Link {
            ns: format!("{NS_PREFIX}{}-{name}", self.tag),
            switch_ns: self.ns.clone(),
            port: format!("h{i}"),
            addr: Ipv4Addr::new(self.net[0], self.net[1], self.net[2], last),
        };
        ip(&["netns", "add", &link.ns])?;
        let made = (|| {
            // A replacement keeps the lost host's hardware address as well
            // as its IP address, so its peers' ARP caches stay right.
            let mac = format!("02:62:62:00:00:{last:02x}");
            let peer = ["peer", "name", "eth0", "address", &mac, "netns", &link.ns];
            ip(&[&["-n", &self.ns, "link", "add", &link.port, "type", "veth"][..], &peer[..]].concat())?;
            ip(&["-n", &self.ns, "link", "set", &link.port, "addrgenmode", "none", "master", "br0", "up"])?;
            ip(&["-n", &link.ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &link.ns, "link", "set", "eth0", "addrgenmode", "none"])?;
            ip(&["-n", &link.ns, "addr", "add", &format!("{}/24", link.addr), "dev", "eth0"])?;
            ip(&["-n", &link.ns, "link", "set", "eth0", "up"])
        })();
        if let Err(e) = made {
            let _ = link.remove();
            return Err(e);
        }
        Ok(link)
    }

    /// Deletes the client link, then the switch namespace with its bridge
    /// (a namespace's links go when the kernel gets to it, later: the
    /// client link is deleted first, so it is gone when this returns).
    pub fn remove(&self) -> Result<()> {
        remove_client_link(&self.tag)?;
        remove_namespace(&self.ns)
    }
}

impl Link {
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// The namespace, open, for `setns` in a child about to exec.
    pub fn open_namespace(&self) -> Result<OwnedFd> {
        let path = Path::new(NETNS_DIR).join(&self.ns);
        std::fs::File::open(&path)
            .map(OwnedFd::from)
            .map_err(|e| Error::io(&path, "cannot open the host's namespace", e))
    }

    /// Every process in the host's namespace.
    pub fn processes(&self) -> Vec<i32> {
        processes_in(&Path::new(NETNS_DIR).join(&self.ns))
    }

    /// Takes the host's port on the bridge down: nothing reaches the host,
    /// nothing it sends reaches anyone, and no reset is sent for it.
    pub fn down(&self) -> Result<()> {
        ip(&["-n", &self.switch_ns, "link", "set", &self.port, "down"])
    }

    /// Deletes the host's namespace (and with it both ends of its link),
    /// after killing whatever still runs in it.
    pub fn remove(&self) -> Result<()> {
        let left = self.processes();
        kill_all(&left, Path::new(NETNS_DIR).join(&self.ns).as_path())?;
        // Deleted now, not when the kernel ends the namespace: a new host
        // in its place takes the same port name.
        if Path::new(NETNS_DIR).join(&self.switch_ns).exists() {
            let _ = ip(&["-n", &self.switch_ns, "link", "del", &self.port]);
        }
        remove_namespace(&self.ns)
    }
}

/// The root namespace's end of the client link: `bb` + the owner's pid +
/// the set's number, within the 15 bytes of an interface name.
pub(super) fn client_link_name(tag: &str) -> String {
    let pid = tag.split('-').next().unwrap_or("0");
    let seq = tag.rsplit('-').next().unwrap_or("0");
    format!("bb{pid}x{seq}").chars().take(15).collect()
}

/// Deletes the root namespace's end of the client link of the set `tag`,
/// when it exists (its peer goes with it).
pub(super) fn remove_client_link(tag: &str) -> Result<()> {
    let name = client_link_name(tag);
    let link = Path::new("/sys/class/net").join(&name);
    if link.exists() {
        // Gone meanwhile (another reaper's) is done too.
        ip(&["link", "del", &name]).or_else(|e| if link.exists() { Err(e) } else { Ok(()) })?;
    }
    Ok(())
}

/// Deletes the namespace `name` when it exists, after killing every
/// process in it (a namespace lives on while a process is in it).
pub(super) fn remove_namespace(name: &str) -> Result<()> {
    let path = PathBuf::from(NETNS_DIR).join(name);
    if !path.exists() {
        return Ok(());
    }
    kill_all(&processes_in(&path), &path)?;
    // Another process's reaper may have deleted it meanwhile: gone is done.
    ip(&["netns", "del", name]).or_else(|e| if path.exists() { Err(e) } else { Ok(()) })
}

/// The processes whose network namespace is the one bound at `path`.
pub(super) fn processes_in(path: &Path) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(ino) = std::fs::metadata(path).map(|m| m.ino()) else { return Vec::new() };
    let want = format!("net:[{ino}]");
    crate::engine::throwaway::procs::all_pids()
        .into_iter()
        .filter(|p| std::fs::read_link(format!("/proc/{p}/ns/net")).is_ok_and(|l| l.as_os_str() == want.as_str()))
        .collect()
}

/// Runs `ip ARGS`; a failure is one line with ip's own message.
pub(super) fn ip(args: &[&str]) -> Result<()> {
    ip_output(args).map(|_| ())
}

fn ip_output(args: &[&str]) -> Result<String> {
    let out = Command::new("ip").args(args).stdin(std::process::Stdio::null()).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::invalid(INSTALL)
        } else {
            Error::invalid(format!("cannot run ip {}: {e}", args.join(" ")))
        }
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no message");
        return Err(Error::invalid(format!("ip {}: {last}", args.join(" "))));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A machine-wide lock held while a subnet is chosen and its address added.
struct SubnetLock(std::fs::File);

impl SubnetLock {
    fn take() -> Result<SubnetLock> {
        let path = registry_dir()?.join("subnet.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, "cannot open the subnet lock", e))?;
        file.lock().map_err(|e| Error::io(&path, "cannot lock the subnet lock", e))?;
        Ok(SubnetLock(file))
    }
}

impl Drop for SubnetLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// The private /24s tried, in order: 10.200-254.x, 172.16-31.x, 192.168.x.
fn candidates() -> impl Iterator<Item = [u8; 3]> {
    let tens = (200..=254u8).flat_map(|b| (0..=255u8).map(move |c| [10, b, c]));
    let one_seven_two = (16..=31u8).flat_map(|b| (0..=255u8).map(move |c| [172, b, c]));
    let one_nine_two = (0..=255u8).map(|c| [192, 168, c]);
    tens.chain(one_seven_two).chain(one_nine_two)
}

/// The first candidate /24 that no route of `routes` (`ip -4 -o route
/// show table all`) overlaps; a default route is no collision (it covers
/// everything, and the /24's own route is more specific).
pub(super) fn free_subnet(routes: &str) -> Result<[u8; 3]> {
    let taken = route_prefixes(routes);
    candidates()
        .find(|c| {
            let net = u32::from_be_bytes([c[0], c[1], c[2], 0]);
            !taken.iter().any(|&(addr, len)| overlaps((net, 24), (addr, len)))
        })
        .ok_or_else(|| Error::invalid("no private /24 is free of this machine's routes for the hosts' network"))
}

/// The destination prefixes of `ip -4 -o route` lines, default routes left out.
fn route_prefixes(routes: &str) -> Vec<(u32, u8)> {
    const TYPES: [&str; 10] = [
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "anycast",
        "unreachable",
        "blackhole",
        "prohibit",
        "throw",
        "nat",
    ];
    routes
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let mut first = words.next()?;
            if TYPES.contains(&first) {
                first = words.next()?;
            }
            let (addr, len) = first.split_once('/').unwrap_or((first, "32"));
            let addr: Ipv4Addr = addr.parse().ok()?;
            let len: u8 = len.parse().ok().filter(|&l| l <= 32)?;
            (len > 0).then_some((u32::from(addr), len))
        })
        .collect()
}

fn overlaps(a: (u32, u8), b: (u32, u8)) -> bool {
    let len = a.1.min(b.1);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    a.0 & mask == b.0 & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subnet_is_chosen_clear_of_every_route_but_the_default() {
        let routes = "default via 192.0.2.1 dev eth0\n\
                      10.0.0.0/8 dev tun0 scope link\n\
                      172.16.0.0/24 dev br-x proto kernel scope link src 172.16.0.1\n\
                      local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1\n";
        assert_eq!(free_subnet(routes).unwrap(), [172, 16, 1], "10/8 covers every 10.x candidate; 172.16.0 is taken");
        assert_eq!(free_subnet("default via 192.0.2.1 dev eth0\n").unwrap(), [10, 200, 0]);
        let ours = "10.200.0.0/24 dev bb1x0 proto kernel scope link src 10.200.0.1\n";
        assert_eq!(free_subnet(ours).unwrap(), [10, 200, 1], "another blobbench's subnet is a route too");
        assert!(free_subnet("10.0.0.0/8 x\n172.16.0.0/12 x\n192.168.0.0/16 x\n").is_err(), "all taken: an error");
    }

    #[test]
    fn the_client_link_name_fits_an_interface_name() {
        let name = client_link_name("4194303-987654321-12");
        assert_eq!(name, "bb4194303x12");
        assert!(client_link_name("4194303-1-99999999").len() <= 15);
    }
}
