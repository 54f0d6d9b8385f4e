//! Where one of a throwaway cluster's servers runs: beside blobbench (its
//! proxy, its gateway, the one-host clusters' every server), or in a
//! storage host of its own. A cluster's layout and launch code take the
//! place's address and its way of starting a program as parameters, so
//! that one code serves both.

use std::fmt::Debug;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;

use crate::engine::throwaway::hosts::{Host, Hosts};
use crate::Result;

/// A place a server runs in.
pub trait Place: Debug + Send + Sync {
    /// The address its servers listen on, where the others reach them.
    fn addr(&self) -> IpAddr;
    /// A command that runs `program` there.
    fn command(&self, program: &Path) -> Result<Command>;
    /// Counts `pid`, started there, as one of the place's processes (a
    /// storage host's loss kills them).
    fn adopt(&self, pid: i32);
}

/// Beside blobbench, on loopback: in its own network namespace.
#[derive(Debug, Clone, Copy)]
pub struct Beside;

impl Place for Beside {
    fn addr(&self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    }

    fn command(&self, program: &Path) -> Result<Command> {
        Ok(Command::new(program))
    }

    fn adopt(&self, _pid: i32) {}
}

/// A storage host: its own address and network namespace (or loopback),
/// its processes killed with it when it is lost.
impl Place for Host {
    fn addr(&self) -> IpAddr {
        IpAddr::V4(Host::addr(self))
    }

    fn command(&self, program: &Path) -> Result<Command> {
        Host::command(self, program, None)
    }

    fn adopt(&self, pid: i32) {
        Host::adopt(self, pid)
    }
}

/// How a cluster's storage hosts are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostsNet {
    /// A network namespace each as root (a lost host's connections hang),
    /// else loopback ([`Hosts::create`]).
    Chosen,
    /// Loopback whatever the privileges (a lost host's connections are
    /// reset at once), and why.
    Loopback(&'static str),
}

impl HostsNet {
    /// Makes the hosts `names` in `parent/hosts/`.
    pub fn create(self, parent: &Path, names: &[&str]) -> Result<Hosts> {
        match self {
            HostsNet::Chosen => Hosts::create(parent, names),
            HostsNet::Loopback(why) => Hosts::create_loopback(parent, names, why),
        }
    }
}
