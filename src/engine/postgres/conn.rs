//! Reaching the server: blobbench's throwaway cluster over its Unix socket,
//! or the user's own server (`--pg URL`); checking that it is recent enough
//! and that the table is blobbench's; one-line errors.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::{Client, Config, NoTls};

#[cfg(test)]
use super::descriptor::plain_name;
use super::descriptor::Descriptor;
use super::replica::PgReplicated;
use super::server::{self, Cluster};
use crate::engine::throwaway::Lease;
use crate::records::{EngineKind, PgServerInfo, Replica};
use crate::{Error, Result};

/// The oldest server accepted: PostgreSQL 10 (`lo_from_bytea`, `lo_put`,
/// `lo_get`, binary COPY and `ON CONFLICT` are all older).
pub const MIN_VERSION_NUM: u32 = 100_000;

/// How long a connection attempt may take before it is an error.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The database made in a throwaway cluster.
pub(super) const LOCAL_DB: &str = "blobbench";

/// The comment marking a table as blobbench's (the only kind of table it
/// writes to, or drops, on a user's server).
pub(super) fn marker(kind: EngineKind) -> String {
    format!("blobbench {} dataset", kind.name())
}

/// Where the table lives and how to reach it.
pub(super) struct Server {
    /// Held for its drop: the last holder's stops the throwaway cluster.
    cluster: Option<Arc<Lease<Cluster>>>,
    /// The dataset copied onto a replicated cluster of throwaway hosts (a
    /// replicated configuration's), which the connections reach instead.
    replica: Option<Arc<Mutex<PgReplicated>>>,
    config: Config,
    /// What errors name: the dataset directory or the redacted URL.
    pub label: PathBuf,
    pub desc: Descriptor,
}

impl Server {
    /// The server of the dataset in `dir`: its throwaway cluster, started
    /// now, or the user's server at `url`.
    pub fn for_dataset(dir: &Path, desc: Descriptor, url: Option<&str>, replica: Option<Replica>) -> Result<Server> {
        match (desc.remote, url, replica) {
            (true, None, _) => Err(Error::bad_input(dir, "is a table on a server you run; give its URL with --pg")),
            (false, Some(_), _) => Err(Error::bad_input(dir, "holds its own throwaway cluster; run it without --pg")),
            (true, Some(url), Some(r)) => Err(Error::bad_input(
                &PathBuf::from(redact(url)),
                format!(
                    "a server you run is replicated as you run it, not as {}; blobbench reads its replication \
                     instead (advise --durability replicated --pg URL)",
                    r.suffix()
                ),
            )),
            (true, Some(url), None) => {
                Ok(Server { cluster: None, replica: None, config: parse_url(url)?, label: redact(url).into(), desc })
            }
            (false, None, None) => {
                let cluster = Cluster::shared(dir)?;
                let config = local_config(&cluster.socket_dir(), LOCAL_DB);
                Ok(Server { cluster: Some(cluster), replica: None, config, label: dir.to_path_buf(), desc })
            }
            (false, None, Some(r)) => {
                let standby = PgReplicated::standby_of(r).ok_or_else(|| {
                    crate::engine::throwaway::hosts::no_replicas(&format!("PostgreSQL laid out as {}", r.suffix()))
                })?;
                // The dataset's own cluster runs only while it is copied.
                let seeded = {
                    let cluster = Cluster::shared(dir)?;
                    PgReplicated::create_from(dir, standby, &cluster.socket_dir())?
                };
                let config = seeded.client_config(LOCAL_DB);
                let replica = Some(Arc::new(Mutex::new(seeded)));
                Ok(Server { cluster: None, replica, config, label: dir.to_path_buf(), desc })
            }
        }
    }

    /// The replicated cluster the dataset was copied onto, when it was.
    pub fn replica(&self) -> Option<Arc<Mutex<PgReplicated>>> {
        self.replica.clone()
    }

    /// Stops the throwaway cluster now (its errors returned, unlike a
    /// drop's); refused while another engine of this run shares it.
    pub fn stop(mut self) -> Result<()> {
        match self.cluster.take().map(Arc::try_unwrap) {
            None => Ok(()),
            Some(Ok(lease)) => lease.stop(),
            Some(Err(_)) => {
                Err(Error::invalid("cannot stop the PostgreSQL server while another engine of this run uses it"))
            }
        }
    }

