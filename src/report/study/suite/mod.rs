//! The article's charts ("35% Faster Than The Filesystem"), redrawn from the
//! `suite` experiments: each bar is file per-op time / database per-op time
//! (the database at 1.0 on the left, above 1.0 SQLite is faster), one group
//! of bars per machine. The five article charts come first, then the fair
//! variants (open/read instead of stdio, other write methods, durable
//! writes), then disk usage. Every sentence is computed from the data.

pub mod questions;
mod specs;
mod tails;

pub use specs::*;

use crate::measure::Experiment;
use crate::records::{DatasetSpec, DiskUsage, EngineKind};
use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Section, Table};
use crate::report::format::fmt::{blob_size, bytes, machine_labels, micros, speed_phrase, thousands};
use crate::report::format::svg::BarChart;
use crate::report::interval::{kvtest_ratio, time_ratio, Method as Interval, Ratio, BOOTSTRAP_MIN_RUNS};
use crate::report::study::{Redraw, StudyReport};
use crate::results::ResultFile;
use crate::studies::suite::ids::{self, ArmId};
use crate::util::units::plural;

/// Files that hold kvtest-suite results; other commands' files are left to
/// their own sections rather than shown here as "not measured" everywhere.
pub fn suite_files(files: &[ResultFile]) -> Vec<(String, &ResultFile)> {
    let labels = machine_labels(files);
    files
        .iter()
        .zip(labels)
        .filter(|(f, _)| {
            f.command == "suite" || !f.disk_usage.is_empty() || SUITE_IDS.iter().any(|id| f.experiment(id).is_some())
        })
        .map(|(f, l)| (l, f))
        .collect()
}

/// Whether `id` is an arm committed as an application would: compared by
/// its steady-state figure (the loop with each commit inside it). The
/// article's arms are compared as kvtest times them.
fn committed(id: &str) -> bool {
    ids::ArmId::parse(id).is_some_and(ids::ArmId::is_commit)
}

/// A chart's figure of an experiment: the median per op, kvtest's total
/// for the article's arms, the steady-state figure for committed ones.
pub(super) fn per_op_us(e: &Experiment) -> Option<f64> {
    if committed(&e.id) {
        e.figure_us()
    } else {
        e.kvtest_us()
    }
}

/// The same figure over the runs (its spread for whiskers).
pub(super) fn per_op_stat(e: &Experiment) -> &crate::measure::Stat {
    if committed(&e.id) {
        e.summary.figure()
    } else {
        &e.summary.per_op_us
    }
}

/// File time / database time, when both were measured (paired by round
/// when the file has rounds).
pub fn ratio(file: &ResultFile, db: impl std::fmt::Display, method: impl std::fmt::Display) -> Option<f64> {
    let (db, method) = (&db.to_string(), &method.to_string());
    let unpaired = per_op_us(file.experiment(method)?)? / per_op_us(file.experiment(db)?)?;
    match ratio_interval(file, db, method) {
        Some(r) if r.method == Interval::Paired => Some(r.value),
        _ => Some(unpaired),
    }
}

/// File time / database time with its interval (see [`time_ratio`] and
/// [`kvtest_ratio`]).
pub fn ratio_interval(file: &ResultFile, db: impl std::fmt::Display, method: impl std::fmt::Display) -> Option<Ratio> {
    let (db, method) = (&db.to_string(), &method.to_string());
    per_op_us(file.experiment(method)?)?;
    per_op_us(file.experiment(db)?)?;
    if committed(db) {
        time_ratio(file, method, db)
    } else {
        kvtest_ratio(file, method, db)
    }
}

/// "3 timed runs per bar; whiskers: min-max (95% bootstrap from 5 runs)".
fn runs_note(spec: &Spec, machines: &[(String, &ResultFile)]) -> String {
    let counts: Vec<u32> = machines
        .iter()
        .flat_map(|(_, f)| {
            std::iter::once(spec.db).chain(spec.files.iter().copied()).filter_map(|m| f.experiment(m.id))
        })
        .map(|e| e.summary.runs)
        .collect();
    let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
    let runs = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
    let min = BOOTSTRAP_MIN_RUNS as u32;
    let whiskers = if hi <= 1 {
        "no whiskers (one run: spread unknown)".to_string()
    } else if lo >= min {
        "whiskers: 95% bootstrap interval".to_string()
    } else if hi < min {
        "whiskers: min-max over the runs".to_string()
    } else {
        format!("whiskers: 95% bootstrap interval (min-max under {min} runs)")
    };
    format!("{runs} timed run{} per bar; {whiskers}", plural(hi))
}

