//! The throwaway PostgreSQL cluster blobbench starts when no `--pg URL` is
//! given: `initdb` makes it inside the dataset's directory, `pg_ctl` starts
//! it listening only on a Unix socket (`listen_addresses=''`, so no TCP
//! port is taken) in its own data directory, or, when that path is too long
//! for a socket address, in a short directory of its own under `/tmp`
//! ([`socket_dir_for`]), and it is stopped when
//! the [`Cluster`] is dropped (end of run, error, Ctrl-C). A run that was
//! killed leaves a `postmaster.pid`; the next start finds it and stops that
//! server first.
//!
//! PostgreSQL refuses to run as root. As root, every PostgreSQL program runs
//! as the unprivileged `postgres` user (made by Debian's package), and the
//! data directory is owned by it. The server runs in its own session, so a
//! Ctrl-C at the terminal reaches blobbench, which stops it cleanly, rather
//! than the server.
//!
//! A stop returns only once the postmaster has exited and been reaped:
//! blobbench makes itself the "child subreaper" of what it starts, so the
//! postmaster (orphaned when `pg_ctl` exits) becomes its child rather than
//! init's, which may reap it seconds later. No process of the cluster is
//! left when a command returns, and a script may remove the dataset at once.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

pub use crate::engine::throwaway::alive;
use crate::engine::throwaway::{self, Lease, RunAs, Shared};
use crate::{Error, Result};

/// The data directory inside a local dataset's directory.
pub const DATA_DIR: &str = "pgdata";
/// The Unix socket's port number (it only names the socket file).
pub const PORT: u16 = 5432;
/// The cluster's superuser and database.
pub const USER: &str = "blobbench";
/// `shared_buffers` of the throwaway cluster (PostgreSQL's default too).
pub const SHARED_BUFFERS: &str = "128MB";
/// Where Debian installs the server programs, one directory per version;
/// `BLOBBENCH_PG_LIB` replaces it (tests use it to hide the install).
const DEBIAN_LIB: &str = "/usr/lib/postgresql";
/// Longest Unix socket path (`sun_path` less its terminating NUL).
const SOCKET_PATH_MAX: usize = 107;
/// Where a cluster whose data directory is too deep for a socket address
/// puts its socket: `/tmp/blobbench-pg-HASH`, the hash of the data
/// directory's canonical path, so another blobbench process on the same
/// dataset finds the same socket.
const SHORT_SOCKET_PARENT: &str = "/tmp";
/// The settings file rewritten at each start (the socket's directory).
const SOCKET_CONF: &str = "blobbench.conf";
/// What to install when the programs are missing.
const INSTALL: &str = "install PostgreSQL's server programs (Debian: apt-get install postgresql)";

/// The server programs blobbench calls.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub initdb: PathBuf,
    pub pg_ctl: PathBuf,
}

