//! Who uses a throwaway server: the owner file's lines, one per blobbench
//! process (`PID START BOOT PIDNS HOST`), and whether each still runs.
//!
//! A pid alone says little: it is recycled, it means another process in
//! another pid namespace (a container on the same machine), and nothing on
//! another host sharing the directory. So each line carries the process's
//! start time (`/proc/PID/stat`, clock ticks since boot), the boot it ran
//! in, its pid namespace and its host name. A line is then
//! [`Seen::Live`] (this boot and namespace, the pid still runs and started
//! when listed), [`Seen::Dead`], or [`Seen::Unconfirmed`] (another host or
//! namespace, or an older blobbench's line of a pid that still runs), which
//! every decision treats as a live user and every error names: a server
//! is never started beside it, nor stopped under it, on a guess. (A line
//! of this host name from another boot is a previous boot's, so dead: two
//! machines sharing a directory must not share a host name.)
//!
//! The same goes for a server's own pid files ([`write_pid_file`],
//! [`confirmed_pid`]): a pid is signalled only while it is the process
//! that was recorded. [`orphaned`] finds the datasets whose every user
//! has died: a killed run's.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use super::procs::{alive, start_time};
use crate::{Error, Result};

/// The file in a dataset's directory naming the blobbench processes that
/// use its server, one `PID START BOOT PIDNS HOST` a line (all dead means
/// a killed run).
pub const OWNER: &str = "blobbench-server.pid";

/// A process listed as a user of a server (or as the holder of another
/// lock, such as an S3 dataset's, which writes the same line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub pid: i32,
    /// When it started (clock ticks since boot); None in an older
    /// blobbench's line.
    pub started: Option<u64>,
    /// Where it ran; None in an older blobbench's line (taken as here).
    pub place: Option<Place>,
}

/// The machine, boot and pid namespace a process ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// `/proc/sys/kernel/random/boot_id`: new at each boot.
    pub boot: String,
    /// The inode of `/proc/self/ns/pid`.
    pub pidns: String,
    pub host: String,
}

impl Place {
    /// This process's.
    pub fn here() -> &'static Place {
        static HERE: OnceLock<Place> = OnceLock::new();
        HERE.get_or_init(|| {
            let read = |path: &str| std::fs::read_to_string(path).map(|t| t.trim().to_string()).unwrap_or_default();
            let ns = std::fs::read_link("/proc/self/ns/pid").map(|l| l.to_string_lossy().into_owned());
            let pidns: String = ns.unwrap_or_default().chars().filter(char::is_ascii_digit).collect();
            Place {
                boot: or_unknown(read("/proc/sys/kernel/random/boot_id")),
                pidns: or_unknown(pidns),
                host: or_unknown(read("/proc/sys/kernel/hostname").replace(char::is_whitespace, "")),
            }
        })
    }
}

fn or_unknown(s: String) -> String {
    if s.is_empty() {
        "?".into()
    } else {
        s
    }
}

/// What can be told of a listed user from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    Live,
    Dead,
    /// It may run, somewhere this process cannot look: why.
    Unconfirmed(String),
}

impl User {
    pub fn me() -> User {
        let pid = std::process::id() as i32;
        User { pid, started: start_time(pid), place: Some(Place::here().clone()) }
    }

    pub fn is_me(&self) -> bool {
        self.pid == std::process::id() as i32 && self.place.as_ref().is_none_or(|p| p == Place::here())
    }

    /// Whether it is the process that started this one, still running:
    /// a client process sees the command it serves so.
    pub fn is_my_parent(&self) -> bool {
        let parent = std::os::unix::process::parent_id() as i32;
        self.pid == parent
            && self.started.is_some_and(|s| start_time(parent) == Some(s))
            && self.place.as_ref().is_some_and(|p| p == Place::here())
    }

