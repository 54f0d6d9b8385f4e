//! External blobs, the layout of SQLite's internal-vs-external study: the
//! blobs as flat files in `blobs/` and a database of their names,
//! `names.db` (`ext(k INTEGER PRIMARY KEY, name TEXT)`), in one directory.
//! The store is `store.rs`, the build `build.rs`.

pub mod build;
mod layout;
mod store;

use std::path::{Path, PathBuf};

pub use layout::{BLOBS_DIR, KIND, NAMES_DB};
pub use store::ExternalStore;

use layout::is_dataset;

use crate::engine::api::{Engine, OpenMode, Session, Survey};
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig};
use crate::engine::files::{self, names::blob_files, names::list_keys};
use crate::engine::keep::Idle;
use crate::engine::report::{ExportReport, StatReport};
use crate::records::{CommitEvery, EngineKind, EngineSettings, FileParams};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// The external layout's backend.
pub struct ExternalBackend;

pub static BACKEND: ExternalBackend = ExternalBackend;

impl Backend for ExternalBackend {
    fn kind(&self) -> EngineKind {
        KIND
    }

    fn claim(&self, probe: &Probe) -> Claim {
        Claim::yes_if(probe.is_dir && is_dataset(probe.path))
    }

    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        _settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport> {
        build::build(db, target, force, progress)
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        Box::new(ExternalEngine::new(path, settings))
    }

    /// What its blob directory holds (the names add a few pages).
    fn stat(&self, path: &Path, vacuum: bool, settings: &EngineSettings) -> Result<StatReport> {
        files::FLAT.stat(&path.join(BLOBS_DIR), vacuum, settings)
    }

    /// The name database and the blob directory, both in the dataset's.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        Ok(LocalBytes::In(vec![path.to_path_buf()]))
    }

    fn timer_covers(&self, _settings: &EngineSettings) -> &'static str {
        "open of the name database + loop + commit + close"
    }

    /// Its writes are the files' (the crash test's file modes).
    fn write_configs(&self) -> &'static [WriteConfig] {
        &[]
    }

    /// An embedded engine leaves no process behind.
    fn reap_killed(&self, _workdir: &Path) -> Result<usize> {
        Ok(0)
    }

    /// An embedded engine needs nothing beyond the crate.
    fn preflight(&self, _settings: &EngineSettings, _target: Option<&Path>) -> Result<()> {
        Ok(())
    }
}

/// External blobs: a database of names (`names.db`) and the files it names
/// (`blobs/`), both inside one dataset directory, or at paths of their own
/// (the matrix shares one directory of files between page sizes).
pub struct ExternalEngine {
    dir: PathBuf,
    names_db: PathBuf,
    files: PathBuf,
    cache_pages: i64,
    /// How writes write the named files.
    writes: FileParams,
    /// A commit granularity was asked for (refused for writes: see `survey`).
    commit_every: CommitEvery,
    /// Name-database connections read sessions kept open (`engine::keep`).
    idle: Idle<rusqlite::Connection>,
}

impl ExternalEngine {
    pub fn new(dir: &Path, settings: &EngineSettings) -> Self {
        let mut engine = Self::at(dir, &dir.join(NAMES_DB), &dir.join(BLOBS_DIR), settings.db.cache_size);
        engine.writes = settings.files;
        engine.commit_every = settings.commit_every;
        engine
    }

    /// An external store whose name database and files are where given.
    pub fn at(dir: &Path, names_db: &Path, files: &Path, cache_pages: i64) -> Self {
        ExternalEngine {
            dir: dir.to_path_buf(),
            names_db: names_db.to_path_buf(),
            files: files.to_path_buf(),
            cache_pages,
            writes: FileParams::default(),
            commit_every: None,
            idle: Idle::new(),
        }
    }
}

impl Engine for ExternalEngine {
    /// In process: no server.
    fn server_info(&self) -> Option<crate::records::ServerInfo> {
        None
    }

    fn kind(&self) -> EngineKind {
        KIND
    }

    fn path(&self) -> &Path {
        &self.dir
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        let keys = list_keys(&self.files, files::FLAT_KIND)?;
        let mut blob_max = 0u32;
        if for_writes && (self.commit_every.is_some() || self.writes.sync_dir) {
            return Err(Error::invalid(
                "--commit-every does not apply to the external layout: its writes rewrite the files its name \
                 database names and commit nothing (write the files as a files layout to time them)",
            ));
        }
        if for_writes {
            crate::util::fsutil::check_writable_file(&self.names_db)?;
            crate::util::fsutil::check_writable_file(&self.files)?;
            for f in blob_files(&self.files, files::FLAT_KIND)? {
                let len = std::fs::metadata(&f).map_err(|e| Error::io(&f, "cannot stat", e))?.len();
                blob_max = blob_max.max(u32::try_from(len).unwrap_or(u32::MAX));
            }
        }
        Ok(Survey { max_key: keys.last().copied(), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        if mode.write {
            self.idle.clear();
        }
        let writes = mode.write.then_some(self.writes);
        let conn = self.idle.lease(mode.keep, || store::connect(&self.names_db, self.cache_pages))?;
        Ok(Box::new(ExternalStore::on(conn, &self.names_db, &self.files, writes)?))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        let mut list = blob_files(&self.files, files::FLAT_KIND)?;
        list.push(self.names_db.clone());
        Ok(list)
    }

    /// Closes the kept name-database connections and their page caches.
    fn drop_own_caches(&self) -> Result<()> {
        self.idle.clear();
        Ok(())
    }
}
