//! SQLite as an engine: a kvtest database (`kv(k INTEGER PRIMARY KEY, v
//! BLOB)`) opened with a run's pragmas. The session (`session.rs`) makes the
//! raw SQLite calls kvtest.c makes.

mod busy;
pub mod error;
pub mod from_dir;
pub(crate) mod init;
pub mod raw;
mod session;
mod stat;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use busy::busy_delay;
pub use session::writers::{writers, WRITERS};
use session::writers::{Lent, SharedWriters};
pub use session::DbSession;

use crate::engine::api::{Engine, OpenMode, Session, Survey};
use crate::engine::backend::{Backend, Claim, LocalBytes, Probe, WriteConfig, WriteSettings};
use crate::engine::keep::Idle;
use crate::engine::kvtest_db::{open_kv, SQLITE_HEADER};
use crate::engine::report::{ExportReport, StatReport};
use crate::records::{CommitEvery, ConfigId, DbParams, EngineKind, EngineSettings, Journal, SyncLevel};
use crate::util::progress::Progress;
use crate::{Error, Result};
use error::db_error;

/// SQLite's backend: its dataset is the kvtest database itself.
pub struct SqliteBackend;

pub static BACKEND: SqliteBackend = SqliteBackend;

/// SQLite's kind, for the studies that compare it with files by design.
pub const KIND: EngineKind = EngineKind::Db;

impl Backend for SqliteBackend {
    fn kind(&self) -> EngineKind {
        KIND
    }

    fn claim(&self, probe: &Probe) -> Claim {
        Claim::yes_if(!probe.is_dir && probe.head == SQLITE_HEADER)
    }

    fn build(
        &self,
        _db: &Path,
        _target: &Path,
        _force: bool,
        _settings: &EngineSettings,
        _progress: &dyn Progress,
    ) -> Result<ExportReport> {
        Err(Error::invalid("a kvtest database is made by init, not exported"))
    }

    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine> {
        Box::new(SqliteEngine::new(path, settings.db.clone(), settings.commit_every))
    }

    fn stat(&self, path: &Path, vacuum: bool, _settings: &EngineSettings) -> Result<StatReport> {
        stat::db_stat(path, vacuum).map(StatReport::Db)
    }

    /// The database and its WAL or journal, when there.
    fn local_bytes(&self, path: &Path, _settings: &EngineSettings) -> Result<LocalBytes> {
        Ok(LocalBytes::In(db_files(path).into_iter().filter(|f| f.exists()).collect()))
    }

    fn timer_covers(&self, settings: &EngineSettings) -> &'static str {
        if settings.db.nocheckpoint {
            "open + pragmas + loop + commit; the closing checkpoint is timed apart"
        } else {
            "open + pragmas + loop + commit + close (which checkpoints a WAL)"
        }
    }

    fn write_configs(&self) -> &'static [WriteConfig] {
        WRITE_CONFIGS
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

const fn db_config(id: ConfigId, description: &'static str, journal: Journal, sync: SyncLevel) -> WriteConfig {
    WriteConfig::new(id, description, WriteSettings::Db { journal, sync })
}

/// With a journal a killed writer leaves the database sound; FULL and EXTRA
/// sync each commit. DELETE under FULL may lose the last commit in a power
/// cut (the journal's unlink is not synced), as SQLite documents. WAL is
/// advise's SQLite and aging's; aging also ages the rollback journal.
const WRITE_CONFIGS: &[WriteConfig] = &[
    db_config(ConfigId::DbWalNormal, "SQLite, WAL, synchronous=NORMAL", Journal::Wal, SyncLevel::Normal)
        .atomic()
        .power_cuts(0, 0, 0)
        .aged("SQLite, WAL"),
    db_config(ConfigId::DbWalFull, "SQLite, WAL, synchronous=FULL", Journal::Wal, SyncLevel::Full)
        .atomic()
        .durable()
        .power_cuts(0, 0, 0),
    db_config(
        ConfigId::DbDelete,
        "SQLite, rollback journal (DELETE), synchronous=FULL",
        Journal::Delete,
        SyncLevel::Full,
    )
    .atomic()
    .durable_undocumented()
    .aged("SQLite, rollback journal"),
    db_config(
        ConfigId::DbDeleteExtra,
        "SQLite, rollback journal (DELETE), synchronous=EXTRA",
        Journal::Delete,
        SyncLevel::Extra,
    )
    .atomic()
    .durable(),
    db_config(ConfigId::DbOff, "SQLite, journal_mode=OFF, synchronous=OFF", Journal::Off, SyncLevel::Off),
];

