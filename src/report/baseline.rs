//! `report --baseline OLD.json NEW.json...`: what changed since an earlier
//! run (a kernel, filesystem, hardware or SQLite upgrade). Each experiment
//! both files measured with the same parameters gets new time / old time
//! with its interval over the runs; it is marked improved or regressed only
//! when that interval excludes 1.0, and experiments whose parameters differ
//! are named, never compared.

use super::format::doc::{Block, ColumnKind, Section, Table};
use super::format::fmt::{machine_labels, micros};
use super::interval::{ratio_of_medians, Method, Ratio};
use super::verdict::{self, Question};
use crate::measure::Experiment;
use crate::results::ResultFile;

/// How one figure moved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    Improved(Ratio),
    Regressed(Ratio),
    WithinNoise(Ratio),
    /// One run on a side: the change is shown, its noise is unknown.
    Unknown(Ratio),
}

impl Change {
    /// new / old per-op time, judged by its interval.
    pub fn of(ratio: Ratio) -> Change {
        if ratio.method == Method::OneRun {
            Change::Unknown(ratio)
        } else if ratio.low > 1.0 {
            Change::Regressed(ratio)
        } else if ratio.high < 1.0 {
            Change::Improved(ratio)
        } else {
            Change::WithinNoise(ratio)
        }
    }

    /// "regressed: 23% slower (interval 15% to 31% slower)".
    pub fn describe(&self) -> String {
        let pct = |r: f64| {
            let p = (r - 1.0) * 100.0;
            // Below 1% one decimal, so a small but certain change still shows.
            let shown = |v: f64| if v < 1.0 { format!("{v:.1}") } else { format!("{v:.0}") };
            if p.abs() < 0.05 {
                "unchanged".to_string()
            } else if p > 0.0 {
                format!("{}% slower", shown(p))
            } else {
                format!("{}% faster", shown(-p))
            }
        };
        let span = |r: &Ratio| format!("interval {} to {}, {}", pct(r.low), pct(r.high), method(r));
        match self {
            Change::Improved(r) => format!("improved: {} ({})", pct(r.value), span(r)),
            Change::Regressed(r) => format!("regressed: {} ({})", pct(r.value), span(r)),
            Change::WithinNoise(r) => format!("within noise: {} ({})", pct(r.value), span(r)),
            Change::Unknown(r) => format!("{}, noise unknown (one run)", pct(r.value)),
        }
    }
}

fn method(r: &Ratio) -> &'static str {
    match r.method {
        Method::Paired => "95% paired",
        Method::Bootstrap => "95% bootstrap",
        Method::MinMax => "min-max",
        Method::OneRun | Method::Exact => "no interval",
    }
}

/// What differs between two measurements of the same experiment, if anything.
fn mismatch(old_file: &ResultFile, new_file: &ResultFile, old: &Experiment, new: &Experiment) -> Option<String> {
    let (a, b) = (old_file.dataset.as_ref(), new_file.dataset.as_ref());
    let mut what = Vec::new();
    match (a, b) {
        (Some(a), Some(b)) if a.size != b.size || a.variance != b.variance => {
            what.push(format!("blob sizes ({} vs {} bytes)", a.size, b.size))
        }
        (Some(a), Some(b)) if a.sizes != b.sizes || a.from_dir != b.from_dir => {
            what.push("blob size distributions".to_string())
        }
        (Some(a), Some(b)) if a.count != b.count => what.push(format!("blob counts ({} vs {})", a.count, b.count)),
        (Some(a), Some(b)) if a.page_size != b.page_size => {
            what.push(format!("page sizes ({} vs {})", a.page_size, b.page_size))
        }
        _ => {}
    }
    let (p, q) = (&old.params, &new.params);
    if p.count != q.count {
        what.push(format!("operations per run ({} vs {})", p.count, q.count));
    }
    if p.threads != q.threads {
        what.push(format!("threads ({} vs {})", p.threads, q.threads));
    }
    if p.plan.cold != q.plan.cold {
        what.push("cold vs warm cache".to_string());
    }
    (!what.is_empty()).then(|| format!("not compared: {} differ", what.join(", ")))
}

/// Each run's figure: the steady-state one when both sides recorded it,
/// else kvtest's total on both sides (a baseline from before version 4).
fn times(e: &Experiment, steady: bool) -> Vec<f64> {
    e.runs.iter().map(|r| if steady { r.figure() } else { r.per_op_us }).collect()
}