    /// Whether it still runs, `listed_at` being when its line was written
    /// (the owner file's time).
    pub(super) fn seen(&self, listed_at: Option<SystemTime>) -> Seen {
        let here = Place::here();
        match &self.place {
            Some(p) if p.host != here.host => Seen::Unconfirmed(format!("from host {}", p.host)),
            // A line from before this machine's last boot.
            Some(p) if p.boot != here.boot => Seen::Dead,
            Some(p) if p.pidns != here.pidns => Seen::Unconfirmed("from another pid namespace of this machine".into()),
            _ => match self.started {
                Some(s) if alive(self.pid) && start_time(self.pid) == Some(s) => Seen::Live,
                Some(_) => Seen::Dead,
                None => legacy(self.pid, listed_at),
            },
        }
    }

    /// The user a line of the owner file names.
    pub fn parse(line: &str) -> Option<User> {
        let mut words = line.split_whitespace();
        let pid = words.next()?.parse().ok()?;
        let started = words.next().and_then(|w| w.parse().ok());
        let rest: Vec<&str> = words.collect();
        let place = match rest.as_slice() {
            [boot, pidns, host] => {
                Some(Place { boot: boot.to_string(), pidns: pidns.to_string(), host: host.to_string() })
            }
            _ => None,
        };
        Some(User { pid, started, place })
    }

    /// Its line in the owner file: `PID START BOOT PIDNS HOST`.
    pub fn line(&self) -> String {
        match (self.started, &self.place) {
            (Some(s), Some(p)) => format!("{} {s} {} {} {}\n", self.pid, p.boot, p.pidns, p.host),
            (Some(s), None) => format!("{} {s}\n", self.pid),
            (None, _) => format!("{}\n", self.pid),
        }
    }
}

/// A pid recorded without its start time (an older blobbench's line, or
/// pid file) that still runs: a process that started after the record
/// was written is another one given the recycled pid; one that started
/// before may be the one recorded, which cannot be told.
fn legacy(pid: i32, recorded_at: Option<SystemTime>) -> Seen {
    if !alive(pid) {
        return Seen::Dead;
    }
    match (started_at(pid), recorded_at) {
        (Some(started), Some(recorded)) if started > recorded + Duration::from_secs(1) => Seen::Dead,
        _ => Seen::Unconfirmed("without a start time (by an older blobbench)".into()),
    }
}

/// When process `pid` started, by the wall clock (boot time plus its
/// start in clock ticks).
fn started_at(pid: i32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let boot: u64 = stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|&t| t > 0)?;
    let since_boot = Duration::from_millis(start_time(pid)? * 1000 / ticks);
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(boot) + since_boot)
}

/// The users listed in `dir`'s owner file.
#[cfg(test)]
pub(super) fn users(dir: &Path) -> Vec<User> {
    listed(dir).0
}

/// The users listed in `dir`'s owner file, and when it was written.
fn listed(dir: &Path) -> (Vec<User>, Option<SystemTime>) {
    let file = dir.join(OWNER);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let at = std::fs::metadata(&file).and_then(|m| m.modified()).ok();
    (text.lines().filter_map(User::parse).collect(), at)
}

/// The users of `dir`'s server other than this process that may still
/// run: live ones, then those that cannot be confirmed, with why.
#[derive(Debug, Default)]
pub(super) struct Others {
    pub live: Vec<User>,
    pub unconfirmed: Vec<(User, String)>,
}

impl Others {
    pub fn of(dir: &Path) -> Others {
        let (list, at) = listed(dir);
        let mut others = Others::default();
        for user in list.into_iter().filter(|u| !u.is_me()) {
            match user.seen(at) {
                Seen::Live => others.live.push(user),
                Seen::Dead => {}
                Seen::Unconfirmed(why) => others.unconfirmed.push((user, why)),
            }
        }
        others
    }

    pub fn any(&self) -> bool {
        !self.live.is_empty() || !self.unconfirmed.is_empty()
    }

