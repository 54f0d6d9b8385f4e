//! A throwaway server's processes as one set, whatever the server (Swift's
//! proxy and storage servers and memcached; SeaweedFS's one `weed mini`, or
//! its master, volume servers and gateway): each started through
//! [`spawn_server`] with its output appended to its log and its pid
//! recorded, waited for until the server answers (bounded by the CPU the
//! set uses, see [`START_BOUND`]), and stopped together. What a killed run
//! left is found again by its pid files, and by the server's directory
//! each process carries in its environment from its exec on, for a run
//! killed before it wrote the pid file ([`stop_stale`], [`reap_killed`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::process::{cpu_of, signal_and_wait, spawn_server, stop_all, Lifetime, Start, START_BOUND};
use crate::engine::throwaway::{self, hosts};
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// The variable that marks each process of a server with the server's
/// directory (canonical), set at its spawn, so that the reaper finds a
/// killed run's server even when the run died between the spawn and the
/// write of its pid file ([`started_for`]).
const SERVER_DIR_VAR: &str = "BLOBBENCH_SERVER_DIR";

/// The mark of the server in `root`: its directory, canonical (a later
/// command may name the work directory otherwise).
fn mark_of(root: &Path) -> std::ffi::OsString {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()).into_os_string()
}

/// Every process started for the server in `root` that still runs, pid
/// file or not.
pub fn started_for(root: &Path) -> Vec<i32> {
    throwaway::marked(SERVER_DIR_VAR, &mark_of(root))
}

