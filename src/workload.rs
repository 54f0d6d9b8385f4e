//! Parameters of a kvtest-style workload, as recorded in result files.

use serde::{Deserialize, Serialize};

use crate::keys::Order;
use crate::measure::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// An SQLite database with table kv(k INTEGER PRIMARY KEY, v BLOB).
    Db,
    /// One file per blob in one directory, named %06d.
    Flat,
    /// One file per blob in a tree, named %02d/%02d/%02d.
    Tree,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadParams {
    pub path: String,
    pub layout: Layout,
    pub update: bool,
    pub count: u64,
    pub max_id: u32,
    pub start: u32,
    pub order: Order,
    pub threads: u32,
    pub plan: Plan,
}
