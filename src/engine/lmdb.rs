//! lmdb: to be written (engine issue).

use std::path::{Path, PathBuf};

use super::{Engine, OpenMode, Session, Survey};
use crate::records::{EngineKind, KvParams};
use crate::{Error, Result};

pub struct LmdbEngine {
    path: PathBuf,
    #[allow(dead_code)]
    params: KvParams,
}

impl LmdbEngine {
    pub fn new(path: &Path, params: KvParams) -> Self {
        LmdbEngine { path: path.to_path_buf(), params }
    }
}

impl Engine for LmdbEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Lmdb
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn survey(&mut self, _for_writes: bool) -> Result<Survey> {
        Err(Error::invalid("lmdb is not built yet"))
    }

    fn open(&self, _mode: OpenMode) -> Result<Box<dyn Session>> {
        Err(Error::invalid("lmdb is not built yet"))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(vec![self.path.clone()])
    }
}

/// Builds a lmdb dataset from a kvtest database (to be written).
pub fn build(
    _db: &Path,
    _target: &Path,
    _force: bool,
    _progress: &dyn crate::util::progress::Progress,
) -> Result<crate::engine::dataset::ExportReport> {
    Err(Error::invalid("lmdb is not built yet"))
}
