//! The machine-loss part of the crash-safety section and of `crashtest
//! --machine-loss`'s terminal output: per replicated layout, what losing
//! a host did to acknowledged writes, and how long writes took to succeed
//! again.

use std::fmt::Write as _;

use crate::report::format::doc::{Block, Table};
use crate::report::format::fmt::{machine_labels, thousands};
use crate::report::format::text::table_text;
use crate::results::ResultFile;
use crate::studies::crashtest::loss::{self, MachineLossMethodResult, MachineLossSection};
use crate::util::units::plural;

/// The page's blocks: one table per file with a `machine_loss` section.
pub fn blocks(files: &[ResultFile]) -> Vec<Block> {
    let labels = machine_labels(files);
    let found: Vec<(&String, &MachineLossSection)> =
        labels.iter().zip(files).filter_map(|(l, f)| f.machine_loss.as_ref().map(|c| (l, c))).collect();
    let mut blocks = Vec::new();
    for (label, c) in &found {
        let heading = if found.len() > 1 { format!("Machine losses ({label})") } else { "Machine losses".into() };
        blocks.push(Block::Heading(heading));
        blocks.push(Block::Paragraph(intro(c)));
        blocks.push(Block::Table(table(c)));
        blocks.extend(stores(c).into_iter().map(Block::Paragraph));
        for m in c.broken_promises() {
            blocks.push(Block::Paragraph(broken(m)));
        }
        blocks.extend(c.failed().map(failed).map(Block::Paragraph));
    }
    if !found.is_empty() {
        blocks.push(Block::Note(one_line(loss::LEGEND)));
        blocks.push(Block::Paragraph(one_line(loss::LIMITS)));
    }
    blocks
}

/// What `crashtest --machine-loss` prints (empty without the section).
pub fn terminal(file: &ResultFile) -> String {
    let Some(c) = &file.machine_loss else { return String::new() };
    let mut o = format!("crashtest --machine-loss: {}\n", intro(c));
    o.push_str(&table_text(&table(c), false));
    for line in stores(c).into_iter().chain(c.failed().map(failed)) {
        let _ = writeln!(o, "{line}");
    }
    o.push_str(loss::LEGEND.trim_start_matches('\n'));
    let _ = writeln!(o, "\n{}", loss::LIMITS);
    if !file.complete {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer losses than asked");
    }
    o
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn intro(c: &MachineLossSection) -> String {
    let at_once = match c.methods_at_once {
        true => {
            " The layouts' losses ran at once, each on a cluster of its own: a resume time includes the others' load."
        }
        false => "",
    };
    format!(
        "{} loss{} of one host per replicated layout, each 0 to {} ms after the first acknowledged write of its round \
         (seed {}); {} writers, {} blobs of {} to {} bytes, a commit per write.{at_once}",
        c.losses_per_method,
        if c.losses_per_method == 1 { "" } else { "es" },
        c.max_delay_us / 1000,
        c.seed,
        c.writers,
        c.blobs,
        thousands(c.blob_min_bytes),
        thousands(c.blob_max_bytes)
    )
}

/// Each layout's store and network, as they described themselves.
fn stores(c: &MachineLossSection) -> Vec<String> {
    c.methods.iter().map(|m| format!("{}: {}; {}.", m.method, m.store, m.network)).collect()
}

fn broken(m: &MachineLossMethodResult) -> String {
    format!(
        "{}: lost {} acknowledged write{} over {} loss{} although its layout keeps each write on two machines.",
        m.method,
        m.lost_acknowledged,
        plural(m.lost_acknowledged as u32),
        m.losses,
        if m.losses == 1 { "" } else { "es" }
    )
}

/// A method that stopped on an error: after how many losses, and why
/// (its row counts the losses completed before it).
fn failed(m: &MachineLossMethodResult) -> String {
    format!(
        "{}: failed after {} loss{}, its row counts those: {}",
        m.method,
        m.losses,
        if m.losses == 1 { "" } else { "es" },
        m.failed.as_deref().unwrap_or_default()
    )
}

/// "1,234 ms [980..2,100]": the median time to resume and its range.
pub fn resumed(ms: &[f64]) -> String {
    if ms.is_empty() {
        return "-".into();
    }
    let s = crate::measure::Stat::of(ms);
    let f = |x: f64| thousands(x.round() as u64);
    format!("{} ms [{}..{}]", f(s.median), f(s.min), f(s.max))
}

fn table(c: &MachineLossSection) -> Table {
    let headers = [
        "method",
        "losses",
        "hosts lost",
        "acks",
        "lost-acked",
        "torn",
        "missing",
        "in flight",
        "kept-unacked",
        "resumed",
    ];
    let rows = c
        .methods
        .iter()
        .map(|m| {
            vec![
                m.method.clone(),
                match m.failed {
                    Some(_) => format!("{} (failed)", m.losses),
                    None => m.losses.to_string(),
                },
                hosts_lost(&m.hosts_lost),
                thousands(m.acknowledged),
                thousands(m.lost_acknowledged),
                thousands(m.torn),
                thousands(m.missing),
                thousands(m.in_flight),
                thousands(m.unacknowledged_kept),
                resumed(&m.resumed_after_ms),
            ]
        })
        .collect();
    Table::new(&headers, rows)
}

/// "pg0 x11, pg1 x9".
fn hosts_lost(names: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match counts.iter_mut().find(|(k, _)| *k == n) {
            Some((_, c)) => *c += 1,
            None => counts.push((n, 1)),
        }
    }
    counts.iter().map(|(n, c)| format!("{n} x{c}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_layout_with_its_losses_and_time_to_resume() {
        let mut f = crate::report::fixtures::suite("host-a", &[]);
        f.command = "crashtest".into();
        let method = |name: &str, promises: bool, lost: u64| MachineLossMethodResult {
            method: name.into(),
            store: "PostgreSQL 15".into(),
            network: "namespaces".into(),
            promises_survival: promises,
            losses: 3,
            hosts_lost: vec!["pg0".into(), "pg1".into(), "pg0".into()],
            acknowledged: 1200,
            lost_acknowledged: lost,
            resumed_after_ms: vec![2100.0, 900.0, 1500.0],
            ..MachineLossMethodResult::default()
        };
        f.machine_loss = Some(MachineLossSection {
            losses_per_method: 3,
            blobs: 40,
            writers: 4,
            methods: vec![method("postgres-sync-standby", true, 0), method("postgres-async-standby", false, 5)],
            ..MachineLossSection::default()
        });
        let text = terminal(&f);
        assert!(text.contains("pg0 x2, pg1 x1"), "{text}");
        assert!(text.contains("1,500 ms [900..2,100]"), "the median and range: {text}");
        assert!(!text.contains("at once"), "one after the other by default: {text}");
        f.machine_loss.as_mut().unwrap().methods_at_once = true;
        let text = terminal(&f);
        assert!(text.contains("losses ran at once") && text.contains("the others' load"), "{text}");
        let page = format!("{:?}", blocks(std::slice::from_ref(&f)));
        assert!(!page.contains("although its layout"), "the asynchronous standby promises nothing: {page}");
        f.machine_loss.as_mut().unwrap().methods[0].lost_acknowledged = 1;
        let page = format!("{:?}", blocks(std::slice::from_ref(&f)));
        assert!(page.contains("postgres-sync-standby: lost 1 acknowledged write over 3 losses"), "{page}");
        assert!(terminal(&crate::report::fixtures::suite("host-a", &[])).is_empty());
    }
}
