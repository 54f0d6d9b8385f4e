//! The result file: one versioned JSON schema shared by every command
//! (`run`, `suite`, `matrix`, `concurrency`, `crashtest`) and read back by
//! `report`. Documented in `docs/results-schema.md`; bump
//! [`SCHEMA_VERSION`] on any change that an older reader would misread.
//!
//! Units are part of every field name (`_ns`, `_us`, `_bytes`, `_pct`) so a
//! figure never travels without saying what it is.

mod build;
pub mod csv;
pub mod merge;

use serde::{Deserialize, Serialize};

use crate::measure::envinfo::Environment;
pub use crate::measure::Experiment;
pub use crate::records::{DatasetSpec, DiskUsage};

pub const SCHEMA_NAME: &str = "blobbench-results";
/// Version 2 added the label, the latency histograms and the block
/// device's description; version 1 files are still read (those fields are
/// then absent and the report says "not recorded").
/// Version 3 added the interleaved rounds (`rounds`).
/// Version 4 added the steady-state figures (`steady_per_op_us`, the loop
/// with every commit inside it, which comparisons use; `one_off_us`,
/// `phases.deferred_ns`) and the commit granularity (`commit_every`, the
/// `commit/...` arms); older files' write figures are one commit per run.
pub const SCHEMA_VERSION: u32 = 4;
/// The oldest version [`parse`] accepts.
pub const OLDEST_READABLE_VERSION: u32 = 1;

/// Everything one invocation measured.
/// What a `run` records for merging (optional; absent in files written
/// before it, which do not merge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSection {
    /// Wall clock (ns since 1970, UTC) when the timed runs began: after
    /// the open, the survey, the warm-ups and the wait for `--start-at`.
    pub timed_start_unix_ns: u64,
    /// Wall clock when the last timed run ended.
    pub timed_end_unix_ns: u64,
    /// `--start-at`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u64>,
    /// The store measured: a server the user runs (`--pg` URL without its
    /// password, `--s3` URL and bucket), or `HOST:PATH` of a dataset on
    /// this host (a throwaway server's included).
    pub endpoint: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultFile {
    pub schema: String,
    pub schema_version: u32,
    /// The command that produced the file: "run", "suite", "matrix", ...
    pub command: String,
    /// What the report calls this result (`--label`; the hostname by
    /// default). Empty in version 1 files, where the hostname stands in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
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
    pub matrix: Option<crate::studies::matrix::MatrixSection>,
    /// What killed writers left behind, per write method (`crashtest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crashtest: Option<crate::studies::crashtest::CrashSection>,
    /// What power cuts left behind, per write method (`crashtest --power-cut`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cut: Option<crate::studies::crashtest::PowerCutSection>,
    /// Free-form remarks the command wants a reader to see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `concurrency`: threads, connections and journal modes (see the schema doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::studies::concurrency::ConcurrencySection>,
    /// `aging`: read time, disk usage and fragmentation by storage age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aging: Option<crate::studies::aging::AgingSection>,
    /// Interleaved rounds of the comparisons (version 3): each round's order
    /// and per-arm figures, which every stated ratio is paired by. Files
    /// without them render by the older, unpaired method.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<crate::measure::rounds::RoundSet>,
    /// `advise`: the workload, the candidates and the crash facts; its
    /// timings are `experiments`, `rounds` and `disk_usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advise: Option<crate::studies::advise::AdviseSection>,
    /// `run`: its timed window and endpoint, which `report --merge` needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSection>,
}

impl ResultFile {
    pub fn new(command: &str, environment: Environment) -> Self {
        ResultFile {
            schema: SCHEMA_NAME.to_string(),
            schema_version: SCHEMA_VERSION,
            command: command.to_string(),
            label: environment.hostname.clone(),
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
            aging: None,
            rounds: Vec::new(),
            advise: None,
            run: None,
        }
    }

    /// The label, or the hostname for files written without one.
    pub fn display_label(&self) -> &str {
        if self.label.trim().is_empty() {
            self.environment.hostname.trim()
        } else {
            self.label.trim()
        }
    }

    /// The experiment of that id (a study's typed id, such as a suite
    /// arm, names it by its spelling).
    pub fn experiment(&self, id: impl std::fmt::Display) -> Option<&Experiment> {
        let id = id.to_string();
        self.experiments.iter().find(|e| e.id == id)
    }

    /// The round set holding both arms, when its rounds are consistent.
    pub fn rounds_of(
        &self,
        a: impl std::fmt::Display,
        b: impl std::fmt::Display,
    ) -> Option<&crate::measure::rounds::RoundSet> {
        let (a, b) = (a.to_string(), b.to_string());
        self.rounds.iter().find(|r| r.consistent() && r.arms.contains(&a) && r.arms.contains(&b))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {why}")]
    Io { path: String, why: String },
    #[error("{path}: not valid JSON ({why}); truncated or hand-edited?")]
    Json { path: String, why: String },
    #[error("{path}: not a blobbench result file (schema {found:?})")]
    NotResults { path: String, found: String },
    #[error("{path}: schema version {found} is not supported (this blobbench reads versions {OLDEST_READABLE_VERSION} to {SCHEMA_VERSION})")]
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
    if !(u64::from(OLDEST_READABLE_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&version) {
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
    crate::util::fsutil::write_atomic(path, text.as_bytes())
}
