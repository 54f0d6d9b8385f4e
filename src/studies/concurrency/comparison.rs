//! One ratio between two measured things of the study (two points, two
//! blob stores, two writer counts), as conclusions rest on it: at the
//! bottom, so the workloads that make ratios and the conclusions that
//! judge them both use it without using each other.

use serde::{Deserialize, Serialize};

use super::options::Workload;
use crate::measure::paired::PairedRatio;

/// One ratio: `a` over `b` at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub workload: Workload,
    pub threads: u32,
    pub a: String,
    pub b: String,
    /// The paired ratio's estimate when there is one, else the ratio of
    /// the two medians.
    pub ratio: f64,
    /// Paired by round: run i of every point ran in round i, so the ratio
    /// is the median of the per-round ratios, with its interval. Absent in
    /// older files (their ratios are of medians, unpaired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedRatio>,
}
