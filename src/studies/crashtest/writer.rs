//! The process that gets killed: it overwrites every blob again and again
//! with new versions, through the benchmark's own stores (`DbSession`,
//! `FileStore`, the key-value engines' sessions), until SIGKILL ends it.
//!
//! For a power cut it also logs each write that returned, and whether the
//! method promised it durable, to an acknowledgement log outside the
//! layer: plain write() calls, which a SIGKILL cannot undo. A write whose
//! log record did not make it before the kill is simply not counted as
//! acknowledged, so the log can only under-count promises, never invent one.

use std::convert::Infallible;
use std::sync::Arc;

use super::blob;
use super::dataset::{blob_len, MAX_BLOB};
use super::{Method, WORK_PREFIX};
use crate::engine::{DbSession, FileStore, OpenMode, Session};
use crate::records::EngineSettings;
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
    /// Where to log each write that returned (power-cut runs).
    pub acks: Option<std::path::PathBuf>,
}

/// One acknowledgement record: key u32, durable u32 (0 or 1), version u64,
/// little-endian.
pub const ACK_RECORD: usize = 16;

/// The writes a writer logged: (key, version, promised durable).
pub fn read_acks(path: &std::path::Path) -> Result<Vec<(u32, u64, bool)>> {
    let bytes = match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        r => r.map_err(|e| Error::io(path, "cannot read the acknowledgement log", e))?,
    };
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Ok(bytes
        .chunks_exact(ACK_RECORD)
        .map(|r| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&r[8..16]);
            (word(&r[0..4]), u64::from_le_bytes(v), word(&r[4..8]) == 1)
        })
        .collect())
}

/// After each write: the directory fsync some methods add, then the log.
struct AfterWrite {
    dir: Option<std::fs::File>,
    log: Option<std::fs::File>,
    durable: bool,
}

impl AfterWrite {
    fn open(spec: &WriterSpec) -> Result<Self> {
        let dir = if spec.method.syncs_dir() {
            Some(std::fs::File::open(&spec.path).map_err(|e| Error::io(&spec.path, "cannot open the directory", e))?)
        } else {
            None
        };
        let log = match &spec.acks {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| Error::io(p, "cannot open the acknowledgement log", e))?,
            ),
            None => None,
        };
        Ok(AfterWrite { dir, log, durable: spec.method.acknowledges_durability() })
    }

    fn done(&mut self, spec: &WriterSpec, key: u32, version: u64) -> Result<()> {
        if let Some(d) = &self.dir {
            d.sync_all().map_err(|e| Error::io(&spec.path, "cannot fsync the directory", e))?;
        }
        if let Some(log) = &mut self.log {
            let mut rec = [0u8; ACK_RECORD];
            rec[0..4].copy_from_slice(&key.to_le_bytes());
            rec[4..8].copy_from_slice(&u32::from(self.durable).to_le_bytes());
            rec[8..16].copy_from_slice(&version.to_le_bytes());
            std::io::Write::write_all(log, &rec).map_err(|e| Error::io(&spec.path, "cannot log a write", e))?;
        }
        Ok(())
    }
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
        let mut store = FileStore::new(&spec.path, crate::engine::files::FLAT_KIND, params)?;
        ready();
        write_forever(&mut store, spec, &sizes)
    } else if let Some((engine, kv)) = spec.method.kv_params() {
        let settings = EngineSettings { kv, ..EngineSettings::default() };
        let mut store = crate::engine::open_as(engine, &spec.path, &settings)?.open(OpenMode::WRITE)?;
        ready();
        write_forever(store.as_mut(), spec, &sizes)
    } else {
        Err(Error::invalid("no store for this method"))
    }
}

fn write_forever<S: Session + ?Sized>(store: &mut S, spec: &WriterSpec, sizes: &[u32]) -> Result<Infallible> {
    let mut after = AfterWrite::open(spec)?;
    let mut buf = vec![0u8; MAX_BLOB];
    let mut version = spec.base;
    loop {
        for key in 1..=spec.count {
            let content = &mut buf[..sizes[key as usize] as usize];
            blob::encode(content, key, version);
            if store.overwrite(key, content)? == 0 {
                return Err(Error::bad_input(&spec.path, format!("blob {key} is missing; the dataset was damaged")));
            }
            after.done(spec, key, version)?;
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
        let method = Method::Files { write: crate::records::FileWrite::Replace, fsync: false, sync_dir: false };
        super::super::dataset::Dataset::create(&path, method, 3, 1).unwrap();
        std::fs::remove_file(path.join("000002")).unwrap();
        let stray = WriterSpec { method, path: outside.path().to_path_buf(), count: 3, seed: 1, base: 1, acks: None };
        assert!(write_until_killed(&stray, || {})
            .unwrap_err()
            .to_string()
            .contains("not in a crashtest work directory"));
        let acks = dir.path().join("acks");
        let spec =
            WriterSpec { method, path: path.clone(), count: 3, seed: 1, base: 1 << 32, acks: Some(acks.clone()) };
        let mut started = false;
        let err = write_until_killed(&spec, || started = true).unwrap_err();
        assert!(started);
        assert!(err.to_string().contains("blob 2 is missing"), "{err}");
        let first = std::fs::read(path.join("000001")).unwrap();
        assert_eq!(blob::check(&first, 1, blob_len(1, 1)), blob::Verdict::Intact(1 << 32));
        assert_eq!(read_acks(&acks).unwrap(), [(1, 1 << 32, false)], "one write returned, not promised durable");
    }
}