/// An SQLite database (kvtest's `kv` table) with a run's pragmas.
pub struct SqliteEngine {
    path: PathBuf,
    params: DbParams,
    commit_every: CommitEvery,
    /// Blob sizes by key, surveyed for writes (an SQL update counts bytes).
    sizes: Option<Arc<Vec<u32>>>,
    /// Connections read sessions kept open (`engine::keep`), each with
    /// its page cache.
    idle: Idle<rusqlite::Connection>,
    /// The connection of a writer that commits every N writes, kept
    /// between its sessions with its WAL in place, as a long-running
    /// application's (see [`SqliteEngine::open`]).
    writer: Idle<rusqlite::Connection>,
    /// The writers clients share (`DbWriters::One`'s).
    shared: SharedWriters,
}

impl SqliteEngine {
    pub fn new(path: &Path, params: DbParams, commit_every: CommitEvery) -> Self {
        SqliteEngine {
            path: path.to_path_buf(),
            params,
            commit_every,
            sizes: None,
            idle: Idle::new(),
            writer: Idle::new(),
            shared: SharedWriters::new(),
        }
    }
}

impl Drop for SqliteEngine {
    /// The shared writer's last batch is committed, not rolled back.
    fn drop(&mut self) {
        let _ = self.shared.finish();
    }
}

impl Engine for SqliteEngine {
    /// In process: no server.
    fn server_info(&self) -> Option<crate::records::ServerInfo> {
        None
    }

    fn kind(&self) -> EngineKind {
        KIND
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn survey(&mut self, for_writes: bool) -> Result<Survey> {
        if self.params.mmap_bytes < 0 {
            return Err(Error::invalid("--mmap must not be negative"));
        }
        open_kv(&self.path, false)?;
        if !for_writes {
            return Ok(Survey::default());
        }
        crate::util::fsutil::check_writable_file(&self.path)?;
        let (sizes, blob_max) = blob_sizes(&self.path)?;
        self.sizes = Some(sizes);
        Ok(Survey { max_key: None, blob_max })
    }

    /// A writer that commits every N writes (`--commit-every`) is a
    /// long-running application's: it keeps its connection between its
    /// sessions, so its WAL stays in place and is written over from the
    /// start after each checkpoint, instead of being deleted at every close
    /// and grown again from nothing (which made each durable commit slower
    /// than in SQLite's own loop: `docs/measurement.md`). Its close phase
    /// runs the checkpoint the closing connection would have run, so the
    /// deferred work is still timed there. kvtest's one transaction per run keeps
    /// kvtest's process per run: a connection per session.
    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        if mode.client.is_some() {
            let lent = Lent {
                path: &self.path,
                params: &self.params,
                commit_every: self.commit_every,
                sizes: &self.sizes,
                idle: &self.idle,
            };
            if let Some(client) = self.shared.client_session(lent, mode) {
                return client;
            }
        }
        let conn = if mode.write {
            // Readers' connections close first, so the writer's checkpoint
            // (at its close or in its session's close phase) is the last.
            self.idle.clear();
            self.writer.lease(self.commit_every.is_some(), || session::connect(&self.path))?
        } else {
            self.idle.lease(mode.keep, || session::connect(&self.path))?
        };
        let write = (mode.write, self.commit_every, mode.client.is_some());
        let s = DbSession::on(conn, &self.path, &self.params, write, mode.find_max, self.sizes.clone())?;
        Ok(Box::new(s))
    }

    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(db_files(&self.path))
    }

    /// Closes the kept connections, and with them their page caches.
    fn drop_own_caches(&self) -> Result<()> {
        self.shared.finish()?;
        self.idle.clear();
        self.writer.clear();
        Ok(())
    }

    fn verify_after_reads(&self) -> Result<()> {
        let n = non_blob_values(&self.path)?;
        if n > 0 {
            return Err(Error::bad_input(
                &self.path,
                format!("table kv holds {n} values that are not BLOBs; results discarded"),
            ));
        }
        Ok(())
    }
}

/// A database file and the journal and WAL that may sit beside it.
pub fn db_files(path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-wal", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        files.push(PathBuf::from(p));
    }
    files
}

