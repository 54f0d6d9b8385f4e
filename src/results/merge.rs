//! Several `run` result files of one workload on one store, made by
//! clients on several processes or hosts at once (`run --start-at`), as
//! one result (`report --merge`): their throughputs summed, their latency
//! histograms merged (never their percentiles averaged), each file's own
//! figures beside for the spread between clients.

use serde::Serialize;

use super::ResultFile;
use crate::measure::{Latency, LatencySummary};

/// One file's own figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientFigures {
    /// What the file was given as (its path).
    pub file: String,
    /// Its label (`--label`, the hostname by default).
    pub label: String,
    /// Operations of its timed runs.
    pub ops: u64,
    /// Its timed loops' time, in seconds.
    pub loop_s: f64,
    /// `ops / loop_s`.
    pub ops_per_s: f64,
    pub latency: LatencySummary,
    pub timed_start_unix_ns: u64,
    pub timed_end_unix_ns: u64,
}

/// The files as one result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Merged {
    pub clients: Vec<ClientFigures>,
    pub ops: u64,
    /// The clients' throughputs summed: the store's throughput while they
    /// all ran (the common window).
    pub ops_per_s: f64,
    /// Percentiles of every operation of every file, from the merged
    /// histograms.
    pub latency: LatencySummary,
    /// The merged histogram (base64 of HdrHistogram's V2 encoding).
    pub latency_histogram: String,
    /// The window in which every client ran its timed runs (start equals
    /// end when they did not overlap).
    pub common_start_unix_ns: u64,
    pub common_end_unix_ns: u64,
    /// The common window as a share of the longest client's timed window:
    /// near 100 when the clients ran at once, as a sum of throughputs
    /// assumes.
    pub overlap_pct: f64,
    /// (max - min) / median of the clients' throughputs, in percent.
    pub spread_pct: f64,
}

/// Why files do not merge; each message names the file and the field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("--merge needs at least two result files")]
    TooFew,
    #[error("{file}: not a `run` result file (command {command}); --merge takes the files of `run --json`")]
    NotRun { file: String, command: String },
    #[error("{file}: holds no latency histogram (run without --no-latency to merge it)")]
    NoHistogram { file: String },
    #[error("{file}: {why}")]
    BadHistogram { file: String, why: String },
    #[error("{file}: records no timed window or endpoint (written by an older blobbench); it cannot be merged")]
    NoRunSection { file: String },
    #[error("{a} and {b} differ in {field} ({a_value} against {b_value}): only runs of one dataset, workload and endpoint merge")]
    Differ { field: String, a: String, b: String, a_value: String, b_value: String },
}

/// Merges `files` (each with the name it was given as).
pub fn merge(files: &[(String, ResultFile)]) -> Result<Merged, MergeError> {
    if files.len() < 2 {
        return Err(MergeError::TooFew);
    }
    for (name, file) in files {
        check_mergeable(name, file)?;
    }
    let (first_name, first) = &files[0];
    for (name, file) in &files[1..] {
        if let Some((field, a_value, b_value)) = first_difference(first, file) {
            let (a, b) = (first_name.clone(), name.clone());
            return Err(MergeError::Differ { field, a, b, a_value, b_value });
        }
    }
    let mut all = Latency::new();
    let mut clients = Vec::with_capacity(files.len());
    for (name, file) in files {
        let (figures, hist) = client_figures(name, file)?;
        all.merge(&hist);
        clients.push(figures);
    }
    let common_start = clients.iter().map(|c| c.timed_start_unix_ns).max().unwrap_or(0);
    let common_end = clients.iter().map(|c| c.timed_end_unix_ns).min().unwrap_or(0).max(common_start);
    let longest = clients.iter().map(|c| c.timed_end_unix_ns.saturating_sub(c.timed_start_unix_ns)).max().unwrap_or(0);
    let rates: Vec<f64> = clients.iter().map(|c| c.ops_per_s).collect();
    let stat = crate::measure::Stat::of(&rates);
    Ok(Merged {
        ops: clients.iter().map(|c| c.ops).sum(),
        ops_per_s: rates.iter().sum(),
        latency: all.summary(),
        latency_histogram: all.to_base64(),
        common_start_unix_ns: common_start,
        common_end_unix_ns: common_end,
        overlap_pct: if longest == 0 { 0.0 } else { (common_end - common_start) as f64 * 100.0 / longest as f64 },
        spread_pct: stat.spread_pct,
        clients,
    })
}

