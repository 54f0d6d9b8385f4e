//! The `advise` page: the recommendation at the top (or the tie), the
//! workload, the exclusions with their crash facts, the ranking at the
//! stated mix, then the evidence: each factor with its interval and the
//! chart it comes from, and what would change the answer. Everything is
//! computed from the result file by `studies::advise::rank`.

pub mod clients;
mod clients_chart;
mod evidence;
mod headline;
pub mod replicated;
mod terminal;
pub mod words;

use evidence::{evidence, notes, servers_measured, vs_leader};
pub use evidence::{ranking, READS_CHART, SPACE_CHART, WRITES_CHART};
pub use terminal::terminal;

use crate::report::format::doc::{Block, Chart, Figure, Section, Table, Verdict};
use crate::report::format::fmt::{bytes, machine_labels, micros, thousands};
use crate::report::format::svg::BarChart;
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::advise::rank::{self, Ranking};
use crate::studies::advise::AdviseSection;
use crate::studies::advise::Store;
use crate::studies::suite::{ArmId, COLD_READS, WARM_READS, WRITES};

/// The advice leads the page (before the verdict) and its command's output.
pub const REPORT: StudyReport =
    StudyReport { sections, questions: &[], terminal: Some(terminal), redraws: None, leads: true };

fn suffix(files: &[ResultFile], index: usize) -> String {
    if files.iter().filter(|f| f.advise.is_some()).count() > 1 {
        format!("-{}", index + 1)
    } else {
        String::new()
    }
}

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let several = files.iter().filter(|f| f.advise.is_some()).count() > 1;
    files
        .iter()
        .zip(&labels)
        .enumerate()
        .filter_map(|(i, (f, label))| {
            let (r, s) = ranking(f)?;
            let sfx = suffix(files, i);
            let title = if several {
                format!("Where these blobs should live ({label})")
            } else {
                "Where these blobs should live".to_string()
            };
            Some(Section { id: format!("advise{sfx}"), title, in_summary: true, blocks: blocks(f, &r, s, label, &sfx) })
        })
        .collect()
}

fn blocks(file: &ResultFile, r: &Ranking, s: &AdviseSection, label: &str, sfx: &str) -> Vec<Block> {
    let one_client_chart = headline::figure(r, s, sfx).map(Block::Figure);
    // With clients the answer is the one at the user's concurrency, first,
    // under its chart (throughput against clients); the one-client ranking
    // follows as itself, with its own chart.
    let mut b: Vec<Block> = Vec::new();
    match (clients::headline_chart(file, sfx), clients::headline(file)) {
        (Some(chart), Some(at_n)) => {
            b.extend([Block::Figure(chart), Block::Paragraph(at_n)]);
            b.extend(one_client_chart);
            b.push(Block::Paragraph(words::at_one_client(r, s)));
        }
        _ => {
            b.extend(one_client_chart);
            b.push(Block::Paragraph(words::recommendation(r, s)));
        }
    }
    b.push(Block::Paragraph(words::workload(s)));
    b.extend(words::flush_note(s).map(Block::Note));
    b.extend(words::over_budget(s).map(Block::Note));
    b.extend(words::budget_note(s).map(Block::Note));
    if !r.excluded.is_empty() {
        b.push(Block::Heading("Excluded: cannot meet the durability need".into()));
        b.push(Block::List(r.excluded.iter().map(|e| words::exclusion(e, s)).collect()));
    }
    b.push(Block::Note(words::crash_source(s)));
    b.extend(servers_measured(file).into_iter().map(Block::Note));
    b.extend(notes(r, s).into_iter().map(Block::Note));
    b.push(Block::Heading(format!("Ranking at {}:{} reads:writes", s.workload.mix_reads, s.workload.mix_writes)));
    b.push(Block::Table(ranking_table(r, s)));
    b.extend(clients::blocks(file, s, sfx));
    let rows = evidence(file, r, s, label, sfx);
    if !rows.is_empty() {
        b.push(Block::Heading("Evidence: each candidate against the leader".into()));
        b.push(Block::Verdict(Verdict::new(rows)));
    }
    if let Some(n) = &r.noise {
        b.push(Block::Note(format!(
            "Noise floor: the A/A control (one read path measured twice) differed by {:.2}x ({:.2}-{:.2}, {} rounds); \
             a factor inside it is called a tie.",
            n.value, n.low, n.high, n.rounds
        )));
    }
    if let Some(note) = rounds_note(file, s) {
        b.push(Block::Note(note));
    }
    if let Some(note) = aging_note(file, r) {
        b.push(Block::Note(note));
    }
    let with_clients = clients::what_would_change(file).map_or_else(String::new, |c| format!(" {c}"));
    b.push(Block::Paragraph(format!("{}{with_clients}", words::what_would_change_it(r))));
    b.extend(charts(file, r, s, sfx).into_iter().map(Block::Figure));
    b
}

