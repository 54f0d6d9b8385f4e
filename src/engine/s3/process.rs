//! The throwaway servers' processes: starting servers that die with
//! blobbench or live until their last user stops them, on loopback ports
//! picked free (and again on new ones when a port was taken before the
//! server bound it), bounding a start by the CPU it uses, telling a
//! recorded pid still runs this server's program, and ending a set of them.

use std::net::TcpListener;
use std::ops::RangeInclusive;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::throwaway::{self, alive};
use crate::{Error, Result};

/// Loopback ports picked free, held open until this is dropped so that
/// ports picked meanwhile (several at once, or a pair some distance apart)
/// are all different. Dropped just before the servers bind them, which may
/// be seconds later on a loaded machine: they are picked outside the
/// kernel's ephemeral range ([`EPHEMERAL`]), which outgoing connections
/// (other tests', other clients') take ports from, so in that window only
/// another program binding a port of its own choice can take one, which
/// [`start_with_retries`] answers.
pub struct HeldPorts(Vec<TcpListener>);

/// Where the kernel draws the local ports of outgoing connections.
const EPHEMERAL: &str = "/proc/sys/net/ipv4/ip_local_port_range";
/// The lowest port picked: below it are well-known services' ports.
const LOWEST: u16 = 10_000;
/// Random tries at a free port before the kernel is asked for any.
const TRIES: usize = 200;

impl HeldPorts {
    /// `n` different loopback ports free now, outside the ephemeral range.
    pub fn pick(n: usize) -> Result<HeldPorts> {
        HeldPorts::pick_spaced(n, None)
    }

    /// `n` ports as [`HeldPorts::pick`], and beside each a second held
    /// `offset` above it when `offset` is given (SeaweedFS's admin server
    /// listens for gRPC at its HTTP port + 10000): `port(2 * i)` and
    /// `port(2 * i + 1)` are then the `i`th pair.
    pub fn pick_spaced(n: usize, offset: Option<u16>) -> Result<HeldPorts> {
        let ranges = outside_ephemeral(std::fs::read_to_string(EPHEMERAL).ok().as_deref(), offset.unwrap_or(0));
        let mut held = Vec::with_capacity(n * 2);
        let mut rng = rand::thread_rng();
        for _ in 0..n {
            let found = (0..TRIES).find_map(|_| {
                let range = ranges.get(rand::Rng::gen_range(&mut rng, 0..ranges.len().max(1)))?;
                let port = rand::Rng::gen_range(&mut rng, range.clone());
                let first = TcpListener::bind(("127.0.0.1", port)).ok()?;
                match offset {
                    None => Some(vec![first]),
                    Some(o) => Some(vec![first, TcpListener::bind(("127.0.0.1", port.checked_add(o)?)).ok()?]),
                }
            });
            match (found, offset) {
                (Some(ports), _) => held.extend(ports),
                // No room outside the ephemeral range: any port the kernel gives.
                (None, None) => held.push(bind_any()?),
                (None, Some(_)) => {
                    return Err(Error::invalid("cannot find two free loopback ports 10000 apart for a server"))
                }
            }
        }
        Ok(HeldPorts(held))
    }

    /// The `i`th port picked.
    pub fn port(&self, i: usize) -> u16 {
        self.0[i].local_addr().map(|a| a.port()).unwrap_or(0)
    }
}

fn bind_any() -> Result<TcpListener> {
    TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io(Path::new("127.0.0.1"), "cannot find a free loopback port", e))
}

/// The port ranges at or above [`LOWEST`] that the ephemeral range `range`
/// (the kernel's "LOW HIGH"; Linux's default when unreadable) leaves, each
/// ending `offset` below its end so that a port's partner `offset` above
/// it is outside the ephemeral range too.
fn outside_ephemeral(range: Option<&str>, offset: u16) -> Vec<RangeInclusive<u16>> {
    let mut bounds = range.unwrap_or("32768 60999").split_whitespace().filter_map(|w| w.parse::<u16>().ok());
    let (low, high) = match (bounds.next(), bounds.next()) {
        (Some(l), Some(h)) if l <= h => (l, h),
        _ => (32768, 60999),
    };
    let mut ranges = Vec::new();
    if let Some(end) = low.checked_sub(1).and_then(|e| e.checked_sub(offset)).filter(|&e| e >= LOWEST) {
        ranges.push(LOWEST..=end);
    }
    if let Some(start) = high.checked_add(1) {
        let end = u16::MAX - offset;
        if start.max(LOWEST) <= end {
            ranges.push(start.max(LOWEST)..=end);
        }
    }
    ranges
}

