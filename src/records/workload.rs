//! Parameters of a kvtest-style workload, as recorded in result files.

use serde::{Deserialize, Serialize};

use super::keys::Order;
use super::{DbWriters, EngineKind};

/// How blobs are read out of a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DbAccess {
    /// "SELECT v FROM kv WHERE k=?1", prepared once.
    Sql,
    /// sqlite3_blob_open once, then sqlite3_blob_reopen per key.
    BlobApi,
}

/// PRAGMA synchronous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncLevel {
    Off,
    Normal,
    Full,
    Extra,
}

impl SyncLevel {
    pub fn pragma(self) -> &'static str {
        match self {
            SyncLevel::Off => "OFF",
            SyncLevel::Normal => "NORMAL",
            SyncLevel::Full => "FULL",
            SyncLevel::Extra => "EXTRA",
        }
    }
}

/// How a blob file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileRead {
    /// kvtest's way: stat, fopen, malloc, fread, fclose, free.
    Stdio,
    /// open, fstat, read into a reused buffer, close.
    Posix,
}

/// How a blob file is overwritten (same size, new content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileWrite {
    /// kvtest's way: stat, fopen("wb") (truncates), fwrite, fclose.
    Truncate,
    /// open without truncating, fstat, pwrite over the old bytes, close.
    Inplace,
    /// write a temporary file, then rename it over the old one.
    Replace,
}

/// Database settings of a run (kvtest's options).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbParams {
    pub access: DbAccess,
    /// PRAGMA cache_size as given (kvtest's default 1000 pages).
    pub cache_size: i64,
    /// PRAGMA mmap_size in bytes (0 = no mmap).
    pub mmap_bytes: i64,
    /// PRAGMA journal_mode requested, if any.
    pub journal_mode: Option<super::Journal>,
    /// PRAGMA synchronous requested, if any.
    pub sync: Option<SyncLevel>,
    /// Checkpoint (in the close) excluded from kvtest's total and timed apart.
    pub nocheckpoint: bool,
    /// How several clients of one process write (`OpenMode::client`).
    #[serde(default, skip_serializing_if = "DbWriters::is_per_client")]
    pub writers: DbWriters,
}

impl Default for DbParams {
    fn default() -> Self {
        DbParams {
            access: DbAccess::Sql,
            cache_size: 1000,
            mmap_bytes: 0,
            journal_mode: None,
            sync: None,
            nocheckpoint: false,
            writers: DbWriters::PerClient,
        }
    }
}

/// File settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FileParams {
    pub read: FileRead,
    pub write: FileWrite,
    /// fsync each file after writing it (kvtest's --fsync).
    pub fsync: bool,
    /// fsync the directory too, once per commit (every `commit_every`
    /// writes, or at the end of a run): what makes a rename, a new file or
    /// a removal durable. The files' own fsyncs stay one per file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sync_dir: bool,
}

impl Default for FileParams {
    fn default() -> Self {
        FileParams { read: FileRead::Stdio, write: FileWrite::Truncate, fsync: false, sync_dir: false }
    }
}

/// When a key-value engine's commit returns, is the data on disk?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvSync {
    /// The commit waits for the disk (LMDB's default, redb
    /// `Durability::Immediate`, fjall `PersistMode::SyncAll`).
    #[default]
    Durable,
    /// The commit returns before the disk has the data (LMDB `MDB_NOSYNC`,
    /// redb `Durability::None`, fjall buffered journal).
    Fast,
}

/// Settings of a key-value engine (LMDB, redb, fjall, PostgreSQL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvParams {
    pub sync: KvSync,
}

/// The most writes one commit may group (`--commit-every`).
pub const MAX_COMMIT_EVERY: u32 = 1_000_000;

/// How a session's writes are committed: a write returns once `N` writes
/// (this one included) have been committed, durably or, when durability is
/// relaxed, made visible. None is kvtest's way: one transaction per run,
/// committed at its end.
///
/// In a session that only reads, `Some(_)` is kvtest's `--multitrans`:
/// each read in its own transaction (none begun by the session).
pub type CommitEvery = Option<u32>;