    /// A throwaway cluster, alone or replicated (not a server the user runs).
    pub fn local(&self) -> bool {
        self.cluster.is_some() || self.replica.is_some()
    }

    pub fn table(&self) -> &str {
        &self.desc.table
    }

    /// A connection; to a replicated cluster without the probe (each of
    /// its waits is bounded by its own configuration, and a lost host
    /// must not stop the client from trying the next).
    pub fn connect(&self) -> Result<Client> {
        match self.replica {
            Some(_) => connect_unprobed(&self.config, &self.label),
            None => connect(&self.config, &self.label),
        }
    }

    /// The table exists, is blobbench's and of this engine.
    pub fn check_table(&self, client: &mut Client) -> Result<()> {
        let comment: Option<Option<String>> = client
            .query_opt(
                "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c \
                 WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace",
                &[&self.table()],
            )
            .map_err(|e| pg_error(&self.label, "cannot look up the table", e))?
            .map(|r| r.get(0));
        let want = marker(self.desc.engine);
        match comment {
            None => Err(Error::bad_input(&self.label, format!("has no table {}", self.table()))),
            Some(c) if c.as_deref() == Some(want.as_str()) => Ok(()),
            Some(_) => Err(Error::bad_input(
                &self.label,
                format!("table {} is not blobbench's (no '{want}' comment); refusing to touch it", self.table()),
            )),
        }
    }
}

/// A connection, its server's version checked.
pub(super) fn connect(config: &Config, label: &Path) -> Result<Client> {
    probe(config, label)?;
    connect_unprobed(config, label)
}

/// [`connect`] without the probe.
fn connect_unprobed(config: &Config, label: &Path) -> Result<Client> {
    let mut client = config.connect(NoTls).map_err(|e| pg_error(label, "cannot connect", e))?;
    let num: String = client
        .query_one("SHOW server_version_num", &[])
        .map_err(|e| pg_error(label, "cannot read the server's version", e))?
        .get(0);
    check_version(num.trim().parse().unwrap_or(0)).map_err(|why| Error::bad_input(label, why))?;
    Ok(client)
}

/// The client's connect timeout covers the TCP connect only: a port held
/// by something that accepts and never answers would hang the handshake.
/// So each TCP host is first asked PostgreSQL's SSLRequest, which a server
/// answers at once with one byte ('S' or 'N').
fn probe(config: &Config, label: &Path) -> Result<()> {
    use std::io::{Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    let ports = config.get_ports();
    for (i, host) in config.get_hosts().iter().enumerate() {
        let postgres::config::Host::Tcp(name) = host else { continue };
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let fail = |why: String| Error::bad_input(label, format!("cannot connect to {name}:{port}: {why}"));
        let addr = (name.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| fail(e.to_string()))?
            .next()
            .ok_or_else(|| fail("no address".into()))?;
        let mut s = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(|e| fail(e.to_string()))?;
        s.set_read_timeout(Some(CONNECT_TIMEOUT))
            .and_then(|_| s.set_write_timeout(Some(CONNECT_TIMEOUT)))
            .map_err(|e| fail(e.to_string()))?;
        // SSLRequest: length 8, code 80877103.
        s.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).map_err(|e| fail(e.to_string()))?;
        let mut answer = [0u8; 1];
        match s.read(&mut answer) {
            Ok(1) if matches!(answer[0], b'S' | b'N') => {}
            Ok(_) => return Err(fail("what answers there is not a PostgreSQL server".into())),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(fail(format!("no answer in {} s; is it a PostgreSQL server?", CONNECT_TIMEOUT.as_secs())))
            }
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    Ok(())
}

/// Refuses a server older than [`MIN_VERSION_NUM`].
pub(super) fn check_version(num: u32) -> std::result::Result<(), String> {
    if num < MIN_VERSION_NUM {
        return Err(format!(
            "the server is PostgreSQL {}.{}; blobbench needs PostgreSQL 10 or newer",
            num / 10_000,
            num / 100 % 100
        ));
    }
    Ok(())
}

/// A throwaway cluster's connection: its socket, its superuser, no TCP.
pub(super) fn local_config(socket_dir: &Path, db: &str) -> Config {
    let mut c = Config::new();
    c.host_path(socket_dir).port(server::PORT).user(server::USER).dbname(db).connect_timeout(CONNECT_TIMEOUT);
    c
}

/// `--pg URL`: a `postgresql://` URL or a `key=value` string.
pub(super) fn parse_url(url: &str) -> Result<Config> {
    let mut c: Config = url
        .parse()
        .map_err(|e| Error::invalid(format!("--pg {}: not a PostgreSQL connection URL: {e}", redact(url))))?;
    if c.get_hosts().is_empty() {
        return Err(Error::invalid(format!("--pg {}: the URL names no host", redact(url))));
    }
    if c.get_connect_timeout().is_none() {
        c.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok(c)
}

/// The URL without its password, for messages and result files.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.split_whitespace().filter(|w| !w.starts_with("password=")).collect::<Vec<_>>().join(" ");
    };
    let rest = &url[scheme_end + 3..];
    let auth_end = rest.find('/').unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme_end + 3], &rest[at + 1..])
        }
        None => url.to_string(),
    }
}