/// Whether every one of `ports` lies outside the ephemeral range, where
/// no outgoing connection takes it between a check and a server's bind.
pub fn outside_ephemeral_range(ports: &[u16]) -> bool {
    let ranges = outside_ephemeral(std::fs::read_to_string(EPHEMERAL).ok().as_deref(), 0);
    ports.iter().all(|p| ranges.iter().any(|r| r.contains(p)))
}

/// Whether loopback `port` can be bound now.
pub fn port_free(port: u16) -> bool {
    port != 0 && TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// Whether a previous start's `ports` can be taken again: all still free,
/// and outside the ephemeral range (a dataset made before ports were
/// picked there gets new ones). A server restarted on the same ports needs
/// no new configuration (Swift's rings, SeaweedFS's master state named by
/// its port).
pub fn all_free(ports: &[u16]) -> bool {
    outside_ephemeral_range(ports) && ports.iter().all(|&p| port_free(p))
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

/// How long a server may take to start. Beside a build a start gets a
/// small share of the CPU it gets alone (SeaweedFS: 1-15 s alone, minutes
/// beside a loaded test run), so a wall-clock bound fails a start that was
/// only slow. The bound is on the CPU the server's processes use (a start
/// takes a fraction of a second to two seconds of it), and the wall clock
/// only ends a server that never answers while barely using any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartBound {
    pub cpu: Duration,
    pub wall: Duration,
}

/// Every throwaway server's: far above any start seen here, loaded or not.
pub const START_BOUND: StartBound = StartBound { cpu: Duration::from_secs(60), wall: Duration::from_secs(600) };

impl StartBound {
    /// Why a start that has taken `wall` while its processes used `cpu` is
    /// given up (None: wait on).
    pub fn exceeded(&self, wall: Duration, cpu: Duration) -> Option<String> {
        if cpu >= self.cpu {
            return Some(format!("it used {} s of CPU without answering", cpu.as_secs()));
        }
        (wall >= self.wall).then(|| format!("it did not answer within {} s", self.wall.as_secs()))
    }
}

/// The CPU time (user and system) `pids` have used, from `/proc/PID/stat`
/// (an ended process adds nothing).
pub fn cpu_of(pids: &[i32]) -> Duration {
    // SAFETY: sysconf only reads a constant of the system.
    let ticks_per_s = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100).max(1);
    let ticks: u64 = pids
        .iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat.rsplit_once(") ")?.1.split(' ').skip(11);
            Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
        })
        .sum();
    Duration::from_millis(ticks * 1000 / ticks_per_s)
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

/// How long a server started by this process lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// As long as this process (a parent-death signal): a build's, which
    /// no other process uses, so a killed build takes it with it.
    ThisProcess,
    /// Until its last user stops it (`engine::throwaway::Shared`): it
    /// outlives this process while another uses it, and what a killed
    /// last user left is ended by the next start or a study's reap.
    LastUser,
}

/// A command for one of a server's helper programs (Swift's ring-building
/// Python, `weed version`), without the user's AWS variables: none of them
/// needs a key, and none should hold one.
pub fn helper(program: &Path) -> Command {
    helper_inheriting(program, std::env::vars_os().map(|(name, _)| name))
}

/// [`helper`], `inherited` naming this process's variables.
fn helper_inheriting(program: &Path, inherited: impl IntoIterator<Item = std::ffi::OsString>) -> Command {
    let mut cmd = Command::new(program);
    throwaway::without_aws_variables(&mut cmd, inherited);
    cmd
}

