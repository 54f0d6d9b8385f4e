//! What the key-value engines (LMDB, redb, fjall) share: the key encoding,
//! building a dataset from a kvtest database under a temporary name, and
//! the scan behind `survey` and `stat`. (The one handle a run's sessions
//! share is `engine::keep::Shared`.)

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::api::Engine;
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig, WriteSettings};
use crate::engine::report::{ExportReport, KvStat, StatReport};
use crate::engine::staging::{not_mine, Staging};
use crate::records::{CommitEvery, ConfigId, EngineKind, EngineSettings, KvParams};
use crate::util::fsutil::{self, allocated_bytes};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// A kvtest key as the engines store it: 4 bytes, big-endian, so that the
/// engines' byte order is the keys' numeric order.
#[inline]
pub(super) fn key_bytes(key: u32) -> [u8; 4] {
    key.to_be_bytes()
}

/// The kvtest key a stored key encodes, if it is one.
pub(super) fn key_of(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// A key-value engine's backend: the same for LMDB, redb and fjall but
/// for these functions of the engine's own module.
pub(super) struct KvBackend {
    pub kind: EngineKind,
    /// Whether a path is this engine's dataset (a directory, or a file
    /// whose first bytes are `head`).
    pub is_dataset: fn(path: &Path, is_dir: bool, head: &[u8]) -> bool,
    pub build: fn(db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport>,
    pub open: fn(path: &Path, params: KvParams, commit_every: CommitEvery) -> Box<dyn Engine>,
    pub stat: fn(path: &Path) -> Result<KvStat>,
    /// The durable and the fast commit, one write per transaction.
    pub write_configs: &'static [WriteConfig; 2],
}

impl Backend for KvBackend {
    fn kind(&self) -> EngineKind {
        self.kind
    }

    fn claim(&self, probe: &Probe) -> Claim {
        Claim::yes_if((self.is_dataset)(probe.path, probe.is_dir, probe.head))
    }

    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        _settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport> {
        (self.build)(db, target, force, progress)
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        (self.open)(path, settings.kv, settings.commit_every)
    }

    fn stat(&self, path: &Path, vacuum: bool, _settings: &EngineSettings) -> Result<StatReport> {
        if vacuum {
            return Err(Error::invalid("--vacuum applies to databases only"));
        }
        (self.stat)(path).map(StatReport::Kv)
    }

    /// The engine's file or directory.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        Ok(LocalBytes::In(vec![path.to_path_buf()]))
    }

    fn timer_covers(&self, _settings: &EngineSettings) -> &'static str {
        "open + loop + commit + close"
    }

    fn write_configs(&self) -> &'static [WriteConfig] {
        self.write_configs
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

/// A key-value engine's two write configurations: its durable commit and
/// its fast one (`ENGINE-durable`, `ENGINE-fast`), both transactional, with
/// what power cuts did to each (lost after acknowledgement, torn, integrity
/// failures), when measured.
pub(super) const fn write_configs(
    kind: EngineKind,
    descriptions: [&'static str; 2],
    power_cuts: Option<[(u64, u64, u32); 2]>,
) -> [WriteConfig; 2] {
    let durable = WriteConfig::new(ConfigId::Durable(kind), descriptions[0], WriteSettings::Commit).atomic().durable();
    let fast = WriteConfig::new(ConfigId::Fast(kind), descriptions[1], WriteSettings::Commit).atomic();
    match power_cuts {
        Some([(l, t, i), (fl, ft, fi)]) => [durable.power_cuts(l, t, i), fast.power_cuts(fl, ft, fi)],
        None => [durable, fast],
    }
}

/// Stages `kind`'s dataset at `target`: with `force`, only a dataset that
/// `is_dataset` recognises is replaced.
pub(super) fn stage(kind: EngineKind, target: &Path, force: bool, is_dataset: fn(&Path) -> bool) -> Result<Staging> {
    let what = kind.name();
    let mine = |p: &Path| if is_dataset(p) { Ok(()) } else { Err(not_mine(p, what)) };
    Staging::begin(target, force, what, &mine)
}

/// Copies a value into the session's reused buffer (grown, never shrunk),
/// as SQLite's and the files' reads copy into theirs; returns its length.
#[inline]
pub(super) fn copy_out(buf: &mut Vec<u8>, value: &[u8]) -> u64 {
    if value.len() > buf.len() {
        buf.resize(value.len(), 0);
    }
    buf[..value.len()].copy_from_slice(value);
    std::hint::black_box(&buf[..value.len()]);
    value.len() as u64
}

/// Sizes seen by one scan of every entry.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Scan {
    pub entries: u64,
    pub min: u64,
    pub max: u64,
    pub content: u64,
}

impl Scan {
    pub fn add(&mut self, len: u64) {
        self.min = if self.entries == 0 { len } else { self.min.min(len) };
        self.max = self.max.max(len);
        self.content += len;
        self.entries += 1;
    }
}

/// A [`KvStat`] from a scan of the dataset at `path`.
pub(super) fn kv_stat(engine: EngineKind, path: &Path, scan: Scan) -> Result<KvStat> {
    let (file_bytes, allocated_bytes) = usage(path)?;
    Ok(KvStat {
        engine,
        entries: scan.entries,
        avg_size: if scan.entries > 0 { scan.content as f64 / scan.entries as f64 } else { 0.0 },
        min_size: scan.min,
        max_size: scan.max,
        content_bytes: scan.content,
        file_bytes,
        allocated_bytes,
    })
}

/// Every regular file of a dataset (one file, or a directory walked whole).
pub(super) fn dataset_files(path: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).map_err(|e| Error::io(&p, "cannot stat", e))?;
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).map_err(|e| Error::io(&p, "cannot list directory", e))? {
                stack.push(e.map_err(|e| Error::io(&p, "cannot list directory", e))?.path());
            }
        } else if meta.is_file() {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// Apparent and allocated bytes of every file and directory of a dataset.
pub(super) fn usage(path: &Path) -> Result<(u64, u64)> {
    let (mut apparent, mut allocated) = (0u64, 0u64);
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).map_err(|e| Error::io(&p, "cannot stat", e))?;
        allocated += allocated_bytes(&meta);
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).map_err(|e| Error::io(&p, "cannot list directory", e))? {
                stack.push(e.map_err(|e| Error::io(&p, "cannot list directory", e))?.path());
            }
        } else {
            apparent += meta.len();
        }
    }
    Ok((apparent, allocated))
}