/// `recorded` (the pids a server's pid files name) and the processes
/// marked as started for it in `root`, once each.
fn with_unrecorded(root: &Path, recorded: &[i32]) -> Vec<i32> {
    let mut pids = recorded.to_vec();
    pids.extend(started_for(root));
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// How long a clean stop may take before the processes are SIGKILLed.
pub const STOP_GRACE: Duration = Duration::from_secs(15);
/// How long SIGKILLed processes may take to end.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// The datasets whose server this process started for a machine-loss
/// test, owned by the test (a `Replicated`) rather than shared: an engine
/// of this process that opens one uses it as another process's would,
/// neither stopping it nor ending it as a killed run's.
static OWNED_HERE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A dataset's server owned by this process's machine-loss test, for as
/// long as this lives.
#[derive(Debug)]
pub struct OwnedHere(PathBuf);

impl OwnedHere {
    pub fn new(dataset: &Path) -> OwnedHere {
        let dataset = std::path::absolute(dataset).unwrap_or_else(|_| dataset.to_path_buf());
        OWNED_HERE.lock().unwrap_or_else(|e| e.into_inner()).push(dataset.clone());
        OwnedHere(dataset)
    }
}

impl Drop for OwnedHere {
    fn drop(&mut self) {
        let mut owned = OWNED_HERE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = owned.iter().position(|d| *d == self.0) {
            owned.remove(i);
        }
    }
}

/// Whether the server of the dataset in `dataset` is this process's
/// machine-loss test's.
pub fn owned_here(dataset: &Path) -> bool {
    let dataset = std::path::absolute(dataset).unwrap_or_else(|_| dataset.to_path_buf());
    OWNED_HERE.lock().unwrap_or_else(|e| e.into_inner()).contains(&dataset)
}

/// How a program's log says that a port picked free was taken before it
/// bound it (a start worth trying again on new ports).
#[derive(Debug, Clone, Copy)]
pub enum PortTaken {
    /// The program ended, and its last line says so (Swift's servers give
    /// up binding after their `bind_timeout`; memcached at once).
    LastLineOfEnded(fn(&str) -> bool),
    /// Any line holding this, though the program runs on (`weed`).
    AnyLine(&'static str),
}

/// One program of the set, as started.
#[derive(Debug)]
struct Running {
    name: String,
    log: PathBuf,
    pid_file: PathBuf,
    child: Child,
    /// A wait for the set to answer has succeeded since it started: its
    /// CPU no longer counts against a later wait's bound.
    answered: bool,
}

/// The processes of one throwaway server started by this process.
#[derive(Debug)]
pub struct Procs {
    /// The server as errors name it ("the Swift cluster").
    what: &'static str,
    /// Its directory (errors name it).
    root: PathBuf,
    lifetime: Lifetime,
    taken: PortTaken,
    running: Mutex<Vec<Running>>,
}

impl Procs {
    pub fn new(what: &'static str, root: &Path, lifetime: Lifetime, taken: PortTaken) -> Procs {
        Procs { what, root: root.to_path_buf(), lifetime, taken, running: Mutex::new(Vec::new()) }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, Vec<Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts `cmd` as the program `name`, its output appended to `log`,
    /// from `/` (unless `cmd` names a directory), marked as this server's
    /// (found by [`started_for`] from its exec on, before its pid is
    /// recorded), and records its pid in `pid_file`; its pid.
    pub fn spawn(&self, name: &str, mut cmd: Command, log: &Path, pid_file: &Path) -> Result<i32> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| Error::io(log, "cannot open the log", e))?;
        let err = out.try_clone().map_err(|e| Error::io(log, "cannot open the log", e))?;
        if cmd.get_current_dir().is_none() {
            cmd.current_dir("/");
        }
        cmd.stdin(Stdio::null()).stdout(out).stderr(err).env(SERVER_DIR_VAR, mark_of(&self.root));
        let child = spawn_server(cmd, self.lifetime).map_err(|e| Error::io(log, &format!("cannot start {name}"), e))?;
        let pid = child.id() as i32;
        let (log, pid_file) = (log.to_path_buf(), pid_file.to_path_buf());
        self.running().push(Running {
            name: name.to_string(),
            log,
            pid_file: pid_file.clone(),
            child,
            answered: false,
        });
        throwaway::write_pid_file(&pid_file, pid)?;
        Ok(pid)
    }

    /// Polls `up` until it holds; fails when a program ended (or its log
    /// says its port was taken: [`Start::PortTaken`]), at Ctrl-C, or past
    /// [`START_BOUND`] (by the CPU its processes not yet waited for used:
    /// a restore's bound is the new host's, however busy the survivors
    /// serving clients meanwhile are). A failed wait stops
    /// nothing: the set's stop (or drop) does.
    pub fn wait_until_up(&self, up: impl Fn() -> bool) -> std::result::Result<(), Start> {
        let started = Instant::now();
        let failed = |why: String| Error::bad_input(&self.root, format!("{} did not start: {why}", self.what));
        loop {
            if up() {
                self.running().iter_mut().for_each(|r| r.answered = true);
                return Ok(());
            }
            if let Some((why, taken)) = self.fault() {
                return Err(if taken { Start::PortTaken(failed(why)) } else { Start::Failed(failed(why)) });
            }
            if stop_requested() {
                return Err(Start::Failed(Error::Interrupted));
            }
            if let Some(why) = START_BOUND.exceeded(started.elapsed(), self.starting_cpu()) {
                return Err(Start::Failed(failed(format!("{why} (see its log/)"))));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A program that ended by itself, or whose log says its port was
    /// taken: what its log's last line (or that line) says, and whether
    /// the port was taken.
    fn fault(&self) -> Option<(String, bool)> {
        let mut running = self.running();
        for r in running.iter_mut() {
            if let PortTaken::AnyLine(sign) = self.taken {
                let log = std::fs::read_to_string(&r.log).unwrap_or_default();
                if let Some(line) = log.lines().rfind(|l| l.contains(sign)) {
                    return Some((format!("{}: {}", r.name, line.trim()), true));
                }
            }
            if let Some(status) = r.child.try_wait().ok().flatten() {
                let last = last_line(&r.log);
                let taken = matches!(self.taken, PortTaken::LastLineOfEnded(said) if said(&last));
                return Some((format!("{} ended ({status}): {last}", r.name), taken));
            }
        }
        None
    }

    /// The CPU the set's programs have used (a start is bounded by it).
    /// The CPU used by the processes started since the set last answered
    /// (all of them at its first start; a restored host's at a restore,
    /// not the survivors' that serve clients meanwhile).
    fn starting_cpu(&self) -> Duration {
        let starting: Vec<i32> = self.running().iter().filter(|r| !r.answered).map(|r| r.child.id() as i32).collect();
        cpu_of(&starting)
    }

    #[cfg(test)]
    fn pids(&self) -> Vec<i32> {
        self.running().iter().map(|r| r.child.id() as i32).collect()
    }

    /// Stops the program `name` alone (SIGTERM, then SIGKILL after
    /// `grace`) and forgets it; nothing when it does not run.
    pub fn stop_one(&self, name: &str, grace: Duration) -> Result<()> {
        let found = {
            let mut running = self.running();
            running.iter().position(|r| r.name == name).map(|i| running.remove(i))
        };
        match found {
            Some(r) => stop_running(vec![r], grace, &self.root),
            None => Ok(()),
        }
    }

    /// Forgets the programs `names` (a lost host's, killed and perhaps
    /// reaped with it) so that no later stop signals their pids, which may
    /// be another process's by then; reaps those not reaped yet.
    pub fn forget(&self, names: &[String]) {
        let gone: Vec<Running> = {
            let mut running = self.running();
            let (gone, kept) = std::mem::take(&mut *running).into_iter().partition(|r| names.contains(&r.name));
            *running = kept;
            gone
        };
        for mut r in gone {
            let _ = r.child.try_wait();
        }
    }

    /// Stops every program (SIGTERM, then SIGKILL after a grace period),
    /// waits for them and removes their pid files.
    pub fn stop(&self) -> Result<()> {
        let all = std::mem::take(&mut *self.running());
        stop_running(all, STOP_GRACE, &self.root)
    }
}

fn stop_running(mut all: Vec<Running>, grace: Duration, root: &Path) -> Result<()> {
    let pids: Vec<i32> = all.iter().map(|r| r.child.id() as i32).collect();
    let stopped = stop_all(&pids, grace, root);
    for r in &mut all {
        let _ = r.child.wait();
        let _ = std::fs::remove_file(&r.pid_file);
    }
    stopped
}

/// The last line of the log at `path` that is not empty.
pub fn last_line(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    log.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output").to_string()
}

/// Ends `pids`, a killed run's processes of the server in `root` of the
/// dataset in `dataset` (with those marked as its own that no pid file
/// names), and the hosts a killed run made (their network
/// namespaces, see [`hosts::reap_orphans`]); refuses while their owner,
/// another blobbench, may still run.
pub fn stop_stale(dataset: &Path, root: &Path, pids: &[i32]) -> Result<()> {
    let pids = with_unrecorded(root, pids);
    if !pids.is_empty() {
        throwaway::check_not_in_use(dataset, root)?;
        kill_and_wait(&pids, root, "a killed run's server")?;
    }
    // The hosts' own reaper says nothing more than this would: a failure
    // there leaves them to the next study's reap, not this start.
    let _ = hosts::reap_orphans();
    Ok(())
}

/// SIGKILLs `pids` and waits until they are gone (`what` names them in
/// the error).
pub fn kill_and_wait(pids: &[i32], root: &Path, what: &str) -> Result<()> {
    match signal_and_wait(pids, libc::SIGKILL, KILL_WAIT).first() {
        None => Ok(()),
        Some(pid) => Err(Error::bad_input(
            root,
            format!("{what} (pid {pid}) did not end within {} s of SIGKILL", KILL_WAIT.as_secs()),
        )),
    }
}

/// Ends every server a killed blobbench left running in the work
/// directories under `workdir` (see [`throwaway::orphaned`]), `running`
/// giving a dataset's recorded server processes and `root` its server's
/// directory (whose mark finds those no pid file names); how many.
pub fn reap_killed(
    workdir: &Path,
    root: impl Fn(&Path) -> Result<PathBuf>,
    running: impl Fn(&Path) -> Result<Vec<i32>>,
) -> Result<usize> {
    let mut ended = 0;
    for dir in throwaway::orphaned(workdir) {
        let root = root(&dir)?;
        let pids = with_unrecorded(&root, &running(&dir)?);
        if !pids.is_empty() {
            stop_stale(&dir, &root, &pids)?;
            ended += 1;
        }
    }
    Ok(ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    fn taken(line: &str) -> bool {
        line.contains("Address already in use")
    }

    /// A program that ends is named with its log's last line, a port
    /// taken is told from other failures, and a stop leaves no process
    /// and no pid file.
    #[test]
    fn a_set_is_waited_for_its_failures_named_and_stopped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let procs = Procs::new("the test server", d, Lifetime::ThisProcess, PortTaken::LastLineOfEnded(taken));
        procs.spawn("sleeper", sh("sleep 30"), &d.join("a.log"), &d.join("a.pid")).unwrap();
        procs.wait_until_up(|| true).map_err(Start::into_error).unwrap();
        procs
            .spawn("binder", sh("echo 'bind: Address already in use'; exit 71"), &d.join("b.log"), &d.join("b.pid"))
            .unwrap();
        match procs.wait_until_up(|| false) {
            Err(Start::PortTaken(e)) => {
                let e = e.to_string();
                assert!(
                    e.contains("the test server did not start: binder ended") && e.contains("already in use"),
                    "{e}"
                );
            }
            _ => panic!("a port taken"),
        }
        procs.stop_one("binder", STOP_GRACE).unwrap();
        procs.spawn("failer", sh("echo 'no module named swift'; exit 1"), &d.join("c.log"), &d.join("c.pid")).unwrap();
        let Err(Start::Failed(e)) = procs.wait_until_up(|| false) else { panic!("a failure") };
        assert!(e.to_string().contains("failer ended (exit status: 1): no module named swift"), "{e}");
        let pids = procs.pids();
        assert!(d.join("a.pid").is_file());
        procs.stop().unwrap();
        assert!(pids.iter().all(|&p| !throwaway::alive(p)) && !d.join("a.pid").exists() && procs.pids().is_empty());
    }

    /// A later wait (a restored host's) is bounded by the CPU of the
    /// processes started since the set answered, not by the survivors'
    /// that serve clients meanwhile.
    #[test]
    fn a_restores_wait_counts_the_cpu_of_the_new_processes_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let procs = Procs::new("the test server", d, Lifetime::ThisProcess, PortTaken::LastLineOfEnded(taken));
        let busy = procs.spawn("busy", sh("while :; do :; done"), &d.join("a.log"), &d.join("a.pid")).unwrap();
        assert_eq!(procs.starting_cpu(), cpu_of(&[busy]), "at the first start every process counts");
        let started = Instant::now();
        while cpu_of(&[busy]) < Duration::from_millis(300) {
            assert!(started.elapsed() < Duration::from_secs(600), "the busy process never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        procs.wait_until_up(|| true).map_err(Start::into_error).unwrap();
        procs.spawn("new", sh("sleep 30"), &d.join("b.log"), &d.join("b.pid")).unwrap();
        assert!(procs.starting_cpu() < cpu_of(&[busy]), "the survivor's CPU is left out");
        procs.stop().unwrap();
    }

    /// A run killed between a server's spawn and the write of its pid
    /// file leaves a process that no pid file names: the reaper of the
    /// next command finds it by its mark and ends it.
    #[test]
    fn a_server_killed_before_its_pid_was_recorded_is_found_and_ended_by_the_reaper() {
        let dir = tempfile::tempdir().unwrap();
        let (dataset, root) = (dir.path().join("d.s3"), dir.path().join("d.s3").join("server"));
        std::fs::create_dir_all(&root).unwrap();
        let procs = Procs::new("the test server", &root, Lifetime::LastUser, PortTaken::AnyLine("-"));
        // The pid file's directory is missing: the spawn happens, the
        // record does not, as when blobbench dies between the two.
        let unwritable = root.join("missing").join("s.pid");
        // `sleep` itself (no shell that would exec it): one process.
        let mut sleep = Command::new("sleep");
        sleep.arg("600");
        let e = procs.spawn("server", sleep, &root.join("s.log"), &unwritable).unwrap_err();
        assert!(e.to_string().contains("s.pid"), "{e}");
        let pid = procs.pids()[0];
        // A killed blobbench stops nothing.
        std::mem::forget(procs);
        assert!(throwaway::alive(pid) && !unwritable.exists());
        let found = started_for(&dir.path().join(".").join("d.s3").join("server"));
        assert_eq!(found, [pid], "found by its mark, however the directory is named");
        stop_stale(&dataset, &root, &[]).unwrap();
        assert!(!throwaway::alive(pid), "the reaper ended it");
        assert!(started_for(&root).is_empty());
    }

    /// `weed` logs a port it could not take and runs on: the line is
    /// enough.
    #[test]
    fn a_port_taken_is_read_from_a_running_programs_log() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let procs = Procs::new("SeaweedFS", d, Lifetime::ThisProcess, PortTaken::AnyLine("Port allocation failed"));
        let script = "echo 'E1 Port allocation failed: port 9 is not available'; sleep 30";
        procs.spawn("weed", sh(script), &d.join("w.log"), &d.join("w.pid")).unwrap();
        match procs.wait_until_up(|| false) {
            Err(Start::PortTaken(e)) => assert!(e.to_string().contains("weed: E1 Port allocation failed"), "{e}"),
            _ => panic!("a port taken"),
        }
        procs.stop().unwrap();
    }
}
