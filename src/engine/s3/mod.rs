//! An S3 object store: each blob one object, `PREFIX` then its key in ten
//! digits, in one bucket, through the S3 API (`rusty-s3` signing, `ureq`
//! sending; see [`client`]).
//!
//! A dataset is a directory holding `blobbench-s3.json` (bucket, prefix,
//! and the endpoint of a store the user runs; never a credential) and
//! either a throwaway server's own directory (`--s3-server`: OpenStack
//! Swift in `swift/`, SeaweedFS in `seaweedfs/`; see [`provider`]),
//! started for the run and stopped after it, or nothing more when the
//! objects live in a store the user runs (`--s3 URL --s3-bucket NAME` at
//! export, credentials as the AWS CLI finds them: [`credentials`]). There
//! blobbench writes only under its own
//! prefix, marked by a `blobbench-dataset.json` object, and never makes
//! or deletes a bucket.
//!
//! One **read** is one GET whose whole body is copied into the session's
//! reused buffer; see [`session`] for the writes. A PUT that returned is
//! as stored as the server makes it (Swift fsyncs each object before it
//! answers; the crash test finds out for the others), so there is nothing
//! to commit.

mod build;
mod client;
mod credentials;
mod datasets;
mod delete;
mod descriptor;
#[cfg(test)]
mod fake;
mod fill;
mod inflight;
mod keys;
mod kind;
mod listing;
mod lock;
mod multipart;
mod net;
mod process;
pub mod provider;
mod reach;
mod refusal;
mod remote;
mod remove;
mod retry;
pub mod seaweedfs;
mod servers;
mod session;
mod stat;
pub mod swift;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use client::parse_endpoint;
pub use datasets::{drop_command, drop_dataset, drop_prefix, list_datasets, Dropped, StoreDataset};
pub use descriptor::{check_bucket, prefix_for, Descriptor, DESCRIPTOR};
pub use fill::BYTES_IN_FLIGHT;
pub use inflight::IN_FLIGHT;
pub use lock::{DatasetLock, Holding, HOLDER};
pub use multipart::PART_SIZE;
pub use net::{in_clear, proxy_for, read_ca, CONNECT_TIMEOUT, STALL_ENV, STALL_TIMEOUT};
pub use remove::Removed;
pub use servers::{names as server_names, Server};

use reach::Reach;

use crate::engine::api::{Engine, OpenMode, Session, Survey};
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig, WriteSettings};
use crate::engine::keep::Idle;
use crate::engine::report::{ExportReport, StatReport};
use crate::engine::sizes::KnownSizes;
use crate::records::{ConfigId, EngineKind, EngineSettings, S3Params, ServerInfo, ServerSetting};
use crate::util::progress::Progress;
use crate::{Error, Result};

pub(crate) use kind::KIND;

/// The endpoints of the stores the S3 dataset at `dir` has objects in
/// (its own and those of the datasets it replaces); none when it is not
/// one, or is on a throwaway server.
pub fn endpoints_of(dir: &Path) -> Vec<String> {
    let Ok(desc) = Descriptor::read(dir) else { return Vec::new() };
    let mut all: Vec<String> =
        std::iter::once(&desc).chain(&desc.replaces).filter_map(|d| d.endpoint.clone()).collect();
    all.sort();
    all.dedup();
    all
}

pub(crate) struct S3Backend;

pub(crate) static BACKEND: S3Backend = S3Backend;

impl Backend for S3Backend {
    fn kind(&self) -> EngineKind {
        KIND
    }

    fn claim(&self, probe: &Probe) -> Claim {
        Claim::yes_if(probe.is_dir && descriptor::detect(probe.path))
    }

    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport> {
        build::build(db, target, force, &settings.s3, progress)
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        Box::new(S3Engine::new(path, settings))
    }

    fn stat(&self, path: &Path, vacuum: bool, settings: &EngineSettings) -> Result<StatReport> {
        if vacuum {
            return Err(Error::invalid("--vacuum applies to SQLite databases only"));
        }
        stat::stat(path, &settings.s3).map(StatReport::Server)
    }

