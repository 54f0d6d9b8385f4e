//! The crash-test dataset of one method (a database, a flat directory of
//! self-verifying blobs, or a key-value engine's store), the check made
//! after each kill, and the repair that puts every blob back to a known
//! version before the next kill. Setup, check and repair use plain
//! rusqlite and std::fs (an engine's store is built from such a database
//! and read back through the engine): only the writer under test goes
//! through the benchmark's write paths.

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::blob::{self, Verdict};
use super::options::ROUND_SPAN;
use crate::engine::dataset::blob_name;
use crate::engine::files::FLAT_KIND;
use crate::engine::{Engine, OpenMode};
use crate::records::ConfigId;
use crate::records::EngineSettings;
use crate::{Error, Result};

/// Blob sizes are spread over this range, from one page to many.
pub use super::options::{MAX_BLOB, MIN_BLOB};

/// The length of `key`'s blob: fixed per (seed, key), as writes never
/// change sizes (the benchmark's overwrite keeps them).
pub fn blob_len(seed: u64, key: u32) -> usize {
    let mut z = seed ^ u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    MIN_BLOB + (z % (MAX_BLOB - MIN_BLOB + 1) as u64) as usize
}

/// What one check found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// Why the check failed, one line: integrity_check's first complaint, or
    /// the error that kept the database (an engine's store) from opening or
    /// being read. None: it passed.
    pub integrity_error: Option<String>,
    pub intact_old: u64,
    pub intact_new: u64,
    pub torn: u64,
    pub missing: u64,
    /// Whole, but neither the version before this kill nor one written
    /// since: a lost or misplaced write.
    pub unexpected: u64,
    pub stray: Vec<PathBuf>,
    /// What each key's value turned out to be (None: missing), by key.
    pub found: Vec<Option<Verdict>>,
    /// Keys a read found that the engine's listing did not show (an
    /// object store's bucket listing); None for an engine without one.
    pub unlisted: Option<u64>,
    /// Keys a plain read found older (or absent) than the newest copy
    /// (an object store's stale replica); None where there is one copy.
    pub stale: Option<u64>,
    /// Keys to put back before the next kill.
    bad_keys: Vec<u32>,
}

impl Tally {
    /// integrity_check did not say "ok", or the database could not be read.
    pub fn integrity_failed(&self) -> bool {
        self.integrity_error.is_some()
    }
}

pub struct Dataset {
    pub path: PathBuf,
    method: ConfigId,
    count: u32,
    seed: u64,
    /// Version of each blob as last verified, by key (index 0 unused).
    versions: Vec<u64>,
    /// The study's engine settings (where an S3 dataset is built), which
    /// the dataset is built and opened with.
    build: EngineSettings,
    /// The server's description as a check's engine gave it: the check
    /// has the server started, and each start of a throwaway cluster costs
    /// seconds (Swift's is four Python servers), so [`Dataset::server`]
    /// starts none of its own once a check has run.
    server_seen: Option<String>,
}

impl Dataset {
    /// Creates `path` with every blob at version 0.
    #[cfg(test)]
    pub fn create(path: &Path, method: ConfigId, count: u32, seed: u64) -> Result<Self> {
        Dataset::create_with(path, method, count, seed, EngineSettings::default())
    }

    /// [`Dataset::create`], an engine's dataset built with `build`.
    pub fn create_with(path: &Path, method: ConfigId, count: u32, seed: u64, build: EngineSettings) -> Result<Self> {
        let versions = vec![0; count as usize + 1];
        let ds = Dataset { path: path.to_path_buf(), method, count, seed, versions, build, server_seen: None };
        if method.is_db() {
            ds.write_db(&ds.path)?;
        } else if method.is_engine() {
            ds.write_engine()?;
        } else {
            std::fs::create_dir(path).map_err(|e| Error::io(path, "cannot create directory", e))?;
            for key in 1..=count {
                ds.write_file(key)?;
            }
        }
        Ok(ds)
    }

