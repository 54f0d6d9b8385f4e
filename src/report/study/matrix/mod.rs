//! The internal-vs-external matrix (`blobbench matrix`): a heatmap of
//! file time / database time by page size and blob size, the same ratios as
//! lines over blob size, the crossovers and best page sizes as tables, and
//! the study's published 2011 matrix for comparison. Every sentence is
//! computed from the data.

mod engines;
mod text;
mod yours;

use crate::report::format::doc::{Block, Chart, ColumnKind, Figure, Section};
use crate::report::format::fmt::{fmt_size, machine_labels};
use crate::report::format::svg::{Heatmap, LineChart, Series};
use crate::report::study::{Redraw, StudyReport};
use crate::results::ResultFile;
use crate::studies::matrix::{self as m, CrossoverKind, Figure as Fig, Grid, MatrixSection};
use crate::util::units::plural;
use crate::util::units::short_size;
use text::{best_table, columns, crossover_table, describe, grid_table, noise_warning};

/// The matrix's part of the report.
pub const REPORT: StudyReport = StudyReport {
    sections,
    questions: &[],
    terminal: Some(terminal),
    redraws: Some(Redraw { title: "SQLite's \"Internal Versus External BLOBs\"", in_file: |f| f.matrix.is_some() }),
    leads: false,
};

/// What `blobbench matrix` prints about the measured cells: the matrix and
/// the writes, the engines, your data (empty without a matrix in `file`).
fn terminal(file: &ResultFile, colour: bool) -> String {
    let Some(s) = file.matrix.as_ref() else { return String::new() };
    if s.cells.is_empty() && s.params.sizes_bytes.is_empty() {
        return yours::text(s);
    }
    format!("{}{}{}", text::grids(s, colour), engines::text(s), yours::text(s))
}

/// The matrix sections: one per result file that holds a matrix, then the
/// 2011 study once (nothing when no file holds a matrix).
pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let found: Vec<(&String, &MatrixSection)> =
        labels.iter().zip(files).filter_map(|(l, f)| f.matrix.as_ref().map(|s| (l, s))).collect();
    if found.is_empty() {
        return Vec::new();
    }
    let many = found.len() > 1;
    let mut out: Vec<Section> = found
        .iter()
        .enumerate()
        .map(|(i, (label, s))| {
            let suffix = if many { format!("-{}", i + 1) } else { String::new() };
            machine_section(s, label, &suffix, many)
        })
        .collect();
    out.push(study_section());
    out
}

/// Cells marked "~": in rounds, those whose paired interval of files /
/// database holds 1.0 (no clear winner); in older files, those where a read
/// varied between runs by more than the noise threshold. Laid out like `g`.
fn unclear_grid(s: &MatrixSection, g: &Grid) -> Vec<Vec<bool>> {
    let unclear = |c: &m::MatrixCell| match c.external_paired() {
        Some(p) => p.rounds > 1 && p.spans_one(),
        None => [&c.internal, &c.external, &c.direct]
            .iter()
            .any(|e| e.summary.runs > 1 && e.summary.loop_per_op_us.cv_pct > crate::measure::NOISY_CV_PCT),
    };
    g.page_sizes
        .iter()
        .map(|&p| {
            g.sizes
                .iter()
                .map(|&b| s.cells.iter().any(|c| c.page_size == p && c.size_bytes == b && unclear(c)))
                .collect()
        })
        .collect()
}

/// What "~" means on this file's heatmap.
fn unclear_note(s: &MatrixSection) -> String {
    if s.cells.iter().all(|c| c.rounds.is_some()) {
        format!("{}; ~ marks a cell whose 95% paired interval holds 1.0 (no clear winner)", s.runs_phrase())
    } else {
        format!(
            "{}; ~ marks a noisy cell (run-to-run variation above {:.0}%)",
            s.runs_phrase(),
            crate::measure::NOISY_CV_PCT
        )
    }
}

fn heatmap(title: &str, g: &Grid) -> Heatmap {
    Heatmap {
        noisy: Vec::new(),
        note: String::new(),
        title: title.to_string(),
        x_label: "blob size".to_string(),
        y_label: "page size".to_string(),
        columns: columns(g),
        rows: g.page_sizes.iter().map(u32::to_string).collect(),
        values: g.values.clone(),
        center: 1.0,
    }
}

