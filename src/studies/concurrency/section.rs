//! The `concurrency` section of a result file: the settings, every point
//! (workload x configuration x thread count, `points.rs`) with its raw runs
//! and summary, the study's conclusions as measured here, and the other
//! workloads' own parts (blob readers, server clients, writers).

use serde::{Deserialize, Serialize};

use super::blobs::BlobReaders;
use super::conclusions::Conclusion;
use super::options::{Modes, Workload};
use super::points::Point;
use super::servers::ServerClients;
use super::writers::Writers;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConcurrencySection {
    pub settings: Settings,
    pub points: Vec<Point>,
    /// Per round, the points (indices into `points`) in the order they ran:
    /// run i of every point ran in round i, so ratios pair by round. Empty
    /// in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_order: Vec<Vec<u32>>,
    pub conclusions: Vec<Conclusion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_readers: Option<BlobReaders>,
    /// Server stores read by 1 to 16 clients (`--engines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_clients: Option<ServerClients>,
    /// Durable writers with readers beside them, on every engine given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers: Option<Writers>,
    /// Stopped by Ctrl-C; the points here are complete ones.
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub threads: Vec<u32>,
    pub duration_s: f64,
    pub repeat: u32,
    pub rows: u32,
    pub batch: u32,
    pub busy_timeout_ms: u32,
    pub quick: bool,
    pub workloads: Vec<Workload>,
    pub modes: Modes,
    /// CPUs this process may run on (the study's "cpu count").
    pub cores: u32,
    pub sqlite_version: String,
    /// Random keys per reader thread and rows of values per writer thread,
    /// made before the timer and cycled through.
    pub key_pool: u32,
    pub value_pool: u32,
    /// One clock read, measured; the loop makes one per operation.
    pub clock_cost_ns: f64,
    /// Ratios within this many percent of 1 count as "no difference".
    pub tie_pct: f64,
}
