//! What every throwaway server blobbench starts inside a dataset's
//! directory shares, whatever the server (PostgreSQL's cluster, Swift's):
//! - one server per dataset, shared by the engines of this process and by
//!   every other blobbench process on the same dataset: the first starts
//!   it, the last stops it ([`Shared`], [`Lease`]);
//! - a file beside it naming the blobbench processes that use it, so the
//!   server of a killed run is told from one in use ([`record_owner`],
//!   [`check_not_in_use`]) and found by the next study ([`orphaned`]), as
//!   is the server of a killed build ([`killed_builds`]);
//! - the crash test's fault: SIGKILL of the server's whole process tree
//!   ([`kill_tree`]).
//!
//! How a server is started, stopped and found running stays the engine's.
//!
//! Across processes, every decision to start, join, leave or stop a
//! server is taken under an exclusive lock on [`LOCK`] in the dataset's
//! directory, held while the server starts or stops; the kernel releases
//! it when its holder dies, so a killed process never blocks the others.
//! The users are listed in [`OWNER`] (pid and start time, so a recycled
//! pid is not taken for a user); dead ones are skipped, so a killed user
//! never keeps a server running for ever, and a server whose users are all
//! dead is a killed run's, which [`orphaned`] finds.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::records::EngineKind;
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// The file in a dataset's directory naming the blobbench processes that
/// use its server, one `PID START_TIME` a line (all dead means a killed
/// run).
pub const OWNER: &str = "blobbench-server.pid";

/// The file in a dataset's directory whose lock serialises the starts and
/// stops of its server across processes.
pub const LOCK: &str = "blobbench-server.lock";

/// How long a killed server's processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// How long a process waits for another to finish starting or stopping the
/// server (a Swift cluster may take minutes to start beside a build).
const LOCK_WAIT: Duration = Duration::from_secs(300);

/// How long the process a server dies with waits, when done with it, for
/// the other processes that use it to finish theirs before it stops the
/// server anyway: long enough for another run's study, not for ever.
const USERS_WAIT: Duration = Duration::from_secs(3600);

/// A throwaway server that several processes can share.
pub trait Server: Sized {
    /// Starts the server of the dataset in `dir` (no other process uses it;
    /// it may stop what a killed run left there).
    fn start(dir: &Path) -> Result<Self>;
    /// The server of the dataset in `dir` that another live blobbench
    /// process started and uses, to use beside it.
    fn join(dir: &Path) -> Result<Self>;
    /// Stops the server, its errors returned (its last user's call).
    fn stop(self) -> Result<()>;
    /// Lets go of the server without stopping it: other processes use it.
    fn leave(self);
    /// Whether the server ends when this process does (Swift's servers die
    /// with the process that started them): its last other user is then
    /// waited for before this process lets go of it.
    fn ends_with_this_process(&self) -> bool {
        false
    }
}

/// The servers of type `T` this process uses, one per dataset directory;
/// weak, so a server is let go of (its [`Lease`]'s drop) with its last
/// user in this process.
pub struct Shared<T: Server> {
    running: Mutex<Vec<(PathBuf, Weak<Lease<T>>)>>,
}

impl<T: Server> Shared<T> {
    pub const fn new() -> Self {
        Shared { running: Mutex::new(Vec::new()) }
    }

    /// The server of the dataset in `dir`: the one another engine of this
    /// process already uses (engines on one dataset, such as a fast and a
    /// durable writer, use one server), the one another blobbench process
    /// runs, or a new one.
    pub fn get_or_start(&self, dir: &Path) -> Result<Arc<Lease<T>>> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|(_, s)| s.strong_count() > 0);
        if let Some(server) = running.iter().find(|(k, _)| *k == dir).and_then(|(_, s)| s.upgrade()) {
            return Ok(server);
        }
        let lock = DirLock::take(&dir, LOCK_WAIT)?;
        let start = live_others(&dir).is_empty();
        let server = if start { T::start(&dir)? } else { T::join(&dir)? };
        if let Err(e) = register(&dir) {
            if start {
                let _ = server.stop();
            } else {
                server.leave();
            }
            return Err(e);
        }
        drop(lock);
        let lease = Arc::new(Lease { server: Some(server), dir: dir.clone() });
        running.push((dir, Arc::downgrade(&lease)));
        Ok(lease)
    }
}

impl<T: Server> Default for Shared<T> {
    fn default() -> Self {
        Shared::new()
    }
}

/// This process's use of a shared server: let go of when dropped, which
/// stops the server when no other live process uses it.
pub struct Lease<T: Server> {
    /// Taken only by the stop or the drop.
    server: Option<T>,
    dir: PathBuf,
}

impl<T: Server> Deref for Lease<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.server.as_ref().expect("a lease holds its server until it ends")
    }
}

