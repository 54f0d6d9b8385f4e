//! The end of a host's processes: SIGKILL, as a machine's death ends them.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::engine::throwaway::alive;
use crate::{Error, Result};

/// How long a killed host's processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// SIGKILLs `pids` (stopped first, so that none forks meanwhile) and waits
/// until they are gone, reaping those that are this process's children
/// (a daemon's orphan, adopted by a subreaper); then frees the System V
/// shared memory they made and no one uses any more (a killed
/// PostgreSQL's: a server started again would free it; a lost host's
/// never starts again), since a host's memory dies with it.
pub(super) fn kill_all(pids: &[i32], label: &Path) -> Result<()> {
    for &pid in pids {
        // SAFETY: kill only sends signals.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
    }
    for &pid in pids {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let deadline = Instant::now() + KILL_WAIT;
    loop {
        for &pid in pids {
            // SAFETY: waitpid without blocking on one pid; fails harmlessly
            // when it is not our child.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
        if !pids.iter().any(|&p| alive(p)) {
            free_segments(pids);
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::bad_input(
                label,
                format!("the host's processes did not end within {} s of SIGKILL", KILL_WAIT.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes the System V shared memory segments that one of `pids` created
/// and that no process is attached to (`/proc/sysvipc/shm`).
fn free_segments(pids: &[i32]) {
    let table = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
    for row in table.lines().skip(1) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        let field = |i: usize| cols.get(i).and_then(|c| c.parse::<i64>().ok());
        let (Some(id), Some(creator), Some(attached)) = (field(1), field(4), field(6)) else { continue };
        if attached == 0 && pids.iter().any(|&p| i64::from(p) == creator) {
            // SAFETY: IPC_RMID marks one segment for removal; no memory
            // of this process is touched.
            unsafe { libc::shmctl(id as i32, libc::IPC_RMID, std::ptr::null_mut()) };
        }
    }
}
