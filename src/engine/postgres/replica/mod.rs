//! A throwaway PostgreSQL primary and standby on two hosts
//! (`engine::throwaway::hosts`): the standby made by `pg_basebackup` of the
//! primary, streaming its WAL; with [`PgStandby::Sync`] every node has
//! `synchronous_standby_names = '*'` and `synchronous_commit = on`, so a
//! commit returns once the standby has flushed it; with
//! [`PgStandby::Async`] the standby follows when it can (the machine-loss
//! test's negative control).
//!
//! As a [`Replicated`] store: either host may be lost. The store's own
//! failover is `pg_ctl promote` of the standby when the primary was lost
//! (nothing when the standby was); [`Replicated::restore`] makes a new
//! standby on a new host in place of the lost one, from a base backup of
//! whichever node leads. A synchronous primary left alone holds every
//! commit until then, as PostgreSQL does: no write returns that one
//! machine alone holds.

mod node;
#[cfg(test)]
mod tests;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use node::Programs;
use postgres::config::TargetSessionAttrs;
use postgres::{Client, Config, NoTls};

use super::conn::{pg_error, LOCAL_DB};
use super::server::USER;
use crate::engine::throwaway::hosts::{HostId, Hosts, LostHost, Replicated};
use crate::records::{PgStandby, Replica};
use crate::{Error, Result};

/// The hosts' names.
const HOSTS: [&str; 2] = ["pg0", "pg1"];
/// The port every node listens on in its own namespace.
const PORT: u16 = 5432;
/// How long a connection attempt, or a request with no answer, may take:
/// a lost host never answers, and its peers' connections hang until then.
pub const NET_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a new standby may take to stream (and, when synchronous, to
/// be the one commits wait for).
const CATCH_UP: Duration = Duration::from_secs(120);
/// How many times a node whose loopback port this cluster picked is
/// started again on a new one, when the port was taken before it bound it.
const PORT_PICKS: u32 = 3;

/// Whether a replicated cluster can be made here: PostgreSQL's programs
/// with `pg_basebackup` (each missing one named).
pub fn check_installed() -> Result<()> {
    Programs::find().map(|_| ())
}

/// A primary and a standby, running.
pub struct PgReplicated {
    /// Taken only by [`PgReplicated::stop`]; the servers stop (drop)
    /// before the hosts go.
    hosts: Option<Hosts>,
    programs: Programs,
    standby: PgStandby,
    ports: [u16; 2],
    /// The ports were picked free on loopback here, not given: one taken
    /// between its pick and its node's start (by another process's
    /// listener or outgoing connection) is picked again.
    repick: bool,
    primary: HostId,
    lost: Option<HostId>,
    version: String,
}

impl std::fmt::Debug for PgReplicated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgReplicated").field("standby", &self.standby).field("primary", &self.primary).finish()
    }
}

impl PgReplicated {
    /// A new primary on host `pg0` of `parent/hosts` with an empty
    /// database `blobbench`, and its standby on `pg1`, streaming (and the
    /// synchronous one, when `standby` says so). On any failure nothing is
    /// left running and the hosts are removed; the error is one line.
    pub fn create(parent: &Path, standby: PgStandby) -> Result<PgReplicated> {
        let programs = Programs::find()?;
        let hosts = Hosts::create(parent, &HOSTS)?;
        PgReplicated::start_on(hosts, programs, standby, None)
    }

    /// As [`PgReplicated::create`], on loopback whatever the privileges
    /// (`why` says why).
    pub fn create_loopback(parent: &Path, standby: PgStandby, why: &str) -> Result<PgReplicated> {
        let programs = Programs::find()?;
        let hosts = Hosts::create_loopback(parent, &HOSTS, why)?;
        PgReplicated::start_on(hosts, programs, standby, None)
    }

