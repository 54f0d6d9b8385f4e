//! One measured configuration, as it is stored in the result file.

use serde::{Deserialize, Serialize};

use super::latency::{Latency, LatencySummary};
use super::sample::RunSample;
use super::stats::Summary;
use crate::records::WorkloadParams;

/// The engine's output for one experiment.
#[derive(Debug, Clone)]
pub struct Measured {
    pub runs: Vec<RunSample>,
    pub latency: Option<Latency>,
    pub summary: Summary,
    pub clock_cost_ns: f64,
    pub clock_overhead_pct: f64,
    pub warnings: Vec<String>,
    /// Stopped early by Ctrl-C; the runs here are complete ones.
    pub interrupted: bool,
    /// The one-off open of the engine's handle, reported apart: the setup
    /// time of the first run, warm-up included, that opened it.
    pub handle_open_ns: Option<u64>,
}

/// One configuration measured `repeat` times after `warmup` untimed runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Experiment {
    /// Stable machine-readable name, e.g. "read/db-blob-mmap".
    pub id: String,
    /// What a person calls it, e.g. "SQLite, blob API + mmap".
    pub label: String,
    pub params: WorkloadParams,
    pub warmup_runs: u32,
    /// Every timed run, raw.
    pub runs: Vec<RunSample>,
    /// Per-operation latency, merged over all timed runs (and threads).
    pub latency: Option<LatencySummary>,
    /// The same merged histogram in full: base64 of HdrHistogram's V2
    /// encoding, in nanoseconds (see [`Latency::from_base64`]). Absent in
    /// version 1 files and when latency was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
    pub summary: Summary,
    /// Cost of one clock read, measured on this machine, in nanoseconds.
    pub clock_cost_ns: f64,
    /// Clock cost as a share of the mean per-op time: the harness overhead.
    pub clock_overhead_pct: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Mixed runs (`--mix`): latency per class of operation ("read",
    /// "overwrite", ...), merged over the timed runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_latency: Vec<ClassLatency>,
    /// The one-off open of the engine's handle (connection, environment,
    /// database), reported apart from every per-op figure: the setup time
    /// of the first run that opened it, the warm-up when there was one
    /// (read sessions keep it open for the runs after). Absent where
    /// nothing is opened (one file per blob) and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle_open_ns: Option<u64>,
}

/// One class of operation's latency in a mixed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassLatency {
    /// "read", "overwrite", "put" or "delete".
    pub class: String,
    #[serde(flatten)]
    pub latency: LatencySummary,
}

impl Experiment {
    /// Each timed run's loop time per operation (open and commit excluded),
    /// in run order: run i of arms measured in rounds ran in round i.
    pub fn loop_times(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.loop_per_op_us).collect()
    }

    /// The median of the figure comparisons use: the steady-state time per
    /// op (the loop with each commit inside it), or kvtest's total in a
    /// file from before it; None when nothing usable was measured.
    pub fn figure_us(&self) -> Option<f64> {
        Some(self.summary.figure().median).filter(|v| v.is_finite() && *v > 0.0 && self.summary.runs > 0)
    }

    /// The median of kvtest's total per op (open, loop, commit and close
    /// over the ops), for the charts that redraw kvtest's figures.
    pub fn kvtest_us(&self) -> Option<f64> {
        Some(self.summary.per_op_us.median).filter(|v| v.is_finite() && *v > 0.0 && self.summary.runs > 0)
    }

    /// Each timed run's figure (see [`Experiment::figure_us`]), in run order.
    pub fn figures(&self) -> Vec<f64> {
        self.runs.iter().map(RunSample::figure).collect()
    }

    /// The experiment the measurement engine measured with `params`.
    pub fn from_measured(id: &str, label: &str, params: WorkloadParams, measured: Measured) -> Self {
        Experiment {
            id: id.to_string(),
            label: label.to_string(),
            warmup_runs: params.plan.warmup,
            params,
            latency: measured.latency.as_ref().map(Latency::summary),
            latency_histogram: measured.latency.as_ref().map(Latency::to_base64),
            summary: measured.summary,
            clock_cost_ns: measured.clock_cost_ns,
            clock_overhead_pct: measured.clock_overhead_pct,
            warnings: measured.warnings,
            class_latency: Vec::new(),
            handle_open_ns: measured.handle_open_ns,
            runs: measured.runs,
        }
    }
}
