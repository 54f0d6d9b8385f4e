//! PostgreSQL's settings of a run and what its server said about itself.

use serde::{Deserialize, Serialize};

/// How the bytea column stores its values (`ALTER TABLE ... SET STORAGE`),
/// chosen when the dataset is exported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PgStorage {
    /// PostgreSQL's default: compressed, then moved out of line (TOAST)
    /// when a row passes about 2 kB.
    #[default]
    Extended,
    /// Out of line, never compressed.
    External,
}

impl PgStorage {
    pub fn sql(self) -> &'static str {
        match self {
            PgStorage::Extended => "EXTENDED",
            PgStorage::External => "EXTERNAL",
        }
    }
}

/// The PostgreSQL engines' own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgParams {
    /// A server the user runs (`--pg URL`); None: blobbench's throwaway
    /// cluster inside the dataset's directory.
    pub url: Option<String>,
    /// The bytea column's storage (export only).
    pub storage: PgStorage,
}

/// What a replicated PostgreSQL's standby is to its primary's commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PgStandby {
    /// Named in `synchronous_standby_names`: a commit returns once the
    /// standby has flushed its WAL (`synchronous_commit = on`).
    Sync,
    /// Not named: it follows the primary when it can; a commit waits for
    /// the primary's disk only.
    Async,
}

/// What PostgreSQL reported about itself, read once before the runs; a
/// result file records it as a `ServerInfo` (files written before that
/// shape hold these fields, and are read through it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgServerInfo {
    /// `server_version`, e.g. "15.14 (Debian 15.14-0+deb12u1)".
    pub version: String,
    /// `server_version_num`, e.g. 150014.
    pub version_num: u32,
    pub shared_buffers: String,
    /// The session's `synchronous_commit` (on: durable, off: fast).
    pub synchronous_commit: String,
    pub wal_level: String,
    pub fsync: String,
    /// "local": blobbench's throwaway cluster on a Unix socket; "remote": a
    /// server the user runs (`--pg URL`), on this machine or another.
    pub server: String,
    /// The table holding the blobs.
    pub table: String,
}
