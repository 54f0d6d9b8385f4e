//! What every throwaway server blobbench starts inside a dataset's
//! directory shares, whatever the server (PostgreSQL's cluster today):
//! - one server per dataset per process, shared by that process's engines
//!   and stopped when the last one lets go of it ([`Shared`]);
//! - a file beside it naming the blobbench process that started it, so the
//!   server of a killed run is told from one in use ([`record_owner`],
//!   [`check_not_in_use`]) and found by the next study ([`orphaned`]), as
//!   is the server of a killed build ([`killed_builds`]);
//! - the crash test's fault: SIGKILL of the server's whole process tree
//!   ([`kill_tree`]).
//!
//! How a server is started, stopped and found running stays the engine's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::records::EngineKind;
use crate::{Error, Result};

/// The file in a dataset's directory naming the blobbench process that
/// started its server (a dead one means a killed run).
pub const OWNER: &str = "blobbench-server.pid";

/// How long a killed server's processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// The servers of type `T` this process runs, one per key (the server's
/// directory); weak, so a server still stops (its drop) with its last user.
pub struct Shared<T> {
    running: Mutex<Vec<(PathBuf, Weak<T>)>>,
}

impl<T> Shared<T> {
    pub const fn new() -> Self {
        Shared { running: Mutex::new(Vec::new()) }
    }

    /// The server at `key` that another engine of this process already
    /// started (engines on one dataset, such as a fast and a durable
    /// writer, use one server), or a new one from `start`.
    pub fn get_or_start(&self, key: PathBuf, start: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|(_, s)| s.strong_count() > 0);
        if let Some(server) = running.iter().find(|(k, _)| *k == key).and_then(|(_, s)| s.upgrade()) {
            return Ok(server);
        }
        let server = Arc::new(start()?);
        running.push((key, Arc::downgrade(&server)));
        Ok(server)
    }
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Shared::new()
    }
}

/// Records this process as the one running the server of the dataset in
/// `dir`.
pub fn record_owner(dir: &Path) -> Result<()> {
    let owner = dir.join(OWNER);
    std::fs::write(&owner, std::process::id().to_string())
        .map_err(|e| Error::io(&owner, "cannot record which process runs the server", e))
}

/// The blobbench process recorded as running the server in `dir`.
fn owner(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join(OWNER)).ok().and_then(|s| s.trim().parse().ok())
}

/// Refuses to stop the server of the dataset in `dir` (named `label` in
/// the error) while another live blobbench process runs it.
pub fn check_not_in_use(dir: &Path, label: &Path) -> Result<()> {
    match owner(dir).filter(|&o| o != std::process::id() as i32 && alive(o)) {
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
                if owner(&dir).is_some_and(|o| !alive(o)) {
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
mod tests {
    use super::*;

    #[test]
    fn a_shared_server_is_started_once_and_stops_with_its_last_user() {
        static SERVERS: Shared<u32> = Shared::new();
        let starts = std::cell::Cell::new(0);
        let start = || {
            starts.set(starts.get() + 1);
            Ok(starts.get())
        };
        let a = SERVERS.get_or_start("/d".into(), start).unwrap();
        let b = SERVERS.get_or_start("/d".into(), start).unwrap();
        assert!(Arc::ptr_eq(&a, &b) && starts.get() == 1, "one server per key");
        let other = SERVERS.get_or_start("/e".into(), start).unwrap();
        assert_eq!((*other, starts.get()), (2, 2), "another key, another server");
        drop((a, b));
        assert_eq!(*SERVERS.get_or_start("/d".into(), start).unwrap(), 3, "a new one after the last user let go");
        assert!(SERVERS.get_or_start("/f".into(), || Err(Error::invalid("no"))).is_err());
    }

    #[test]
    fn servers_of_dead_owners_are_found_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join("blobbench-x/a");
        let deeper = dir.path().join(".blobbench-y/m/kv");
        let live = dir.path().join("blobbench-z/b");
        let foreign = dir.path().join("photos/c");
        for d in [&dead, &deeper, &live, &foreign] {
            std::fs::create_dir_all(d).unwrap();
        }
        // A pid past the kernel's limit is never alive.
        for d in [&dead, &deeper, &foreign] {
            std::fs::write(d.join(OWNER), "2147483646").unwrap();
        }
        record_owner(&live).unwrap();
        let mut found = orphaned(dir.path());
        found.sort();
        assert_eq!(found, [deeper, dead]);
        assert!(check_not_in_use(&live, &live).is_ok(), "this process's own server");
        assert!(alive(std::process::id() as i32) && !alive(0));
    }

    #[test]
    fn a_killed_build_is_found_beside_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("pg");
        let killed = dir.path().join(".pg.postgres-2147483646");
        let ours = crate::util::fsutil::temp_sibling(&target, "postgres");
        for d in [&killed, &ours, &dir.path().join(".pg.lmdb-2147483646")] {
            std::fs::create_dir(d).unwrap();
        }
        assert_eq!(killed_builds(&target, EngineKind::Postgres), [killed]);
    }
}