/// How many rounds the warm reads, the cold reads and the writes ran, and
/// how many operations each candidate made per run (writes sized by time
/// differ by candidate); None for files that do not record them.
fn rounds_note(file: &ResultFile, s: &AdviseSection) -> Option<String> {
    let stores = measured(file, s);
    let arm_of = |set: &str, st: &Store| match set {
        WARM_READS => st.read_id(),
        COLD_READS => st.cold_read_id(),
        _ => rank::write_id(s, *st),
    };
    let mut parts = Vec::new();
    for (id, what) in [(WARM_READS, "warm reads"), (COLD_READS, "cold reads"), (WRITES, "writes")] {
        let Some(set) = file.rounds.iter().find(|r| r.id == id && !r.ops_per_run.is_empty()) else { continue };
        let ops = |st: &Store| {
            let i = set.arms.iter().position(|a| arm_of(id, st).is(a))?;
            Some((words::store_name(*st), *set.ops_per_run.get(i)?))
        };
        let per: Vec<(String, u64)> = stores.iter().filter_map(ops).collect();
        let counts = if per.windows(2).all(|w| w[0].1 == w[1].1) {
            per.first().map_or_else(String::new, |(_, n)| format!("{} per run", thousands(*n)))
        } else {
            let each: Vec<String> = per.iter().map(|(name, n)| format!("{name} {}", thousands(*n))).collect();
            format!("per run {}", each.join(", "))
        };
        let sized = set.run_time_s.map_or_else(String::new, |t| {
            format!(", each arm's run sized to about {t:.2} s from an untimed run after its warm-up")
        });
        parts.push(format!("{what}: {} rounds{sized}, {counts}", set.rounds.len()));
    }
    (!parts.is_empty()).then(|| {
        format!("Rounds and operations (keys at random over the whole dataset, anew each round): {}.", parts.join("; "))
    })
}

/// The aging pass's note, with the size of its sample.
fn aging_note(file: &ResultFile, r: &Ranking) -> Option<String> {
    let sample = file.aging.as_ref()?.settings.last()?.count;
    words::aging_note(r, sample)
}

fn ranking_table(r: &Ranking, s: &AdviseSection) -> Table {
    let cold = r.ranked.iter().any(|c| c.cold_read_us.is_some());
    let headers = [
        "rank",
        "candidate",
        "configuration",
        "read µs/op",
        "cold read µs/op",
        "write µs/op",
        "µs/op at the mix",
        "vs the leader",
        "disk allocated",
    ];
    let rows = r
        .ranked
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let vs = vs_leader(i, c);
            let mut row = vec![
                (i + 1).to_string(),
                words::store_name(c.store),
                words::configuration(c.store, s),
                micros(c.read_us),
                c.cold_read_us.map_or_else(|| "-".into(), micros),
                micros(c.write_us),
                micros(c.mixed_us),
                vs,
                c.allocated_bytes.map_or_else(|| "-".into(), bytes),
            ];
            if !cold {
                row.remove(COLD_COLUMN);
            }
            row
        })
        .collect();
    let mut headers: Vec<String> = headers.map(String::from).to_vec();
    if !cold {
        headers.remove(COLD_COLUMN);
    }
    Table { headers, rows, ..Table::default() }
}

