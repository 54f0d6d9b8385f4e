//! The `aging` section: per size setting, read time (warm and cold), disk
//! usage and fragmentation against storage age, one line per layout; the
//! crossover size by age for a wide size setting; every figure in a table.

mod paired;
pub mod question;

use crate::report::format::doc::{Block, Chart, Figure, Section, Table, NOT_MEASURED};
use crate::report::format::fmt::{machine_labels, micros};
use crate::report::format::svg::{LineChart, Series};
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::aging::{is_band_or_remedy_rounds, AgePoint, AgingSection, AgingSetting};

/// The aging study's part of the report (its command prints its own
/// progress, no table).
pub const REPORT: StudyReport =
    StudyReport { sections, questions: &[question::after_aging], terminal: None, redraws: None, leads: false };

/// The chart of warm reads against storage age (see [`chart_id`]).
pub const READ_WARM_CHART: &str = "read-warm";
/// Cold reads, and disk allocated per byte of content, against age.
pub const READ_COLD_CHART: &str = "read-cold";
pub const DISK_CHART: &str = "disk";

/// The id of chart `chart` of `setting` in `files[index]`:
/// "aging-article-read-warm", or "aging-article-2-read-warm" (the file's
/// place among all files) when several files hold an aging section.
pub fn chart_id(files: &[ResultFile], index: usize, setting: &AgingSetting, chart: &str) -> String {
    format!("aging-{}-{chart}", setting_id(setting, &file_suffix(files, index)))
}

fn file_suffix(files: &[ResultFile], index: usize) -> String {
    if files.iter().filter(|f| f.aging.is_some()).count() > 1 {
        format!("-{}", index + 1)
    } else {
        String::new()
    }
}

/// A setting's part of its chart ids: its name, made safe, and the file's suffix.
pub fn setting_id(s: &AgingSetting, suffix: &str) -> String {
    let name: String = s.sizes.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("{name}{suffix}")
}

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let with: Vec<(usize, &String, &AgingSection)> =
        files.iter().zip(&labels).enumerate().filter_map(|(i, (f, l))| f.aging.as_ref().map(|a| (i, l, a))).collect();
    let several = with.len() > 1;
    with.into_iter()
        .map(|(i, label, a)| {
            let suffix = file_suffix(files, i);
            let title = if several { format!("Storage aging on {label}") } else { "Storage aging".to_string() };
            Section { id: format!("aging{suffix}"), title, in_summary: true, blocks: blocks(a, &suffix) }
        })
        .collect()
}

fn blocks(a: &AgingSection, suffix: &str) -> Vec<Block> {
    let ages: Vec<String> = a.ages.iter().map(u32::to_string).collect();
    let mut blocks = vec![Block::Paragraph(format!(
        "Storage age is the number of times every blob has been rewritten (Sears, van Ingen and Gray's measure): \
         each age step rewrites every blob once, in a shuffled order, with a new size drawn from the setting's \
         distribution, one transaction per pass.{} Ages measured: {}.",
        if a.churn_pct > 0.0 {
            format!(" Each step also deletes {}% of the blobs and inserts them again with new sizes.", a.churn_pct)
        } else {
            String::new()
        },
        ages.join(", ")
    ))];
    let rest_paired = a.settings.iter().any(|s| s.rounds.iter().any(|r| is_band_or_remedy_rounds(&r.id)));
    blocks.push(Block::Note(format!(
        "Read time: kvtest's per-op time (open to close) for reading every blob once in a shuffled order, median of \
         the timed runs; cold runs evict the dataset's pages first. At each age the layouts' reads run as the arms \
         of interleaved rounds, and the verdict's factor is paired by round; {} Allocated bytes are blocks as du \
         counts them; extents per file come from FIEMAP, counted as filefrag counts them; overflow distance is the \
         mean gap in pages between consecutive overflow pages of one blob (1 = sequential).",
        if rest_paired {
            "so do the remedies (each applied to a copy, read beside the aged layouts) and each crossover size \
             band, and their factors are paired by round too."
        } else {
            "in this file the remedies and the crossover bands ran one layout after another (unpaired: a burst of \
             load can favour either side)."
        }
    )));
    for s in &a.settings {
        blocks.extend(setting_blocks(s, &a.ages, &setting_id(s, suffix)));
    }
    blocks
}

