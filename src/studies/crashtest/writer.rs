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
use super::options::WORK_PREFIX;
use crate::engine::{DbSession, FileStore, OpenMode, Session};
use crate::records::ConfigId;
use crate::records::EngineSettings;
use crate::{Error, Result};

/// What the writer prints on its standard output, one line each, so the
/// parent knows where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Its store is open.
    Opened,
    /// Its first write returned: the kill timer starts here, so every cut
    /// lands after at least one write was acknowledged, however slow the
    /// machine (a cut before any acknowledgement tests no promise).
    Writing,
}

impl Signal {
    pub fn line(self) -> &'static str {
        match self {
            Signal::Opened => "opened",
            Signal::Writing => "writing",
        }
    }
}

/// What the writer needs to know; the parent passes it on the command line.
#[derive(Debug, Clone)]
pub struct WriterSpec {
    pub method: ConfigId,
    pub path: std::path::PathBuf,
    pub count: u32,
    pub seed: u64,
    /// Pass `p` writes version `base + p` of every blob, so the parent can
    /// tell a version written before this kill from one written since.
    pub base: u64,
    /// Where to log each write that returned (power-cut runs).
    pub acks: Option<std::path::PathBuf>,
    /// Writes per commit: a write returns once its batch of N is committed.
    pub commit_every: u32,
    /// The engines' settings the study's datasets were built with (the
    /// servers' parts), which the writer opens an engine's store with, its
    /// method's part set on top.
    pub settings: EngineSettings,
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

/// After each write: the log of the writes that returned. With a commit
/// every N writes, a write returns when its batch is committed, inside the
/// Nth write (the stores count their writes the same way), so the batch's
/// writes are logged then.
struct AfterWrite {
    log: Option<std::fs::File>,
    durable: bool,
    /// Writes of the batch not yet committed: (key, version).
    pending: Vec<(u32, u64)>,
    every: usize,
}

impl AfterWrite {
    fn open(spec: &WriterSpec) -> Result<Self> {
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
        let every = spec.commit_every.max(1) as usize;
        Ok(AfterWrite {
            log,
            durable: spec.method.acknowledges_durability(),
            pending: Vec::with_capacity(every),
            every,
        })
    }