/// Sizes of every blob by key, the largest size, and a check that every
/// value is a BLOB. One scan, done before an update run starts.
pub fn blob_sizes(path: &Path) -> Result<(Arc<Vec<u32>>, u32)> {
    let kv = open_kv(path, false)?;
    let err = |e| db_error(path, "cannot scan kv", e);
    let mut stmt = kv.conn.prepare("SELECT k, length(v), typeof(v) FROM kv").map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    let mut sizes = Vec::new();
    let mut max = 0u32;
    while let Some(r) = rows.next().map_err(err)? {
        let (k, ty): (i64, String) = (r.get(0).map_err(err)?, r.get(2).map_err(err)?);
        if ty != "blob" {
            return Err(Error::bad_input(path, format!("value of key {k} is {ty}, not a BLOB")));
        }
        let len: i64 = r.get(1).map_err(err)?;
        let (Ok(k), Ok(len)) = (usize::try_from(k), u32::try_from(len)) else {
            continue;
        };
        if k >= sizes.len() {
            sizes.resize(k + 1, 0);
        }
        sizes[k] = len;
        max = max.max(len);
    }
    Ok((Arc::new(sizes), max))
}

/// Counts values of kv that are not BLOBs (checked after read runs).
pub fn non_blob_values(path: &Path) -> Result<u64> {
    let kv = open_kv(path, false)?;
    kv.conn
        .query_row("SELECT count(*) FROM kv WHERE typeof(v)<>'blob'", [], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
        .map_err(|e| db_error(path, "cannot scan kv", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One write session on `engine` that rewrites keys 1..=4 with `byte`;
    /// whether it opened the connection.
    fn rewrite(engine: &mut SqliteEngine, byte: u8) -> bool {
        let mut s = engine.open(OpenMode::measured(true, false)).unwrap();
        let opened = s.info().opened_handle;
        for k in 1..=4u32 {
            let len = engine.sizes.as_ref().unwrap()[k as usize] as usize;
            s.overwrite(k, &vec![byte; len]).unwrap();
        }
        s.commit().unwrap();
        s.close().unwrap();
        opened
    }

    /// The first byte of key 3's blob in the database file alone, read
    /// from a copy without the WAL: what the checkpoints have put there.
    fn in_the_database_file(db: &Path, dir: &Path) -> u8 {
        let copy = dir.join("copy.db");
        std::fs::copy(db, &copy).unwrap();
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let v: Vec<u8> = conn.query_row("SELECT v FROM kv WHERE k=3", [], |r| r.get(0)).unwrap();
        v[0]
    }

    /// A writer that commits every N writes keeps its connection and its
    /// WAL between sessions, and its close phase still checkpoints every
    /// write into the database; the WAL goes when the engine does. A
    /// kvtest writer (one transaction per run) opens and closes each time.
    #[test]
    fn a_committing_writer_keeps_its_wal_and_still_checkpoints_at_each_close() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _) = crate::engine::kv::test_support::tiny_kv(dir.path(), 6);
        let params = DbParams { journal_mode: Some(Journal::Wal), sync: Some(SyncLevel::Full), ..DbParams::default() };
        let wal = dir.path().join("kv.db-wal");

        let mut engine = SqliteEngine::new(&db, params.clone(), Some(1));
        engine.survey(true).unwrap();
        assert!(rewrite(&mut engine, 0xA1), "the first session opens the connection");
        assert!(wal.exists(), "the WAL stays while the writer is kept");
        assert_eq!(in_the_database_file(&db, dir.path()), 0xA1, "the close phase checkpointed");
        assert!(!rewrite(&mut engine, 0xB2), "the next session finds the connection kept");
        assert_eq!(in_the_database_file(&db, dir.path()), 0xB2);
        engine.drop_own_caches().unwrap();
        assert!(!wal.exists(), "a cold run closes the writer too");
        assert!(rewrite(&mut engine, 0xC3), "and the next write opens it again");
        drop(engine);
        assert!(!wal.exists(), "the engine's end closes it and SQLite deletes the WAL");

        let mut kvtest = SqliteEngine::new(&db, params, None);
        kvtest.survey(true).unwrap();
        assert!(rewrite(&mut kvtest, 0xD4));
        assert!(!wal.exists(), "one transaction per run closes at each session's end");
        assert!(rewrite(&mut kvtest, 0xE5), "and opens again");
        assert_eq!(in_the_database_file(&db, dir.path()), 0xE5);
    }
}