    /// The refusal to stop or replace the server while they may use it
    /// (None: no other user), one line naming the first.
    pub fn refusal(&self, dir: &Path, what: &str) -> Option<Error> {
        let why = match (self.live.first(), self.unconfirmed.first()) {
            (Some(user), _) => format!("{what} while blobbench process {} uses it; wait for it", user.pid),
            (None, Some((user, why))) => format!(
                "{what}: blobbench process {} is listed as using it {why}, which cannot be confirmed from here; \
                 wait for it, or remove {} once it has ended",
                user.pid,
                dir.join(OWNER).display()
            ),
            (None, None) => return None,
        };
        Some(Error::bad_input(dir, why))
    }
}

/// Writes the owner file (atomically: [`super::orphaned`] reads it
/// unlocked), or removes it when no user is left.
pub(super) fn write_users(dir: &Path, users: &[User]) -> Result<()> {
    let owner = dir.join(OWNER);
    if users.is_empty() {
        return match std::fs::remove_file(&owner) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&owner, "cannot remove", e)),
            _ => Ok(()),
        };
    }
    let text: String = users.iter().map(User::line).collect();
    crate::util::fsutil::write_atomic(&owner, text.as_bytes())
}

/// The users of `dir`'s server that may still run, this process left out
/// (a dead user's line goes whenever the file is written).
pub(super) fn others_kept(dir: &Path) -> Vec<User> {
    let (list, at) = listed(dir);
    list.into_iter().filter(|u| !u.is_me() && u.seen(at) != Seen::Dead).collect()
}

/// Whether `dir`'s owner file lists users and every one is dead (a killed
/// run's server, if it still runs).
pub(super) fn all_dead(dir: &Path) -> bool {
    let (list, at) = listed(dir);
    !list.is_empty() && list.iter().all(|u| u.seen(at) == Seen::Dead)
}

/// The dataset directories, in the work directories directly under
/// `workdir` (`blobbench-*` of the studies, `.blobbench-*` of the crash
/// test), at their top or one level deeper (the crash test's `METHOD/kv`),
/// whose server was started by a blobbench process that has died: a
/// killed run's, which a study ends before it makes its own.
pub fn orphaned(workdir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(workdir) else { return found };
    let is_work = |n: &str| n.strip_prefix('.').unwrap_or(n).starts_with("blobbench-");
    for work in entries.flatten().filter(|e| is_work(&e.file_name().to_string_lossy())) {
        let Ok(datasets) = std::fs::read_dir(work.path()) else { continue };
        for d in datasets.flatten() {
            let inner = std::fs::read_dir(d.path()).map(|i| i.flatten().map(|e| e.path()).collect());
            for dir in std::iter::once(d.path()).chain(inner.unwrap_or_else(|_| Vec::new())) {
                if all_dead(&dir) {
                    found.push(dir);
                }
            }
        }
    }
    found
}

/// Records `pid` in `file` with its start time, so that [`confirmed_pid`]
/// never takes a recycled pid for it.
pub fn write_pid_file(file: &Path, pid: i32) -> Result<()> {
    let line = match start_time(pid) {
        Some(s) => format!("{pid} {s}\n"),
        None => format!("{pid}\n"),
    };
    std::fs::write(file, line).map_err(|e| Error::io(file, "cannot record the server's pid", e))
}

/// The pid `file` records, while that very process still runs: its start
/// time matches (or, in an older blobbench's file without one, it started
/// before the file was written and `ours` says its arguments are the
/// server's).
pub fn confirmed_pid(file: &Path, ours: impl Fn(i32) -> bool) -> Option<i32> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut words = text.split_whitespace();
    let pid: i32 = words.next()?.parse().ok()?;
    let seen = match words.next().and_then(|w| w.parse::<u64>().ok()) {
        Some(s) => User { pid, started: Some(s), place: None }.seen(None),
        None => match legacy(pid, std::fs::metadata(file).and_then(|m| m.modified()).ok()) {
            Seen::Unconfirmed(_) => Seen::Live,
            other => other,
        },
    };
    (seen == Seen::Live && ours(pid)).then_some(pid)
}