/// The article's charts, the fair variants and disk usage, drawn for the
/// files that hold suite results (nothing when there are none).
/// The suite's part of the report: the article's charts, the fair
/// variants and disk usage (the suite prints the report's summary).
pub const REPORT: StudyReport = StudyReport {
    sections,
    questions: questions::QUESTIONS,
    terminal: None,
    redraws: Some(Redraw { title: "SQLite's \"35% Faster Than The Filesystem\"", in_file: |f| f.command == "suite" }),
    leads: false,
};

/// The note over the article's and the fair charts.
const RATIO_NOTE: &str = "Each bar is a file method's per-op time divided by SQLite's on the same machine (kvtest's per-blob time: \
     the median over the timed runs, opening and committing included). SQLite is the bar at 1.0; above 1.0 SQLite is faster.";

/// The note over the committed charts.
const COMMITTED_NOTE: &str =
    "Each bar is a file method's per-op time divided by SQLite's on the same machine, each write committed as an \
     application commits it: the steady-state time (the loop with every commit inside it, and the work the writes \
     left to the close, such as SQLite's checkpoint), opening and closing left out (reported apart in the details). \
     SQLite is the bar at 1.0; above 1.0 SQLite is faster.";

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let mut machines = suite_files(files);
    if machines.is_empty() {
        return Vec::new();
    }
    label_sizes(&mut machines);
    // Advise runs a few of the suite's arms: its pages show only those
    // (a suite's page shows every chart, gaps said so).
    let selective = machines.iter().all(|(_, f)| f.advise.is_some());
    let charts = Charts { machines: &machines, selective };
    // Files from before the committed arms have none: no empty chart for them.
    let mut committed_blocks =
        if charts.measured(COMMITTED[0].db.id) { charts.blocks(&COMMITTED, COMMITTED_NOTE) } else { Vec::new() };
    if !committed_blocks.is_empty() {
        committed_blocks.extend(article_moves(&machines).into_iter().map(Block::Paragraph));
    }
    let layouts: Vec<Layout> = LAYOUTS
        .into_iter()
        .filter(|(layout, _, _)| {
            !selective || machines.iter().any(|(_, f)| f.disk_usage.iter().any(|d| d.layout == *layout))
        })
        .collect();
    let sections = [
        Section {
            id: "article".into(),
            title: "The article's five charts".into(),
            in_summary: true,
            blocks: charts.blocks(&ARTICLE, RATIO_NOTE),
        },
        Section {
            id: "fair".into(),
            title: "Fairer comparisons".into(),
            in_summary: true,
            blocks: charts.blocks(&FAIR, RATIO_NOTE),
        },
        Section {
            id: "committed".into(),
            title: "Durable writes committed as an application commits them".into(),
            in_summary: true,
            blocks: committed_blocks,
        },
        disk_section(&machines, &layouts),
    ];
    sections.into_iter().filter(|s| !s.blocks.is_empty()).collect()
}

/// Different blob sizes side by side: every group says its size, so bars
/// of unlike datasets are never read as one comparison.
fn label_sizes(machines: &mut [(String, &ResultFile)]) {
    let sizes: std::collections::BTreeSet<Option<u32>> =
        machines.iter().map(|(_, f)| f.dataset.as_ref().map(|d| d.size)).collect();
    if sizes.len() > 1 {
        for (label, f) in machines {
            let size = f
                .dataset
                .as_ref()
                .map_or_else(|| "size not recorded".to_string(), |d| format!("{} blobs", blob_size(d.size)));
            label.push_str(&format!(" [{size}]"));
        }
    }
}

/// The machines whose charts are drawn; `selective` when every file is
/// advise's, which shows only the arms it measured.
struct Charts<'a, 'f> {
    machines: &'a [(String, &'f ResultFile)],
    selective: bool,
}

impl Charts<'_, '_> {
    /// Whether some machine measured the arm.
    fn measured(&self, id: ArmId) -> bool {
        self.machines.iter().any(|(_, f)| f.experiment(id).and_then(per_op_us).is_some())
    }