    /// The throwaway server's data directory (Swift's devices: every
    /// replica, and the container and account databases); none for a
    /// store the user runs.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        match (Descriptor::read(path)?.local(), Server::of_dataset(path)) {
            (true, Some(server)) => Ok(LocalBytes::In(vec![server.data_dir(path)?])),
            (true, None) => Err(Error::bad_input(path, "holds no throwaway S3 server's directory")),
            (false, _) => {
                Ok(LocalBytes::Remote("objects in a store you run (--s3), whose disks are not blobbench's".into()))
            }
        }
    }

    fn timer_covers(&self, _settings: &EngineSettings) -> &'static str {
        "connect (one GET) + loop + close; commit is nothing: a PUT that returned is stored"
    }

    /// One PUT per write, acknowledged once the server says it is stored;
    /// the crash test SIGKILLs the throwaway server's processes, restarts
    /// them and reads every blob back (each server's facts: `docs/s3.md`).
    fn write_configs(&self) -> &'static [WriteConfig] {
        &WRITE_CONFIGS
    }

    fn reap_killed(&self, workdir: &Path) -> Result<usize> {
        servers::reap_killed(workdir)
    }

    /// A throwaway server needs its programs (`--s3-server` names it, and
    /// an unknown name is refused here); a store the user runs needs its
    /// endpoint and the environment's credentials.
    fn preflight(&self, settings: &EngineSettings, _target: Option<&Path>) -> Result<()> {
        match &settings.s3.url {
            Some(url) => reach::user_store(url, settings.s3.bucket.as_deref().unwrap_or("-"), &settings.s3).map(drop),
            None => Server::from_setting(settings.s3.server.as_deref())?.check_installed(),
        }
    }
}

const WRITE_CONFIGS: [WriteConfig; 1] = [WriteConfig::new(
    ConfigId::Durable(KIND),
    "S3 PUT on a throwaway server (--s3-server), acknowledged as stored; its processes SIGKILLed",
    WriteSettings::Commit,
)
.durable()
.atomic()
.server(servers::kill_servers)];

/// The dataset at `path` opened for runs; its store is reached (the
/// cluster started) in `survey` and let go when the engine is dropped.
pub struct S3Engine {
    path: PathBuf,
    /// A run's `--s3` (checked against the descriptor's endpoint), CA file
    /// and addressing.
    s3: S3Params,
    reach: Mutex<Option<Arc<Reach>>>,
    sizes: Arc<KnownSizes<u64>>,
    /// Blobs of this size or more are PUT in parts (`--s3-multipart-threshold`).
    multipart_threshold: u64,
    info: Mutex<Option<ServerInfo>>,
    /// Clients (keep-alive connections) kept open by read sessions.
    idle: Idle<client::Client>,
}

impl S3Engine {
    pub fn new(path: &Path, settings: &EngineSettings) -> Self {
        S3Engine {
            path: path.to_path_buf(),
            s3: settings.s3.clone(),
            reach: Mutex::new(None),
            sizes: Arc::default(),
            multipart_threshold: settings.s3.multipart_threshold,
            info: Mutex::new(None),
            idle: Idle::new(),
        }
    }

    fn reach(&self) -> Result<Arc<Reach>> {
        let mut slot = self.reach.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = slot.as_ref() {
            return Ok(r.clone());
        }
        let r = Arc::new(Reach::for_dataset(&self.path, &self.s3)?);
        *slot = Some(r.clone());
        Ok(r)
    }

    /// The blobs' sizes from a listing, made once (a survey makes it; a
    /// session opened without one, the crash test's writer, makes it then).
    fn list(&self, reach: &Reach) -> Result<()> {
        self.sizes.ensure(|| reach.list_blobs(&reach.client()))
    }
}