    /// The version of each blob as last verified on disk, by key (index 0 unused).
    pub fn versions(&self) -> &[u64] {
        &self.versions
    }

    fn content(&self, key: u32) -> Vec<u8> {
        let mut buf = vec![0u8; blob_len(self.seed, key)];
        blob::encode(&mut buf, key, self.versions[key as usize]);
        buf
    }

    fn write_file(&self, key: u32) -> Result<()> {
        let p = self.path.join(blob_name(FLAT_KIND, key));
        std::fs::write(&p, self.content(key)).map_err(|e| Error::io(&p, "cannot write", e))
    }

    /// (Re)builds the database from the known versions. Leftover journals
    /// are removed first: applied to a new file they would corrupt it.
    fn write_db(&self, path: &Path) -> Result<()> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(Path::new(&p), "cannot remove", e));
                }
                _ => {}
            }
        }
        let err = |e| Error::sqlite(path, "cannot build the crash-test database", e);
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode=DELETE; CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB); BEGIN;")
            .map_err(err)?;
        {
            let mut insert = conn.prepare("INSERT INTO kv(k, v) VALUES(?1, ?2)").map_err(err)?;
            for key in 1..=self.count {
                insert.execute(rusqlite::params![key, self.content(key)]).map_err(err)?;
            }
        }
        conn.execute_batch("COMMIT").map_err(err)?;
        conn.close().map_err(|(_, e)| err(e))
    }

    /// (Re)builds the engine's store from the known versions, as `export`
    /// builds one from a kvtest database: through a database beside it,
    /// removed afterwards.
    fn write_engine(&self) -> Result<()> {
        let Some((kind, _)) = self.method.kv_params() else {
            return Err(Error::invalid("not a key-value engine method"));
        };
        let mut source = self.path.as_os_str().to_owned();
        source.push(".source.db");
        let source = PathBuf::from(source);
        if let Some(kill) = self.method.server_kill() {
            kill(&self.path)?;
        }
        let gone = match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&self.path),
            Ok(_) => std::fs::remove_file(&self.path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        gone.map_err(|e| Error::io(&self.path, "cannot remove the damaged store", e))?;
        self.write_db(&source)?;
        let built = crate::engine::registry::build_with(
            kind,
            &source,
            &self.path,
            false,
            &self.build,
            &crate::util::progress::Silent,
        );
        let _ = std::fs::remove_file(&source);
        built.map(|_| ())
    }

    /// Classifies every blob after a kill. `base` is the first version the
    /// killed writer could have written.
    pub fn check(&mut self, base: u64) -> Result<Tally> {
        let mut t = Tally::default();
        let mut found: Vec<Option<Verdict>> = vec![None; self.count as usize + 1];
        if self.method.is_db() {
            self.check_db(&mut t, &mut found);
        } else if self.method.is_engine() {
            match self.check_engine(&mut found) {
                Ok((listed, stale)) => {
                    t.unlisted = listed.map(|keys| unlisted(&found, &keys));
                    t.stale = stale;
                }
                Err(e) => t.integrity_error = Some(self.reason(&e.to_string())),
            }
        } else {
            self.check_files(&mut t, &mut found)?;
        }
        for key in 1..=self.count {
            let old = self.versions[key as usize];
            match found[key as usize] {
                None => t.missing += 1,
                Some(Verdict::Torn) => t.torn += 1,
                Some(Verdict::Intact(v)) if v == old => t.intact_old += 1,
                Some(Verdict::Intact(v)) if v >= base && v - base < ROUND_SPAN => {
                    t.intact_new += 1;
                    self.versions[key as usize] = v;
                    continue;
                }
                Some(Verdict::Intact(_)) => t.unexpected += 1,
            }
            if !matches!(found[key as usize], Some(Verdict::Intact(v)) if v == old) {
                t.bad_keys.push(key);
            }
        }
        t.found = found;
        Ok(t)
    }

    /// Opens the database as any new user would: the first read rolls back
    /// a hot journal or recovers the WAL. Every failure counts as a failed
    /// integrity check, not as an error of the test.
    fn check_db(&self, t: &mut Tally, found: &mut [Option<Verdict>]) {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match Connection::open_with_flags(&self.path, flags) {
            Ok(c) => c,
            Err(e) => {
                t.integrity_error = Some(self.reason(&format!("cannot open: {e}")));
                return;
            }
        };
        let lines: rusqlite::Result<Vec<String>> = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect());
        t.integrity_error = match lines.as_deref() {
            Ok([ok]) if ok == "ok" => None,
            Ok(lines) => Some(format!("integrity_check: {}", lines.first().map_or("no answer", |l| l.as_str()))),
            Err(e) => Some(format!("integrity_check: {e}")),
        }
        .map(|r| self.reason(&r));
        let scan = conn.prepare("SELECT k, v FROM kv").and_then(|mut s| {
            let mut rows = s.query([])?;
            while let Some(r) = rows.next()? {
                let key = r.get::<_, i64>(0)?;
                let Some(slot) = usize::try_from(key).ok().filter(|&k| k >= 1).and_then(|k| found.get_mut(k)) else {
                    continue;
                };
                *slot = Some(match r.get_ref(1)? {
                    ValueRef::Blob(b) => blob::check(b, key as u32, blob_len(self.seed, key as u32)),
                    _ => Verdict::Torn,
                });
            }
            Ok(())
        });
        if let (Err(e), None) = (scan, &t.integrity_error) {
            t.integrity_error = Some(self.reason(&format!("cannot read the blobs: {e}")));
        }
    }

    /// A failure's message as one line without the work directory (the
    /// dataset's name and the paths inside it are kept), so the same
    /// failure reads the same in every round and run.
    fn reason(&self, message: &str) -> String {
        let line = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        match self.path.parent() {
            Some(dir) => line.replace(&format!("{}/", dir.display()), ""),
            None => line,
        }
    }

    /// Opens the store as any new user would (each engine recovers on
    /// open) and reads every blob back through the engine, the newest copy
    /// where a replicated store holds several. Returns the listing's keys
    /// (None without a listing apart from the blobs) and, where a plain
    /// read may be served by an older replica, how many keys a plain read
    /// found older or absent. An engine that refuses to open or fails a
    /// read counts as a failed integrity check.
    fn check_engine(&mut self, found: &mut [Option<Verdict>]) -> Result<(Option<Vec<u32>>, Option<u64>)> {
        let Some((kind, kv)) = self.method.kv_params() else {
            return Err(Error::invalid("not a key-value engine method"));
        };
        let settings = EngineSettings { kv, ..self.build.clone() };
        let mut engine = crate::engine::open_as(kind, &self.path, &settings)?;
        self.read_back(engine.as_ref(), OpenMode::NEWEST_READ, found)?;
        let stale = if engine.may_serve_stale() {
            let mut plain = vec![None; found.len()];
            self.read_back(engine.as_ref(), OpenMode::READ, &mut plain)?;
            Some(found.iter().zip(&plain).filter(|(newest, plain)| newest != plain).count() as u64)
        } else {
            None
        };
        let listed = engine.listed_keys()?;
        // Not part of the check: a survey that fails leaves the description
        // to `server`.
        if self.method.has_server() && self.server_seen.is_none() && engine.survey(false).is_ok() {
            self.server_seen = engine.server_info().map(|i| i.summary());
        }
        Ok((listed, stale))
    }

    /// The server a method's writes run on, as it describes itself once
    /// started (None for a method without a server): as a check saw it, or
    /// started now.
    pub fn server(&self) -> Result<Option<String>> {
        if let Some(seen) = &self.server_seen {
            return Ok(Some(seen.clone()));
        }
        let Some((kind, kv)) = self.method.kv_params().filter(|_| self.method.has_server()) else { return Ok(None) };
        let mut engine = crate::engine::open_as(kind, &self.path, &EngineSettings { kv, ..self.build.clone() })?;
        engine.survey(false)?;
        Ok(engine.server_info().map(|i| i.summary()))
    }

    /// One session's read of every key, each classified into `found`.
    fn read_back(&self, engine: &dyn Engine, mode: OpenMode, found: &mut [Option<Verdict>]) -> Result<()> {
        let mut session = engine.open(mode)?;
        for key in 1..=self.count {
            let n = session.read(key)? as usize;
            if n > 0 {
                let value = session.last_read().and_then(|b| b.get(..n));
                let value = value.ok_or_else(|| Error::invalid("the engine kept no copy of the value read"))?;
                found[key as usize] = Some(blob::check(value, key, blob_len(self.seed, key)));
            }
        }
        session.close()
    }

    fn check_files(&self, t: &mut Tally, found: &mut [Option<Verdict>]) -> Result<()> {
        let names = std::fs::read_dir(&self.path).map_err(|e| Error::io(&self.path, "cannot list directory", e))?;
        for entry in names {
            let entry = entry.map_err(|e| Error::io(&self.path, "cannot list directory", e))?;
            let name = entry.file_name();
            let key = name.to_str().filter(|n| n.len() == 6).and_then(|n| n.parse::<u32>().ok());
            if !key.is_some_and(|k| (1..=self.count).contains(&k)) {
                t.stray.push(entry.path());
            }
        }
        for key in 1..=self.count {
            let p = self.path.join(blob_name(FLAT_KIND, key));
            found[key as usize] = match std::fs::read(&p) {
                Ok(bytes) => Some(blob::check(&bytes, key, blob_len(self.seed, key))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(Error::io(&p, "cannot read", e)),
            };
        }
        Ok(())
    }

    /// Puts every damaged blob back to its last verified version and
    /// removes stray files, so each kill is judged on its own.
    pub fn repair(&self, t: &Tally) -> Result<()> {
        if self.method.is_db() {
            if t.integrity_failed() || !t.bad_keys.is_empty() {
                self.write_db(&self.path)?;
            }
            return Ok(());
        }
        if self.method.is_engine() {
            if t.integrity_failed() || !t.bad_keys.is_empty() {
                self.write_engine()?;
            }
            return Ok(());
        }
        for &key in &t.bad_keys {
            self.write_file(key)?;
        }
        for p in &t.stray {
            std::fs::remove_file(p).map_err(|e| Error::io(p, "cannot remove a stray file", e))?;
        }
        Ok(())
    }
}

