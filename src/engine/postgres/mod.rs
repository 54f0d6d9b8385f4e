//! PostgreSQL, through the synchronous `postgres` crate: `postgres` keeps
//! the blobs in `kv(k bigint primary key, v bytea)`, `postgres-lo` as large
//! objects (`k bigint primary key, o oid`, content through the server's
//! large-object functions).
//!
//! A dataset is a directory holding `blobbench-postgres.json` (the engine,
//! the table, the column storage) and either the throwaway cluster itself
//! (`pgdata/`, started by [`server::Cluster`] for the run and stopped after
//! it) or nothing more when the table lives on a server the user runs
//! (`--pg URL`, given again at each run). On such a server blobbench only
//! ever writes to the table it created, which carries a comment naming it
//! blobbench's.
//!
//! One **read** is one prepared `SELECT` whose binary result is copied into
//! the session's reused buffer; see [`session`] for the writes.

mod build;
mod conn;
mod descriptor;
pub mod replica;
pub mod replication;
pub mod server;
mod session;
mod stat;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use build::{build, remote_table_name};
pub use conn::{redact, MIN_VERSION_NUM};
pub use descriptor::{Descriptor, DESCRIPTOR};

use descriptor::detect;
pub use stat::{stat, PgStat};

use crate::engine::api::{Engine, OpenMode, Session, Survey};
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig, WriteSettings};
use crate::engine::keep::Idle;
use crate::engine::report::{ExportReport, StatReport};
use crate::engine::sizes::KnownSizes;
use crate::engine::throwaway::hosts::Replicated;
use crate::records::{
    CommitEvery, ConfigId, EngineKind, EngineSettings, KvParams, PgParams, PgServerInfo, Replica, ServerInfo,
};
use crate::util::progress::Progress;
use crate::{Error, Result};

pub(crate) const KIND: EngineKind = EngineKind::Postgres;
pub(crate) const KIND_LO: EngineKind = EngineKind::PostgresLo;

/// One backend per table layout: bytea rows, or large objects.
pub(crate) struct PgBackend(EngineKind);

pub(crate) static BYTEA: PgBackend = PgBackend(KIND);
pub(crate) static LARGE_OBJECTS: PgBackend = PgBackend(KIND_LO);

impl Backend for PgBackend {
    fn kind(&self) -> EngineKind {
        self.0
    }

    fn claim(&self, probe: &Probe) -> Claim {
        Claim::yes_if(probe.is_dir && detect(probe.path) == Some(self.0))
    }

    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport> {
        build(self.0, db, target, force, &settings.pg, progress)
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        Box::new(PgEngine::new(self.0, path, settings))
    }

    fn stat(&self, path: &Path, vacuum: bool, settings: &EngineSettings) -> Result<StatReport> {
        if vacuum {
            return Err(Error::invalid("--vacuum applies to SQLite databases only"));
        }
        stat(path, &settings.pg).map(|s| StatReport::Server(s.into()))
    }

    /// The dataset's directory, throwaway cluster included; none for a
    /// table on a server the user runs.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        if Descriptor::read(path)?.remote {
            return Ok(LocalBytes::Remote(
                "a table on a server you run (--pg), whose files are not blobbench's".into(),
            ));
        }
        Ok(LocalBytes::In(vec![path.to_path_buf()]))
    }

    fn timer_covers(&self, _settings: &EngineSettings) -> &'static str {
        "connect and prepare + loop + commit + close"
    }

    /// One UPDATE per transaction with `synchronous_commit` on or off; the
    /// crash test SIGKILLs the server's processes (the client alone would
    /// leave the writes to the server, untouched), then restarts it.
    fn write_configs(&self) -> &'static [WriteConfig] {
        if self.0 == KIND_LO {
            &WRITE_CONFIGS_LO
        } else {
            &WRITE_CONFIGS
        }
    }

    /// Both kinds reap the same clusters; the second call finds none.
    fn reap_killed(&self, workdir: &Path) -> Result<usize> {
        server::reap_killed(workdir)
    }

    /// A throwaway cluster needs `initdb` and `pg_ctl` (and, as root, the
    /// `postgres` user); a server the user runs (`--pg`) needs nothing here.
    /// Any dataset path works: a socket that would not fit there goes to a
    /// short directory of its own ([`server::socket_dir_for`]).
    /// A replicated layout needs `pg_basebackup` too.
    fn preflight(&self, settings: &EngineSettings, _target: Option<&Path>) -> Result<()> {
        if settings.pg.url.is_some() {
            return Ok(());
        }
        server::check_installed()?;
        match settings.replica {
            Some(_) => replica::check_installed(),
            None => Ok(()),
        }
    }
}