    /// As [`PgReplicated::create`], its primary a copy of the cluster
    /// listening in `seed_socket` (a dataset's own; its database and table
    /// come with it).
    pub fn create_from(parent: &Path, standby: PgStandby, seed_socket: &Path) -> Result<PgReplicated> {
        let programs = Programs::find()?;
        let hosts = Hosts::create(parent, &HOSTS)?;
        PgReplicated::start(hosts, programs, standby, None, Some(seed_socket))
    }

    /// The standby a replicated layout names, when it is PostgreSQL's.
    pub fn standby_of(replica: Replica) -> Option<PgStandby> {
        match replica {
            Replica::SyncStandby => Some(PgStandby::Sync),
            Replica::AsyncStandby => Some(PgStandby::Async),
            Replica::SwiftThreeHosts | Replica::SeaweedfsTwoHosts => None,
        }
    }

    fn start_on(hosts: Hosts, programs: Programs, standby: PgStandby, ports: Option<[u16; 2]>) -> Result<PgReplicated> {
        PgReplicated::start(hosts, programs, standby, ports, None)
    }

    /// The nodes on `hosts`, listening on `ports` when given (loopback
    /// only; else picked free there, [`PORT`] in namespaces), the primary
    /// a new cluster with an empty database, or a copy of `seed`'s.
    fn start(
        hosts: Hosts,
        programs: Programs,
        standby: PgStandby,
        ports: Option<[u16; 2]>,
        seed: Option<&Path>,
    ) -> Result<PgReplicated> {
        let repick = ports.is_none() && !hosts.network().is_namespaces();
        let ports = match (ports, hosts.network().is_namespaces()) {
            (Some(p), false) => p,
            (_, true) => [PORT; 2],
            (None, false) => [free_port()?, free_port()?],
        };
        let (primary, second) = (HostId(0), HostId(1));
        let mut cluster = PgReplicated {
            hosts: Some(hosts),
            programs,
            standby,
            ports,
            repick,
            primary,
            lost: None,
            version: String::new(),
        };
        let host = cluster.h().host(primary);
        match seed {
            Some(socket) => node::seed(host, &cluster.programs, socket, &cluster.h().subnet())?,
            None => node::init(host, &cluster.programs, &cluster.h().subnet())?,
        }
        cluster.start_node(primary, "primary", "")?;
        let mut admin = cluster.connect_to(primary, "postgres")?;
        if seed.is_none() {
            admin
                .batch_execute(&format!("CREATE DATABASE {LOCAL_DB}"))
                .map_err(|e| cluster.error("cannot create the database", e))?;
        }
        cluster.version = admin
            .query_one("SHOW server_version", &[])
            .map(|r| r.get::<_, String>(0))
            .map_err(|e| cluster.error("cannot read the server's version", e))?;
        drop(admin);
        cluster.add_standby(second)?;
        if standby == PgStandby::Sync {
            // Its first standby streams: from now on its commits wait for one.
            node::write_host_conf(cluster.h().host(primary), cluster.ports[primary.0], "*")?;
            let mut admin = cluster.connect_to(primary, "postgres")?;
            admin.batch_execute("SELECT pg_reload_conf()").map_err(|e| cluster.error("cannot reload", e))?;
            cluster.wait_streaming(cluster.h().host(second).name())?;
        }
        Ok(cluster)
    }

    fn h(&self) -> &Hosts {
        self.hosts.as_ref().expect("the hosts live until the cluster stops")
    }

    fn h_mut(&mut self) -> &mut Hosts {
        self.hosts.as_mut().expect("the hosts live until the cluster stops")
    }

    /// What the standby is.
    pub fn standby(&self) -> PgStandby {
        self.standby
    }

    /// How the hosts are joined.
    pub fn hosts_network(&self) -> &crate::engine::throwaway::hosts::Network {
        self.h().network()
    }