/// Starts `cmd` as a server: in a session of its own (a Ctrl-C at the
/// terminal is blobbench's to handle, which stops it cleanly), without the
/// user's AWS variables, and for [`Lifetime::ThisProcess`] with a
/// parent-death signal, so a blobbench that is killed takes it with it.
/// Linux sends that signal when the *thread* that forked the child ends,
/// so every server is forked by one thread that lives as long as the
/// process.
pub fn spawn_server(mut cmd: Command, lifetime: Lifetime) -> std::io::Result<Child> {
    type Request = (Command, Lifetime, Sender<std::io::Result<Child>>);
    static SPAWNER: Mutex<Option<Sender<Request>>> = Mutex::new(None);
    throwaway::without_aws_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
    let (reply_tx, reply_rx) = channel();
    {
        let mut slot = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        let tx = slot.get_or_insert_with(|| {
            let (tx, rx) = channel::<Request>();
            std::thread::Builder::new()
                .name("server-spawner".into())
                .spawn(move || {
                    for (mut cmd, lifetime, reply) in rx {
                        let _ = reply.send(spawn_in_own_session(&mut cmd, lifetime));
                    }
                })
                .expect("cannot start the server-spawner thread");
            tx
        });
        tx.send((cmd, lifetime, reply_tx)).map_err(|_| std::io::Error::other("the server-spawner thread is gone"))?;
    }
    reply_rx.recv().map_err(|_| std::io::Error::other("the server-spawner thread is gone"))?
}

fn spawn_in_own_session(cmd: &mut Command, lifetime: Lifetime) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    let dies_with_us = lifetime == Lifetime::ThisProcess;
    // SAFETY: only async-signal-safe calls (setsid, prctl, getppid) run
    // between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            if dies_with_us {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The parent may have died between the fork and the prctl.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("blobbench ended while starting a server"));
                }
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
        assert!(ports.iter().all(|&p| !port_free(p)), "{ports:?}");
        ports.sort();
        ports.dedup();
        assert_eq!(ports.len(), 4);
        assert!(outside_ephemeral_range(&ports), "no outgoing connection takes them meanwhile: {ports:?}");
        let pair = HeldPorts::pick_spaced(1, Some(10_000)).unwrap();
        assert_eq!(pair.port(1), pair.port(0) + 10_000);
        drop(held);
        assert!(all_free(&ports), "{ports:?}");
    }

    #[test]
    fn ports_are_picked_outside_the_ephemeral_range() {
        assert_eq!(outside_ephemeral(Some("32768\t60999\n"), 0), [10_000..=32_767, 61_000..=65_535]);
        assert_eq!(outside_ephemeral(Some("32768 60999"), 10_000), [10_000..=22_767]);
        assert_eq!(outside_ephemeral(Some("1024 65535"), 0), [], "no room: the kernel picks");
        assert_eq!(outside_ephemeral(None, 0), outside_ephemeral(Some("32768 60999"), 0));
    }

    /// A start beside a build (minutes of wall time, little CPU) goes on;
    /// one that burns CPU, or waits for ever, ends.
    #[test]
    fn a_slow_start_is_waited_for_by_the_cpu_it_used() {
        let s = |secs| Duration::from_secs(secs);
        assert_eq!(START_BOUND.exceeded(s(300), s(2)), None, "five minutes beside a build, 2 s of CPU");
        let spun = START_BOUND.exceeded(s(70), s(60)).unwrap();
        assert!(spun.contains("used 60 s of CPU without answering"), "{spun}");
        let silent = START_BOUND.exceeded(s(600), s(1)).unwrap();
        assert!(silent.contains("did not answer within 600 s"), "{silent}");
        let mut busy = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let pid = busy.id() as i32;
        while cpu_of(&[pid]).is_zero() {
            std::thread::yield_now();
        }
        assert!(cpu_of(&[pid, i32::MAX]) >= Duration::from_millis(10), "a spinning process's CPU counted");
        busy.kill().unwrap();
        busy.wait().unwrap();
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
        let child = std::thread::spawn(move || spawn_server(cmd, Lifetime::ThisProcess).unwrap()).join().unwrap();
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

    /// Issue 50, minor: a helper program gets none of the user's AWS
    /// variables (its key's secret among them); the rest it inherits.
    #[test]
    fn helpers_run_without_the_users_aws_variables() {
        let inherited = ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "HOME"].map(std::ffi::OsString::from);
        let cmd = helper_inheriting(Path::new("/bin/true"), inherited);
        let removed: Vec<_> = cmd.get_envs().filter(|(_, v)| v.is_none()).map(|(n, _)| n.to_os_string()).collect();
        assert_eq!(removed, ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]);
    }
}
