//! What every throwaway server blobbench starts inside a dataset's
//! directory shares, whatever the server (PostgreSQL's cluster, Swift's,
//! SeaweedFS's):
//! - one server per dataset, shared by the engines of this process and by
//!   every other blobbench process on the same dataset: the first starts
//!   it, the last stops it ([`Shared`], [`Lease`]). It outlives whoever
//!   started it while another process uses it: a user done with it, at its
//!   end or at Ctrl-C, leaves it to the others at once, without waiting
//!   for them and without stopping it under them;
//! - a file beside it naming the blobbench processes that use it
//!   ([`users`]: pid, start time, boot, pid namespace, host), so the
//!   server of a killed run is told from one in use ([`record_owner`],
//!   [`check_not_in_use`]) and found by the next study ([`orphaned`]), as
//!   is the server of a killed build ([`killed_builds`]); a user that
//!   cannot be confirmed from here (another host, another pid namespace)
//!   counts as live and is named in the error;
//! - removing a dataset only once no one uses it, and only the files
//!   blobbench made there ([`remove_dataset`]);
//! - a server's environment without the user's AWS variables
//!   ([`without_aws_variables`]);
//! - the crash test's fault: SIGKILL of the server's whole process tree
//!   ([`kill_tree`]).
//!
//! How a server is started, stopped and found running stays the engine's.
//!
//! Across processes, every decision to start, join, leave or stop a
//! server is taken under an exclusive lock on [`LOCK`] in the dataset's
//! directory ([`lock`]), held while the server starts or stops; the
//! kernel releases it when its holder dies, so a killed process never
//! blocks the others. Dead users are skipped, so a killed user never keeps
//! a server running for ever, and a server whose users are all dead is a
//! killed run's, which the next start on the dataset or [`orphaned`] ends.

pub mod hosts;
mod lock;
mod procs;
mod runas;
mod users;

use std::ffi::OsString;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

pub use lock::LOCK;
use lock::{AtCtrlC, DirLock};
pub use procs::{adopt_orphans, alive, kill_tree, killed_builds, marked, reap_adopted, start_time};
pub use runas::{NoSuchUser, RunAs};
pub use users::{confirmed_pid, orphaned, write_pid_file, Place, User, OWNER};
use users::{others_kept, write_users, Others};

use crate::{Error, Result};

/// How long a process waits for another to finish starting or stopping the
/// server: a start is bounded by the CPU it uses (minutes beside a build,
/// see `engine::s3::process::START_BOUND`) and a stop by its grace.
const LOCK_WAIT: Duration = Duration::from_secs(900);

/// A throwaway server that several processes can share.
pub trait Server: Sized {
    /// Starts the server of the dataset in `dir` (no other process uses it;
    /// it may stop what a killed run left there). It must outlive this
    /// process when another one uses it.
    fn start(dir: &Path) -> Result<Self>;
    /// The server of the dataset in `dir` that another live blobbench
    /// process started and uses, to use beside it.
    fn join(dir: &Path) -> Result<Self>;
    /// Stops the server, its errors returned (its last user's call).
    fn stop(self) -> Result<()>;
    /// Lets go of the server without stopping it: other processes use it.
    fn leave(self);
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
    /// runs, or a new one. Refused, naming it, while a user that cannot be
    /// confirmed from here is listed and no live one is.
    pub fn get_or_start(&self, dir: &Path) -> Result<Arc<Lease<T>>> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|(_, s)| s.strong_count() > 0);
        if let Some(server) = running.iter().find(|(k, _)| *k == dir).and_then(|(_, s)| s.upgrade()) {
            return Ok(server);
        }
        let lock = DirLock::take(&dir, LOCK_WAIT, AtCtrlC::GiveUp)?;
        let others = Others::of(&dir);
        let server = match (others.live.is_empty(), others.refusal(&dir, "cannot start its server")) {
            (false, _) => T::join(&dir)?,
            (true, Some(unconfirmed)) => return Err(unconfirmed),
            (true, None) => T::start(&dir)?,
        };
        if let Err(e) = register(&dir) {
            if others.live.is_empty() {
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
/// stops the server when no other process uses it and else leaves it to
/// them at once.
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
    /// blobbench process may use it (it is then left running for them).
    pub fn stop(mut self) -> Result<()> {
        let lock = DirLock::take(&self.dir, LOCK_WAIT, AtCtrlC::WaitOn)?;
        if let Some(refused) = Others::of(&self.dir).refusal(&self.dir, "cannot stop its server") {
            drop(lock);
            // Its drop leaves the server to the other process.
            return Err(refused);
        }
        let server = self.server.take().expect("a lease holds its server until it ends");
        let _ = write_users(&self.dir, &[]);
        server.stop()
    }
}

/// A drop has no one to give `release`'s error to; it never waits for
/// another user, only (briefly) for the lock.
impl<T: Server> Drop for Lease<T> {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = release(&self.dir, server);
        }
    }
}