    /// The specs' charts (and their tails) under the note; none when
    /// selective and no spec was measured.
    fn blocks(&self, specs: &[Spec<'static>], note: &str) -> Vec<Block> {
        let mut blocks = Vec::new();
        for s in specs {
            let files: Vec<Method> =
                s.files.iter().copied().filter(|m| !self.selective || self.measured(m.id)).collect();
            if self.selective && (files.is_empty() || !self.measured(s.db.id)) {
                continue;
            }
            let spec = Spec { files: &files, ..*s };
            blocks.push(Block::Figure(figure(&spec, self.machines)));
            blocks.extend(tails::figure(&spec, self.machines).map(Block::Figure));
        }
        if !blocks.is_empty() {
            blocks.insert(0, Block::Note(note.to_string()));
        }
        blocks
    }
}

/// The dataset shared by every machine, or None when they differ.
fn common_dataset(machines: &[(String, &ResultFile)]) -> Option<DatasetSpec> {
    let first = machines.first()?.1.dataset.clone()?;
    machines.iter().all(|(_, f)| f.dataset.as_ref() == Some(&first)).then_some(first)
}

/// The article's caption: "100,000 blobs, avg 10 KB each, random order, using SQL".
fn caption(spec: &Spec, machines: &[(String, &ResultFile)]) -> String {
    let data = match common_dataset(machines) {
        Some(d) => {
            let spread =
                if d.variance > 0 { format!(" (± {} bytes)", thousands(d.variance.into())) } else { String::new() };
            let ops = machines.first().and_then(|(_, f)| f.experiment(spec.db.id)).map(|e| e.params.count);
            match (spec.write, ops) {
                (true, Some(n)) => {
                    format!(
                        "{} of {} blobs rewritten, avg {}{spread} each",
                        thousands(n),
                        thousands(d.count.into()),
                        blob_size(d.size)
                    )
                }
                _ => format!("{} blobs, avg {}{spread} each", thousands(d.count.into()), blob_size(d.size)),
            }
        }
        None if machines.len() > 1 => "datasets differ between machines (see Parameters)".to_string(),
        None => "dataset not recorded".to_string(),
    };
    format!("{data}, random order, {}{}", spec.how, commits(spec, machines))
}

/// How the chart's writes were committed, named: ", a commit per write"
/// or ", one transaction of 1,000 writes per run".
fn commits(spec: &Spec, machines: &[(String, &ResultFile)]) -> String {
    if !spec.write {
        return String::new();
    }
    let e = machines.iter().find_map(|(_, f)| f.experiment(spec.db.id));
    match e.map(|e| (e.params.commit_every, e.params.count)) {
        Some((Some(1), _)) => ", a commit per write".into(),
        Some((Some(n), _)) => format!(", a commit every {} writes", thousands(n.into())),
        Some((None, k)) => format!(", one transaction of {} writes per run", thousands(k)),
        None => String::new(),
    }
}

/// How far the article's claim moves when each durable write is committed
/// as an application commits it: the files' best against SQLite, in one
/// transaction per run (the article's way) and committed, one sentence per
/// machine that measured both.
fn article_moves(machines: &[(String, &ResultFile)]) -> Vec<String> {
    let best = |f: &ResultFile, spec: &Spec| -> Option<f64> {
        spec.files.iter().filter_map(|m| ratio(f, spec.db.id, m.id)).min_by(f64::total_cmp)
    };
    let single = machines.len() == 1;
    machines
        .iter()
        .filter_map(|(label, f)| {
            let durable = FAIR.iter().find(|s| s.id == DURABLE_WRITE_CHART)?;
            let (batch, each) = (best(f, durable)?, best(f, &COMMITTED[0])?);
            let on = if single { "On this machine".to_string() } else { format!("On {label}") };
            let n = f.experiment(COMMITTED[0].db.id).and_then(|e| e.params.commit_every).unwrap_or(1);
            let per = if n == 1 {
                "each write committed on its own".to_string()
            } else {
                format!("a commit every {n} writes")
            };
            Some(format!(
                "How far the article's claim moves: {on} the fastest durable file method takes {batch:.2}x \
                 SQLite's time per write when all of a run's writes are one transaction (the article's way), and \
                 {each:.2}x with {per}."
            ))
        })
        .collect()
}

fn figure(spec: &Spec, machines: &[(String, &ResultFile)]) -> Figure {
    let series = std::iter::once(spec.db).chain(spec.files.iter().copied());
    let chart = BarChart {
        title: spec.title.to_string(),
        y_label: "file time / SQLite time".to_string(),
        groups: machines.iter().map(|(l, _)| l.clone()).collect(),
        series: series.map(|m| m.name.to_string()).collect(),
        values: machines
            .iter()
            .map(|(_, f)| {
                let db = f.experiment(spec.db.id).and_then(per_op_us).map(|_| 1.0);
                std::iter::once(db).chain(spec.files.iter().map(|m| ratio(f, spec.db.id, m.id))).collect()
            })
            .collect(),
        reference: Some(1.0),
        errors: machines
            .iter()
            .map(|(_, f)| {
                std::iter::once(None)
                    .chain(spec.files.iter().map(|m| ratio_interval(f, spec.db.id, m.id).map(|r| (r.low, r.high))))
                    .collect()
            })
            .collect(),
        note: runs_note(spec, machines),
    };
    let mut caption = vec![caption(spec, machines)];
    if spec.db.id == WAL_NORMAL.id {
        caption.extend(checkpoint_note(machines));
    }
    let single = machines.len() == 1;
    let findings = machines.iter().map(|(label, f)| finding(spec, label, f, single)).collect();
    Figure { id: spec.id.to_string(), chart: Chart::Bars(chart), caption, findings }
}

/// One plain sentence per machine, e.g. "On this machine SQLite reads
/// 10 KB blobs 1.9x faster than fopen/fread from one directory; ...".
pub fn finding(spec: &Spec, label: &str, file: &ResultFile, single: bool) -> String {
    let on = if single { "On this machine".to_string() } else { format!("On {label}") };
    let Some(db) = file.experiment(spec.db.id).filter(|e| per_op_us(e).is_some()) else {
        return format!("{on} {} ({}) was not measured, so there is no ratio.", spec.db.phrase, spec.db.id);
    };
    let verb = if spec.write { "writes" } else { "reads" };
    let size = file.dataset.as_ref().map_or_else(String::new, |d| format!(" {}", blob_size(d.size)));
    let mut measured = Vec::new();
    let mut missing = Vec::new();
    for m in spec.files {
        match ratio(file, spec.db.id, m.id) {
            Some(r) => measured.push(format!("{} {}", speed_phrase(r), m.phrase)),
            None => missing.push(m.phrase),
        }
    }
    let mut s = if measured.is_empty() {
        format!("{on} the file methods were not measured, so there is no ratio")
    } else {
        format!("{on} SQLite {verb}{size} blobs {}", measured.join("; "))
    };
    if !missing.is_empty() && !measured.is_empty() {
        s.push_str(&format!(" ({} not measured)", missing.join(", ")));
    }
    s.push('.');
    // Paired ratios carry the runs' noise in their intervals: no warning.
    let paired =
        spec.files.iter().all(|m| ratio_interval(file, spec.db.id, m.id).is_none_or(|r| r.method == Interval::Paired));
    let cv = std::iter::once(db)
        .chain(spec.files.iter().filter_map(|m| file.experiment(m.id)))
        .filter(|e| e.summary.noisy && !paired)
        .map(|e| per_op_stat(e).cv_pct)
        .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))));
    if let Some(cv) = cv {
        s.push_str(&format!(
            " Runs varied by up to {cv:.0}% (coefficient of variation), so treat small differences as noise."
        ));
    }
    s
}

