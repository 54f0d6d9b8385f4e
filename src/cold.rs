//! Cold-cache runs without root: flush dirty pages, drop the dataset's pages
//! with `posix_fadvise(DONTNEED)`, then check with `mincore` how much of a
//! sample is still resident. Directory entries and inodes stay cached (only
//! root can drop those), which the report says.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::Result;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvictionReport {
    pub files: u64,
    pub bytes: u64,
    pub sampled_pages: u64,
    pub resident_pages: u64,
    /// Share of the sampled pages still in the page cache after eviction.
    pub resident_pct: f64,
    /// True when the residency is low enough to call the next run cold.
    pub effective: bool,
    pub elapsed_ns: u64,
    pub note: Option<String>,
}

/// Evicts `files` from the page cache and reports how well that worked.
pub fn evict(files: &[PathBuf]) -> Result<EvictionReport> {
    let _ = files;
    Ok(EvictionReport { note: Some("not implemented yet".into()), ..EvictionReport::default() })
}
