//! The power-cut part of the crash-safety section: for each result file
//! with a `power_cut` section, what power cuts left per write method (with
//! the durability accounting), what a failed fsync left, and the layer's
//! own cost.

use super::tables::{self, Place};
use crate::report::format::doc::{Block, Chart, Figure};
use crate::report::format::fmt::machine_labels;
use crate::report::format::svg::BarChart;
use crate::results::ResultFile;
use crate::studies::crashtest::{self, PowerCutSection};
use crate::util::units::plural;

pub fn blocks(files: &[ResultFile]) -> Vec<Block> {
    let labels = machine_labels(files);
    let found: Vec<(&String, &PowerCutSection)> =
        labels.iter().zip(files).filter_map(|(l, f)| f.power_cut.as_ref().map(|c| (l, c))).collect();
    let mut blocks = Vec::new();
    for (label, c) in &found {
        blocks.push(Block::Heading(if found.len() > 1 {
            format!("Power cuts ({label})")
        } else {
            "Power cuts".to_string()
        }));
        blocks.push(Block::Paragraph(format!(
            "{} power cut{} per write method on the power-cut layer (model {}: {}), {}; {}.",
            c.cuts_per_method,
            plural(c.cuts_per_method),
            c.model,
            c.model_description,
            tables::run_words(&c.run),
            tables::commits(c.run.commit_every)
        )));
        blocks.push(Block::Table(tables::cuts(&c.methods, Place::Page)));
        blocks.extend(tables::reasons_blocks(&c.methods));
        blocks.push(Block::Figure(lost_chart(label, c, found.len() > 1)));
        for m in c.methods.iter().filter(|m| m.promises_durability && m.lost_after_ack > 0) {
            blocks.push(Block::Paragraph(format!(
                "{}: lost {} acknowledged writes although it promises durability.",
                m.method, m.lost_after_ack
            )));
        }
        if !c.fsync_failure.is_empty() {
            blocks.push(Block::Paragraph(
                "After one failed fsync (EIO, reported once, the unsynced data dropped, as Linux does), then a \
                 power cut:"
                    .into(),
            ));
            blocks.push(Block::Table(tables::fsync_failures(&c.fsync_failure, Place::Page)));
            blocks.extend(tables::reasons_blocks(&c.fsync_failure));
        }
        if let Some(k) = &c.layer_cost {
            blocks.push(Block::Note(format!(
                "Layer cost, medians: a 10 KB pwrite takes {:.1} us through the layer and {:.1} us directly ({} \
                 writes); an fsync {:.1} us through the layer, which does not flush the real disk, and {:.1} us \
                 directly ({} fsyncs).",
                k.write_10k_layer_ns as f64 / 1e3,
                k.write_10k_direct_ns as f64 / 1e3,
                k.writes,
                k.fsync_layer_ns as f64 / 1e3,
                k.fsync_direct_ns as f64 / 1e3,
                k.fsyncs
            )));
        }
    }
    if !found.is_empty() {
        blocks.push(Block::Note(crashtest::POWER_CUT_LEGEND.split_whitespace().collect::<Vec<_>>().join(" ")));
    }
    blocks
}

/// The id of `files[index]`'s chart of acknowledged writes lost.
pub fn lost_chart_id(files: &[ResultFile], index: usize) -> String {
    lost_id(&machine_labels(files)[index], files.iter().filter(|f| f.power_cut.is_some()).count() > 1)
}

fn lost_id(label: &str, several: bool) -> String {
    if several {
        format!("power-cut-lost-{label}")
    } else {
        "power-cut-lost".to_string()
    }
}

/// Acknowledged writes lost, per method that acknowledges durability: the
/// chart the verdict's power-cut row links to.
fn lost_chart(label: &str, c: &PowerCutSection, several: bool) -> Figure {
    let durable: Vec<_> = c.methods.iter().filter(|m| m.acknowledges_durability).collect();
    let chart = BarChart {
        title: "Acknowledged writes lost in power cuts".to_string(),
        y_label: "blobs lost or torn after acknowledgement".to_string(),
        groups: vec![label.to_string()],
        series: durable.iter().map(|m| m.method.clone()).collect(),
        values: vec![durable.iter().map(|m| Some((m.lost_after_ack + m.checks.torn) as f64)).collect()],
        reference: None,
        errors: Vec::new(),
        note: format!("exact counts over {} cuts per method, model {}", c.cuts_per_method, c.model),
    };
    let clean: Vec<&str> =
        durable.iter().filter(|m| m.lost_after_ack + m.checks.torn == 0).map(|m| m.method.as_str()).collect();
    Figure {
        id: lost_id(label, several),
        chart: Chart::Bars(chart),
        caption: Vec::new(),
        findings: vec![format!(
            "Lost nothing acknowledged: {}.",
            if clean.is_empty() { "no method".to_string() } else { clean.join(", ") }
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::suite;
    use crate::studies::crashtest::PowerCutMethodResult;

    #[test]
    fn one_row_per_method_and_broken_promises_named() {
        let method = |name: &str, lost: u64| PowerCutMethodResult {
            method: name.into(),
            description: format!("{name} described"),
            acknowledges_durability: true,
            promises_durability: true,
            cuts: 6,
            lost_after_ack: lost,
            ..PowerCutMethodResult::default()
        };
        let mut f = suite("host-a", &[]);
        f.power_cut = Some(PowerCutSection {
            model: "strict".into(),
            model_description: "drops".into(),
            cuts_per_method: 6,
            run: crate::report::fixtures::crash_run(40),
            methods: vec![method("db-wal-full", 0), method("inplace-fsync", 3)],
            not_on_layer: Vec::new(),
            fsync_failure: Vec::new(),
            layer_cost: None,
        });
        let b = blocks(&[f]);
        let table = b.iter().find_map(|b| if let Block::Table(t) = b { Some(t) } else { None }).unwrap();
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[1][6], "3", "lost after acknowledgement");
        let text = format!("{b:?}");
        assert!(text.contains("inplace-fsync: lost 3 acknowledged writes"));
        assert!(!text.contains("db-wal-full: lost"));
        assert!(blocks(&[suite("host-a", &[])]).is_empty());
    }
}