fn check_mergeable(name: &str, file: &ResultFile) -> Result<(), MergeError> {
    if file.command != "run" || file.experiments.len() != 1 {
        return Err(MergeError::NotRun { file: name.to_string(), command: file.command.clone() });
    }
    if file.experiments[0].latency_histogram.is_none() {
        return Err(MergeError::NoHistogram { file: name.to_string() });
    }
    if file.run.is_none() {
        return Err(MergeError::NoRunSection { file: name.to_string() });
    }
    Ok(())
}

/// The first field, as `dataset.X`, `workload.X` or `endpoint`, in which
/// two mergeable files differ, with both values.
fn first_difference(a: &ResultFile, b: &ResultFile) -> Option<(String, String, String)> {
    let (da, db) = (dataset_fields(a), dataset_fields(b));
    let (wa, wb) = (workload_fields(a), workload_fields(b));
    let ea = [("endpoint".to_string(), a.run.as_ref().map(|r| r.endpoint.clone()).unwrap_or_default())];
    let eb = [("endpoint".to_string(), b.run.as_ref().map(|r| r.endpoint.clone()).unwrap_or_default())];
    let left = da.into_iter().chain(wa).chain(ea);
    let mut right: Vec<(String, String)> = db.into_iter().chain(wb).chain(eb).collect();
    for (field, value) in left {
        let other = right.iter().position(|(f, _)| *f == field).map(|i| right.remove(i).1);
        if other.as_ref() != Some(&value) {
            return Some((field, value, other.unwrap_or_else(|| "absent".into())));
        }
    }
    right.into_iter().next().map(|(field, value)| (field, "absent".into(), value))
}

/// What identifies the dataset wherever it is read from: the engine, its
/// keys, what holds the blobs on the server, and the dataset spec.
fn dataset_fields(file: &ResultFile) -> Vec<(String, String)> {
    let p = &file.experiments[0].params;
    let mut fields = vec![
        ("dataset.engine".to_string(), p.layout.name().to_string()),
        ("dataset.max_id".to_string(), p.max_id.to_string()),
    ];
    if let Some(info) = &p.server_info {
        fields.push(("dataset.blobs_in".into(), info.blobs_in.clone()));
    }
    if let Some(spec) = &file.dataset {
        fields.push(("dataset.spec".into(), serde_json::to_string(spec).unwrap_or_default()));
    }
    fields
}

/// The workload's parameters, each as `workload.NAME`, less those that
/// may differ between clients of one workload: where each host keeps its
/// dataset (`path`), its content seed and what its server said.
fn workload_fields(file: &ResultFile) -> Vec<(String, String)> {
    let params = serde_json::to_value(&file.experiments[0].params).unwrap_or_default();
    let serde_json::Value::Object(map) = params else { return Vec::new() };
    map.into_iter()
        .filter(|(k, _)| !matches!(k.as_str(), "path" | "seed" | "server_info" | "max_id" | "layout"))
        .map(|(k, v)| (format!("workload.{k}"), v.to_string()))
        .collect()
}

/// One file's own figures and its histogram.
fn client_figures(name: &str, file: &ResultFile) -> Result<(ClientFigures, Latency), MergeError> {
    let e = &file.experiments[0];
    let text = e.latency_histogram.as_deref().unwrap_or_default();
    let hist = Latency::from_base64(text).map_err(|why| MergeError::BadHistogram {
        file: name.to_string(),
        why: format!("its latency histogram does not decode ({why})"),
    })?;
    let run = file.run.as_ref().expect("checked mergeable");
    let ops: u64 = e.runs.iter().map(|r| r.ops).sum();
    let loop_s = e.runs.iter().map(|r| r.phases.loop_ns).sum::<u64>() as f64 / 1e9;
    let figures = ClientFigures {
        file: name.to_string(),
        label: file.display_label().to_string(),
        ops,
        loop_s,
        ops_per_s: if loop_s > 0.0 { ops as f64 / loop_s } else { 0.0 },
        latency: hist.summary(),
        timed_start_unix_ns: run.timed_start_unix_ns,
        timed_end_unix_ns: run.timed_end_unix_ns,
    };
    Ok((figures, hist))
}
