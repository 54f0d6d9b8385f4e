//! What `/proc` says of processes: whether one lives, when it started, its
//! parent and children; and what a server's killed build left.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::records::EngineKind;
use crate::{Error, Result};

/// How long a killed server's processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`'s
/// 22nd field).
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(19)?.parse().ok()
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
pub(super) fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).collect()
}

/// How long a scan of the processes' environments may take: reading one
/// takes its memory map's lock, which a process stuck in a page fault
/// (on a FUSE file system, say) may hold for good.
const ENVIRON_SCAN_BOUND: Duration = Duration::from_secs(5);

/// The processes (zombies aside) whose environment holds `name=value`,
/// this one excepted. A server started with such a mark is found by it
/// from its exec on, and so are the processes it starts (they inherit
/// it): before, or without, any pid file naming it. The scan runs on a
/// thread of its own and is given up past [`ENVIRON_SCAN_BOUND`] (those
/// found by then returned): a reaper must not hang on a stuck process.
pub fn marked(name: &str, value: &std::ffi::OsStr) -> Vec<i32> {
    use std::os::unix::ffi::OsStrExt;
    let mut want = format!("{name}=").into_bytes();
    want.extend_from_slice(value.as_bytes());
    let me = std::process::id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    let scan = move || {
        for pid in all_pids().into_iter().filter(|&pid| pid != me) {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            if env.split(|&b| b == 0).any(|pair| pair == want.as_slice()) && tx.send(pid).is_err() {
                return;
            }
        }
    };
    if std::thread::Builder::new().name("environ-scan".into()).spawn(scan).is_err() {
        return Vec::new();
    }
    let deadline = Instant::now() + ENVIRON_SCAN_BOUND;
    let mut found = Vec::new();
    while let Ok(pid) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        found.push(pid);
    }
    found.retain(|&pid| alive(pid));
    found
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

/// Every process `pid` started, and theirs, from `/proc` (one pass).
pub fn descendants(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = all_pids().into_iter().filter_map(|p| Some((p, proc_stat(p)?.parent))).collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let of = found[i];
        found.extend(parents.iter().filter(|&&(_, parent)| parent == of).map(|&(p, _)| p));
        i += 1;
    }
    found.remove(0);
    found
}

/// The processes whose parent is `pid`, from `/proc`.
fn children_of(pid: i32) -> Vec<i32> {
    all_pids().into_iter().filter(|&p| proc_stat(p).is_some_and(|s| s.parent == pid)).collect()
}
