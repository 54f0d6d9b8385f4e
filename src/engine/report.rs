//! What the dataset tools report: a build (`export`) and `stat`'s
//! description of each kind of dataset, with its disk usage.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::records::{DiskUsage, EngineKind};

/// A dataset built from a kvtest database.
#[derive(Debug, Clone)]
pub struct ExportReport {
    pub layout: EngineKind,
    pub files: u64,
    pub bytes: u64,
    pub elapsed_ns: u64,
    /// Requests tried again because the store answered busy (an object
    /// store's 503 and kin) or their connection broke (a reset, a timeout);
    /// 0 for every other engine.
    pub busy_retries: u64,
    /// Blobs sent by multipart upload (an object store's, at or above its
    /// threshold; 0 for every other engine).
    pub multipart_blobs: u64,
    /// Where the objects went, when that is not the dataset's directory
    /// (an object store's bucket and prefix).
    pub location: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbStat {
    pub entries: u64,
    pub avg_size: f64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    pub page_size: u64,
    pub page_count: u64,
    pub freelist_count: u64,
    pub journal_mode: String,
    /// `PRAGMA integrity_check(10)` lines ("ok" when sound).
    pub integrity: Vec<String>,
    pub file_bytes: u64,
    pub allocated_bytes: u64,
    /// A WAL beside the database, if any.
    pub wal_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirStat {
    pub layout: EngineKind,
    pub entries: u64,
    pub avg_size: f64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    pub directories: u64,
    /// File and directory sizes as `ls` shows them.
    pub apparent_bytes: u64,
    /// Blocks allocated to files and directories, as `du` counts them.
    pub allocated_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StatReport {
    Db(DbStat),
    Dir(DirStat),
    /// A key-value engine's dataset (LMDB, redb, fjall).
    Kv(KvStat),
    /// A dataset a server holds (PostgreSQL's table).
    Server(ServerStat),
}

impl StatReport {
    pub fn disk_usage(&self, path: &Path) -> DiskUsage {
        let path = path.display().to_string();
        match self {
            // The kind itself, not `sqlite::KIND`: sqlite's module uses
            // this one's reports, and the engines' imports run one way.
            StatReport::Db(s) => DiskUsage {
                layout: EngineKind::Db,
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes + s.wal_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Dir(s) => DiskUsage {
                layout: s.layout,
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.apparent_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Kv(s) => DiskUsage {
                layout: s.engine,
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            // The server's own count of the store's bytes; the blocks its
            // files take on this machine's disk when blobbench runs it.
            StatReport::Server(s) => DiskUsage {
                layout: s.engine,
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.stored_bytes,
                allocated_bytes: s.local.as_ref().map_or(s.stored_bytes, |l| l.allocated_bytes),
            },
        }
    }
}

/// What `stat` says about a key-value engine's dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KvStat {
    pub engine: EngineKind,
    pub entries: u64,
    pub avg_size: f64,
    pub min_size: u64,
    pub max_size: u64,
    /// Sum of the values' lengths.
    pub content_bytes: u64,
    /// The engine's files as `ls` sizes them.
    pub file_bytes: u64,
    /// Blocks allocated to them, as `du` counts them.
    pub allocated_bytes: u64,
}

/// `stat` of a dataset a server holds: the sizes every engine reports,
/// then the server's own accounting, in its terms, as lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStat {
    pub engine: EngineKind,
    /// What holds the blobs there, e.g. "table kv".
    pub blobs_in: String,
    pub entries: u64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    /// The server's own sizes of the store (PostgreSQL's table, TOAST,
    /// index and total bytes), in the order `stat` prints them.
    pub sizes: Vec<SizeLine>,
    /// The store's bytes as the server counts them (its total).
    pub stored_bytes: u64,
    /// The blocks the server's files take on this machine's disk, when
    /// blobbench runs the server; None for a server the user runs.
    pub local: Option<LocalBlocks>,
}

/// One of a server's sizes: what it is, its bytes, and how the server
/// counted them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeLine {
    /// e.g. "TOAST bytes".
    pub name: String,
    pub bytes: u64,
    /// e.g. "TOAST and maps; pg_largeobject for large objects".
    pub how: String,
}

/// Blocks a throwaway server's files take on disk, as `du` counts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalBlocks {
    pub allocated_bytes: u64,
    /// What they cover, e.g. "the whole cluster's blocks, WAL included".
    pub covers: String,
}