/// One sentence per page size: where files start to win.
fn crossover_findings(s: &MatrixSection, on: &str) -> Vec<String> {
    let sizes = &s.params.sizes_bytes;
    let (lo, hi) = (sizes.first().copied().unwrap_or(0), sizes.last().copied().unwrap_or(0));
    s.crossovers
        .iter()
        .map(|c| {
            let e = &c.external;
            let many_crossings = e.crossings_bytes.len() > 1;
            match (e.kind, e.size_bytes) {
                (CrossoverKind::At, Some(b)) if many_crossings => {
                    let all: Vec<String> = e.crossings_bytes.iter().map(|&b| fmt_size(b)).collect();
                    format!(
                        "{on}, with {}-byte pages, files are faster from about {} up; below that the ratio is not \
                         monotonic (it crosses 1.0 at {}), so there is no single crossover.",
                        c.page_size,
                        fmt_size(b),
                        all.join(", ")
                    )
                }
                (CrossoverKind::At, Some(b)) => format!(
                    "{on}, with {}-byte pages, SQLite is faster below about {} and files are faster from there up.",
                    c.page_size,
                    fmt_size(b)
                ),
                (CrossoverKind::BelowRange, _) => format!(
                    "{on}, with {}-byte pages, files are faster at every size measured ({} to {}).",
                    c.page_size,
                    short_size(lo.into()),
                    short_size(hi.into())
                ),
                _ => format!(
                    "{on}, with {}-byte pages, SQLite is faster at the largest size measured ({}): no crossover in \
                     range{}.",
                    c.page_size,
                    short_size(hi.into()),
                    if e.crossings_bytes.is_empty() { "" } else { " (files win somewhere below it)" }
                ),
            }
        })
        .collect()
}

fn machine_section(s: &MatrixSection, label: &str, suffix: &str, many: bool) -> Section {
    let on = if many { format!("On {label}") } else { "On this machine".to_string() };
    let p = &s.params;
    let ext = s.grid(Fig::ExternalRatio);
    let caption = format!(
        "{} of blobs per cell, random order, SQLite {} with a page cache of {} bytes per database{}; {}.",
        fmt_size(p.total_bytes as f64).to_uppercase() + "B",
        p.db_read.short(),
        p.cache_bytes,
        if p.plan.cold { ", page cache evicted before each timed run" } else { "" },
        s.runs_phrase()
    );
    let heat = Figure {
        id: format!("matrix-heatmap{suffix}"),
        chart: Chart::Heatmap(Heatmap {
            noisy: unclear_grid(s, &ext),
            note: unclear_note(s),
            ..heatmap("Files (name in SQLite) / database", &ext)
        }),
        caption: vec![caption.clone()],
        findings: crossover_findings(s, &on),
    };
    let lines = Figure {
        id: format!("matrix-ratio-by-size{suffix}"),
        chart: Chart::Lines(LineChart {
            title: "Files (name in SQLite) / database, by blob size".to_string(),
            x_label: "blob size (KB)".to_string(),
            y_label: "file time / database time".to_string(),
            x_log: true,
            y_log: true,
            x: ext.sizes.iter().map(|&b| f64::from(b) / 1000.0).collect(),
            series: ext
                .page_sizes
                .iter()
                .zip(&ext.values)
                .map(|(p, v)| Series { name: format!("page size {p}"), values: v.clone(), intervals: Vec::new() })
                .collect(),
            reference: Some(1.0),
            note: format!("{} timed run{} per point (median shown)", p.plan.repeat, plural(p.plan.repeat)),
        }),
        caption: vec![caption],
        findings: best_page_findings(s, &on),
    };
    let mut blocks = match s.cells.is_empty() && s.params.sizes_bytes.is_empty() {
        // Only your data was measured: no grid to draw.
        true => Vec::new(),
        false => grid_blocks(s, heat, lines),
    };
    blocks.extend(engines::blocks(s));
    blocks.extend(yours::blocks(s));
    Section {
        id: format!("matrix{suffix}"),
        title: if many { format!("Internal vs external blobs: {label}") } else { "Internal vs external blobs".into() },
        in_summary: true,
        blocks,
    }
}