impl<T: Server> std::fmt::Debug for Lease<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl<T: Server> Lease<T> {
    /// Stops the server now, its errors returned; refused while another
    /// live blobbench process uses it (it is then left running for them).
    pub fn stop(mut self) -> Result<()> {
        let lock = DirLock::take(&self.dir, LOCK_WAIT)?;
        if let Some(other) = live_others(&self.dir).first() {
            let why = format!("cannot stop its server while blobbench process {other} uses it");
            drop(lock);
            // Its drop leaves the server to the other process.
            return Err(Error::bad_input(&self.dir, why));
        }
        let server = self.server.take().expect("a lease holds its server until it ends");
        remove_owner(&self.dir);
        server.stop()
    }
}

/// A drop has no one to give `release`'s error to; what matters is that
/// every wait in it is bounded.
impl<T: Server> Drop for Lease<T> {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = release(&self.dir, server, USERS_WAIT);
        }
    }
}

/// Lets go of `server`: stops it when no other live process uses it, else
/// leaves it to them (waiting for them first, up to `users_wait`, when it
/// ends with this process). An error says why the server was stopped
/// without its lock, or while another process still used it.
fn release<T: Server>(dir: &Path, server: T, users_wait: Duration) -> Result<()> {
    let deadline = Instant::now() + users_wait;
    loop {
        let lock = match DirLock::take(dir, LOCK_WAIT) {
            Ok(lock) => lock,
            Err(e) => {
                // No lock to be had within its bound: stopping is what a
                // process alone on its server would do.
                let _ = server.stop();
                return Err(e);
            }
        };
        let others = live_others(dir);
        let Some(&other) = others.first() else {
            remove_owner(dir);
            return server.stop();
        };
        if !server.ends_with_this_process() {
            let _ = deregister(dir);
            server.leave();
            return Ok(());
        }
        if Instant::now() >= deadline || stop_requested() {
            // It dies with this process anyway: stopped cleanly instead.
            let _ = deregister(dir);
            let _ = server.stop();
            let secs = users_wait.as_secs();
            let why = format!("blobbench process {other} still used its server after {secs} s; stopped it");
            return Err(Error::bad_input(&dir.join(LOCK), why));
        }
        drop(lock);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An exclusive lock on a dataset's [`LOCK`] file, released when dropped
/// (or when its process dies). The file holds its holder's pid, for the
/// error of a process that waited too long for it.
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    fn take(dir: &Path, wait: Duration) -> Result<DirLock> {
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, "cannot open the server's lock file", e))?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    use std::os::unix::fs::FileExt;
                    let pid = std::process::id().to_string();
                    file.set_len(0)
                        .and_then(|()| file.write_all_at(pid.as_bytes(), 0))
                        .map_err(|e| Error::io(&path, "cannot write the server's lock file", e))?;
                    return Ok(DirLock { _file: file });
                }
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::io(&path, "cannot lock the server's lock file", e))
                }
            }
            if stop_requested() {
                return Err(Error::Interrupted);
            }
            if Instant::now() >= deadline {
                let holder = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse::<i32>().ok());
                let holder = match holder.filter(|&pid| alive(pid)) {
                    Some(pid) => format!("blobbench process {pid}"),
                    None => "another process".to_string(),
                };
                return Err(Error::bad_input(&path, format!("{holder} held it for over {} s", wait.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A process listed as a user of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct User {
    pid: i32,
    /// When it started (`/proc/PID/stat`'s clock ticks since boot); None
    /// in an owner file of an older blobbench.
    started: Option<u64>,
}

impl User {
    fn me() -> User {
        let pid = std::process::id() as i32;
        User { pid, started: start_time(pid) }
    }

    /// The process still runs, and is the one listed (not a new one given
    /// a recycled pid).
    fn live(&self) -> bool {
        alive(self.pid) && self.started.is_none_or(|s| start_time(self.pid) == Some(s))
    }
}

/// The users listed in `dir`'s owner file.
fn users(dir: &Path) -> Vec<User> {
    let text = std::fs::read_to_string(dir.join(OWNER)).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let pid = words.next()?.parse().ok()?;
            Some(User { pid, started: words.next().and_then(|w| w.parse().ok()) })
        })
        .collect()
}

/// The live users of `dir`'s server other than this process.
fn live_others(dir: &Path) -> Vec<i32> {
    let me = std::process::id() as i32;
    users(dir).into_iter().filter(|u| u.pid != me && u.live()).map(|u| u.pid).collect()
}

/// Writes the owner file (atomically: [`orphaned`] reads it unlocked).
fn write_users(dir: &Path, users: &[User]) -> Result<()> {
    let owner = dir.join(OWNER);
    let text: String = users
        .iter()
        .map(|u| match u.started {
            Some(s) => format!("{} {s}\n", u.pid),
            None => format!("{}\n", u.pid),
        })
        .collect();
    crate::util::fsutil::write_atomic(&owner, text.as_bytes())
}

/// Adds this process to the live users of `dir`'s server.
fn register(dir: &Path) -> Result<()> {
    let me = User::me();
    let mut list: Vec<User> = users(dir).into_iter().filter(|u| u.pid != me.pid && u.live()).collect();
    list.push(me);
    write_users(dir, &list)
}

/// Removes this process (and dead users) from the users of `dir`'s server.
fn deregister(dir: &Path) -> Result<()> {
    let me = std::process::id() as i32;
    let list: Vec<User> = users(dir).into_iter().filter(|u| u.pid != me && u.live()).collect();
    write_users(dir, &list)
}

fn remove_owner(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(OWNER));
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`'s
/// 22nd field).
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(19)?.parse().ok()
}

/// Records this process as the one running the server of the dataset in
/// `dir` (a server started outside [`Shared`], such as a build's).
pub fn record_owner(dir: &Path) -> Result<()> {
    write_users(dir, &[User::me()])
}

/// Takes this process off the users of `dir`'s server when it stops a
/// server it started outside [`Shared`]: a live process listed in the
/// owner file is a user, whom the next process would wait for or join.
/// The file goes when no live user is left.
pub fn release_owner(dir: &Path) {
    let me = std::process::id() as i32;
    let rest: Vec<User> = users(dir).into_iter().filter(|u| u.pid != me && u.live()).collect();
    if rest.is_empty() {
        remove_owner(dir);
    } else {
        let _ = write_users(dir, &rest);
    }
}

/// Refuses to stop the server of the dataset in `dir` (named `label` in
/// the error) while another live blobbench process uses it.
pub fn check_not_in_use(dir: &Path, label: &Path) -> Result<()> {
    match live_others(dir).first() {
        Some(o) => Err(Error::bad_input(label, format!("its server is in use by blobbench process {o}; wait for it"))),
        None => Ok(()),
    }
}

/// A process that exists and is not a zombie (an exited server stays one
/// until its new parent, often a container's init, reaps it).
pub fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    if pid <= 0 || unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    proc_stat(pid).is_none_or(|p| p.state != 'Z')
}

/// What `/proc/PID/stat` says of a process.
struct ProcStat {
    command: String,
    state: char,
    parent: i32,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMMAND) STATE PARENT ...": the command may hold spaces and ")".
    let (head, rest) = stat.rsplit_once(") ")?;
    let command = head.split_once(" (")?.1.to_string();
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(ProcStat { command, state, parent })
}

/// Every process's pid, from `/proc`.
fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).collect()
}

/// Makes this process the parent of the servers it starts once their
/// launcher (`pg_ctl`, a daemonising script) exits: a child subreaper, so
/// that a stop can wait for the server itself to be gone and reap it.
pub fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

/// Reaps the exited processes named `command` that this process adopted
/// (zombies whose parent it is). None of them was started with
/// `std::process::Command`, whose own wait they could otherwise steal.
pub fn reap_adopted(command: &str) {
    let me = std::process::id() as i32;
    for pid in all_pids() {
        if proc_stat(pid).is_some_and(|s| s.command == command && s.state == 'Z' && s.parent == me) {
            // SAFETY: waitpid on one exited child of ours, without blocking.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
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
                let listed = users(&dir);
                if !listed.is_empty() && !listed.iter().any(User::live) {
                    found.push(dir);
                }
            }
        }
    }
    found
}

/// The staging directories a killed build of `kind`'s dataset at `target`
/// left beside it (`.NAME.KIND-PID`, see `engine::staging`), its server
/// perhaps still running.
pub fn killed_builds(target: &Path, kind: EngineKind) -> Vec<PathBuf> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.{}-", kind.name());
    let Ok(entries) = std::fs::read_dir(crate::util::fsutil::parent_dir(target)) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| {
            let pid = e.file_name().to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|p| p.parse::<i32>().ok());
            pid.is_some_and(|pid| pid != std::process::id() as i32 && !alive(pid))
        })
        .map(|e| e.path())
        .collect()
}

/// SIGKILLs `pid` and every process it started (a server's workers may
/// each run in a session of their own, so a process group would miss
/// them), as a crash ends them, and waits until they are gone. The parent
/// is stopped first so that it forks nothing while its children are
/// listed. `label` names the server in the error when they do not end.
pub fn kill_tree(pid: i32, label: &Path) -> Result<()> {
    // SAFETY: kill only sends signals.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let children = children_of(pid);
    for p in std::iter::once(pid).chain(children.iter().copied()) {
        // SAFETY: as above.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    let deadline = Instant::now() + KILL_WAIT;
    while std::iter::once(pid).chain(children.iter().copied()).any(alive) {
        if Instant::now() > deadline {
            return Err(Error::bad_input(
                label,
                format!("the killed server (pid {pid}) did not end within {} s", KILL_WAIT.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// The processes whose parent is `pid`, from `/proc`.
fn children_of(pid: i32) -> Vec<i32> {
    all_pids().into_iter().filter(|&p| proc_stat(p).is_some_and(|s| s.parent == pid)).collect()
}

#[cfg(test)]
#[path = "throwaway_tests.rs"]
mod tests;
