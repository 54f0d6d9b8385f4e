//! One file per blob, in kvtest's two layouts: flat (`%06d` in one
//! directory) and tree (`%02d/%02d/%02d`). Each layout is its own engine
//! kind with its own backend; they share the store (`store.rs`) and its
//! libc calls (`calls.rs`, which external blobs use too), the names
//! (`names.rs`), the export (`export.rs`) and `stat` (`stat.rs`).

pub(crate) mod calls;
pub mod export;
pub mod names;
mod stat;
pub(crate) mod store;

use std::path::{Path, PathBuf};

use crate::engine::api::{Engine, OpenMode, Session, Survey};
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig, WriteSettings};
use crate::engine::report::{ExportReport, StatReport};
use crate::engine::staging::Staging;
use crate::records::{CommitEvery, ConfigId, EngineKind, EngineSettings, FileParams, FileWrite};
use crate::util::progress::Progress;
use crate::{Error, Result};
use names::{blob_files, blob_name, list_keys};
pub use store::FileStore;

/// The backend of one layout of blob files.
pub struct FilesBackend(EngineKind);

/// The two layouts' kinds, for the studies that compare files with SQLite
/// by design and for the external layout's blob directory.
pub const FLAT_KIND: EngineKind = EngineKind::Flat;
pub const TREE_KIND: EngineKind = EngineKind::Tree;

pub static FLAT: FilesBackend = FilesBackend(FLAT_KIND);
pub static TREE: FilesBackend = FilesBackend(TREE_KIND);

/// The layout `export --tree` asks for.
pub fn layout(tree: bool) -> EngineKind {
    if tree {
        TREE_KIND
    } else {
        FLAT_KIND
    }
}

impl Backend for FilesBackend {
    fn kind(&self) -> EngineKind {
        self.0
    }

    /// Any directory is a directory of blob files, unless another engine
    /// claims it; one with a `00` subdirectory is a tree (kvtest's rule).
    fn claim(&self, probe: &Probe) -> Claim {
        let tree = probe.is_dir && probe.path.join("00").is_dir();
        if probe.is_dir && tree == (self.0 == TREE_KIND) {
            Claim::Fallback
        } else {
            Claim::No
        }
    }

    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        _settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport> {
        let started = std::time::Instant::now();
        if std::fs::symlink_metadata(target).is_ok_and(|m| !m.is_dir()) {
            return Err(Error::bad_input(target, "exists and is not a directory"));
        }
        let staging = Staging::begin(target, force, self.0.name(), &export::check_previous)?;
        let (files, bytes) = export::write_files(db, &staging.path, self.0, progress)?;
        staging.finish()?;
        Ok(ExportReport {
            layout: self.0,
            files,
            bytes,
            elapsed_ns: started.elapsed().as_nanos() as u64,
            busy_retries: 0,
            multipart_blobs: 0,
            location: None,
        })
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        Box::new(FilesEngine::new(path, self.0, settings.files, settings.commit_every))
    }

    fn stat(&self, path: &Path, vacuum: bool, _settings: &EngineSettings) -> Result<StatReport> {
        if vacuum {
            return Err(Error::invalid("--vacuum applies to databases, not directories"));
        }
        stat::dir_stat(path, self.0).map(StatReport::Dir)
    }

    /// The directory of blob files.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        Ok(LocalBytes::In(vec![path.to_path_buf()]))
    }

    fn timer_covers(&self, settings: &EngineSettings) -> &'static str {
        if settings.files.sync_dir {
            "the loop + the commit's directory fsync (no open for files)"
        } else {
            "the loop only (no open or commit for files)"
        }
    }

    /// The crash test writes files in the flat layout (the tree's calls
    /// are the same).
    fn write_configs(&self) -> &'static [WriteConfig] {
        if self.0 == FLAT_KIND {
            WRITE_CONFIGS
        } else {
            &[]
        }
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

const fn files_config(
    id: ConfigId,
    description: &'static str,
    write: FileWrite,
    fsync: bool,
    sync_dir: bool,
) -> WriteConfig {
    WriteConfig::new(id, description, WriteSettings::Files { write, fsync, sync_dir })
}

/// No file write is atomic; one is durable once fsync'd where it lives (a
/// rename, with its directory fsync'd too). Advise's and aging's files are
/// written in place or by temp + rename.
const WRITE_CONFIGS: &[WriteConfig] = &[
    files_config(ConfigId::Truncate, "files, fopen(\"wb\") + fwrite (kvtest)", FileWrite::Truncate, false, false),
    files_config(ConfigId::TruncateFsync, "files, fopen(\"wb\") + fwrite + fsync", FileWrite::Truncate, true, false)
        .durable(),
    files_config(ConfigId::Inplace, "files, pwrite over the old bytes", FileWrite::Inplace, false, false)
        .power_cuts(0, 627, 0)
        .aged("Files, written in place"),
    files_config(ConfigId::InplaceFsync, "files, pwrite over the old bytes + fsync", FileWrite::Inplace, true, false)
        .durable()
        .power_cuts(1, 1, 0),
    files_config(ConfigId::Replace, "files, write a temporary file + rename", FileWrite::Replace, false, false)
        .power_cuts(0, 0, 0)
        .aged("Files, temp + rename"),
    files_config(
        ConfigId::ReplaceFsync,
        "files, write a temporary file + fsync + rename",
        FileWrite::Replace,
        true,
        false,
    ),
    files_config(
        ConfigId::ReplaceFsyncDir,
        "files, write a temporary file + fsync + rename + fsync of the directory",
        FileWrite::Replace,
        true,
        true,
    )
    .durable()
    .power_cuts(0, 0, 0),
];

/// A directory of blob files (flat or tree) with a run's read and write calls.
pub struct FilesEngine {
    dir: PathBuf,
    kind: EngineKind,
    params: FileParams,
    commit_every: CommitEvery,
}

impl FilesEngine {
    pub fn new(dir: &Path, kind: EngineKind, params: FileParams, commit_every: CommitEvery) -> Self {
        FilesEngine { dir: dir.to_path_buf(), kind, params, commit_every }
    }
}

impl Engine for FilesEngine {
    /// In process: no server.
    fn server_info(&self) -> Option<crate::records::ServerInfo> {
        None
    }

    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn path(&self) -> &Path {
        &self.dir
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        let keys = list_keys(&self.dir, self.kind)?;
        let Some(&max_key) = keys.last() else {
            return Err(Error::bad_input(
                &self.dir,
                "holds no blob files (expected kvtest names like 000001 or 00/00/01)",
            ));
        };
        let mut blob_max = 0u32;
        if for_writes {
            crate::util::fsutil::check_writable_file(&self.dir)?;
            for &k in &keys {
                let f = self.dir.join(blob_name(self.kind, k));
                let len = std::fs::metadata(&f).map_err(|e| Error::io(&f, "cannot stat", e))?.len();
                blob_max = blob_max.max(u32::try_from(len).unwrap_or(u32::MAX));
            }
        }
        Ok(Survey { max_key: Some(max_key), blob_max })
    }

    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        let store = FileStore::new(&self.dir, self.kind, self.params, self.commit_every)?;
        Ok(Box::new(match mode.client {
            Some(i) => store.for_client(&self.dir, i)?,
            None => store,
        }))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        blob_files(&self.dir, self.kind)
    }
}