/// The export report of a build that started at `started`.
pub(super) fn report(kind: EngineKind, (entries, bytes): (u64, u64), started: Instant) -> ExportReport {
    ExportReport {
        layout: kind,
        files: entries,
        bytes,
        elapsed_ns: started.elapsed().as_nanos() as u64,
        busy_retries: 0,
        multipart_blobs: 0,
        location: None,
    }
}

/// The size of the kvtest database `db` and its WAL (the LMDB map is sized
/// from it).
pub(super) fn kv_db_bytes(db: &Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    [db.as_os_str(), wal.as_os_str()].iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
}

/// The error for a dataset that holds no entries.
pub(super) fn empty(path: &Path, kind: EngineKind) -> Error {
    Error::bad_input(path, format!("is a {} dataset with no blobs", kind.name()))
}

/// The error for a stored key that is not a 4-byte kvtest key.
pub(super) fn foreign_key(path: &Path, kind: EngineKind, len: usize) -> Error {
    Error::bad_input(path, format!("holds a {len}-byte key; not a blobbench {} dataset", kind.name()))
}

/// Refuses writes to a read-only dataset before any run, in one line.
pub(super) fn check_writable(files: &[PathBuf]) -> Result<()> {
    for f in files {
        fsutil::check_writable_file(f)?;
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod test_support {
    //! A tiny kvtest database for the engines' unit tests, and the round
    //! trip every key-value engine must pass.
    use std::path::{Path, PathBuf};

    use crate::engine::api::{Engine, OpenMode};
    use crate::records::{CommitEvery, EngineKind, KvParams, KvSync};
    use crate::util::progress::Silent;

    /// Builds `kind`'s dataset at `target` from a tiny kvtest database, then,
    /// with one transaction per run, one per write and one per two writes:
    /// survey, read every blob, overwrite, put, delete, read the changes
    /// back, and put every blob back as it was. Returns the rows the
    /// dataset must hold, for the caller to check through the engine's own
    /// crate.
    pub fn round_trip(
        kind: EngineKind,
        target: &Path,
        engine: fn(&Path, KvParams, CommitEvery) -> Box<dyn Engine>,
    ) -> Vec<(u32, Vec<u8>)> {
        let rows = build_tiny(kind, target);
        round_trip_built(kind, target, &rows, engine);
        rows
    }

    /// Builds `kind`'s dataset at `target` from a tiny kvtest database of
    /// 40 blobs beside it; returns its rows.
    pub fn build_tiny(kind: EngineKind, target: &Path) -> Vec<(u32, Vec<u8>)> {
        let (db, rows) = tiny_kv(target.parent().unwrap(), 40);
        assert_eq!(crate::engine::registry::build(kind, &db, target, false, &Silent).unwrap().files, 40);
        assert_eq!(crate::engine::registry::detect(target).unwrap(), kind);
        rows
    }

    /// [`round_trip`] on a dataset [`build_tiny`] built (a server engine's
    /// test may keep its server up across the three engines meanwhile).
    pub fn round_trip_built(
        kind: EngineKind,
        target: &Path,
        rows: &[(u32, Vec<u8>)],
        engine: fn(&Path, KvParams, CommitEvery) -> Box<dyn Engine>,
    ) {
        let content = vec![9u8; 10_000];
        for commit_every in [None, Some(1), Some(2)] {
            let mut e = engine(target, KvParams { sync: KvSync::Durable }, commit_every);
            let survey = e.survey(true).unwrap();
            assert_eq!(survey.max_key, Some(40));
            assert_eq!(survey.blob_max as usize, rows.iter().map(|r| r.1.len()).max().unwrap());
            let mut s = e.open(OpenMode::READ).unwrap();
            for (k, v) in rows {
                assert_eq!(s.read(*k).unwrap(), v.len() as u64);
                assert_eq!(&s.last_read().unwrap()[..v.len()], &v[..], "{kind:?} key {k}, byte for byte");
            }
            assert_eq!(s.read(41).unwrap(), 0);
            assert!(s.put(1, b"x").is_err(), "{kind:?}: a read session cannot write");
            s.commit().unwrap();
            s.close().unwrap();

            let mut s = e.open(OpenMode::WRITE).unwrap();
            assert_eq!(s.overwrite(3, &content).unwrap(), rows[2].1.len() as u64);
            assert!(s.overwrite(4, &content[..1]).is_err(), "{kind:?}: short content is an error");
            s.put(50, &content[..123]).unwrap();
            if commit_every == Some(2) {
                // The second write filled the batch and committed it, inside
                // that write: another session sees it before the run's commit.
                let mut r = e.open(OpenMode::READ).unwrap();
                assert_eq!(r.read(50).unwrap(), 123, "{kind:?}: a batch of 2 is committed by its second write");
                r.commit().unwrap();
                r.close().unwrap();
            }
            assert!(s.delete(5).unwrap());
            assert!(!s.delete(99).unwrap());
            s.commit().unwrap();
            s.close().unwrap();

            let mut s = e.open(OpenMode::READ).unwrap();
            assert_eq!(s.read(50).unwrap(), 123);
            assert_eq!(s.read(5).unwrap(), 0);
            assert_eq!(s.read(3).unwrap(), rows[2].1.len() as u64);
            let len = rows[2].1.len();
            assert_eq!(&s.last_read().unwrap()[..len], &content[..len], "{kind:?}: the overwrite landed");
            s.commit().unwrap();
            s.close().unwrap();

            let mut w = e.open(OpenMode::WRITE).unwrap();
            w.put(5, &rows[4].1).unwrap();
            w.put(3, &rows[2].1).unwrap();
            w.delete(50).unwrap();
            w.commit().unwrap();
            w.close().unwrap();
        }
    }

    /// Keys 1..=n with values of varied sizes (some empty-ish, some over a
    /// page), written with SQLite so export reads a real kvtest database.
    pub fn tiny_kv(dir: &Path, n: u32) -> (PathBuf, Vec<(u32, Vec<u8>)>) {
        let db = dir.join("kv.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
        let rows: Vec<(u32, Vec<u8>)> =
            (1..=n).map(|k| (k, (0..(k as usize * 997) % 9000 + 1).map(|i| (i as u32 ^ k) as u8).collect())).collect();
        for (k, v) in &rows {
            conn.execute("INSERT INTO kv(k, v) VALUES(?1, ?2)", rusqlite::params![k, v]).unwrap();
        }
        (db, rows)
    }
}
