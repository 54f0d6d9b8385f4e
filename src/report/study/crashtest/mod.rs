//! The crash-safety section: for each result file with a `crashtest`
//! section, what killed writers left behind per write method, and what a
//! process kill cannot show.

mod loss;
mod powercut;
pub mod question;
mod tables;
mod terminal;

pub use powercut::lost_chart_id;
use tables::Place;

use crate::report::format::doc::{Block, Section};
use crate::report::format::fmt::machine_labels;
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::crashtest::{self, CrashSection};
use crate::util::units::plural;

/// The crash test's part of the report: process kills and power cuts.
pub const REPORT: StudyReport = StudyReport {
    sections,
    questions: &[question::after_power_cut],
    terminal: Some(terminal::terminal),
    redraws: None,
    leads: false,
};

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let found: Vec<(&String, &CrashSection)> =
        labels.iter().zip(files).filter_map(|(l, f)| f.crashtest.as_ref().map(|c| (l, c))).collect();
    let power_cuts = powercut::blocks(files);
    let losses = loss::blocks(files);
    if found.is_empty() && power_cuts.is_empty() && losses.is_empty() {
        return Vec::new();
    }
    let mut blocks = Vec::new();
    for (label, c) in &found {
        if found.len() > 1 {
            blocks.push(Block::Heading((*label).clone()));
        }
        blocks.push(Block::Paragraph(format!(
            "{} SIGKILL{} per write method, {}, one write = one blob, {} (for PostgreSQL the server's processes are \
             killed).",
            c.kills_per_method,
            plural(c.kills_per_method),
            tables::run_words(&c.run),
            tables::commits(c.run.commit_every)
        )));
        blocks.push(Block::Table(tables::kills(&c.methods, Place::Page)));
        blocks.extend(tables::object_store_lines(&c.methods).into_iter().map(Block::Paragraph));
        blocks.extend(tables::reasons_blocks(&c.methods));
        for m in c.methods.iter().filter(|m| m.broke_promise()) {
            blocks.push(Block::Paragraph(format!(
                "{}: damaged by a process kill although it promises atomic or durable commits \
                 ({} integrity failures, {} torn, {} missing, {} lost, {} acknowledged writes undone).",
                m.method,
                m.checks.integrity_failures,
                m.checks.torn,
                m.checks.missing,
                m.checks.unexpected_version,
                m.undone
            )));
        }
    }
    if !found.is_empty() {
        blocks.push(Block::Note(crashtest::LEGEND.split_whitespace().collect::<Vec<_>>().join(" ")));
        blocks.push(Block::Paragraph(crashtest::LIMITS.split_whitespace().collect::<Vec<_>>().join(" ")));
    }
    blocks.extend(power_cuts);
    blocks.extend(losses);
    vec![Section {
        id: "crashtest".into(),
        title: "Crash safety: what a killed writer, a power cut or a lost machine leaves behind".into(),
        in_summary: true,
        blocks,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::suite;
    use crate::studies::crashtest::{CheckTotals, CrashMethodResult};

    fn crash_file(torn_in_wal: u64) -> ResultFile {
        let method = |name: &str, promises_atomic: bool, torn: u64| CrashMethodResult {
            method: name.into(),
            description: format!("{name} described"),
            promises_atomic,
            kills: 50,
            checks: CheckTotals {
                blobs_checked: 5000,
                torn,
                intact_old: 4000 - torn,
                intact_new: 1000,
                ..CheckTotals::default()
            },
            ..CrashMethodResult::default()
        };
        let mut f = suite("host-a", &[]);
        f.command = "crashtest".into();
        f.crashtest = Some(CrashSection {
            fault: "SIGKILL".into(),
            kills_per_method: 50,
            run: crate::report::fixtures::crash_run(100),
            methods: vec![method("db-wal-normal", true, torn_in_wal), method("truncate", false, 7)],
        });
        f
    }

    #[test]
    fn one_table_row_per_method_and_the_limits_said() {
        let s = sections(&[crash_file(0)]);
        assert_eq!(s.len(), 1);
        let table = s[0].blocks.iter().find_map(|b| if let Block::Table(t) = b { Some(t) } else { None }).unwrap();
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[1][0], "truncate described");
        assert_eq!(table.rows[1][3], "7", "torn");
        let text = format!("{:?}", s[0].blocks);
        assert!(text.contains("not a power cut"));
        assert!(!text.contains("damaged by a process kill"), "a torn file is reported, not judged");
        assert!(format!("{:?}", sections(&[crash_file(2)])).contains("db-wal-normal: damaged by a process kill"));
        assert!(sections(&[suite("host-a", &[])]).is_empty(), "no section without crashtest results");
    }

    /// The page says why an integrity check failed, as the terminal does.
    #[test]
    fn the_page_gives_each_failed_checks_reason() {
        let mut f = crash_file(0);
        let text = format!("{:?}", sections(std::slice::from_ref(&f))[0].blocks);
        assert!(!text.contains("why the integrity check failed"), "no reason, no note: {text}");
        let m = &mut f.crashtest.as_mut().unwrap().methods[1];
        m.checks.integrity_failures = 3;
        m.checks.integrity_reason = Some(crashtest::IntegrityReason { first: "kv: cannot open: gone".into(), same: 2 });
        let blocks = &sections(&[f])[0].blocks;
        let list = blocks.iter().find_map(|b| if let Block::List(l) = b { Some(l) } else { None });
        assert_eq!(list.unwrap(), &["truncate: kv: cannot open: gone (2 of 3)"]);
        assert!(format!("{blocks:?}").contains("Why the integrity check failed"));
    }
}