/// The WAL checkpoint the article leaves out of chart 4, shown beside it.
fn checkpoint_note(machines: &[(String, &ResultFile)]) -> Option<String> {
    let parts: Vec<String> = machines
        .iter()
        .filter_map(|(label, f)| {
            let e = f.experiment(WAL_NORMAL.id)?;
            let mut per_op: Vec<f64> = e
                .runs
                .iter()
                .filter(|r| r.ops > 0)
                .map(|r| r.phases.checkpoint_ns as f64 / 1000.0 / r.ops as f64)
                .collect();
            per_op.sort_by(f64::total_cmp);
            let median = *per_op.get(per_op.len().checked_sub(1)? / 2)?;
            (median > 0.0).then(|| format!("{} µs per blob written on {label}", micros(median)))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!("The checkpoint, timed separately and not in the bars (median over runs): {}.", parts.join(", "))
    })
}

/// A layout of the disk section: its id, its legend name, its words.
type Layout = (EngineKind, &'static str, &'static str);

const LAYOUTS: [Layout; 3] = [
    (EngineKind::Db, "SQLite database", "the SQLite database"),
    (EngineKind::Flat, "files, one directory", "files in one directory"),
    (EngineKind::Tree, "files, tree", "files in a tree"),
];

/// A machine's disk usage of one layout.
fn usage(f: &ResultFile, layout: EngineKind) -> Option<DiskUsage> {
    f.disk_usage.iter().find(|d| d.layout == layout).cloned()
}

