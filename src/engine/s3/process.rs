//! The cluster's processes: starting servers that die with blobbench on
//! loopback ports picked free (and again on new ones when a port was taken
//! before the server bound it), telling a recorded pid still runs this
//! cluster's program, and ending a set of them.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::throwaway::alive;
use crate::{Error, Result};

/// Loopback ports the kernel picked, held open until this is dropped so
/// that ports picked meanwhile (several at once, or a pair some distance
/// apart) are all different. Dropped just before the servers bind them:
/// another process may take one in between, which [`start_with_retries`]
/// answers.
pub struct HeldPorts(Vec<TcpListener>);

impl HeldPorts {
    /// `n` different loopback ports free now.
    pub fn pick(n: usize) -> Result<HeldPorts> {
        let held = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| Error::io(Path::new("127.0.0.1"), "cannot find a free loopback port", e))?;
        Ok(HeldPorts(held))
    }

    /// The `i`th port picked.
    pub fn port(&self, i: usize) -> u16 {
        self.0[i].local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn holds(&self, port: u16) -> bool {
        (0..self.0.len()).any(|i| self.port(i) == port)
    }
}

/// Whether loopback `port` can be bound now.
pub fn port_free(port: u16) -> bool {
    port != 0 && TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Whether every one of a previous start's `ports` is still free: a server
/// restarted on the same ports needs no new configuration (Swift's rings,
/// SeaweedFS's master state named by its port).
pub fn all_free(ports: &[u16]) -> bool {
    ports.iter().all(|&p| port_free(p))
}

/// Why one try at starting a server failed.
pub enum Start {
    /// A port picked free was taken before the server bound it: worth
    /// another try on new ports.
    PortTaken(Error),
    Failed(Error),
}

impl From<Error> for Start {
    fn from(e: Error) -> Start {
        Start::Failed(e)
    }
}

impl Start {
    pub fn into_error(self) -> Error {
        match self {
            Start::PortTaken(e) | Start::Failed(e) => e,
        }
    }
}

/// Runs `try_start` up to `tries` times while a try fails because a port
/// was taken; `try_start` is told whether it is the first try (which may
/// reuse the previous start's ports). The last such error when every try
/// lost its port.
pub fn start_with_retries<T>(
    tries: usize,
    mut try_start: impl FnMut(bool) -> std::result::Result<T, Start>,
) -> Result<T> {
    let mut last_error = None;
    for i in 0..tries {
        match try_start(i == 0) {
            Ok(t) => return Ok(t),
            Err(Start::PortTaken(e)) => last_error = Some(e),
            Err(Start::Failed(e)) => return Err(e),
        }
    }
    Err(last_error.unwrap_or(Error::Interrupted))
}

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
    fn held_ports_are_different_and_taken_until_dropped() {
        let held = HeldPorts::pick(4).unwrap();
        let mut ports: Vec<u16> = (0..4).map(|i| held.port(i)).collect();
        assert!(ports.iter().all(|&p| !port_free(p) && held.holds(p)), "{ports:?}");
        ports.sort();
        ports.dedup();
        assert_eq!(ports.len(), 4);
        drop(held);
        assert!(all_free(&ports), "{ports:?}");
    }

    #[test]
    fn a_start_is_tried_again_only_when_its_port_was_taken() {
        let mut firsts = Vec::new();
        let taken = || Start::PortTaken(Error::invalid("port taken"));
        let result = start_with_retries(3, |first| {
            firsts.push(first);
            if firsts.len() < 3 {
                Err(taken())
            } else {
                Ok(7)
            }
        });
        assert_eq!((result.unwrap(), firsts), (7, vec![true, false, false]));
        let mut n = 0;
        let err = start_with_retries::<()>(3, |_| {
            n += 1;
            Err(Start::Failed(Error::invalid("no such program")))
        });
        assert!(err.unwrap_err().to_string().contains("no such program") && n == 1);
        let err = start_with_retries::<()>(2, |_| Err(taken())).unwrap_err();
        assert!(err.to_string().contains("port taken"), "{err}");
    }

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
