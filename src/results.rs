//! The result file: one versioned JSON schema shared by every command
//! (`run`, `suite`, `matrix`, `concurrency`, `crashtest`) and read back by
//! `report`. Documented in `docs/results-schema.md`; bump
//! [`SCHEMA_VERSION`] on any change that an older reader would misread.
//!
//! Units are part of every field name (`_ns`, `_us`, `_bytes`, `_pct`) so a
//! figure never travels without saying what it is.

use serde::{Deserialize, Serialize};

use crate::envinfo::Environment;
use crate::measure::{Latency, LatencySummary, Measured, RunSample, Summary};
use crate::workload::WorkloadParams;

pub const SCHEMA_NAME: &str = "blobbench-results";
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one invocation measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultFile {
    pub schema: String,
    pub schema_version: u32,
    /// The command that produced the file: "run", "suite", "matrix", ...
    pub command: String,
    /// Seconds since the Unix epoch when the file was written.
    pub created_unix: u64,
    /// False when the command was interrupted; what is here was measured.
    pub complete: bool,
    pub environment: Environment,
    /// The kvtest dataset the experiments ran on, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetSpec>,
    /// Measured configurations, each summarised by the measurement engine.
    #[serde(default)]
    pub experiments: Vec<Experiment>,
    /// Bytes on disk of each stored copy of a dataset (suite, stat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disk_usage: Vec<DiskUsage>,
    /// `matrix`: internal vs external blobs by blob size and page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<crate::matrix::MatrixSection>,
    /// What killed writers left behind, per write method (`crashtest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crashtest: Option<crate::crashtest::CrashSection>,
    /// What power cuts left behind, per write method (`crashtest --power-cut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cut: Option<crate::crashtest::PowerCutSection>,
    /// Free-form remarks the command wants a reader to see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `concurrency`: threads, connections and journal modes (see the schema doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::concurrency::ConcurrencySection>,
}

impl ResultFile {
    pub fn new(command: &str, environment: Environment) -> Self {
        ResultFile {
            schema: SCHEMA_NAME.to_string(),
            schema_version: SCHEMA_VERSION,
            command: command.to_string(),
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            complete: true,
            environment,
            dataset: None,
            experiments: Vec::new(),
            disk_usage: Vec::new(),
            matrix: None,
            crashtest: None,
            power_cut: None,
            notes: Vec::new(),
            concurrency: None,
        }
    }

    pub fn experiment(&self, id: &str) -> Option<&Experiment> {
        self.experiments.iter().find(|e| e.id == id)
    }
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
    pub summary: Summary,
    /// Cost of one clock read, measured on this machine, in nanoseconds.
    pub clock_cost_ns: f64,
    /// Clock cost as a share of the mean per-op time: the harness overhead.
    pub clock_overhead_pct: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Experiment {
    /// The experiment the measurement engine measured with `params`.
    pub fn from_measured(id: &str, label: &str, params: WorkloadParams, measured: Measured) -> Self {
        Experiment {
            id: id.to_string(),
            label: label.to_string(),
            warmup_runs: params.plan.warmup,
            params,
            latency: measured.latency.as_ref().map(Latency::summary),
            summary: measured.summary,
            clock_cost_ns: measured.clock_cost_ns,
            clock_overhead_pct: measured.clock_overhead_pct,
            warnings: measured.warnings,
            runs: measured.runs,
        }
    }
}

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

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {why}")]
    Io { path: String, why: String },
    #[error("{path}: not valid JSON ({why}); truncated or hand-edited?")]
    Json { path: String, why: String },
    #[error("{path}: not a blobbench result file (schema {found:?})")]
    NotResults { path: String, found: String },
    #[error("{path}: schema version {found} is not supported (this blobbench reads version {SCHEMA_VERSION})")]
    Version { path: String, found: u64 },
    #[error("{path}: does not match the result schema ({why})")]
    Shape { path: String, why: String },
}

/// Parses a result file's text, checking the schema name and version first
/// so an old or foreign file gets a clear message rather than a field error.
pub fn parse(path: &str, text: &str) -> Result<ResultFile, ReadError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ReadError::Json { path: path.to_string(), why: e.to_string() })?;
    let schema = value.get("schema").and_then(|v| v.as_str()).unwrap_or("");
    if schema != SCHEMA_NAME {
        return Err(ReadError::NotResults { path: path.to_string(), found: schema.to_string() });
    }
    let version = value.get("schema_version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != u64::from(SCHEMA_VERSION) {
        return Err(ReadError::Version { path: path.to_string(), found: version });
    }
    serde_json::from_value(value).map_err(|e| ReadError::Shape { path: path.to_string(), why: e.to_string() })
}

pub fn read(path: &std::path::Path) -> Result<ResultFile, ReadError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::Io { path: name.clone(), why: e.to_string() })?;
    parse(&name, &text)
}

/// Serialises and writes atomically (temporary file, then rename), so an
/// interrupted write never leaves a truncated file under the final name.
pub fn write(path: &std::path::Path, results: &ResultFile) -> crate::Result<()> {
    let text = serde_json::to_string_pretty(results).map_err(|e| crate::Error::invalid(e.to_string()))?;
    crate::fsutil::write_atomic(path, text.as_bytes())
}
