//! The end of a host's processes: SIGKILL, as a machine's death ends them.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::engine::throwaway::alive;
use crate::{Error, Result};

/// How long a killed host's processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// SIGKILLs `pids` (stopped first, so that none forks meanwhile) and waits
/// until they are gone, reaping those that are this process's children
/// (a daemon's orphan, adopted by a subreaper).
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
