//! The lock that serialises the starts, joins and stops of a dataset's
//! server across processes.

use std::path::Path;
use std::time::{Duration, Instant};

use super::procs::alive;
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// What a wait for the lock does at Ctrl-C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AtCtrlC {
    GiveUp,
    WaitOn,
}

/// The file in a dataset's directory whose lock serialises the starts and
/// stops of its server across processes.
pub const LOCK: &str = "blobbench-server.lock";

/// An exclusive lock on a dataset's [`LOCK`] file, released when dropped
/// (or when its process dies). The file holds its holder's pid, for the
/// error of a process that waited too long for it.
pub(super) struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    /// Waits up to `wait` for the lock; `at_ctrl_c` says whether Ctrl-C
    /// ends the wait (a start gives up; a user letting go of the server
    /// waits on, as its decision must be taken under the lock).
    pub fn take(dir: &Path, wait: Duration, at_ctrl_c: AtCtrlC) -> Result<DirLock> {
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
            if at_ctrl_c == AtCtrlC::GiveUp && stop_requested() {
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