/// The fixed-size cells' figures and tables, with their warnings.
fn grid_blocks(s: &MatrixSection, heat: Figure, lines: Figure) -> Vec<Block> {
    let mut blocks = vec![
        Block::Note(format!(
            "Each cell is the time to read a blob from its own file, whose name is looked up in SQLite, divided by the \
             time to read it from the database (the study's figure); above 1.0 SQLite is faster. Times are the {}.",
            s.ratio_figure
        )),
        Block::Figure(heat),
        Block::Figure(lines),
        Block::Heading("Crossover per page size".into()),
        Block::Table(crossover_table(s)),
        Block::Heading("Best page size per blob size".into()),
        Block::Table(best_table(s)),
        Block::Heading("Files opened directly by key (no database lookup) / database".into()),
        Block::Table(grid_table(&s.grid(Fig::DirectRatio), 3, ColumnKind::Ratio)),
        Block::Heading("Database read time, µs per blob".into()),
        Block::Table(grid_table(&s.grid(Fig::InternalUs), 1, ColumnKind::Figure)),
    ];
    if let Some(w) = noise_warning(s) {
        blocks.insert(1, Block::Note(format!("Warning: {w}.")));
    }
    let expected = s.params.sizes_bytes.len() * s.params.page_sizes.len();
    if s.cells.len() < expected {
        blocks.insert(1, Block::Note(format!("Only {} of {expected} cells were measured.", s.cells.len())));
    }
    blocks
}

fn best_page_findings(s: &MatrixSection, on: &str) -> Vec<String> {
    if s.best_page_sizes.is_empty() {
        return Vec::new();
    }
    let parts: Vec<String> = s
        .best_page_sizes
        .iter()
        .map(|b| format!("{} for {} blobs", b.page_size, short_size(b.size_bytes.into())))
        .collect();
    vec![format!("{on} the fastest database reads came with page size {}.", parts.join(", "))]
}