/// Finds `initdb` and `pg_ctl` on `PATH`, else in the newest
/// `/usr/lib/postgresql/*/bin`.
pub fn find_binaries() -> Result<Binaries> {
    let lib = std::env::var_os("BLOBBENCH_PG_LIB").map(PathBuf::from).unwrap_or_else(|| DEBIAN_LIB.into());
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(&lib) {
        let mut versions: Vec<(u32, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
            .collect();
        versions.sort_by_key(|v| std::cmp::Reverse(v.0));
        dirs.extend(versions.into_iter().map(|v| v.1));
    }
    dirs.into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        .map(|d| Binaries { initdb: d.join("initdb"), pg_ctl: d.join("pg_ctl") })
        .ok_or_else(|| {
            Error::invalid(format!("initdb and pg_ctl not found on PATH or in {}/*/bin: {INSTALL}", lib.display()))
        })
}

/// Whether a throwaway cluster could be made here: the programs are found
/// and, as root, the `postgres` user exists (each error says what to
/// install). The crash test asks before it runs any method.
pub fn check_installed() -> Result<()> {
    find_binaries()?;
    run_as()?;
    Ok(())
}

/// The user PostgreSQL's programs run as: ourselves, or `postgres` when we
/// are root.
pub(super) fn run_as() -> Result<Option<RunAs>> {
    RunAs::when_root("postgres").map_err(|_| {
        Error::invalid(format!(
            "running as root, but there is no 'postgres' user to run the throwaway PostgreSQL cluster as: {INSTALL}"
        ))
    })
}

/// A cluster in `dir/pgdata`, started by us; stopped when dropped.
#[derive(Debug)]
pub struct Cluster {
    data: PathBuf,
    bins: Binaries,
    run_as: Option<RunAs>,
    running: bool,
}

impl Cluster {
    /// Makes a new cluster in `dir/pgdata` (`dir` exists, `pgdata` does
    /// not) with settings that keep it on its Unix socket.
    pub fn init(dir: &Path) -> Result<()> {
        let bins = find_binaries()?;
        let run_as = run_as()?;
        let data = absolute(dir)?.join(DATA_DIR);
        std::fs::create_dir(&data).map_err(|e| Error::io(&data, "cannot create the cluster directory", e))?;
        if let Some(who) = run_as {
            check_reachable(&data, who)?;
            std::os::unix::fs::chown(&data, Some(who.uid), Some(who.gid))
                .map_err(|e| Error::io(&data, "cannot give the cluster directory to the postgres user", e))?;
        }
        let mut cmd = command(&bins.initdb, run_as);
        // -N: initdb's own files are not fsynced (the cluster is rebuilt on
        // any failure); the server itself always runs with fsync on.
        cmd.arg("-D").arg(&data).args(["-U", USER, "-A", "trust", "-E", "UTF8", "--locale=C", "-N"]);
        run(cmd, &data, "initdb failed")?;
        // The socket's directory is written at each start (blobbench.conf):
        // a dataset is built under a temporary name and renamed.
        let conf = format!(
            "\n# blobbench: a throwaway cluster on a Unix socket only\nlisten_addresses = ''\n\
             port = {PORT}\nshared_buffers = {SHARED_BUFFERS}\nfsync = on\ninclude_if_exists = '{SOCKET_CONF}'\n"
        );
        append(&data.join("postgresql.conf"), &conf)
    }

    /// The cluster in `dir/pgdata` as engines share it: the one another
    /// engine of this run or another blobbench process on the dataset
    /// already started (engines on the same dataset, such as a fast and a
    /// durable writer, use one server), or a new one. It stops when the
    /// last of them lets go of it ([`throwaway::Shared`]).
    pub fn shared(dir: &Path) -> Result<Arc<Lease<Cluster>>> {
        RUNNING.get_or_start(dir)
    }

    /// Starts the cluster in `dir/pgdata`, first stopping a server a killed
    /// run left there.
    pub fn start(dir: &Path) -> Result<Cluster> {
        let data = absolute(dir)?.join(DATA_DIR);
        if !data.join("PG_VERSION").is_file() {
            return Err(Error::bad_input(dir, "holds no PostgreSQL cluster (no pgdata/PG_VERSION)"));
        }
        let bins = find_binaries()?;
        let run_as = run_as()?;
        stop_stale(&data, &bins, run_as)?;
        throwaway::adopt_orphans();
        throwaway::record_owner(dataset_of(&data))?;
        let socket = socket_dir_for(&data);
        if socket != data {
            prepare_short_socket_dir(&socket, &data, run_as)?;
        }
        let quoted = socket.display().to_string().replace('\'', "''");
        let conf = data.join(SOCKET_CONF);
        std::fs::write(&conf, format!("unix_socket_directories = '{quoted}'\n"))
            .map_err(|e| Error::io(&conf, "cannot write the cluster's socket setting", e))?;
        let mut cmd = command(&bins.pg_ctl, run_as);
        cmd.arg("start").arg("-D").arg(&data).args(["-w", "-t", "60", "-s", "-l"]).arg(data.join("server.log"));
        run(cmd, &data, "the PostgreSQL server did not start").map_err(|e| with_log(e, &data))?;
        Ok(Cluster { data, bins, run_as, running: true })
    }

    /// The directory of the server's Unix socket ([`socket_dir_for`]).
    pub fn socket_dir(&self) -> PathBuf {
        socket_dir_for(&self.data)
    }

    /// Stops the server (fast shutdown: sessions are ended, a checkpoint is
    /// written) and waits for it.
    pub fn stop(mut self) -> Result<()> {
        self.running = false;
        let stopped = stop(&self.data, &self.bins, self.run_as, "fast");
        throwaway::release_owner(dataset_of(&self.data));
        remove_short_socket_dir(&self.data);
        stopped
    }

    /// The postmaster's pid, from `postmaster.pid` (for the crash test).
    pub fn postmaster_pid(&self) -> Result<i32> {
        read_pid(&self.data)?
            .ok_or_else(|| Error::bad_input(&self.data, "has no postmaster.pid: the server is not running"))
    }
}

/// The clusters this process runs, by data directory (see
/// [`Cluster::shared`]).
static RUNNING: Shared<Cluster> = Shared::new();

impl throwaway::Server for Cluster {
    fn start(dir: &Path) -> Result<Cluster> {
        Cluster::start(dir)
    }

    /// The cluster another blobbench process started: its postmaster runs
    /// (the pid file names a live process) and is stopped by its last user.
    fn join(dir: &Path) -> Result<Cluster> {
        let data = absolute(dir)?.join(DATA_DIR);
        if !read_pid(&data)?.is_some_and(alive) {
            return Err(Error::bad_input(dir, "another blobbench process uses its server, which does not run"));
        }
        Ok(Cluster { data, bins: find_binaries()?, run_as: run_as()?, running: true })
    }

    fn stop(self) -> Result<()> {
        Cluster::stop(self)
    }

    fn leave(mut self) {
        self.running = false;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            let _ = stop(&self.data, &self.bins, self.run_as, "fast");
            throwaway::release_owner(dataset_of(&self.data));
            remove_short_socket_dir(&self.data);
        }
    }
}