/// Whether both experiments recorded the steady-state figure.
fn both_steady(old: &Experiment, new: &Experiment) -> bool {
    old.summary.steady_per_op_us.is_some() && new.summary.steady_per_op_us.is_some()
}

/// The median figure `times` compares.
fn median_us(e: &Experiment, steady: bool) -> f64 {
    if steady {
        e.summary.figure().median
    } else {
        e.summary.per_op_us.median
    }
}

/// The mark of one experiment: its change, or why it was not compared.
pub fn mark(
    old_file: &ResultFile,
    new_file: &ResultFile,
    old: &Experiment,
    new: &Experiment,
) -> Result<Change, String> {
    if let Some(why) = mismatch(old_file, new_file, old, new) {
        return Err(why);
    }
    let steady = both_steady(old, new);
    ratio_of_medians(&times(new, steady), &times(old, steady))
        .map(Change::of)
        .ok_or_else(|| "not compared: no usable runs".to_string())
}

pub fn section(baseline: &ResultFile, files: &[ResultFile], questions: &[Question]) -> Vec<Section> {
    let labels = machine_labels(files);
    let base_label = baseline.display_label();
    let mut blocks = vec![Block::Paragraph(format!(
        "Baseline: {} ({} command, {}). Each figure is the new per-op time over the baseline's (medians over the timed \
         runs); it is marked improved or regressed only when the interval of that ratio leaves out 1.0.",
        if base_label.is_empty() { "unknown host" } else { base_label },
        baseline.command,
        super::format::fmt::date_time(baseline.created_unix)
    ))];
    if let Some(f) = files.iter().find(|f| f.schema_version != baseline.schema_version) {
        blocks.push(Block::Note(format!(
            "The baseline is schema version {}, the results version {}: per-op times are compared; what one version \
             records and the other does not (histograms, labels, device details) is not.",
            baseline.schema_version, f.schema_version
        )));
    }
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for (f, label) in files.iter().zip(&labels) {
        for e in &f.experiments {
            let Some(old) = baseline.experiment(&e.id) else {
                unmatched.push(format!("{label}: {} (not in the baseline)", e.id));
                continue;
            };
            let steady = both_steady(old, e);
            let new_us = micros(median_us(e, steady));
            let mark = mark(baseline, f, old, e).map_or_else(|why| why, |c| c.describe());
            rows.push(vec![label.clone(), e.id.clone(), micros(median_us(old, steady)), new_us, mark]);
        }
    }
    if rows.is_empty() {
        blocks.push(Block::Paragraph("The baseline and the results measured no experiment in common.".into()));
    } else {
        let headers = ["result", "experiment", "baseline per-op (µs)", "new per-op (µs)", "change"];
        blocks.push(Block::Table(Table::new(&headers, rows).with_kinds(&[ColumnKind::Result])));
    }
    if let Some(t) = verdict_changes(baseline, files, &labels, questions) {
        blocks.push(Block::Heading("The verdict then and now".into()));
        blocks.push(Block::Table(t));
    }
    if !unmatched.is_empty() {
        blocks.push(Block::Note(format!("Not in the baseline: {}.", unmatched.join("; "))));
    }
    vec![Section { id: "baseline".into(), title: "Against the baseline".into(), in_summary: true, blocks }]
}

/// Each verdict question both the baseline and a result answer.
fn verdict_changes(
    baseline: &ResultFile,
    files: &[ResultFile],
    labels: &[String],
    questions: &[Question],
) -> Option<Table> {
    let before = verdict::answers(std::slice::from_ref(baseline), questions);
    let mut rows = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        for (_, now) in verdict::answers(&files[i..=i], questions) {
            if let Some((_, then)) = before.iter().find(|(_, a)| a.question == now.question) {
                rows.push(vec![now.question.clone(), label.clone(), then.outcome(), now.outcome()]);
            }
        }
    }
    let kinds = [ColumnKind::Text, ColumnKind::Result];
    (!rows.is_empty()).then(|| Table::new(&["question", "result", "baseline", "now"], rows).with_kinds(&kinds))
}

#[cfg(test)]
#[path = "baseline_tests.rs"]
mod tests;