/// What the server says about itself.
pub(super) fn server_info(client: &mut Client, server: &Server) -> Result<PgServerInfo> {
    let show = |client: &mut Client, what: &str| -> Result<String> {
        client
            .query_one(&format!("SHOW {what}"), &[])
            .map(|r| r.get(0))
            .map_err(|e| pg_error(&server.label, "cannot read the server's settings", e))
    };
    Ok(PgServerInfo {
        version: show(client, "server_version")?,
        version_num: show(client, "server_version_num")?.parse().unwrap_or(0),
        shared_buffers: show(client, "shared_buffers")?,
        synchronous_commit: show(client, "synchronous_commit")?,
        wal_level: show(client, "wal_level")?,
        fsync: show(client, "fsync")?,
        server: if server.local() { "local" } else { "remote" }.into(),
        table: server.table().to_string(),
        replication: server.replica.as_ref().map(|r| {
            use crate::engine::throwaway::hosts::Replicated;
            let r = r.lock().unwrap_or_else(|e| e.into_inner());
            format!("{}; {}", r.describe(), r.hosts().network().describe())
        }),
    })
}

/// One line: what failed, and the server's own message (or the socket's).
pub(super) fn pg_error(label: &Path, what: &str, e: postgres::Error) -> Error {
    let why = match e.as_db_error() {
        // The hint says what to do ("Check free disk space.").
        Some(db) => match db.hint() {
            Some(hint) => format!("{}: {} ({hint})", db.severity(), db.message()),
            None => format!("{}: {}", db.severity(), db.message()),
        },
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(cause) = src {
                let c = cause.to_string();
                if !s.contains(&c) {
                    s = format!("{s}: {c}");
                }
                src = cause.source();
            }
            s
        }
    };
    Error::bad_input(label, format!("{what}: {}", why.replace('\n', " ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_10_are_refused_naming_the_minimum() {
        let e = check_version(90_624).unwrap_err();
        assert!(e.contains("PostgreSQL 9.6") && e.contains("10 or newer"), "{e}");
        assert!(check_version(100_000).is_ok());
        assert!(check_version(150_014).is_ok());
        assert!(check_version(0).is_err(), "an unreadable version is refused");
    }

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(redact("postgresql://bob:secret@db.example:5433/x"), "postgresql://bob@db.example:5433/x");
        assert_eq!(redact("postgresql://db.example/x"), "postgresql://db.example/x");
        assert_eq!(redact("host=h password=secret user=u"), "host=h user=u");
    }

    #[test]
    fn malformed_urls_are_one_line_errors() {
        let e = parse_url("postgresql://[::1").unwrap_err().to_string();
        assert!(e.starts_with("--pg postgresql://[::1: not a PostgreSQL connection URL"), "{e}");
        assert!(!e.contains('\n'));
        assert!(parse_url("postgresql://u@localhost/db").is_ok());
    }

    #[test]
    fn only_plain_identifiers_are_table_names() {
        assert!(plain_name("blobbench_kv_1"));
        assert!(!plain_name("kv; drop table x"));
        assert!(!plain_name("Kv"));
        assert!(!plain_name(""));
    }
}