/// The ranking table's cold reads column (left out when none were measured).
const COLD_COLUMN: usize = 4;

/// Every candidate measured, ranked or not, for the charts.
fn measured(file: &ResultFile, s: &AdviseSection) -> Vec<Store> {
    s.candidates.iter().copied().filter(|st| file.experiment(st.read_id()).is_some()).collect()
}

fn charts(file: &ResultFile, r: &Ranking, s: &AdviseSection, sfx: &str) -> Vec<Figure> {
    let stores = measured(file, s);
    let groups: Vec<String> = stores.iter().map(|st| words::store_name(*st)).collect();
    let per_op = |id: ArmId| file.experiment(id).map(|e| e.summary.figure().median);
    let bar = |id: &str, title: &str, y: &str, series: Vec<String>, values: Vec<Vec<Option<f64>>>, note: &str| Figure {
        id: format!("{id}{sfx}"),
        chart: Chart::Bars(BarChart {
            title: title.into(),
            y_label: y.into(),
            groups: groups.clone(),
            series,
            values,
            reference: None,
            errors: Vec::new(),
            note: note.into(),
        }),
        caption: vec![format!("{} Excluded candidates are shown too; the ranking leaves them out.", note)],
        findings: r.ranked.first().map(|l| format!("Leader: {}.", words::store_name(l.store))).into_iter().collect(),
    };
    type Bars = (Vec<String>, Vec<Vec<Option<f64>>>);
    let one =
        |y: &str, v: Vec<Option<f64>>| -> Bars { (vec![y.to_string()], v.into_iter().map(|x| vec![x]).collect()) };
    let cold: Vec<Option<f64>> = stores.iter().map(|st| per_op(st.cold_read_id())).collect();
    let (read_series, read_values, read_note) = if cold.iter().any(Option::is_some) {
        let warm = stores.iter().map(|st| per_op(st.read_id()));
        (
            vec!["warm page cache".to_string(), "cold (cache evicted before each run)".to_string()],
            warm.zip(cold).map(|(w, c)| vec![w, c]).collect(),
            "Median steady-state per-op time over interleaved rounds (the cold reads in rounds of their own).",
        )
    } else {
        let (series, values) = one("µs per read", stores.iter().map(|st| per_op(st.read_id())).collect());
        (series, values, "Median steady-state per-op time over interleaved rounds, warm page cache.")
    };
    let (write_series, write_values) =
        one("µs per write", stores.iter().map(|st| per_op(rank::write_id(s, *st))).collect());
    let space = stores
        .iter()
        .map(|st| file.disk_usage.iter().find(|d| d.layout == st.layout()).map(|d| d.allocated_bytes as f64 / 1e6))
        .collect();
    let (space_series, space_values) = one("MB allocated", space);
    vec![
        bar(READS_CHART, "Reads by candidate", "µs per read", read_series, read_values, read_note),
        bar(WRITES_CHART, "Writes by candidate", "µs per write", write_series, write_values, &write_note(s)),
        bar(
            SPACE_CHART,
            "Disk space by candidate",
            "MB allocated",
            space_series,
            space_values,
            "Blocks allocated on disk after building the dataset (stat).",
        ),
    ]
}

/// What the writes chart shows: each write with its commit, as the
/// workload states it.
fn write_note(s: &AdviseSection) -> String {
    if s.workload.one_commit_per_run() {
        "Median per-op time over interleaved rounds: one commit per run (older file), so each bar spreads one \
         commit over the run's writes."
            .into()
    } else {
        format!(
            "Median steady-state time per write over interleaved rounds: the loop with {} inside it (each file \
             written and fsynced on its own), opening and closing left out.",
            words::commits(s)
        )
    }
}

#[cfg(test)]
mod commit_tests;
#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod tests;