/// Stops whatever server runs on `dir/pgdata` (a killed run's), if any;
/// nothing when there is none. Called before a dataset is removed.
pub fn stop_any(dir: &Path) -> Result<()> {
    let data = absolute(dir)?.join(DATA_DIR);
    if !data.join("postmaster.pid").exists() {
        return Ok(());
    }
    stop_stale(&data, &find_binaries()?, run_as()?)
}

/// A `postmaster.pid` whose process is alive means a killed run's server:
/// stop it (immediate: nothing of a throwaway run is worth a checkpoint).
/// A dead pid is left for PostgreSQL, which removes its own stale lock.
fn stop_stale(data: &Path, bins: &Binaries, who: Option<RunAs>) -> Result<()> {
    let Some(pid) = read_pid(data)? else { return Ok(()) };
    if !alive(pid) {
        return Ok(());
    }
    throwaway::check_not_in_use(dataset_of(data), data)?;
    stop(data, bins, who, "immediate")
}

/// Stops every cluster a killed blobbench left running in the work
/// directories directly under `workdir` (`blobbench-*` of the studies,
/// `.blobbench-*` of the crash test), at their datasets or one level
/// deeper (the crash test's `METHOD/kv`): called before a study makes its
/// own. Returns how many were stopped.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let mut stopped = 0;
    for dir in throwaway::orphaned(workdir) {
        let data = dir.join(DATA_DIR);
        if read_pid(&data)?.is_some_and(alive) {
            stop_stale(&data, &find_binaries()?, run_as()?)?;
            stopped += 1;
        }
    }
    Ok(stopped)
}

/// The crash test's fault: SIGKILLs the postmaster of the cluster in
/// `dir/pgdata` and every process it started ([`throwaway::kill_tree`]:
/// each backend runs in a session of its own), as a server crash ends
/// them, then waits until they are gone. Their lock files
/// (`postmaster.pid`, the socket's `.lock`) are then removed: a
/// container's init may leave the dead postmaster a zombie for a while,
/// whose pid PostgreSQL would take for a live server.
pub fn kill_server(dir: &Path) -> Result<()> {
    let data = absolute(dir)?.join(DATA_DIR);
    let Some(pid) = read_pid(&data)? else { return Ok(()) };
    if !alive(pid) {
        return Ok(());
    }
    throwaway::kill_tree(pid, &data)?;
    throwaway::reap_adopted("postgres");
    for lock in [data.join("postmaster.pid"), socket_dir_for(&data).join(format!(".s.PGSQL.{PORT}.lock"))] {
        match std::fs::remove_file(&lock) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&lock, "cannot remove", e)),
            _ => {}
        }
    }
    Ok(())
}

