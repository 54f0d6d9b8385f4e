//! The cluster's processes: starting servers that die with blobbench,
//! telling a recorded pid still runs this cluster's program, and ending a
//! set of them.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::throwaway::alive;
use crate::{Error, Result};

/// Whether process `pid` was started with `needle` among its arguments
/// (a server's configuration path): a pid read from a file is only
/// signalled when it still names the process that wrote it.
pub fn runs_with(pid: i32, needle: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { return false };
    cmdline.split(|&b| b == 0).any(|arg| arg == needle.as_bytes())
}

/// Sends `signal` to each of `pids`, then waits up to `wait` until none is
/// alive; returns those still alive then.
pub fn signal_and_wait(pids: &[i32], signal: libc::c_int, wait: Duration) -> Vec<i32> {
    for &pid in pids.iter().filter(|&&p| p > 0) {
        // SAFETY: kill only sends a signal.
        unsafe { libc::kill(pid, signal) };
    }
    let deadline = Instant::now() + wait;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Ends `pids` as a clean stop would (SIGTERM, up to `grace` to finish),
/// then SIGKILLs what is left and waits for it.
pub fn stop_all(pids: &[i32], grace: Duration, what: &Path) -> Result<()> {
    let left = signal_and_wait(pids, libc::SIGTERM, grace);
    if left.is_empty() {
        return Ok(());
    }
    let stuck = signal_and_wait(&left, libc::SIGKILL, Duration::from_secs(10));
    match stuck.first() {
        None => Ok(()),
        Some(pid) => Err(Error::bad_input(what, format!("process {pid} did not end within 10 s of SIGKILL"))),
    }
}

/// Starts `cmd` as a server that dies with blobbench: in a session of its
/// own (a Ctrl-C at the terminal is blobbench's to handle, which stops it
/// cleanly), and with a parent-death signal, so a blobbench that is killed
/// takes its servers with it. Linux sends that signal when the *thread*
/// that forked the child ends, so every server is forked by one thread
/// that lives as long as the process.
pub fn spawn_server(cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, Sender<std::io::Result<Child>>);
    static SPAWNER: Mutex<Option<Sender<Request>>> = Mutex::new(None);
    let (reply_tx, reply_rx) = channel();
    {
        let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        let tx = slot.get_or_insert_with(|| {
            let (tx, rx) = channel::<Request>();
            std::thread::Builder::new()
                .name("server-spawner".into())
                .spawn(move || {
                    for (mut cmd, reply) in rx {
                        let _ = reply.send(spawn_dying_with_us(&mut cmd));
                    }
                })
                .expect("cannot start the server-spawner thread");
            tx
        });
        tx.send((cmd, reply_tx)).map_err(|_| std::io::Error::other("the server-spawner thread is gone"))?;
    }
    reply_rx.recv().map_err(|_| std::io::Error::other("the server-spawner thread is gone"))?
}

fn spawn_dying_with_us(cmd: &mut Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (setsid, prctl, getppid) run
    // between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent may have died between the fork and the prctl.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("blobbench ended while starting a server"));
            }
            Ok(())
        });
    }
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_started_in_their_own_session_and_stopped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let child = std::thread::spawn(move || spawn_server(cmd).unwrap()).join().unwrap();
        let pid = child.id() as i32;
        // The thread that asked has ended; the server still runs.
        std::thread::sleep(Duration::from_millis(50));
        assert!(alive(pid));
        assert!(runs_with(pid, "30") && !runs_with(pid, "31"));
        // SAFETY: getsid only reads.
        assert_eq!(unsafe { libc::getsid(pid) }, pid, "a session of its own");
        let mut child = child;
        stop_all(&[pid], Duration::from_secs(5), Path::new("sleep")).unwrap();
        let _ = child.wait();
        assert!(!alive(pid));
    }
}