/// Lets go of `server`: stops it when no other process may use it, else
/// leaves it to them at once (Ctrl-C too: the others' runs go on). Without
/// the lock nothing is decided: the server is left, and this process's
/// line in the owner file dies with it.
fn release<T: Server>(dir: &Path, server: T) -> Result<()> {
    let lock = match DirLock::take(dir, LOCK_WAIT, AtCtrlC::WaitOn) {
        Ok(lock) => lock,
        Err(e) => {
            server.leave();
            return Err(e);
        }
    };
    if Others::of(dir).any() {
        let _ = deregister(dir);
        server.leave();
        return Ok(());
    }
    let _ = write_users(dir, &[]);
    let stopped = server.stop();
    drop(lock);
    stopped
}

/// Adds this process to the users of `dir`'s server.
fn register(dir: &Path) -> Result<()> {
    let mut list = others_kept(dir);
    list.push(User::me());
    write_users(dir, &list)
}

/// Takes this process (and dead users) off the users of `dir`'s server.
fn deregister(dir: &Path) -> Result<()> {
    write_users(dir, &others_kept(dir))
}

/// Records this process as the one running the server of the dataset in
/// `dir` (a server started outside [`Shared`], such as a build's, or by
/// [`Server::start`], which no other process uses).
pub fn record_owner(dir: &Path) -> Result<()> {
    write_users(dir, &[User::me()])
}

/// Takes this process off the users of `dir`'s server when it stops a
/// server: a process listed in the owner file that may still run is a
/// user, whose line is kept. The file goes when no such user is left.
pub fn release_owner(dir: &Path) {
    let _ = deregister(dir);
}

/// Refuses to stop the server of the dataset in `dir` (named `label` in
/// the error) while another blobbench process may use it.
pub fn check_not_in_use(dir: &Path, label: &Path) -> Result<()> {
    match Others::of(dir).refusal(label, "cannot stop its server") {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}

/// Removes the throwaway dataset in `dir` once no blobbench process uses
/// its server, deciding under its lock (so no start or join slips in):
/// `stop_left` ends what a killed run left running, then the entries
/// `own` names (blobbench's: its descriptor, its server's directory) and
/// the owner and lock files go. Other files in `dir` are kept, and `dir`
/// with them; whether `dir` was removed.
pub fn remove_dataset(dir: &Path, own: &[&str], stop_left: impl FnOnce(&Path) -> Result<()>) -> Result<bool> {
    let lock = DirLock::take(dir, LOCK_WAIT, AtCtrlC::GiveUp)?;
    if let Some(refused) = Others::of(dir).refusal(dir, "cannot remove it") {
        return Err(refused);
    }
    stop_left(dir)?;
    for name in own.iter().chain(&[OWNER]) {
        let path = dir.join(name);
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(_) => Ok(()),
        };
        removed.map_err(|e| Error::io(&path, "cannot remove", e))?;
    }
    drop(lock);
    let _ = std::fs::remove_file(dir.join(LOCK));
    Ok(std::fs::remove_dir(dir).is_ok())
}

/// Keeps the user's `AWS_*` variables (an access key's secret among them)
/// out of a server's environment, where any process of the same user
/// could read them (`/proc/PID/environ`) and a server's crash report could
/// carry them: a throwaway server needs none of them. The variables `cmd`
/// sets itself (SeaweedFS's own loopback credentials) stay. `inherited`
/// names this process's variables.
pub fn without_aws_variables(cmd: &mut std::process::Command, inherited: impl IntoIterator<Item = OsString>) {
    let set: Vec<OsString> = cmd.get_envs().map(|(name, _)| name.to_os_string()).collect();
    for name in inherited {
        if name.to_string_lossy().starts_with("AWS_") && !set.contains(&name) {
            cmd.env_remove(&name);
        }
    }
}

#[cfg(test)]
mod tests;
