//! One PostgreSQL server on one host of a replicated cluster: its data
//! directory in the host's, its settings, and the programs run for it
//! (`initdb`, `pg_basebackup`, `pg_ctl start`, `promote`, `stop`), each
//! started in the host (its namespace, as `postgres` when root).
//!
//! Every node listens on its host's address only, by TCP (no Unix socket:
//! a socket in the file system would reach a host whatever its network),
//! and admits blobbench's user from the hosts' subnet, for queries and for
//! replication, without a password (nothing outside the subnet reaches it).

use std::path::{Path, PathBuf};

use crate::engine::postgres::server::{self, append, read_pid, run, Binaries, USER};
use crate::engine::throwaway::hosts::Host;
use crate::engine::throwaway::RunAs;
use crate::{Error, Result};

/// The data directory inside a host's directory.
pub(super) const DATA: &str = "pgdata";
/// The settings of this host (address, port, name), rewritten on each host
/// after `pg_basebackup` copied the primary's.
const HOST_CONF: &str = "blobbench-host.conf";
/// How long a start, a promotion or a base backup may take (a start on a
/// loaded 2-core machine takes seconds; crash recovery may take more).
const WAIT_SECS: &str = "120";

/// What every node of a cluster shares.
#[derive(Debug, Clone)]
pub(super) struct Programs {
    pub bins: Binaries,
    pub pg_basebackup: PathBuf,
    pub run_as: Option<RunAs>,
}

impl Programs {
    /// `initdb`, `pg_ctl` and, beside them (the same version),
    /// `pg_basebackup`; each missing one named in one line.
    pub fn find() -> Result<Programs> {
        let bins = server::find_binaries()?;
        let pg_basebackup = beside(&bins.pg_ctl)?;
        Ok(Programs { bins, pg_basebackup, run_as: server::run_as()? })
    }
}

/// `pg_basebackup` in the directory of `pg_ctl`, or of the program a
/// `pg_ctl` link points to (the same version either way).
pub(super) fn beside(pg_ctl: &Path) -> Result<PathBuf> {
    let real = std::fs::canonicalize(pg_ctl).unwrap_or_else(|_| pg_ctl.to_path_buf());
    let dirs: Vec<&Path> = [pg_ctl.parent(), real.parent()].into_iter().flatten().collect();
    if let Some(found) = dirs.iter().map(|d| d.join("pg_basebackup")).find(|p| p.is_file()) {
        return Ok(found);
    }
    Err(Error::invalid(format!(
        "pg_basebackup not found beside pg_ctl in {}: a standby is made with it; install PostgreSQL's \
         client programs (Debian: apt-get install postgresql-client)",
        dirs.first().map_or(String::new(), |d| d.display().to_string())
    )))
}

/// The data directory of the node on `host`.
pub(super) fn data_dir(host: &Host) -> PathBuf {
    host.dir().join(DATA)
}

/// Makes the empty data directory, the server's own.
fn make_data_dir(host: &Host, p: &Programs) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let data = data_dir(host);
    std::fs::DirBuilder::new().mode(0o700).create(&data).map_err(|e| Error::io(&data, "cannot create", e))?;
    if let Some(who) = p.run_as {
        who.chown(&data).map_err(|e| Error::io(&data, "cannot give the data directory to the postgres user", e))?;
    }
    Ok(data)
}

/// A new cluster on `host` (the primary-to-be), with every setting the
/// nodes share: commits that wait for the standbys named
/// (`synchronous_commit = on`; the names are each host's own setting,
/// [`write_host_conf`]), and the subnet admitted.
pub(super) fn init(host: &Host, p: &Programs, subnet: &str) -> Result<()> {
    let data = make_data_dir(host, p)?;
    let mut cmd = host.command(&p.bins.initdb, p.run_as)?;
    cmd.arg("-D").arg(&data).args(["-U", USER, "-A", "trust", "-E", "UTF8", "--locale=C", "-N"]);
    run(cmd, &data, "initdb failed")?;
    configure(&data, subnet)
}

/// A copy of the cluster listening in `socket_dir` (a dataset's own, over
/// its Unix socket) on `host`, the primary-to-be: a base backup, then the
/// settings every node shares (appended, so they win over the copied
/// ones: no Unix socket, whatever the dataset's cluster used).
pub(super) fn seed(host: &Host, p: &Programs, socket_dir: &Path, subnet: &str) -> Result<()> {
    let data = make_data_dir(host, p)?;
    let mut cmd = host.command(&p.pg_basebackup, p.run_as)?;
    cmd.arg("-D").arg(&data).arg("-h").arg(socket_dir).args(["-p", &server::PORT.to_string(), "-U", USER]);
    cmd.args(["-X", "stream", "-c", "fast", "-w"]);
    run(cmd, &data, "the dataset could not be copied onto the replicated cluster: pg_basebackup failed")?;
    configure(&data, subnet)
}

/// The settings every node shares, after the data directory's own.
fn configure(data: &Path, subnet: &str) -> Result<()> {
    let conf = format!(
        "\n# blobbench: one node of a replicated throwaway cluster\nshared_buffers = {}\nfsync = on\n\
         wal_level = replica\nsynchronous_commit = on\n\
         dynamic_shared_memory_type = mmap\nunix_socket_directories = ''\ninclude_if_exists = '{HOST_CONF}'\n",
        server::SHARED_BUFFERS
    );
    append(&data.join("postgresql.conf"), &conf)?;
    let hba = format!("host all all {subnet} trust\nhost replication {USER} {subnet} trust\n");
    append(&data.join("pg_hba.conf"), &hba)
}