/// Keys a read found whole or torn that `listed` (sorted) does not show.
fn unlisted(found: &[Option<Verdict>], listed: &[u32]) -> u64 {
    let read = found.iter().enumerate().filter(|(_, v)| v.is_some()).map(|(k, _)| k as u32);
    read.filter(|k| listed.binary_search(k).is_err()).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: ConfigId = ConfigId::Truncate;
    const DB: ConfigId = ConfigId::DbWalNormal;

    #[test]
    fn sizes_are_fixed_and_in_range() {
        let sizes: Vec<usize> = (1..=1000).map(|k| blob_len(1, k)).collect();
        assert!(sizes.iter().all(|&s| (MIN_BLOB..=MAX_BLOB).contains(&s)));
        assert!(sizes.iter().any(|&s| s < 4096) && sizes.iter().any(|&s| s > 32 * 1024));
        assert_eq!(blob_len(1, 5), blob_len(1, 5));
    }

    #[test]
    fn files_are_classified_then_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blobs");
        let mut ds = Dataset::create(&path, FILES, 5, 3).unwrap();
        let base = 1u64 << 32;
        let file = |k| path.join(blob_name(FLAT_KIND, k));
        let mut newer = vec![0u8; blob_len(3, 2)];
        blob::encode(&mut newer, 2, base + 4);
        std::fs::write(file(2), &newer).unwrap();
        std::fs::write(file(3), &newer[..100]).unwrap();
        std::fs::remove_file(file(4)).unwrap();
        std::fs::write(path.join("000005.tmp"), b"half").unwrap();
        let t = ds.check(base).unwrap();
        assert_eq!((t.intact_old, t.intact_new, t.torn, t.missing, t.unexpected), (2, 1, 1, 1, 0));
        assert_eq!(t.stray, [path.join("000005.tmp")]);
        ds.repair(&t).unwrap();
        let again = ds.check(2 * base).unwrap();
        assert_eq!((again.intact_old, again.torn, again.missing, again.stray.len()), (5, 0, 0, 0));
        std::fs::write(file(1), &newer).unwrap();
        assert_eq!(ds.check(2 * base).unwrap().torn, 1, "key 2's blob under key 1's name");
    }

    /// Every crash-tested engine at once, each on its own store (its
    /// throwaway server's starts are most of the time, and overlap).
    #[test]
    fn engine_stores_are_read_back_and_rebuilt() {
        let crash_tested = crate::engine::registry::key_value_kinds().into_iter();
        std::thread::scope(|s| {
            for engine in crash_tested.filter(|k| !crate::engine::backend(*k).write_configs().is_empty()) {
                s.spawn(move || read_back_and_rebuilt(engine));
            }
        });
    }

    /// `engine`'s store read back whole, then an unreadable one failing
    /// the check in one line and rebuilt by the repair.
    fn read_back_and_rebuilt(engine: crate::records::EngineKind) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv");
        let mut ds = Dataset::create(&path, ConfigId::Durable(engine), 4, 5).unwrap();
        assert!(!dir.path().join("kv.source.db").exists(), "{engine:?}: the source database is removed");
        let t = ds.check(1 << 32).unwrap();
        assert_eq!(t.integrity_error, None, "{engine:?}");
        assert_eq!((t.intact_old, t.torn, t.missing), (4, 0, 0), "{engine:?}");
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
            std::fs::create_dir(&path).unwrap();
        } else {
            std::fs::write(&path, b"not a store").unwrap();
        }
        let broken = ds.check(2 << 32).unwrap();
        let why = broken
            .integrity_error
            .as_deref()
            .unwrap_or_else(|| panic!("{engine:?}: an unreadable store fails the check"));
        assert!(why.starts_with("kv") && !why.contains(dir.path().to_str().unwrap()), "{engine:?}: {why}");
        ds.repair(&broken).unwrap();
        assert_eq!(ds.check(3 << 32).unwrap().intact_old, 4, "{engine:?}: rebuilt");
    }

    #[test]
    fn database_is_classified_and_rebuilt_when_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let mut ds = Dataset::create(&path, DB, 4, 9).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.execute("UPDATE kv SET v=zeroblob(length(v)) WHERE k=1", []).unwrap();
        conn.execute("DELETE FROM kv WHERE k=2", []).unwrap();
        let mut stale = vec![0u8; blob_len(9, 3)];
        blob::encode(&mut stale, 3, 77);
        conn.execute("UPDATE kv SET v=?1 WHERE k=3", [&stale]).unwrap();
        drop(conn);
        let t = ds.check(1 << 32).unwrap();
        assert_eq!(t.integrity_error, None);
        assert_eq!((t.intact_old, t.torn, t.missing, t.unexpected), (1, 1, 1, 1));
        ds.repair(&t).unwrap();
        let again = ds.check(2 << 32).unwrap();
        assert_eq!((again.intact_old, again.torn, again.missing), (4, 0, 0));
        std::fs::write(&path, b"SQLite format 3\0 but nothing else").unwrap();
        let broken = ds.check(3 << 32).unwrap();
        let why = broken.integrity_error.as_deref().unwrap_or_default();
        assert!(why.contains("not a database") && !why.contains(dir.path().to_str().unwrap()), "{why}");
        assert_eq!(broken.missing, 4);
    }
}