/// Checks `--commit-every N`: 1 to [`MAX_COMMIT_EVERY`].
pub fn check_commit_every(n: u32) -> Result<(), String> {
    if n == 0 {
        Err("--commit-every must be at least 1 (a commit after every write)".into())
    } else if n > MAX_COMMIT_EVERY {
        Err(format!("--commit-every {n} is above the most a commit may group ({MAX_COMMIT_EVERY})"))
    } else {
        Ok(())
    }
}

/// Counts a session's writes and says when `N` of them have been made, so
/// the session commits them: every engine groups its writes the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBatch {
    every: u32,
    pending: u32,
}

impl WriteBatch {
    /// A batch of `n` writes (at least 1).
    pub fn new(n: u32) -> WriteBatch {
        WriteBatch { every: n.max(1), pending: 0 }
    }

    /// Counts one write; true when it fills the batch, which must then be
    /// committed (the count starts again).
    #[inline]
    pub fn wrote(&mut self) -> bool {
        self.pending += 1;
        if self.pending >= self.every {
            self.pending = 0;
            true
        } else {
            false
        }
    }

    /// Writes made since the last commit.
    pub fn pending(&self) -> u32 {
        self.pending
    }

    /// The batch was committed early (the session's final commit).
    pub fn committed(&mut self) {
        self.pending = 0;
    }
}

/// Every engine's settings for one run; each engine reads its own part.
/// Serialised for a client process, which opens the engine itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    pub db: DbParams,
    pub files: FileParams,
    pub kv: KvParams,
    pub pg: super::PgParams,
    pub s3: super::S3Params,
    /// How the writes are committed (`--commit-every N`): the same for
    /// every engine.
    pub commit_every: CommitEvery,
}

impl EngineSettings {
    /// Rewrites that wait for no disk: SQLite in WAL with synchronous
    /// NORMAL, a transaction per write; files replaced by rename without
    /// fsync. A writer beside readers, and grow-and-shrink, write this way.
    pub fn fast_rewrites() -> EngineSettings {
        EngineSettings {
            db: DbParams {
                journal_mode: Some(super::Journal::Wal),
                sync: Some(SyncLevel::Normal),
                ..DbParams::default()
            },
            files: FileParams { read: FileRead::Posix, write: FileWrite::Replace, fsync: false, sync_dir: false },
            commit_every: Some(1),
            ..EngineSettings::default()
        }
    }
}

/// Everything that defines one `run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadParams {
    pub path: String,
    pub layout: EngineKind,
    pub update: bool,
    /// Operations that find a blob, per run (all threads together).
    pub count: u64,
    pub max_id: u32,
    pub start: u32,
    pub order: Order,
    pub threads: u32,
    /// Database settings; meaningful when layout is db.
    #[serde(default)]
    pub db: DbParams,
    /// File settings; meaningful when layout is flat or tree.
    #[serde(default)]
    pub files: FileParams,
    /// Key-value engine settings; meaningful when layout is lmdb, redb or fjall.
    #[serde(default)]
    pub kv: KvParams,
    /// Writes per commit (`--commit-every N`); absent for one transaction
    /// per run (kvtest's way, and every file from before schema version 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_every: CommitEvery,
    pub plan: Plan,
    /// Seed of the content written by an update run (repeat it with --seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Hot keys: Zipf's theta (`--keys zipf:THETA`); absent for `order`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zipf_theta: Option<f64>,
    /// Reads and same-size overwrites mixed in this ratio (`--mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    /// Each op was a server round trip with no work (PostgreSQL's
    /// `SELECT 1`: the engine's `round_trip_call`), not a read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub round_trip: bool,
    /// The server the run measured (a server engine's version and
    /// settings). Files written before it was engine-neutral hold
    /// PostgreSQL's fields as `server`, read into it.
    #[serde(default, alias = "server", skip_serializing_if = "Option::is_none")]
    pub server_info: Option<super::ServerInfo>,
}

/// A mix of reads and writes (`--mix READ:WRITE`, e.g. 95:5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    pub read: u32,
    pub write: u32,
}

/// How an experiment is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Timed runs.
    pub repeat: u32,
    /// Untimed runs before the timed ones (the article discards one).
    pub warmup: u32,
    /// Evict the dataset from the page cache before each timed run.
    pub cold: bool,
    /// Time every operation (one clock read per op) for percentiles.
    pub latency: bool,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { repeat: 5, warmup: 1, cold: false, latency: true }
    }
}
