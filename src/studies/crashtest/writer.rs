//! The process that gets killed: it overwrites every blob again and again
//! with new versions, through the benchmark's own stores (`DbSession`,
//! `FileStore`), until SIGKILL ends it.

use std::convert::Infallible;
use std::sync::Arc;

use super::blob;
use super::dataset::{blob_len, MAX_BLOB};
use super::{Method, WORK_PREFIX};
use crate::engine::{DbSession, FileStore, Session};
use crate::records::EngineKind;
use crate::{Error, Result};

/// What the writer needs to know; the parent passes it on the command line.
#[derive(Debug, Clone)]
pub struct WriterSpec {
    pub method: Method,
    pub path: std::path::PathBuf,
    pub count: u32,
    pub seed: u64,
    /// Pass `p` writes version `base + p` of every blob, so the parent can
    /// tell a version written before this kill from one written since.
    pub base: u64,
}

/// Opens the store, calls `ready` (the parent starts its kill timer then),
/// and writes until killed. Returns only on an error.
pub fn write_until_killed(spec: &WriterSpec, ready: impl FnOnce()) -> Result<Infallible> {
    let in_work_dir =
        spec.path.ancestors().any(|a| a.file_name().is_some_and(|n| n.to_string_lossy().starts_with(WORK_PREFIX)));
    if !in_work_dir {
        return Err(Error::bad_input(
            &spec.path,
            "is not in a crashtest work directory; crash-writer writes nowhere else",
        ));
    }
    let sizes: Vec<u32> = (0..=spec.count).map(|k| if k == 0 { 0 } else { blob_len(spec.seed, k) as u32 }).collect();
    if let Some(params) = spec.method.db_params() {
        let mut store = DbSession::open(&spec.path, &params, true, false, Some(Arc::new(sizes.clone())))?;
        ready();
        write_forever(&mut store, spec, &sizes)
    } else if let Some(params) = spec.method.file_params() {
        let mut store = FileStore::new(&spec.path, EngineKind::Flat, params)?;
        ready();
        write_forever(&mut store, spec, &sizes)
    } else {
        Err(Error::invalid("no store for this method"))
    }
}

fn write_forever<S: Session>(store: &mut S, spec: &WriterSpec, sizes: &[u32]) -> Result<Infallible> {
    let mut buf = vec![0u8; MAX_BLOB];
    let mut version = spec.base;
    loop {
        for key in 1..=spec.count {
            let content = &mut buf[..sizes[key as usize] as usize];
            blob::encode(content, key, version);
            if store.overwrite(key, content)? == 0 {
                return Err(Error::bad_input(&spec.path, format!("blob {key} is missing; the dataset was damaged")));
            }
        }
        version += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_reports_a_damaged_dataset_instead_of_looping() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::Builder::new().prefix(WORK_PREFIX).tempdir().unwrap();
        let path = dir.path().join("blobs");
        let method = Method::Files { write: crate::records::FileWrite::Replace, fsync: false };
        super::super::dataset::Dataset::create(&path, method, 3, 1).unwrap();
        std::fs::remove_file(path.join("000002")).unwrap();
        let stray = WriterSpec { method, path: outside.path().to_path_buf(), count: 3, seed: 1, base: 1 };
        assert!(write_until_killed(&stray, || {})
            .unwrap_err()
            .to_string()
            .contains("not in a crashtest work directory"));
        let spec = WriterSpec { method, path: path.clone(), count: 3, seed: 1, base: 1 << 32 };
        let mut started = false;
        let err = write_until_killed(&spec, || started = true).unwrap_err();
        assert!(started);
        assert!(err.to_string().contains("blob 2 is missing"), "{err}");
        let first = std::fs::read(path.join("000001")).unwrap();
        assert_eq!(blob::check(&first, 1, blob_len(1, 1)), blob::Verdict::Intact(1 << 32));
    }
}