/// A transactional write whose server the crash test SIGKILLs.
const fn server_config(id: ConfigId, description: &'static str) -> WriteConfig {
    WriteConfig::new(id, description, WriteSettings::Commit).atomic().server(server::kill_server)
}

/// A durable commit on a primary and a standby on two throwaway hosts
/// (`replica`), one of which the machine-loss test loses.
const fn replicated_config(id: ConfigId, description: &'static str) -> WriteConfig {
    let ConfigId::Replicated(_, replica) = id else { panic!("a replicated configuration's id") };
    server_config(id, description).durable().replicated(replica)
}

const WRITE_CONFIGS: [WriteConfig; 4] = [
    server_config(ConfigId::Durable(KIND), "PostgreSQL bytea, synchronous_commit=on, server SIGKILLed").durable(),
    server_config(ConfigId::Fast(KIND), "PostgreSQL bytea, synchronous_commit=off, server SIGKILLed"),
    replicated_config(
        ConfigId::Replicated(KIND, Replica::SyncStandby),
        "PostgreSQL bytea, a primary and a synchronous standby on two hosts, synchronous_commit=on, a host lost",
    ),
    replicated_config(
        ConfigId::Replicated(KIND, Replica::AsyncStandby),
        "PostgreSQL bytea, a primary and an asynchronous standby on two hosts, synchronous_commit=on, a host lost",
    ),
];

const WRITE_CONFIGS_LO: [WriteConfig; 4] = [
    server_config(ConfigId::Durable(KIND_LO), "PostgreSQL large objects, synchronous_commit=on, server SIGKILLed")
        .durable(),
    server_config(ConfigId::Fast(KIND_LO), "PostgreSQL large objects, synchronous_commit=off, server SIGKILLed"),
    replicated_config(
        ConfigId::Replicated(KIND_LO, Replica::SyncStandby),
        "PostgreSQL large objects, a primary and a synchronous standby on two hosts, synchronous_commit=on, a host lost",
    ),
    replicated_config(
        ConfigId::Replicated(KIND_LO, Replica::AsyncStandby),
        "PostgreSQL large objects, a primary and an asynchronous standby on two hosts, synchronous_commit=on, a host lost",
    ),
];

/// The dataset at `path` opened for runs; the server starts (or is
/// reached) in `survey` and stops when the engine is dropped.
pub struct PgEngine {
    path: PathBuf,
    kind: EngineKind,
    kv: KvParams,
    commit_every: CommitEvery,
    pg: PgParams,
    /// The replicated layout the dataset is copied onto, when asked.
    replica: Option<Replica>,
    /// Connections read sessions kept open (`engine::keep`): each a server
    /// backend with its own caches. Declared before the server, so they
    /// close before it stops.
    idle: Idle<postgres::Client>,
    server: Mutex<Option<Arc<conn::Server>>>,
    info: Mutex<Option<PgServerInfo>>,
    /// The blobs' sizes, so an overwrite is one round trip.
    sizes: Arc<KnownSizes>,
}

impl PgEngine {
    pub fn new(kind: EngineKind, path: &Path, settings: &EngineSettings) -> Self {
        PgEngine {
            path: path.to_path_buf(),
            kind,
            kv: settings.kv,
            commit_every: settings.commit_every,
            pg: settings.pg.clone(),
            replica: settings.replica,
            server: Mutex::new(None),
            info: Mutex::new(None),
            idle: Idle::new(),
            sizes: Arc::default(),
        }
    }

