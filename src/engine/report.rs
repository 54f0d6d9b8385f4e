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
    /// A PostgreSQL table (bytea or large objects).
    Pg(PgStat),
}

impl StatReport {
    pub fn disk_usage(&self, path: &Path) -> DiskUsage {
        let path = path.display().to_string();
        match self {
            StatReport::Db(s) => DiskUsage {
                layout: "db".into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes + s.wal_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Dir(s) => DiskUsage {
                layout: s.layout.name().into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.apparent_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Kv(s) => DiskUsage {
                layout: s.engine.name().into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            // The server's sizes of the table; the cluster's blocks on disk
            // when blobbench runs it (WAL and catalogs included).
            StatReport::Pg(s) => DiskUsage {
                layout: s.engine.name().into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.total_bytes,
                allocated_bytes: s.cluster_allocated_bytes.unwrap_or(s.total_bytes),
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

/// `stat` of a PostgreSQL dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgStat {
    pub engine: EngineKind,
    pub table: String,
    pub entries: u64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    /// The table's main fork (`pg_relation_size`).
    pub table_bytes: u64,
    /// TOAST, free-space and visibility maps (`pg_table_size` less the main
    /// fork); for large objects, `pg_largeobject`'s total instead (every
    /// large object of the database).
    pub toast_bytes: u64,
    /// `pg_indexes_size`.
    pub index_bytes: u64,
    /// `pg_total_relation_size` (plus `pg_largeobject`'s for large objects).
    pub total_bytes: u64,
    /// Blocks allocated to the whole throwaway cluster (WAL, catalogs and
    /// all), as `du` counts them; None on a user's server.
    pub cluster_allocated_bytes: Option<u64>,
}