/// A chart of one figure against age: file key, title, y label, the figure.
type ChartSpec = (&'static str, &'static str, &'static str, fn(&AgePoint) -> Option<f64>);

fn setting_blocks(s: &AgingSetting, ages: &[u32], id: &str) -> Vec<Block> {
    let mut out = vec![Block::Heading(format!("{}: {}", s.sizes.name, blobs_phrase(s)))];
    if let Some(from) = &s.sizes.from {
        out.push(Block::Paragraph(format!("Where the sizes came from: {}.", from.describe())));
    }
    let x: Vec<f64> = ages.iter().map(|&a| f64::from(a)).collect();
    let charts: [ChartSpec; 5] = [
        (READ_WARM_CHART, "Warm reads by storage age", "us per blob", |p| p.read_warm.map(|r| r.per_op_us)),
        (READ_COLD_CHART, "Cold reads by storage age", "us per blob", |p| p.read_cold.map(|r| r.per_op_us)),
        (DISK_CHART, "Disk allocated per byte of content", "allocated / content", |p| {
            let content = p.usage.content_bytes as f64;
            p.usage.allocated().filter(|_| content > 0.0).map(|allocated| allocated as f64 / content)
        }),
        ("extents", "Extents per file (FIEMAP)", "extents per non-empty file", |p| p.fragmentation.extents_per_file()),
        ("overflow", "SQLite overflow chains: mean page distance", "pages between consecutive pages", |p| {
            p.fragmentation.overflow.map(|o| o.mean_distance_pages)
        }),
    ];
    for (key, title, y_label, value) in charts {
        let series: Vec<Series> = s
            .layouts
            .iter()
            .map(|l| Series {
                intervals: Vec::new(),
                name: l.title.clone(),
                values: ages
                    .iter()
                    .map(|&age| s.points.iter().find(|p| p.layout == l.id && p.age == age).and_then(value))
                    .collect(),
            })
            .filter(|se| se.values.iter().any(Option::is_some))
            .collect();
        if series.is_empty() {
            continue;
        }
        let findings = growth(&series, ages);
        out.push(Block::Figure(Figure {
            id: format!("aging-{id}-{key}"),
            chart: Chart::Lines(LineChart {
                title: format!("{}: {title}", s.sizes.name),
                x_label: "storage age (rewrites of every blob)".into(),
                y_label: y_label.into(),
                x_log: false,
                y_log: false,
                x: x.clone(),
                series,
                reference: None,
                note: runs_note(s),
            }),
            caption: vec![format!("{}.", blobs_phrase(s))],
            findings,
        }));
    }
    if !s.crossover.is_empty() {
        out.push(crossover_figure(s, id));
    }
    out.extend(paired::remedies_table(s).into_iter().flatten());
    out.push(Block::Table(table(s)));
    out
}

/// "X: 1.8x its age-0 value at age 8" for each line.
/// How many timed runs each read point is the median of.
/// "1000 blobs of 8000 to 12000 bytes", or for a distribution or your
/// files "2000 blobs, 90% of them from 5824 to 144440 bytes".
fn blobs_phrase(s: &AgingSetting) -> String {
    let (n, lo, hi) = (s.count, s.sizes.min_bytes, s.sizes.max_bytes);
    match s.sizes.from {
        None => format!("{n} blobs of {lo} to {hi} bytes"),
        Some(_) => format!("{n} blobs, 90% of them from {lo} to {hi} bytes"),
    }
}

fn runs_note(s: &AgingSetting) -> String {
    let runs = s.points.iter().filter_map(|p| p.read_warm.as_ref().map(|r| r.runs)).min().unwrap_or(0);
    format!("read times: median of {runs} timed runs per point; disk and extents: exact counts")
}

fn growth(series: &[Series], ages: &[u32]) -> Vec<String> {
    series
        .iter()
        .filter_map(|se| {
            let first = se.values.first().copied().flatten()?;
            let (i, last) = se.values.iter().enumerate().rev().find_map(|(i, v)| v.map(|v| (i, v)))?;
            (i > 0 && first > 0.0)
                .then(|| format!("{}: {:.2}x its age-{} value at age {}.", se.name, last / first, ages[0], ages[i]))
        })
        .collect()
}

fn crossover_figure(s: &AgingSetting, id: &str) -> Block {
    let ages: Vec<u32> = {
        let mut v: Vec<u32> = s.crossover.iter().map(|c| c.age).collect();
        v.dedup();
        v
    };
    let series = ["warm", "cold"]
        .into_iter()
        .map(|cache| Series {
            intervals: Vec::new(),
            name: format!("{cache} reads"),
            values: ages
                .iter()
                .map(|&age| {
                    s.crossover
                        .iter()
                        .find(|c| c.age == age && c.cache == cache)
                        .and_then(|c| c.files_faster_from_bytes)
                        .map(|b| f64::from(b) / 1000.0)
                })
                .collect(),
        })
        .collect();
    let findings = s
        .crossover
        .iter()
        .map(|c| match (c.files_faster_from_bytes, paired::crossover_ratio(s, c)) {
            (Some(b), Some(r)) => {
                format!("age {}, {}: files are faster from {} KB up ({r}).", c.age, c.cache, b / 1000)
            }
            (Some(b), None) => format!("age {}, {}: files are faster from {} KB up.", c.age, c.cache, b / 1000),
            (None, _) => format!("age {}, {}: files are not faster at the largest size band.", c.age, c.cache),
        })
        .collect();
    Block::Figure(Figure {
        id: format!("aging-{id}-crossover"),
        chart: Chart::Lines(LineChart {
            title: format!("{}: blob size from which files read faster than SQLite", s.sizes.name),
            x_label: "storage age (rewrites of every blob)".into(),
            y_label: "KB".into(),
            x_log: false,
            y_log: false,
            x: ages.iter().map(|&a| f64::from(a)).collect(),
            series,
            reference: None,
            note: runs_note(s),
        }),
        caption: vec![format!(
            "Blobs grouped in {} size bands; in each, the fastest file layout against the fastest SQLite layout. \
             The crossover is the lower edge of the first band from which files win in every larger band; a gap \
             means files never win at the largest band. {}",
            s.crossover.first().map_or(0, |c| c.bands.len()),
            if s.crossover.iter().flat_map(|c| &c.bands).all(|b| b.files_over_db.is_some()) {
                "In each band the layouts were the arms of interleaved rounds, and files win when the median of \
                 the per-round ratios (files over SQLite) is below 1."
            } else {
                "By median per-op read time; unpaired: in this file the layouts ran one after another, not in \
                 rounds."
            }
        )],
        findings,
    })
}

fn table(s: &AgingSetting) -> Table {
    let headers = [
        "layout",
        "age",
        "rewrite us",
        "warm us",
        "cold us",
        "allocated MB",
        "content MB",
        "freelist pages",
        "extents/file",
        "fragmented files",
        "overflow distance",
    ];
    let mb = |b: u64| format!("{:.1}", b as f64 / 1e6);
    let rows = s
        .points
        .iter()
        .chain(&s.remedies)
        .map(|p| {
            let f = &p.fragmentation;
            vec![
                p.layout.to_string(),
                p.remedy.as_ref().map_or_else(|| p.age.to_string(), |r| format!("{} ({r})", p.age)),
                p.rewrite.map_or_else(|| "-".into(), |w| micros(w.per_op_us)),
                p.read_warm.map_or_else(|| NOT_MEASURED.into(), |r| micros(r.per_op_us)),
                p.read_cold.map_or_else(|| NOT_MEASURED.into(), |r| micros(r.per_op_us)),
                p.usage.allocated().map_or_else(|| NOT_MEASURED.into(), mb),
                mb(p.usage.content_bytes),
                p.usage.freelist_pages.map_or_else(|| "-".into(), |n| n.to_string()),
                f.extents_per_file().map_or_else(|| NOT_MEASURED.into(), |e| format!("{e:.2}")),
                f.fragmented_files.map_or_else(|| NOT_MEASURED.into(), |n| format!("{n} of {}", f.files)),
                f.overflow.map_or_else(|| "-".into(), |o| format!("{:.1}", o.mean_distance_pages)),
            ]
        })
        .collect();
    Table::new(&headers, rows)
}
