//! The `advise` page: the recommendation at the top (or the tie), the
//! workload, the exclusions with their crash facts, the ranking at the
//! stated mix, then the evidence: each factor with its interval and the
//! chart it comes from, and what would change the answer. Everything is
//! computed from the result file by `studies::advise::rank`.

pub mod words;

use crate::report::format::doc::{Block, Chart, Figure, Section, Table, VerdictRow};
use crate::report::format::fmt::{bytes, machine_labels, micros};
use crate::report::format::svg::BarChart;
use crate::report::study::aging as aging_report;
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::advise::rank::{self, Factor, Inputs, Ranked, Ranking};
use crate::studies::advise::rules::Store;
use crate::studies::advise::AdviseSection;

/// The advice leads the page (before the verdict) and its command's output.
pub const REPORT: StudyReport =
    StudyReport { sections, questions: &[], terminal: Some(terminal), redraws: None, leads: true };

/// Its charts: per-op reads, per-op writes and disk space by candidate.
pub const READS_CHART: &str = "advise-reads";
pub const WRITES_CHART: &str = "advise-writes";
pub const SPACE_CHART: &str = "advise-space";

/// The ranking of the advice in `file`, when it holds one.
pub fn ranking(file: &ResultFile) -> Option<(Ranking, &AdviseSection)> {
    let section = file.advise.as_ref()?;
    let inputs = Inputs {
        section,
        experiments: &file.experiments,
        rounds: &file.rounds,
        disk: &file.disk_usage,
        matrix: file.matrix.as_ref(),
        aging: file.aging.as_ref(),
    };
    Some((rank::rank(&inputs), section))
}

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
    let mut b = vec![Block::Paragraph(words::recommendation(r, s)), Block::Paragraph(words::workload(s))];
    if !r.excluded.is_empty() {
        b.push(Block::Heading("Excluded: cannot meet the durability need".into()));
        b.push(Block::List(r.excluded.iter().map(|e| words::exclusion(e, s)).collect()));
    }
    b.push(Block::Note(words::crash_source(s)));
    let mut notes: Vec<String> = r
        .unmeasured
        .iter()
        .map(|st| format!("{}: not ranked, its reads or writes were not measured.", words::store_name(*st)))
        .collect();
    notes.extend(r.refused.iter().map(words::refusal));
    if s.workload.one_commit_per_run() {
        notes.push(
            "Write figures: one commit per run (older file). This file predates --commit-every: each write arm \
             committed once per run, so its write times spread one commit over many writes and are not per-write \
             figures; they are ranked only against each other."
                .into(),
        );
    }
    notes.extend(r.untested.iter().map(|st| {
        format!("{}: not excluded, but no crash facts cover its write method (not tested).", words::store_name(*st))
    }));
    b.extend(notes.into_iter().map(Block::Note));
    b.push(Block::Heading(format!("Ranking at {}:{} reads:writes", s.workload.mix_reads, s.workload.mix_writes)));
    b.push(Block::Table(ranking_table(r, s)));
    let rows = evidence(file, r, s, label, sfx);
    if !rows.is_empty() {
        b.push(Block::Heading("Evidence: each candidate against the leader".into()));
        b.push(Block::Verdict(rows));
    }
    if let Some(n) = &r.noise {
        b.push(Block::Note(format!(
            "Noise floor: the A/A control (one read path measured twice) differed by {:.2}x ({:.2}-{:.2}, {} rounds); \
             a factor inside it is called a tie.",
            n.value, n.low, n.high, n.rounds
        )));
    }
    if let Some(note) = aging_note(file, r) {
        b.push(Block::Note(note));
    }
    b.push(Block::Paragraph(words::what_would_change_it(r)));
    b.extend(charts(file, r, s, sfx).into_iter().map(Block::Figure));
    b
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
            let vs = match (&c.mixed, i) {
                (_, 0) => "leader".to_string(),
                (Some(m), _) if c.tie => format!("tie ({:.2}x)", m.value),
                (Some(m), _) => format!("{:.2}x slower", m.value),
                (None, _) => "-".into(),
            };
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
    Table { headers, rows }
}

/// The ranking table's cold reads column (left out when none were measured).
const COLD_COLUMN: usize = 4;

/// The evidence rows: reads (warm and cold), writes, the mix, disk space
/// and the aging pass's reads and growth of each ranked candidate against
/// the leader.
fn evidence(file: &ResultFile, r: &Ranking, s: &AdviseSection, label: &str, sfx: &str) -> Vec<VerdictRow> {
    let Some(leader) = r.ranked.first() else { return Vec::new() };
    let lead = words::store_name(leader.store);
    let row = |question: &str, c: &Ranked, f: &Factor, chart: &str, title: &str| VerdictRow {
        question: question.into(),
        result: label.into(),
        outcome: outcome(&words::store_name(c.store), &lead, f),
        factor: format!("{:.2}x", f.oriented().value),
        uncertainty: words::interval(&f.oriented()),
        compared: format!("{} vs {lead}", words::store_name(c.store)),
        chart_id: format!("{chart}{sfx}"),
        chart_title: title.into(),
        unclear: f.paired && f.low <= 1.0 && f.high >= 1.0,
    };
    let mut rows = Vec::new();
    for c in r.ranked.iter().skip(1) {
        if let Some(f) = &c.reads {
            rows.push(row("reads (warm)", c, f, READS_CHART, "Reads by candidate"));
        }
        if let Some(f) = &c.cold_reads {
            rows.push(row("reads (cold)", c, f, READS_CHART, "Reads by candidate"));
        }
        if let Some(f) = &c.writes {
            let q = format!("writes (durability {})", s.workload.durability.name());
            rows.push(row(&q, c, f, WRITES_CHART, "Writes by candidate"));
        }
        if let Some(f) = &c.mixed {
            let q = format!("at {}:{}", s.workload.mix_reads, s.workload.mix_writes);
            // The chart of what takes most of the leader's time at this mix.
            let mut x = if reads_dominate(leader, s) {
                row(&q, c, f, READS_CHART, "Reads by candidate")
            } else {
                row(&q, c, f, WRITES_CHART, "Writes by candidate")
            };
            if c.tie {
                x.outcome = format!("tie: {}", x.outcome);
            }
            rows.push(x);
        }
        if let Some((factor, uncertainty)) = words::space(c, leader) {
            rows.push(VerdictRow {
                question: "disk space".into(),
                result: label.into(),
                outcome: format!("{} allocates {factor} of {lead}'s space", words::store_name(c.store)),
                factor,
                uncertainty,
                compared: format!("{} vs {lead}", words::store_name(c.store)),
                chart_id: format!("{SPACE_CHART}{sfx}"),
                chart_title: "Disk space by candidate".into(),
                unclear: false,
            });
        }
        rows.extend(aged_rows(file, c, leader, label, sfx));
    }
    rows
}