    /// A client configuration that reaches whichever node takes writes
    /// (every host listed, `target_session_attrs=read-write`), bounded by
    /// [`NET_TIMEOUT`] in every wait: the connect, and a request a lost
    /// host never answers (TCP keepalives and `TCP_USER_TIMEOUT`).
    pub fn client_config(&self, db: &str) -> Config {
        let mut c = bounded_config(db);
        for id in self.h().ids() {
            c.host(&self.h().host(id).addr().to_string()).port(self.ports[id.0]);
        }
        c.target_session_attrs(TargetSessionAttrs::ReadWrite);
        c
    }

    /// A connection to the node on host `id`, database `db`.
    pub fn connect_to(&self, id: HostId, db: &str) -> Result<Client> {
        let mut c = bounded_config(db);
        c.host(&self.h().host(id).addr().to_string()).port(self.ports[id.0]);
        c.connect(NoTls).map_err(|e| self.error(&format!("cannot connect to {}", self.h().host(id).name()), e))
    }

    /// The node leading now.
    pub fn primary(&self) -> HostId {
        self.primary
    }

    fn other(&self, id: HostId) -> HostId {
        HostId(1 - id.0)
    }

    fn error(&self, what: &str, e: postgres::Error) -> Error {
        pg_error(self.h().host(self.primary).dir(), what, e)
    }

    /// A standby on host `id` from a base backup of the primary, started,
    /// and once it streams (synchronous, when asked) returned.
    fn add_standby(&mut self, id: HostId) -> Result<()> {
        let primary = self.h().host(self.primary);
        let from = (primary.addr(), self.ports[self.primary.0]);
        let host = self.h().host(id);
        node::base_backup(host, &self.programs, from)?;
        self.start_node(id, "standby", self.standby_names())?;
        self.wait_streaming(self.h().host(id).name())
    }

    /// Configures and starts the node on host `id` as `role`, its
    /// `synchronous_standby_names` `names`. A port this cluster picked
    /// that was taken by the time the node bound it is picked again (up
    /// to [`PORT_PICKS`] times); a given one fails the start.
    fn start_node(&mut self, id: HostId, role: &str, names: &str) -> Result<()> {
        let mut picks = 0;
        loop {
            let host = self.h().host(id);
            node::write_host_conf(host, self.ports[id.0], names)?;
            match node::start(host, &self.programs, role, self.ports[id.0]) {
                Err(_) if self.repick && picks < PORT_PICKS && node::set_aside_port_clash(host) => {
                    picks += 1;
                    self.ports[id.0] = free_port()?;
                }
                started => return started,
            }
        }
    }