fn disk_section(machines: &[(String, &ResultFile)], layouts: &[Layout]) -> Section {
    let chart = disk_chart(machines, layouts);
    let findings = disk_findings(machines, layouts);
    Section {
        id: "disk".into(),
        title: "Disk usage".into(),
        in_summary: true,
        blocks: vec![
            Block::Note(
                "Allocated bytes are blocks really used on disk, as du counts them (directories included); \
                 individual files are padded to the filesystem block size, the database packs blobs into pages."
                    .to_string(),
            ),
            Block::Figure(Figure { id: DISK_CHART.into(), chart: Chart::Bars(chart), caption: Vec::new(), findings }),
            Block::Table(disk_table(machines, layouts)),
        ],
    }
}

/// Each layout's allocated bytes over the database's, per machine.
fn disk_chart(machines: &[(String, &ResultFile)], layouts: &[Layout]) -> BarChart {
    BarChart {
        title: "Disk space relative to the database".to_string(),
        y_label: "allocated bytes / database's".to_string(),
        groups: machines.iter().map(|(l, _)| l.clone()).collect(),
        series: layouts.iter().map(|(_, name, _)| name.to_string()).collect(),
        values: machines
            .iter()
            .map(|(_, f)| {
                let db = usage(f, EngineKind::Db).map(|d| d.allocated_bytes).filter(|b| *b > 0);
                layouts
                    .iter()
                    .map(|&(layout, _, _)| Some(usage(f, layout)?.allocated_bytes as f64 / db? as f64))
                    .collect()
            })
            .collect(),
        reference: Some(1.0),
        errors: Vec::new(),
        note: "one measurement per layout (du's allocated bytes): exact, no whiskers".to_string(),
    }
}

/// Per machine, one sentence: the database's bytes and the files' against them.
fn disk_findings(machines: &[(String, &ResultFile)], layouts: &[Layout]) -> Vec<String> {
    let single = machines.len() == 1;
    machines
        .iter()
        .map(|(label, f)| {
            let on = if single { "On this machine".to_string() } else { format!("On {label}") };
            let Some(db) = usage(f, EngineKind::Db).filter(|d| d.allocated_bytes > 0) else {
                return format!("{on} the database's disk usage was not measured.");
            };
            let others: Vec<String> = layouts
                .iter()
                .filter(|(layout, _, _)| *layout != EngineKind::Db)
                .filter_map(|&(layout, _, words)| {
                    let u = usage(f, layout)?;
                    let pct = (u.allocated_bytes as f64 / db.allocated_bytes as f64 - 1.0) * 100.0;
                    let (amount, dir) = if pct >= 0.0 { (pct, "more") } else { (-pct, "less") };
                    Some(format!("{words} take {} bytes, {amount:.0}% {dir}", thousands(u.allocated_bytes)))
                })
                .collect();
            if others.is_empty() {
                format!(
                    "{on} the database takes {} bytes; the files' disk usage was not measured.",
                    thousands(db.allocated_bytes)
                )
            } else {
                format!("{on} the database takes {} bytes; {}.", thousands(db.allocated_bytes), others.join("; "))
            }
        })
        .collect()
}

/// Every machine's every layout: entries, content, apparent and allocated size.
fn disk_table(machines: &[(String, &ResultFile)], layouts: &[Layout]) -> Table {
    let headers = ["machine", "layout", "entries", "content", "apparent size", "allocated", "allocated vs content"];
    let mut table = Table::new(&headers, Vec::new()).with_kinds(&[ColumnKind::Result]);
    for (label, f) in machines {
        for &(layout, name, _) in layouts {
            let row = match usage(f, layout) {
                Some(u) => vec![
                    thousands(u.entries),
                    bytes(u.content_bytes),
                    bytes(u.apparent_bytes),
                    format!("{} ({})", thousands(u.allocated_bytes), bytes(u.allocated_bytes)),
                    if u.content_bytes > 0 {
                        format!("{:+.1}%", (u.allocated_bytes as f64 / u.content_bytes as f64 - 1.0) * 100.0)
                    } else {
                        "-".to_string()
                    },
                ],
                None => vec![crate::report::format::doc::NOT_MEASURED.to_string(); 5],
            };
            table.rows.push([label.clone(), name.to_string()].into_iter().chain(row).collect());
        }
    }
    table
}
