//! What `advise` prints after a run, from the result file it wrote: the
//! workload and where the crash facts came from, then the answer at a
//! glance, last: the recommendation, the ranking (one line per candidate,
//! the excluded ones too) and at most three decisive evidence lines. Every
//! evidence row, the size crossover, the aging pass and the charts stay on
//! the page and in summary.md. Drawn through the document model.

use super::evidence::{evidence, facet_row, notes, ranking, servers_measured, vs_leader, Facet};
use super::words;
use crate::report::format::doc::{Block, Table, VerdictRow};
use crate::report::format::fmt::{bytes, micros};
use crate::report::format::text::blocks_text;
use crate::results::ResultFile;
use crate::studies::advise::rank::{Change, Ranked, Ranking};
use crate::studies::advise::AdviseSection;
use crate::studies::advise::Store;

/// The most evidence lines the terminal shows.
pub const DECISIVE_LINES: usize = 3;

pub fn terminal(file: &ResultFile, _colour: bool) -> String {
    let Some((r, s)) = ranking(file) else { return String::new() };
    let mut blocks = vec![Block::Paragraph(words::workload(s))];
    blocks.extend(words::over_budget(s).map(Block::Note));
    blocks.push(Block::Paragraph(words::crash_source(s)));
    blocks.extend(servers_measured(file).into_iter().map(Block::Note));
    blocks.extend(notes(&r, s).into_iter().map(Block::Note));
    // With clients the recommendation is the one at N, in their blocks below.
    let at_one = match super::clients::headline(file) {
        Some(_) => words::at_one_client(&r, s),
        None => words::recommendation(&r, s),
    };
    blocks.push(Block::Paragraph(at_one));
    blocks.push(Block::Table(table(&r, s)));
    blocks.extend(super::clients::terminal_blocks(file));
    let lines = decisive(&r, s);
    if !lines.is_empty() {
        let all = evidence(file, &r, s, "", "").len();
        blocks.push(Block::Paragraph(format!(
            "Decisive evidence (all {all} evidence rows, the size crossover, the aging pass and the charts are on \
             the page and in summary.md):"
        )));
        blocks.push(Block::List(lines));
    }
    blocks_text(&blocks)
}

/// One line per candidate: ranked ones in order, then the excluded (with
/// their figures when measured, and the failing fact), then the unmeasured.
fn table(r: &Ranking, s: &AdviseSection) -> Table {
    let mix = format!("µs/op at {}:{}", s.workload.mix_reads, s.workload.mix_writes);
    let headers = ["rank", "candidate", "read µs/op", "write µs/op", &mix, "vs the leader", "disk", "excluded"];
    let us = |v: Option<f64>| v.map_or_else(|| "-".to_string(), micros);
    let disk = |b: Option<u64>| b.map_or_else(|| "-".to_string(), bytes);
    let mut rows: Vec<Vec<String>> = r
        .ranked
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![
                (i + 1).to_string(),
                words::store_name(c.store),
                micros(c.read_us),
                micros(c.write_us),
                micros(c.mixed_us),
                vs_leader(i, c),
                disk(c.allocated_bytes),
                "no".into(),
            ]
        })
        .collect();
    rows.extend(r.excluded.iter().map(|e| {
        vec![
            "-".into(),
            words::store_name(e.store),
            us(e.read_us),
            us(e.write_us),
            us(e.mixed_us),
            "-".into(),
            disk(e.allocated_bytes),
            format!("yes: {}", words::exclusion_reason(e)),
        ]
    }));
    let unranked = |st: &Store, why: &str| {
        let dash = || "-".to_string();
        vec![dash(), words::store_name(*st), dash(), dash(), dash(), dash(), dash(), why.to_string()]
    };
    rows.extend(r.unmeasured.iter().map(|st| unranked(st, "no (not measured)")));
    rows.extend(r.refused.iter().map(|x| unranked(&x.store, "no (another commit granularity: not compared)")));
    Table::new(&headers, rows)
}

/// At most [`DECISIVE_LINES`]: the next candidate against the leader at
/// the mix, the one of its reads and writes that makes most of that gap,
/// and the nearest thing that would change the leader (cold reads, aging
/// or another mix), when there is one.
fn decisive(r: &Ranking, s: &AdviseSection) -> Vec<String> {
    let line =
        |row: VerdictRow| format!("{}: {}; {} [chart {}]", row.question, row.outcome, row.uncertainty, row.chart_id);
    let mut out = Vec::new();
    if let (Some(leader), Some(next)) = (r.ranked.first(), r.ranked.get(1)) {
        out.extend(facet_row(Facet::Mix, (next, leader), s, ("", "")).map(line));
        let facet = deciding_facet((next, leader), s);
        out.extend(facet_row(facet, (next, leader), s, ("", "")).map(line));
    }
    let leader_changes = |c: &&Change| matches!(c, Change::Cold { .. } | Change::Aged { .. } | Change::Mix { .. });
    if let Some(c) = r.changes.iter().find(leader_changes) {
        out.push(format!("what would change it: {}", words::change(c)));
    }
    out.truncate(DECISIVE_LINES);
    out
}

/// Whether the reads or the writes make most of the gap between `next`
/// and `leader` at the stated mix (each side's time weighted by its share
/// of operations, as the ranking's time at the mix is).
fn deciding_facet((next, leader): (&Ranked, &Ranked), s: &AdviseSection) -> Facet {
    let total = f64::from(s.workload.mix_reads + s.workload.mix_writes).max(1.0);
    let share = f64::from(s.workload.mix_reads) / total;
    let reads = share * (next.read_us - leader.read_us);
    let writes = (1.0 - share) * (next.write_us - leader.write_us);
    if reads.abs() >= writes.abs() {
        Facet::Reads
    } else {
        Facet::Writes
    }
}
