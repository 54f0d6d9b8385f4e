//! What a dataset is made of and what it occupies: plain records shared by
//! engines, studies and the result file.

use serde::{Deserialize, Serialize};

use super::sizes::{SizeBucket, SizeDist};

/// How a kvtest dataset was made (`blobbench init`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSpec {
    pub count: u32,
    /// Mean blob size in bytes; each blob is uniform in size +/- variance
    /// unless `sizes` names another distribution.
    pub size: u32,
    pub variance: u32,
    pub page_size: u32,
    pub seed: u64,
    /// The size distribution when it is not kvtest's uniform one (absent in
    /// older result files, which were all uniform).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<SizeDist>,
    /// The directory whose files became the blobs (`init --from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_dir: Option<String>,
    /// The blob sizes actually stored, in power-of-two bins (bucket size is
    /// the bin's upper bound), for the report's histogram.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_histogram: Vec<SizeBucket>,
}

impl DatasetSpec {
    /// The distribution sizes are drawn from: `sizes`, or uniform
    /// size +/- variance.
    pub fn size_dist(&self) -> SizeDist {
        self.sizes.clone().unwrap_or(SizeDist::Uniform { size: self.size, variance: self.variance })
    }
}

impl Default for DatasetSpec {
    /// kvtest's defaults.
    fn default() -> Self {
        DatasetSpec {
            count: 1000,
            size: 10_000,
            variance: 0,
            page_size: 4096,
            seed: 1,
            sizes: None,
            from_dir: None,
            size_histogram: Vec::new(),
        }
    }
}

/// How much space one stored copy of the data takes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DiskUsage {
    /// Its engine ("db", "flat", "tree", ... in the file).
    pub layout: super::EngineKind,
    pub path: String,
    pub entries: u64,
    /// Sum of the blob sizes (the content itself).
    pub content_bytes: u64,
    /// File sizes as `ls` shows them.
    pub apparent_bytes: u64,
    /// Blocks really allocated, as `du` counts them (files and directories).
    pub allocated_bytes: u64,
}