/// The aging pass's evidence of `c` against the leader: reads at the last
/// age (paired over the aging rounds) and disk growth since age 0.
fn aged_rows(file: &ResultFile, c: &Ranked, leader: &Ranked, label: &str, sfx: &str) -> Vec<VerdictRow> {
    let (Some(a), Some(setting)) = (c.aged, file.aging.as_ref().and_then(|x| x.settings.last())) else {
        return Vec::new();
    };
    let (name, lead) = (words::store_name(c.store), words::store_name(leader.store));
    let chart = |key: &str| format!("aging-{}-{key}", aging_report::setting_id(setting, sfx));
    let mut rows = Vec::new();
    if let Some(f) = &a.reads {
        rows.push(VerdictRow {
            question: format!("reads after {} rewrites", a.age),
            result: label.into(),
            outcome: outcome(&name, &lead, f),
            factor: format!("{:.2}x", f.oriented().value),
            uncertainty: words::interval(&f.oriented()),
            compared: format!("{name} vs {lead}"),
            chart_id: chart(aging_report::READ_WARM_CHART),
            chart_title: format!("{}: Warm reads by storage age", setting.sizes.name),
            unclear: f.paired && f.low <= 1.0 && f.high >= 1.0,
        });
    }
    if let (Some(g), Some(lg)) = (a.growth, leader.aged.and_then(|l| l.growth)) {
        rows.push(VerdictRow {
            question: format!("disk growth after {} rewrites", a.age),
            result: label.into(),
            outcome: format!("{name} grew {g:.2}x, {lead} {lg:.2}x"),
            factor: format!("{:.2}x", g / lg),
            uncertainty: "exact (allocated blocks at each age, from stat)".into(),
            compared: format!("{name} vs {lead}"),
            chart_id: chart(aging_report::DISK_CHART),
            chart_title: format!("{}: Disk allocated per byte of content", setting.sizes.name),
            unclear: false,
        });
    }
    rows
}

/// Whether reads take most of `leader`'s time at the stated mix.
fn reads_dominate(leader: &Ranked, s: &AdviseSection) -> bool {
    let (r, w) = (f64::from(s.workload.mix_reads), f64::from(s.workload.mix_writes));
    r * leader.read_us >= w * leader.write_us
}

/// "redb 1.52x slower than SQLite", or faster when the factor is below 1.
fn outcome(name: &str, lead: &str, f: &Factor) -> String {
    let o = f.oriented();
    if f.value >= 1.0 {
        format!("{name} {:.2}x slower than {lead}", o.value)
    } else {
        format!("{name} {:.2}x faster than {lead}", o.value)
    }
}

/// Every candidate measured, ranked or not, for the charts.
fn measured(file: &ResultFile, s: &AdviseSection) -> Vec<Store> {
    s.candidates
        .iter()
        .filter_map(|n| Store::from_name(n))
        .filter(|st| file.experiment(&st.read_id()).is_some())
        .collect()
}

fn charts(file: &ResultFile, r: &Ranking, s: &AdviseSection, sfx: &str) -> Vec<Figure> {
    let stores = measured(file, s);
    let groups: Vec<String> = stores.iter().map(|st| words::store_name(*st)).collect();
    let per_op = |id: String| file.experiment(&id).map(|e| e.summary.figure().median);
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

/// What `advise` prints: the recommendation, the exclusions and the
/// evidence lines, from the result file.
pub fn terminal(file: &ResultFile, _colour: bool) -> String {
    let Some((r, s)) = ranking(file) else { return String::new() };
    let mut out = format!("{}\n{}\n", words::recommendation(&r, s), words::workload(s));
    for e in &r.excluded {
        out.push_str(&format!("  {}\n", words::exclusion(e, s)));
    }
    for x in &r.refused {
        out.push_str(&format!("  {}\n", words::refusal(x)));
    }
    out.push_str(&format!("{}\n", words::crash_source(s)));
    for row in evidence(file, &r, s, file.display_label(), "") {
        out.push_str(&format!("  {}: {}; {} [chart {}]\n", row.question, row.outcome, row.uncertainty, row.chart_id));
    }
    if let Some(note) = aging_note(file, &r) {
        out.push_str(&format!("{note}\n"));
    }
    out.push_str(&format!("{}\n", words::what_would_change_it(&r)));
    out
}

#[cfg(test)]
mod commit_tests;
#[cfg(test)]
mod tests;
