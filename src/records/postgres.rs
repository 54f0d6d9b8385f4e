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
    /// A replicated throwaway cluster's layout and network, when the
    /// dataset ran on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<String>,
}

/// How a primary chooses the standbys a commit waits for
/// (`synchronous_standby_names`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMethod {
    /// `FIRST N (...)` or a plain list: the first N connected, by priority
    /// (`sync_state = sync`).
    Priority,
    /// `ANY N (...)`: any N of those named (`sync_state = quorum`).
    Quorum,
}

/// One standby as `pg_stat_replication` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgStandbyRow {
    /// Its `application_name`.
    pub name: String,
    /// `streaming`, `catchup`, ...
    pub state: String,
    /// `sync`, `quorum`, `potential` or `async`.
    pub sync_state: String,
}

/// What a commit on the server waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "waits_for", rename_all = "snake_case")]
pub enum CommitWait {
    /// No standby: the setting that says so, and a sentence.
    NoStandby { setting: String, why: String },
    /// `count` standbys, chosen by `method`, to the point `level`
    /// (`synchronous_commit`: `remote_write`, `on` or `remote_apply`);
    /// `connected` of them are streaming as synchronous now.
    Standbys { method: SyncMethod, count: u32, level: String, connected: u32 },
}

impl CommitWait {
    /// One line: what a commit there waits for.
    pub fn describe(&self) -> String {
        match self {
            CommitWait::NoStandby { why, .. } => why.clone(),
            CommitWait::Standbys { method, count, level, connected } => {
                let how = match method {
                    SyncMethod::Priority => "by priority (sync)",
                    SyncMethod::Quorum => "any of those named (quorum)",
                };
                let plural = if *count == 1 { "" } else { "s" };
                let point = match level.as_str() {
                    "remote_write" => "has written it (not flushed)",
                    "remote_apply" => "has flushed and applied it",
                    _ => "has flushed it to its disk",
                };
                format!(
                    "a commit waits until {count} standby{plural}, chosen {how}, {point} \
                     (synchronous_commit = {level}); {connected} streaming as synchronous now"
                )
            }
        }
    }

    /// Why an acknowledged commit could be lost with one machine (or hang
    /// for ever), naming the setting; None when it waits for a standby's
    /// disk.
    pub fn refusal(&self) -> Option<String> {
        match self {
            CommitWait::NoStandby { why, .. } => Some(why.clone()),
            CommitWait::Standbys { level, .. } if level == "remote_write" => Some(
                "synchronous_commit = remote_write: a commit waits until the standby has written it, not flushed it; \
                 a power cut of both machines can lose it"
                    .into(),
            ),
            CommitWait::Standbys { count, connected, .. } if connected < count => Some(format!(
                "synchronous_standby_names asks for {count} synchronous standbys and pg_stat_replication shows \
                 {connected} of the {count} streaming: every commit waits until one connects"
            )),
            CommitWait::Standbys { .. } => None,
        }
    }
}

/// What a server says of its replication (`--pg URL`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgReplication {
    pub synchronous_standby_names: String,
    /// The server's default, which an application's commits get.
    pub synchronous_commit: String,
    pub standbys: Vec<PgStandbyRow>,
    pub wait: CommitWait,
}