    /// `synchronous_standby_names` of a node that leads.
    fn standby_names(&self) -> &'static str {
        match self.standby {
            PgStandby::Sync => "*",
            PgStandby::Async => "",
        }
    }

    /// Waits until the primary sees the standby `name` streaming, and when
    /// it waits for standbys, as the standby its commits wait for.
    /// (A lost standby's WAL sender may still be listed under the same
    /// name until its timeout: any row of the name will do.)
    fn wait_streaming(&self, name: &str) -> Result<()> {
        let names = self.connect_to(self.primary, "postgres")?.query_one("SHOW synchronous_standby_names", &[]);
        let names: String = names.map(|r| r.get(0)).map_err(|e| self.error("cannot read the settings", e))?;
        let want = if names.is_empty() { "async" } else { "sync" };
        let deadline = Instant::now() + CATCH_UP;
        let mut client = self.connect_to(self.primary, "postgres")?;
        loop {
            let rows = client
                .query(
                    "SELECT coalesce(state, '') || ' ' || coalesce(sync_state, '') FROM pg_stat_replication \
                     WHERE application_name = $1",
                    &[&name],
                )
                .map_err(|e| self.error("cannot read pg_stat_replication", e))?;
            let seen: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            if seen.iter().any(|s| *s == format!("streaming {want}")) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let standby = self.h().named(name).map(|id| node::data_dir(self.h().host(id)));
                let log = standby.as_deref().and_then(node::log_reason).unwrap_or_default();
                return Err(Error::bad_input(
                    self.h().host(self.primary).dir(),
                    format!(
                        "the standby {name} was not streaming as {want} within {} s (the primary lists it as {:?}; \
                         its log: {log})",
                        CATCH_UP.as_secs(),
                        seen
                    ),
                ));
            }
            if crate::util::interrupt::stop_requested() {
                return Err(Error::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops every node that runs, then removes the hosts; errors returned.
    pub fn stop(mut self) -> Result<()> {
        let stopped = self.stop_nodes();
        let removed = self.hosts.take().map_or(Ok(()), Hosts::remove);
        stopped.and(removed)
    }

    fn stop_nodes(&mut self) -> Result<()> {
        let Some(hosts) = &self.hosts else { return Ok(()) };
        let mut first = Ok(());
        for id in hosts.ids() {
            let host = hosts.host(id);
            if !host.is_lost() {
                let stopped = node::stop(host, &self.programs);
                first = first.and(stopped);
            }
        }
        first
    }
}

impl Drop for PgReplicated {
    fn drop(&mut self) {
        let _ = self.stop_nodes();
    }
}

impl Replicated for PgReplicated {
    fn describe(&self) -> String {
        let standby = match self.standby {
            PgStandby::Sync => "a synchronous standby (synchronous_standby_names = '*', synchronous_commit = on)",
            PgStandby::Async => "an asynchronous standby (synchronous_standby_names = '')",
        };
        format!("PostgreSQL {}, a primary and {standby}", self.version)
    }

    fn hosts(&self) -> &Hosts {
        self.h()
    }

    /// Either host: the class is about the loss of any one machine.
    fn losable(&self) -> Vec<HostId> {
        self.h().ids().into_iter().filter(|&id| !self.h().host(id).is_lost()).collect()
    }

    fn lose(&mut self, host: HostId) -> Result<LostHost> {
        if let Some(lost) = self.lost {
            return Err(Error::invalid(format!(
                "host {} is lost already; restore it first",
                self.h().host(lost).name()
            )));
        }
        let lost = self.h_mut().lose(host)?;
        self.lost = Some(host);
        node::keep_only_logs(&lost.moved_to);
        Ok(lost)
    }

    /// `pg_ctl promote` of the standby when the primary was lost.
    fn fail_over(&mut self) -> Result<()> {
        match self.lost {
            Some(lost) if lost == self.primary => {
                let standby = self.other(lost);
                node::promote(self.h().host(standby), &self.programs)?;
                self.primary = standby;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn endpoints(&self) -> Vec<SocketAddr> {
        let mut ids = self.losable();
        ids.sort_by_key(|&id| id != self.primary);
        ids.into_iter().map(|id| SocketAddr::new(self.h().host(id).addr().into(), self.ports[id.0])).collect()
    }

    /// A new host in place of the lost one, its node a standby of the
    /// primary, streaming (synchronous, when so laid out).
    fn restore(&mut self) -> Result<()> {
        let Some(lost) = self.lost else { return Ok(()) };
        self.h_mut().replace(lost)?;
        self.lost = None;
        self.add_standby(lost)
    }
}

/// A configuration whose every wait is bounded by [`NET_TIMEOUT`].
fn bounded_config(db: &str) -> Config {
    let mut c = Config::new();
    c.user(USER).dbname(db).connect_timeout(NET_TIMEOUT).tcp_user_timeout(NET_TIMEOUT);
    c.keepalives(true).keepalives_idle(Duration::from_secs(1)).keepalives_interval(Duration::from_secs(1));
    c.keepalives_retries(2);
    c
}

/// A loopback port free now (the hosts share loopback: one port per node).
fn free_port() -> Result<u16> {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::io(Path::new("127.0.0.1"), "cannot find a free loopback port", e))
}