impl Engine for S3Engine {
    fn kind(&self) -> EngineKind {
        KIND
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        if for_writes {
            multipart::check_threshold(self.multipart_threshold)?;
        }
        let reach = self.reach()?;
        if for_writes {
            reach.check_writable()?;
        }
        let sizes = reach.list_blobs(&reach.client())?;
        let max_key = sizes.keys().copied().max().ok_or_else(|| {
            Error::bad_input(
                &self.path,
                format!("is an {} dataset with no blobs ({})", KIND.name(), stat::blobs_in(&reach)),
            )
        })?;
        let blob_max = if for_writes { sizes.values().copied().max().unwrap_or(0) } else { 0 };
        let blob_max = u32::try_from(blob_max).map_err(|_| {
            Error::bad_input(&self.path, "holds a blob over 4 GB: writes are measured on blobs under 4 GB")
        })?;
        let info = server_info(&reach, &sizes, self.multipart_threshold);
        self.sizes.set(sizes);
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(info);
        Ok(Survey { max_key: Some(max_key), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        let reach = self.reach()?;
        if mode.write {
            multipart::check_threshold(self.multipart_threshold)?;
            reach.check_writable()?;
            if mode.client.is_none() {
                self.idle.clear();
            }
            self.list(&reach)?;
        }
        let client = self.idle.lease(mode.keep, || Ok(reach.client()))?;
        let sizes = self.sizes.clone();
        Ok(Box::new(session::S3Session::open(client, reach, sizes, self.multipart_threshold, mode)?))
    }

    /// The throwaway server's files (a remote store's are not ours to
    /// evict); a cold run drops them from the page cache after
    /// [`Engine::drop_own_caches`] emptied the server's own caches.
    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        let Some(server) = Server::of_dataset(&self.path) else { return Ok(Vec::new()) };
        let data = server.data_dir(&self.path)?;
        if !data.is_dir() {
            return Ok(Vec::new());
        }
        crate::engine::kv::dataset_files(&data)
    }

    fn server_info(&self) -> Option<ServerInfo> {
        self.info.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The blobs the bucket's listing shows under the prefix: Swift keeps
    /// listings in its container databases, fed apart from the objects'
    /// own writes and without an fsync of their own; SeaweedFS in its
    /// filer's metadata store, apart from the volumes.
    fn listed_keys(&self) -> Result<Option<Vec<u32>>> {
        let reach = self.reach()?;
        let mut keys: Vec<u32> = reach.list_blobs(&reach.client())?.into_keys().collect();
        keys.sort_unstable();
        Ok(Some(keys))
    }

    /// A GET may be answered by a replica that missed a write a crash cut
    /// short (Swift's proxy acknowledges a PUT on a quorum), until the
    /// server's replicators repair it.
    fn may_serve_stale(&self) -> bool {
        true
    }

    /// Empties the throwaway server's own caches (see each server's
    /// [`provider::Provider::drop_caches`]); a store the user runs is left
    /// alone.
    fn drop_own_caches(&self) -> Result<()> {
        self.idle.clear();
        self.reach()?.provider.drop_caches()
    }
}

/// What a run records about the store, and how its blobs are PUT: one
/// PUT each, or a multipart upload for those at or above the threshold.
fn server_info(reach: &Reach, sizes: &HashMap<u32, u64>, threshold: u64) -> ServerInfo {
    let setting = |name: &str, value: String| ServerSetting { name: name.into(), value };
    let large = sizes.values().filter(|&&s| s >= threshold).count();
    let put = match large {
        0 => format!("one PUT per blob (every blob under the multipart threshold, {threshold} bytes)"),
        n => format!(
            "multipart upload for {n} of {} blobs (at or above {threshold} bytes, parts of {} bytes), one PUT for the rest",
            sizes.len(),
            multipart::PART_SIZE
        ),
    };
    let (product, version) = reach.provider.product();
    let place = reach.provider.place();
    let mut settings = reach.provider.settings();
    settings.push(setting("put", put));
    if reach.desc.endpoint.is_some() {
        settings.push(setting("proxy", reach.store.net.proxy_label()));
    }
    if let Some(from) = reach.store.credentials_from() {
        settings.push(setting("credentials", from));
    }
    ServerInfo { product, version, place, blobs_in: stat::blobs_in(reach), settings }
}

#[cfg(test)]
mod tests;