    /// Notes a write that was made; true when it completed its batch (the
    /// batch's writes have returned).
    fn done(&mut self, spec: &WriterSpec, key: u32, version: u64) -> Result<bool> {
        self.pending.push((key, version));
        if self.pending.len() < self.every {
            return Ok(false);
        }
        if let Some(log) = &mut self.log {
            let mut recs = Vec::with_capacity(ACK_RECORD * self.pending.len());
            for &(key, version) in &self.pending {
                recs.extend_from_slice(&key.to_le_bytes());
                recs.extend_from_slice(&u32::from(self.durable).to_le_bytes());
                recs.extend_from_slice(&version.to_le_bytes());
            }
            std::io::Write::write_all(log, &recs).map_err(|e| Error::io(&spec.path, "cannot log a write", e))?;
        }
        self.pending.clear();
        Ok(true)
    }
}

/// Opens the store, signals [`Signal::Opened`], writes, signals
/// [`Signal::Writing`] once the first write returned (the parent starts its
/// kill timer then), and writes until killed. Returns only on an error.
pub fn write_until_killed(spec: &WriterSpec, mut signal: impl FnMut(Signal)) -> Result<Infallible> {
    let in_work_dir =
        spec.path.ancestors().any(|a| a.file_name().is_some_and(|n| n.to_string_lossy().starts_with(WORK_PREFIX)));
    if !in_work_dir {
        return Err(Error::bad_input(
            &spec.path,
            "is not in a crashtest work directory; crash-writer writes nowhere else",
        ));
    }
    let sizes: Vec<u32> = (0..=spec.count).map(|k| if k == 0 { 0 } else { blob_len(spec.seed, k) as u32 }).collect();
    let commit_every = Some(spec.commit_every.max(1));
    if let Some(params) = spec.method.db_params() {
        let mut store =
            DbSession::open(&spec.path, &params, (true, commit_every), false, Some(Arc::new(sizes.clone())))?;
        signal(Signal::Opened);
        write_forever(&mut store, spec, &sizes, signal)
    } else if let Some(params) = spec.method.file_params() {
        let mut store = FileStore::new(&spec.path, crate::engine::files::FLAT_KIND, params, commit_every)?;
        signal(Signal::Opened);
        write_forever(&mut store, spec, &sizes, signal)
    } else if let Some((engine, kv)) = spec.method.kv_params() {
        let settings = EngineSettings { kv, commit_every, ..spec.settings.clone() };
        let mut store = crate::engine::open_as(engine, &spec.path, &settings)?.open(OpenMode::WRITE)?;
        signal(Signal::Opened);
        write_forever(store.as_mut(), spec, &sizes, signal)
    } else {
        Err(Error::invalid("no store for this method"))
    }
}

fn write_forever<S: Session + ?Sized>(
    store: &mut S,
    spec: &WriterSpec,
    sizes: &[u32],
    mut signal: impl FnMut(Signal),
) -> Result<Infallible> {
    let mut after = AfterWrite::open(spec)?;
    let mut first = true;
    let mut buf = vec![0u8; MAX_BLOB];
    let mut version = spec.base;
    loop {
        for key in 1..=spec.count {
            let content = &mut buf[..sizes[key as usize] as usize];
            blob::encode(content, key, version);
            if store.overwrite(key, content)? == 0 {
                return Err(Error::bad_input(&spec.path, format!("blob {key} is missing; the dataset was damaged")));
            }
            if after.done(spec, key, version)? && first {
                first = false;
                signal(Signal::Writing);
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
        let method = ConfigId::Replace;
        super::super::dataset::Dataset::create(&path, method, 3, 1).unwrap();
        std::fs::remove_file(path.join("000002")).unwrap();
        let stray = WriterSpec {
            method,
            path: outside.path().to_path_buf(),
            count: 3,
            seed: 1,
            base: 1,
            acks: None,
            commit_every: 1,
            settings: EngineSettings::default(),
        };
        assert!(write_until_killed(&stray, |_| {})
            .unwrap_err()
            .to_string()
            .contains("not in a crashtest work directory"));
        let acks = dir.path().join("acks");
        let spec = WriterSpec {
            method,
            path: path.clone(),
            count: 3,
            seed: 1,
            base: 1 << 32,
            acks: Some(acks.clone()),
            commit_every: 1,
            settings: EngineSettings::default(),
        };
        let mut signals = Vec::new();
        let err = write_until_killed(&spec, |s| signals.push(s)).unwrap_err();
        assert_eq!(signals, [Signal::Opened, Signal::Writing], "the first write returned before blob 2 failed");
        assert!(err.to_string().contains("blob 2 is missing"), "{err}");
        let first = std::fs::read(path.join("000001")).unwrap();
        assert_eq!(blob::check(&first, 1, blob_len(1, 1)), blob::Verdict::Intact(1 << 32));
        assert_eq!(read_acks(&acks).unwrap(), [(1, 1 << 32, false)], "one write returned, not promised durable");
        // A commit every 2 writes: the first write's batch never completed,
        // so nothing returned and nothing was acknowledged.
        std::fs::remove_file(&acks).unwrap();
        let mut signals = Vec::new();
        let batched = WriterSpec { commit_every: 2, base: 2 << 32, ..spec };
        assert!(write_until_killed(&batched, |s| signals.push(s)).unwrap_err().to_string().contains("blob 2"));
        assert_eq!(signals, [Signal::Opened], "no write returned: its batch of 2 was not committed");
        assert_eq!(read_acks(&acks).unwrap(), [], "nothing acknowledged");
    }

    /// A database writer committing every 2 writes logs its writes when the
    /// batch commits, both at once.
    #[test]
    fn a_batch_is_acknowledged_when_it_commits() {
        let dir = tempfile::Builder::new().prefix(WORK_PREFIX).tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let method = ConfigId::DbWalFull;
        super::super::dataset::Dataset::create(&path, method, 3, 1).unwrap();
        // Blob 3 goes missing: the writer stops there, after its first batch.
        rusqlite::Connection::open(&path).unwrap().execute("DELETE FROM kv WHERE k = 3", []).unwrap();
        let acks = dir.path().join("acks");
        let spec = WriterSpec {
            method,
            path,
            count: 3,
            seed: 1,
            base: 1 << 32,
            acks: Some(acks.clone()),
            commit_every: 2,
            settings: EngineSettings::default(),
        };
        let mut signals = Vec::new();
        assert!(write_until_killed(&spec, |s| signals.push(s)).unwrap_err().to_string().contains("blob 3"));
        assert_eq!(signals, [Signal::Opened, Signal::Writing]);
        assert_eq!(read_acks(&acks).unwrap(), [(1, 1 << 32, true), (2, 1 << 32, true)], "the batch of two, durable");
    }
}