/// This host's own settings: where it listens; its name, which a
/// standby's WAL receiver gives the primary as its `application_name`;
/// and the standbys its commits wait for once it leads (`*`: any; empty:
/// none). A primary waits for none until its first standby streams (its
/// own set-up would wait for ever), then is given `*` and reloaded.
pub(super) fn write_host_conf(host: &Host, port: u16, standby_names: &str) -> Result<()> {
    let file = data_dir(host).join(HOST_CONF);
    let text = format!(
        "listen_addresses = '{}'\nport = {port}\ncluster_name = '{}'\nsynchronous_standby_names = '{standby_names}'\n",
        host.addr(),
        host.name()
    );
    std::fs::write(&file, text).map_err(|e| Error::io(&file, "cannot write the node's settings", e))?;
    if let Some(who) = server::run_as()? {
        who.chown(&file).map_err(|e| Error::io(&file, "cannot give the node's settings to postgres", e))?;
    }
    Ok(())
}

/// A standby on `host`: `pg_basebackup` of the primary at `from` (its WAL
/// streamed beside the copy; `-R` makes it a standby of that primary).
pub(super) fn base_backup(host: &Host, p: &Programs, from: (std::net::Ipv4Addr, u16)) -> Result<()> {
    let data = make_data_dir(host, p)?;
    let mut cmd = host.command(&p.pg_basebackup, p.run_as)?;
    cmd.arg("-D").arg(&data).args(["-h", &from.0.to_string(), "-p", &from.1.to_string(), "-U", USER]);
    cmd.args(["-X", "stream", "-R", "-c", "fast", "-w"]);
    let out = cmd.output().map_err(|e| Error::io(&data, "cannot run pg_basebackup", e))?;
    if out.status.success() {
        return Ok(());
    }
    // Its first error says why; its last line only that it cleaned up.
    let text = String::from_utf8_lossy(&out.stderr);
    let lines = || text.lines().map(str::trim).filter(|l| !l.is_empty());
    let why = lines().find(|l| l.contains("error:")).or_else(|| lines().next_back()).unwrap_or("no output");
    Err(Error::bad_input(&data, format!("the standby could not be made: pg_basebackup failed: {why}")))
}

/// Starts the node on `host` (listening on `port`) and adopts its
/// postmaster into the host (adopted even when the start failed: whatever
/// runs must end with it). `role` names it in the error ("primary",
/// "standby").
pub(super) fn start(host: &Host, p: &Programs, role: &str, port: u16) -> Result<()> {
    let data = data_dir(host);
    let mut cmd = host.command(&p.bins.pg_ctl, p.run_as)?;
    cmd.arg("start").arg("-D").arg(&data).args(["-w", "-t", WAIT_SECS, "-s", "-l"]).arg(data.join("server.log"));
    let started = run(cmd, &data, &format!("the {role} did not start"));
    if let Some(pid) = read_pid(&data).ok().flatten() {
        host.adopt(pid);
    }
    started.map_err(|e| match log_reason(&data) {
        Some(why) if why.contains("could not bind") => Error::bad_input(
            &data,
            format!("the {role} did not start: port {port} on {} is taken ({why})", host.addr()),
        ),
        Some(why) => Error::bad_input(&data, format!("the {role} did not start: {why}")),
        None => e,
    })
}

/// Promotes the standby on `host` to primary and waits until it is one.
pub(super) fn promote(host: &Host, p: &Programs) -> Result<()> {
    let data = data_dir(host);
    let mut cmd = host.command(&p.bins.pg_ctl, p.run_as)?;
    cmd.arg("promote").arg("-D").arg(&data).args(["-w", "-t", WAIT_SECS, "-s"]);
    run(cmd, &data, "the standby could not be promoted")
}

/// Empties a lost host's data directory, kept aside in `lost_dir`, of
/// its tables and WAL (a copy of the cluster each), keeping its log,
/// settings and pid file: a loss test keeps every lost host until it ends,
/// and a thousand copies of the cluster would fill the disk.
pub(super) fn keep_only_logs(lost_dir: &Path) {
    for bulk in ["base", "pg_wal"] {
        let _ = std::fs::remove_dir_all(lost_dir.join(DATA).join(bulk));
    }
}

/// Stops the node on `host` at once (`-m immediate`: nothing of a
/// throwaway cluster is worth a checkpoint), which also frees its shared
/// memory.
pub(super) fn stop(host: &Host, p: &Programs) -> Result<()> {
    let data = data_dir(host);
    if read_pid(&data)?.is_none() {
        return Ok(());
    }
    let mut cmd = host.command(&p.bins.pg_ctl, p.run_as)?;
    cmd.arg("stop").arg("-D").arg(&data).args(["-m", "immediate", "-w", "-t", WAIT_SECS, "-s"]);
    run(cmd, &data, "cannot stop the PostgreSQL server")
}

/// Whether the node on `host` failed to start because its port was
/// taken; if so its log is set aside (`server.log.port-taken`), so that
/// the next start's log says only why that one failed.
pub(super) fn set_aside_port_clash(host: &Host) -> bool {
    let data = data_dir(host);
    let clash = log_reason(&data).is_some_and(|why| why.contains("could not bind"));
    clash && std::fs::rename(data.join("server.log"), data.join("server.log.port-taken")).is_ok()
}

/// The server log's reason for a failed start: a port it could not bind
/// (the FATAL line after it only says no socket was made), else its last
/// FATAL line, else its last line.
pub(super) fn log_reason(data: &Path) -> Option<String> {
    let log = std::fs::read_to_string(data.join("server.log")).ok()?;
    let lines = || log.lines().map(str::trim);
    let bind = lines().rfind(|l| l.contains("could not bind"));
    let fatal = || lines().rfind(|l| l.contains("FATAL:"));
    bind.or_else(fatal).or_else(|| lines().rfind(|l| !l.is_empty())).map(String::from)
}
