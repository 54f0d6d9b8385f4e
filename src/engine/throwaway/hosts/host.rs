//! One host: its directory (its disk), its address, its namespace when it
//! has one, the processes adopted into it (its memory), and the commands
//! that start a process in it.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use super::net::Link;
use super::record::PROCS;
use crate::engine::throwaway::{alive, start_time, RunAs};
use crate::Result;

/// How the hosts are joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// A network namespace per host, veth links on a private bridge: a
    /// lost host's connections hang, as a dead machine's do.
    Namespaces { subnet: String },
    /// One loopback shared by all hosts, a port per server; why (not root,
    /// or asked): a lost host's connections are reset by the kernel at once.
    Loopback { why: String },
}

impl Network {
    /// One line for a result or a page.
    pub fn describe(&self) -> String {
        match self {
            Network::Namespaces { subnet } => format!(
                "each host in a network namespace of its own, veth links on a private bridge ({subnet}); \
                 a lost host's connections hang without a reset"
            ),
            Network::Loopback { why } => format!(
                "hosts share loopback, a port per server ({why}); a lost host's connections are reset at once, \
                 which a real machine's loss would not do"
            ),
        }
    }

    pub fn is_namespaces(&self) -> bool {
        matches!(self, Network::Namespaces { .. })
    }
}

/// The variable marking every process started in a host with its set's
/// tag: the reaper finds by it what a killed run started there and had
/// not adopted yet (killed between the spawn and the adoption, such as
/// during `pg_ctl start`), on loopback too, where no namespace holds it.
pub(super) const SET_VAR: &str = "BLOBBENCH_HOSTS_SET";

/// A host's place in its [`Hosts`] (stable across its replacement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostId(pub usize);

/// One host: its directory, its address, its namespace when it has one,
/// and the processes adopted into it.
#[derive(Debug)]
pub struct Host {
    pub(super) name: String,
    pub(super) dir: PathBuf,
    pub(super) addr: Ipv4Addr,
    pub(super) link: Option<Link>,
    /// Processes recorded as the host's: (pid, start time).
    pub(super) adopted: Mutex<Vec<(i32, u64)>>,
    pub(super) lost: bool,
    /// Its set's tag, the mark of every process started in it.
    pub(super) set_tag: String,
}

impl Host {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its disk: a directory no other host uses.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the others (and blobbench's clients) reach it: its own
    /// address, or 127.0.0.1 on loopback.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Whether it has been lost (and not yet replaced).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// A command that runs `program` in this host: in a session of its own
    /// (a terminal's Ctrl-C is blobbench's to handle), in the host's
    /// network namespace when it has one, as `user` when given (joining a
    /// namespace needs root, so the switch comes after it), from `/`,
    /// marked with its set's tag ([`SET_VAR`]).
    pub fn command(&self, program: &Path, user: Option<RunAs>) -> Result<Command> {
        let ns: Option<OwnedFd> = match &self.link {
            Some(link) => Some(link.open_namespace()?),
            None => None,
        };
        let mut cmd = Command::new(program);
        cmd.current_dir("/").stdin(std::process::Stdio::null()).env(SET_VAR, &self.set_tag);
        crate::engine::throwaway::without_aws_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls (setsid, setns, setgroups,
        // setgid, setuid) run between fork and exec; the namespace's file
        // is owned by the closure, so it stays open until the command is
        // dropped (it is close-on-exec).
        unsafe {
            cmd.pre_exec(move || {
                libc::setsid();
                if let Some(fd) = &ns {
                    if libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                match user {
                    Some(u) => u.become_it(),
                    None => Ok(()),
                }
            });
        }
        Ok(cmd)
    }

    /// Records `pid` (and, when it is lost, every process it started) as
    /// one of this host's, so that a loss kills it. A daemon's launcher
    /// (`pg_ctl`) exits: adopt the server it left. In a namespace every
    /// process started there is the host's anyway.
    pub fn adopt(&self, pid: i32) {
        let Some(started) = start_time(pid) else { return };
        self.adopted.lock().unwrap_or_else(|e| e.into_inner()).push((pid, started));
        let procs = self.dir.parent().map(|p| p.join(PROCS));
        if let Some(procs) = procs {
            use std::io::Write;
            let line = format!("{} {pid} {started}\n", self.name);
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(procs)
                .map(|mut f| f.write_all(line.as_bytes()));
        }
    }

    /// Every process of this host now: those in its namespace, and the
    /// adopted ones still running with every process they started.
    pub(super) fn processes(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = match &self.link {
            Some(link) => link.processes(),
            None => Vec::new(),
        };
        let adopted = self.adopted.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (pid, started) in adopted {
            if alive(pid) && start_time(pid) == Some(started) {
                pids.push(pid);
                pids.extend(crate::engine::throwaway::procs::descendants(pid));
            }
        }
        pids.sort_unstable();
        pids.dedup();
        pids
    }
}

/// What a loss did, and when it struck.
#[derive(Debug, Clone)]
pub struct LostHost {
    pub host: HostId,
    pub name: String,
    /// When the loss struck: its link down (in a namespace), before its
    /// processes were killed.
    pub at: Instant,
    /// Processes SIGKILLed.
    pub killed: usize,
    /// Where its directory was moved (removed with the hosts).
    pub moved_to: PathBuf,
}