/// PostgreSQL's programs run from `/`: every path they get is absolute.
fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))
}

/// The dataset directory holding the data directory `data`.
fn dataset_of(data: &Path) -> &Path {
    data.parent().unwrap_or(data)
}

pub(super) fn read_pid(data: &Path) -> Result<Option<i32>> {
    let file = data.join("postmaster.pid");
    match std::fs::read_to_string(&file) {
        Ok(s) => Ok(s.lines().next().and_then(|l| l.trim().parse().ok())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&file, "cannot read", e)),
    }
}

/// Stops the server and returns once its postmaster has exited (`pg_ctl
/// -w` only waits for `postmaster.pid` to go, which the postmaster removes
/// just before it exits).
fn stop(data: &Path, bins: &Binaries, who: Option<RunAs>, mode: &str) -> Result<()> {
    let postmaster = read_pid(data)?;
    let mut cmd = command(&bins.pg_ctl, who);
    cmd.arg("stop").arg("-D").arg(data).args(["-m", mode, "-w", "-t", "60", "-s"]);
    run(cmd, data, "cannot stop the PostgreSQL server")?;
    match postmaster {
        Some(pid) => wait_exited(pid, data),
        None => Ok(()),
    }
}

/// How long a stopped postmaster may take to exit once its pid file is gone.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits until the postmaster `pid` has exited, reaping it when it is ours.
fn wait_exited(pid: i32, data: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + EXIT_WAIT;
    while alive(pid) {
        throwaway::reap_adopted("postgres");
        if std::time::Instant::now() > deadline {
            let secs = EXIT_WAIT.as_secs();
            return Err(Error::bad_input(data, format!("the stopped server (pid {pid}) did not exit within {secs} s")));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    // It may have become a zombie since the last look.
    throwaway::reap_adopted("postgres");
    Ok(())
}

/// A command for a PostgreSQL program: as `who` when given, in a session
/// of its own (a terminal's Ctrl-C is blobbench's to handle), from `/`.
fn command(program: &Path, who: Option<RunAs>) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir("/").stdin(Stdio::null()).env_remove("PGDATA").env("LC_ALL", "C");
    throwaway::without_aws_variables(&mut cmd, std::env::vars_os().map(|(name, _)| name));
    // SAFETY: only async-signal-safe calls (setsid, setgroups, setgid,
    // setuid) run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setsid();
            match who {
                Some(w) => w.become_it(),
                None => Ok(()),
            }
        });
    }
    cmd
}

/// Runs `cmd` to its end; a failure's message is its last line of output.
pub(super) fn run(mut cmd: Command, path: &Path, what: &str) -> Result<()> {
    let out = cmd.output().map_err(|e| Error::io(path, &format!("{what}: cannot run {:?}", cmd.get_program()), e))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let last = text.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output");
    Err(Error::bad_input(path, format!("{what}: {last}")))
}

pub(super) fn append(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Error::io(path, "cannot write the cluster's settings", e))
}

/// A start failure names the server log's reason: its last FATAL line,
/// else its last line.
pub(super) fn with_log(e: Error, data: &Path) -> Error {
    let log = std::fs::read_to_string(data.join("server.log")).unwrap_or_default();
    let mut lines = log.lines().map(str::trim);
    let fatal = log.lines().map(str::trim).rfind(|l| l.contains("FATAL:"));
    match fatal.or_else(|| lines.rfind(|l| !l.is_empty())) {
        Some(last) => Error::bad_input(data, format!("the PostgreSQL server did not start: {last}")),
        None => e,
    }
}

