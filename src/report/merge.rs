//! `report --merge`: the `run` files of clients that ran at once on one
//! store (several processes or hosts) as one result: the summed
//! throughput, the percentiles of the merged histograms, and each
//! client's own figures with their spread.

use std::path::PathBuf;

use super::format::doc::{Block, Section, Table};
use super::format::{markdown, text};
use crate::results::merge::{self, Merged};
use crate::results::ResultFile;
use crate::{Error, Result};

/// Below this share of the longest client's window in common, the clients
/// did not run at once and their summed throughput overstates the store's.
const OVERLAP_WARN_PCT: f64 = 90.0;

/// Reads the files and merges them; the error names the file and, when
/// they differ, the field.
pub fn merge_files(paths: &[PathBuf]) -> Result<Merged> {
    let files: Vec<(String, ResultFile)> = paths
        .iter()
        .map(|p| {
            let file = crate::results::read(p).map_err(|e| Error::invalid(e.to_string()))?;
            Ok((p.display().to_string(), file))
        })
        .collect::<Result<_>>()?;
    merge::merge(&files).map_err(|e| Error::invalid(e.to_string()))
}

const TITLE: &str = "blobbench: runs merged";

/// The merged result for the terminal.
pub fn merged_text(m: &Merged) -> String {
    text::document(TITLE, &[section(m)], &[])
}

/// The merged result as Markdown.
pub fn merged_markdown(m: &Merged) -> String {
    markdown::document(TITLE, "", &[section(m)], false)
}

fn section(m: &Merged) -> Section {
    let n = m.clients.len();
    let window_s = (m.common_end_unix_ns - m.common_start_unix_ns) as f64 / 1e9;
    let mut blocks = vec![Block::Paragraph(format!(
        "{n} clients, {} operations: {:.0} ops/s, the sum of the clients' throughputs (each: its operations over \
         its timed loops' time); they ran at once for {window_s:.2} s, {:.0}% of the longest client's timed runs.",
        m.ops, m.ops_per_s, m.overlap_pct
    ))];
    let l = &m.latency;
    let figures = [l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us].map(|v| format!("{v:.2}"));
    let row = [format!("all {n} clients"), l.count.to_string()].into_iter().chain(figures).collect();
    blocks.push(Block::Table(
        Table::new(&["latency (us)", "ops", "p50", "p90", "p99", "p99.9", "max"], vec![row])
            .with_notes(vec!["percentiles of every client's operations, from their merged histograms".into()]),
    ));
    let first = m.clients.iter().map(|c| c.timed_start_unix_ns).min().unwrap_or(0);
    let rows = m
        .clients
        .iter()
        .map(|c| {
            vec![
                c.label.clone(),
                c.file.clone(),
                c.ops.to_string(),
                format!("{:.0}", c.ops_per_s),
                format!("{:.2}", c.latency.p50_us),
                format!("{:.2}", c.latency.p99_us),
                format!("{:.3}", (c.timed_start_unix_ns - first) as f64 / 1e9),
                format!("{:.3}", (c.timed_end_unix_ns - c.timed_start_unix_ns) as f64 / 1e9),
            ]
        })
        .collect();
    let headers = ["client", "file", "ops", "ops/s", "p50 us", "p99 us", "began s", "timed s"];
    blocks.push(Block::Table(Table::new(&headers, rows).with_notes(vec![format!(
        "spread of the clients' throughputs: {:.1}% ((max - min) / median); began: after the first client began",
        m.spread_pct
    )])));
    if m.overlap_pct < OVERLAP_WARN_PCT {
        blocks.push(Block::Note(format!(
            "warning: the clients ran at once for only {:.0}% of the longest one's timed runs; their summed \
             throughput overstates the store's (start them together with run --start-at, with runs of like length)",
            m.overlap_pct
        )));
    }
    Section { id: "merged".into(), title: "Merged run".into(), in_summary: true, blocks }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
