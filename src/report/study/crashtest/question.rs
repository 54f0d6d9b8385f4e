//! The crash test's verdict question: what power cuts did to the methods
//! that acknowledge durable writes.

use super::lost_chart_id;
use crate::report::interval::Ratio;
use crate::report::verdict::Answer;
use crate::results::ResultFile;

/// Power cuts: which durable methods kept every acknowledged write, and
/// which lost some. Counts, not a ratio.
pub fn after_power_cut(files: &[ResultFile], index: usize) -> Option<Answer> {
    let cut = files[index].power_cut.as_ref()?;
    let durable: Vec<_> = cut.methods.iter().filter(|m| m.acknowledges_durability).collect();
    if durable.is_empty() {
        return None;
    }
    let kept: Vec<&str> = durable
        .iter()
        .filter(|m| m.lost_after_ack == 0 && m.checks.integrity_failures == 0 && m.checks.torn == 0)
        .map(|m| m.method.as_str())
        .collect();
    let lost: Vec<String> = durable
        .iter()
        .filter(|m| m.lost_after_ack > 0 || m.checks.integrity_failures > 0 || m.checks.torn > 0)
        .map(|m| format!("{} ({} acknowledged writes lost, {} torn)", m.method, m.lost_after_ack, m.checks.torn))
        .collect();
    let statement = format!(
        "kept every acknowledged write: {}; lost some: {}",
        if kept.is_empty() { "none".to_string() } else { kept.join(", ") },
        if lost.is_empty() { "none".to_string() } else { lost.join("; ") }
    );
    Some(Answer {
        question: format!("after a power cut ({} model)", cut.model),
        winner: kept.join(", "),
        loser: lost.join("; "),
        factor: Ratio::exact(1.0),
        better: "safer",
        chart_id: lost_chart_id(files, index),
        chart_title: "Acknowledged writes lost in power cuts".into(),
        statement: Some((statement, format!("exact counts over {} cuts per method", cut.cuts_per_method))),
    })
}