/// Where the cluster of `data` listens: its data directory when
/// `data/.s.PGSQL.5432.lock` fits in a Unix socket address, else
/// `/tmp/blobbench-pg-HASH` (any work directory works, however deep).
pub fn socket_dir_for(data: &Path) -> PathBuf {
    if fits_a_socket(data) {
        return data.to_path_buf();
    }
    let canonical = std::fs::canonicalize(data).unwrap_or_else(|_| data.to_path_buf());
    // FNV-1a: stable across builds, so every blobbench finds one place.
    let hash = canonical
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    Path::new(SHORT_SOCKET_PARENT).join(format!("blobbench-pg-{hash:016x}"))
}

fn fits_a_socket(dir: &Path) -> bool {
    dir.as_os_str().len() + format!("/.s.PGSQL.{PORT}.lock").len() <= SOCKET_PATH_MAX
}

/// Makes (or checks) the short socket directory of `data`'s cluster: a
/// directory, not a link, owned by whoever runs the server and writable by
/// no one else, since `/tmp` is everyone's.
fn prepare_short_socket_dir(socket: &Path, data: &Path, who: Option<RunAs>) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let owner = who.map_or_else(|| unsafe { libc::geteuid() }, |w| w.uid);
    match std::fs::create_dir(socket) {
        Ok(()) => {
            std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| Error::io(socket, "cannot make the socket directory private", e))?;
            if let Some(w) = who {
                std::os::unix::fs::chown(socket, Some(w.uid), Some(w.gid))
                    .map_err(|e| Error::io(socket, "cannot give the socket directory to the postgres user", e))?;
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(socket).map_err(|e| Error::io(socket, "cannot read", e))?;
            if m.is_dir() && m.uid() == owner && m.mode() & 0o022 == 0 {
                return Ok(());
            }
            Err(Error::bad_input(
                socket,
                format!(
                    "is not a private directory of the server's user, so it cannot hold the socket of the \
                     cluster in {} (its own path is too long for a socket); remove it",
                    data.display()
                ),
            ))
        }
        Err(e) => Err(Error::io(socket, "cannot create the server's socket directory", e)),
    }
}

/// Removes the short socket directory of `data`'s cluster once its server
/// has stopped (it is empty then; a directory still in use is kept).
fn remove_short_socket_dir(data: &Path) {
    let socket = socket_dir_for(data);
    if socket != data {
        let _ = std::fs::remove_dir(&socket);
    }
}

/// As root the server runs as `postgres`, which must be able to enter
/// every directory above its data directory.
fn check_reachable(data: &Path, who: RunAs) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for dir in data.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else { continue };
        let mode = meta.mode();
        let enter = if meta.uid() == who.uid {
            mode & 0o100 != 0
        } else if meta.gid() == who.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !enter {
            return Err(Error::bad_input(
                dir,
                format!(
                    "the 'postgres' user cannot enter it (mode {:o}); as root the throwaway cluster runs as postgres: \
                     use a directory it can reach (e.g. chmod o+x)",
                    mode & 0o7777
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_directory_too_deep_for_a_socket_listens_in_a_short_one_of_its_own() {
        let short = Path::new("/tmp/short/pgdata");
        assert_eq!(socket_dir_for(short), short, "a short path keeps its socket");
        let long = PathBuf::from("/tmp").join("x".repeat(100)).join(DATA_DIR);
        let other = PathBuf::from("/tmp").join("y".repeat(100)).join(DATA_DIR);
        let socket = socket_dir_for(&long);
        assert!(socket.starts_with(SHORT_SOCKET_PARENT) && fits_a_socket(&socket), "{}", socket.display());
        assert_eq!(socket_dir_for(&long), socket, "the same place for every process");
        assert_ne!(socket_dir_for(&other), socket, "a place per cluster");
    }

    #[test]
    fn a_short_socket_directory_someone_else_can_write_is_refused() {
        let data = PathBuf::from("/tmp").join("z".repeat(100)).join(DATA_DIR);
        let socket = std::env::temp_dir().join(format!("blobbench-pg-test-{}", std::process::id()));
        std::fs::create_dir(&socket).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_short_socket_dir(&socket, &data, None).unwrap_err().to_string();
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(e.contains("is not a private directory") && e.contains("remove it"), "{e}");
        prepare_short_socket_dir(&socket, &data, None).expect("a private one of ours is used");
        std::fs::remove_dir(&socket).unwrap();
    }
}