    fn server(&self) -> Result<Arc<conn::Server>> {
        let mut slot = self.server.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let desc = Descriptor::read(&self.path)?;
        if desc.engine != self.kind {
            return Err(Error::bad_input(
                &self.path,
                format!("is a {} dataset, not {}", desc.engine.name(), self.kind.name()),
            ));
        }
        let s = Arc::new(conn::Server::for_dataset(&self.path, desc, self.pg.url.as_deref(), self.replica)?);
        *slot = Some(s.clone());
        Ok(s)
    }
}

impl Engine for PgEngine {
    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        let server = self.server()?;
        let mut client = server.connect()?;
        server.check_table(&mut client)?;
        let mut info = conn::server_info(&mut client, &server)?;
        info.synchronous_commit = session::sync_setting(self.kv.sync).to_string();
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(info);
        let mut blob_max = 0;
        if for_writes {
            let sizes = stat::sizes(&mut client, &server)?;
            blob_max = sizes.values().copied().max().unwrap_or(0);
            self.sizes.set(sizes);
        }
        let max_key = stat::max_key(&mut client, &server)?
            .ok_or_else(|| Error::bad_input(&self.path, format!("is a {} dataset with no blobs", self.kind.name())))?;
        Ok(Survey { max_key: Some(max_key), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        let server = self.server()?;
        if mode.write {
            if mode.client.is_none() {
                self.idle.clear();
            }
            // A writer opened without a survey (the crash test's) lists them now.
            self.sizes.ensure(|| stat::sizes(&mut server.connect()?, &server))?;
        }
        let client = self.idle.lease(mode.keep, || server.connect())?;
        // A client commits every write unless told otherwise (`OpenMode::client`).
        let commit_every = self.commit_every.or(mode.client.map(|_| 1)).filter(|_| mode.write);
        let sizes = self.sizes.clone();
        Ok(Box::new(session::PgSession::open(
            client,
            server,
            sizes,
            (mode.write, mode.client.is_some()),
            self.kv,
            commit_every,
        )?))
    }

    /// The cluster's files (a remote server's are not ours to evict); a
    /// cold run drops them from the page cache after
    /// [`Engine::drop_own_caches`] emptied `shared_buffers`.
    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        let data = self.path.join(server::DATA_DIR);
        if !data.is_dir() {
            return Ok(Vec::new());
        }
        crate::engine::kv::dataset_files(&data.join("base"))
    }

    fn server_info(&self) -> Option<ServerInfo> {
        self.info.lock().unwrap_or_else(|e| e.into_inner()).clone().map(ServerInfo::from)
    }

    /// The replicated cluster the dataset runs on (started now when it is
    /// not yet): the machine-loss test loses its hosts.
    fn replicated(&self) -> Result<Option<Arc<Mutex<dyn Replicated + Send>>>> {
        if self.replica.is_none() {
            return Ok(None);
        }
        let replica = self.server()?.replica();
        Ok(replica.map(|r| r as Arc<Mutex<dyn Replicated + Send>>))
    }

    /// Closes the kept connections, then restarts the throwaway cluster,
    /// which empties its `shared_buffers` (a fast shutdown writes a
    /// checkpoint, then a new server starts, both outside the timer). A
    /// server the user runs is left alone: its buffers stay warm, and the
    /// run's `params.server_info` says it is remote.
    fn drop_own_caches(&self) -> Result<()> {
        self.idle.clear();
        let mut slot = self.server.lock().unwrap_or_else(|e| e.into_inner());
        let Some(server) = slot.take_if(|s| s.local() && s.replica().is_none()) else { return Ok(()) };
        let server = Arc::try_unwrap(server)
            .map_err(|_| Error::invalid("cannot restart the PostgreSQL server while a session uses it"))?;
        server.stop()?;
        drop(slot);
        self.server().map(|_| ())
    }
}

#[cfg(test)]
mod tests;