fn study_section() -> Section {
    let g = m::study_grid();
    let findings = g
        .page_sizes
        .iter()
        .enumerate()
        .filter_map(|(row, p)| {
            m::crossover(&g.row_points(row)).map(|c| format!("{p}-byte pages: {}.", describe(&c, &g.sizes)))
        })
        .collect();
    Section {
        id: "matrix-2011".into(),
        title: "The 2011 study, for comparison".into(),
        in_summary: false,
        blocks: vec![
            Block::Paragraph(
                "SQLite's \"Internal Versus External BLOBs\" page, measured circa 2011 with SQLite 3.7.8 on Ubuntu, \
                 ext4 on a SATA disk: 100 MB of blobs per cell, a page cache of about 2 MB, random order. Its rules \
                 of thumb: pages of 8192 or 16384 bytes are best for large blobs, and files win above about 100 KB."
                    .into(),
            ),
            Block::Figure(Figure {
                id: "matrix-heatmap-2011".into(),
                chart: Chart::Heatmap(Heatmap {
                    note: "the study's published figures: one value per cell, runs not stated".to_string(),
                    ..heatmap("2011: files (name in SQLite) / database", &g)
                }),
                caption: vec!["Published figures, not measured here. Crossovers, interpolated on log size:".into()],
                findings,
            }),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::format::doc;
    use crate::studies::matrix::tests_support::fixed_section;

    fn file(host: &str) -> ResultFile {
        let mut f = ResultFile::new("matrix", crate::measure::envinfo::Environment::default());
        f.environment.hostname = host.into();
        f.matrix = Some(fixed_section());
        f
    }

    #[test]
    fn heatmap_and_lines_from_fixed_results() {
        let sections = sections(&[file("a")]);
        let ids: Vec<&str> = doc::figures(&sections).map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["matrix-heatmap", "matrix-ratio-by-size", "matrix-heatmap-2011"]);
        let heat = doc::figures(&sections).next().unwrap();
        let Chart::Heatmap(h) = &heat.chart else { panic!("not a heatmap") };
        assert_eq!(h.columns, ["10k", "100k", "1m"]);
        assert_eq!(h.rows, ["1024", "4096"]);
        assert_eq!(h.values[1], [Some(2.5), Some(0.8), None]);
        assert_eq!(h.center, 1.0);
        assert!(heat.findings[0].contains("1024-byte pages, SQLite is faster below about 100k"), "{:?}", heat.findings);
        let svg = heat.chart.to_svg();
        assert!(svg.contains("2.50") && svg.contains("0.80"), "values drawn");
        let lines = doc::figures(&sections).nth(1).unwrap();
        let Chart::Lines(l) = &lines.chart else { panic!("not a line chart") };
        assert!(l.x_log && l.y_log, "a ratio by size: both axes log");
        assert_eq!(l.x, [10.0, 100.0, 1000.0]);
        assert_eq!(l.series[0].name, "page size 1024");
        assert_eq!(l.reference, Some(1.0));
        assert!(lines.findings[0].contains("4096 for 10k blobs"), "{:?}", lines.findings);
        let text = crate::report::text_summary(&[file("a")], None);
        assert!(text.contains("Internal vs external blobs"), "{text}");
    }

    #[test]
    fn a_ratio_that_is_not_monotonic_is_not_called_a_single_crossover() {
        let fixed = fixed_section();
        let mut cells = fixed.cells.clone();
        for (cell, r) in cells.iter_mut().zip([0.9, 1.2, 0.5]) {
            cell.external_ratio = r;
        }
        let mut f = file("a");
        f.matrix = Some(MatrixSection::new(fixed.params.clone(), cells));
        let sections = sections(&[f]);
        let heat = doc::figures(&sections).next().unwrap();
        assert!(heat.findings[0].contains("files are faster from about"), "{:?}", heat.findings);
        assert!(heat.findings[0].contains("not monotonic"), "{:?}", heat.findings);
        assert!(!heat.findings[0].contains("SQLite is faster below"), "{:?}", heat.findings);
    }

    /// In rounds, "~" follows the paired interval, not the runs' spread: a
    /// steady cell whose interval holds 1.0 is marked, a spread-out one whose
    /// interval lies clear of 1.0 is not.
    #[test]
    fn a_cell_in_rounds_is_marked_when_its_interval_holds_one() {
        use crate::report::fixtures::{experiment_runs, round_set};
        let mut s = fixed_section();
        let set = round_set("matrix/x", &["a", "b"], vec![(vec![1.0, 1.0], Default::default()); 3]);
        for c in &mut s.cells {
            c.rounds = Some(set.clone());
        }
        // Cell 0: external 9.5-10.5 against internal 10 (holds 1.0).
        s.cells[0].internal = experiment_runs("i", &[10.0, 10.0, 10.0]);
        s.cells[0].external = experiment_runs("e", &[9.5, 10.5, 10.2]);
        // Cell 1: external three times internal, with a wide run spread.
        s.cells[1].internal = experiment_runs("i", &[10.0, 20.0, 5.0]);
        s.cells[1].external = experiment_runs("e", &[30.0, 60.0, 15.0]);
        let g = s.grid(Fig::ExternalRatio);
        let marks = unclear_grid(&s, &g);
        let at = |page: u32, size: u32| {
            let row = g.page_sizes.iter().position(|&p| p == page).unwrap();
            marks[row][g.sizes.iter().position(|&b| b == size).unwrap()]
        };
        let (c0, c1) = (&s.cells[0], &s.cells[1]);
        assert!(at(c0.page_size, c0.size_bytes), "the interval holds 1.0");
        assert!(!at(c1.page_size, c1.size_bytes), "3x in every round, however spread");
        assert!(unclear_note(&s).contains("paired interval holds 1.0"));
        assert!(unclear_note(&fixed_section()).contains("noisy cell"), "older files keep the spread rule");
    }

    #[test]
    fn several_machines_get_their_own_figures_and_one_study() {
        let sections = sections(&[file("a"), file("b")]);
        let ids: Vec<&str> = doc::figures(&sections).map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "matrix-heatmap-1",
                "matrix-ratio-by-size-1",
                "matrix-heatmap-2",
                "matrix-ratio-by-size-2",
                "matrix-heatmap-2011"
            ]
        );
        assert!(sections[1].title.ends_with(": b"));
        assert!(super::sections(&[ResultFile::new("run", Default::default())]).is_empty());
    }
}
