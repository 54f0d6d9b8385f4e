//! What a dataset is made of and what it occupies: plain records shared by
//! engines, studies and the result file.

use serde::{Deserialize, Serialize};

/// How a kvtest dataset was made (`blobbench init`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetSpec {
    pub count: u32,
    /// Mean blob size in bytes; each blob is uniform in size +/- variance.
    pub size: u32,
    pub variance: u32,
    pub page_size: u32,
    pub seed: u64,
}

impl Default for DatasetSpec {
    /// kvtest's defaults.
    fn default() -> Self {
        DatasetSpec { count: 1000, size: 10_000, variance: 0, page_size: 4096, seed: 1 }
    }
}

/// How much space one stored copy of the data takes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiskUsage {
    /// "db", "flat" or "tree".
    pub layout: String,
    pub path: String,
    pub entries: u64,
    /// Sum of the blob sizes (the content itself).
    pub content_bytes: u64,
    /// File sizes as `ls` shows them.
    pub apparent_bytes: u64,
    /// Blocks really allocated, as `du` counts them (files and directories).
    pub allocated_bytes: u64,
}
