//! `blobbench report`: saved result files rendered as a terminal summary,
//! Markdown, SVG charts and one self-contained offline HTML page, for one
//! machine or several side by side.
//!
//! The report is the verdict, an overview, each study's sections and the
//! details. Each study is one unit below `study/`, offered by a
//! [`StudyReport`] listed in [`STUDIES`]; the renderers below `format/`
//! turn the sections into every output format.

mod baseline;
mod details;
mod format;
mod interval;
mod merge;
mod rounds;
mod study;
mod verdict;

use std::path::{Path, PathBuf};

use format::{doc, fmt, html, markdown, output, png, text};
use study::{advise, aging, concurrency, crashtest, engines, matrix, suite};

pub use advise::replicated::notes as replicated_notes;
pub use doc::{Block, Chart, ColumnKind, Figure, Section, Table, Verdict, NOT_MEASURED};
pub use fmt::fmt_size;
pub use merge::{merge_files, merged_markdown, merged_text};
use study::StudyReport;
pub use suite::SUITE_IDS;
pub use text::table_text;
use verdict::Question;

use crate::results::ResultFile;
use crate::util::units::plural;
use crate::{Error, Result};

/// Every study's report, in page order.
const STUDIES: &[StudyReport] = &[
    advise::REPORT,
    suite::REPORT,
    engines::REPORT,
    matrix::REPORT,
    concurrency::REPORT,
    crashtest::REPORT,
    aging::REPORT,
];

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub dir: PathBuf,
    /// Paths inside `dir`, relative to it.
    pub files: Vec<PathBuf>,
    pub charts: usize,
    /// Why the charts have no PNG copies, when they have none.
    pub png_note: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// Replace `out_dir` even when it is not empty and not a previous report.
    pub force: bool,
    /// An earlier result to mark changes against (`--baseline`).
    pub baseline: Option<&'a ResultFile>,
}

/// Reads result files, stopping at the first that cannot be used, with a
/// one-line message naming it and the problem.
pub fn load(paths: &[PathBuf]) -> Result<Vec<ResultFile>> {
    paths.iter().map(|p| crate::results::read(p).map_err(|e| Error::invalid(e.to_string()))).collect()
}

/// The report as data, in page order: the verdict, the overview, every
/// study's sections, then latency and the environment. From one result
/// file, no table has a column naming it.
pub fn document(files: &[ResultFile]) -> Vec<Section> {
    document_against(files, None)
}

/// [`document`], with what changed since `baseline` right after the verdict.
pub fn document_against(files: &[ResultFile], baseline: Option<&ResultFile>) -> Vec<Section> {
    let questions = questions();
    let mut sections: Vec<Section> = STUDIES.iter().filter(|s| s.leads).flat_map(|s| (s.sections)(files)).collect();
    sections.extend(verdict::section(files, &questions));
    if let Some(b) = baseline {
        sections.extend(baseline::section(b, files, &questions));
    }
    sections.extend(details::overview(files));
    sections.extend(STUDIES.iter().filter(|s| !s.leads).flat_map(|s| (s.sections)(files)));
    sections.extend(details::latency(files));
    sections.extend(details::environment(files));
    if files.len() == 1 {
        sections.iter_mut().for_each(Section::drop_result_columns);
    }
    sections
}

/// The studies whose questions the verdict asks, in the order it lists
/// their rows: the article's first, then threads, engines, aging, power cuts.
const VERDICT_ORDER: &[&StudyReport] =
    &[&suite::REPORT, &concurrency::REPORT, &engines::REPORT, &aging::REPORT, &crashtest::REPORT];

/// Every question of the verdict, in its order.
fn questions() -> Vec<Question> {
    VERDICT_ORDER.iter().flat_map(|s| s.questions.iter().copied()).collect()
}

/// What a study's command prints after a run: the terminal tables of every
/// study `file` holds (see [`StudyReport::terminal`]), no blank line last.
pub fn terminal(file: &ResultFile, colour: bool) -> String {
    let text: String = STUDIES.iter().filter_map(|s| s.terminal).map(|table| table(file, colour)).collect();
    text.trim_end_matches('\n').to_string() + if text.is_empty() { "" } else { "\n" }
}

/// What `advise` prints after a run: the advice alone (the page has the
/// rest), from the result file it wrote.
pub fn advice(file: &ResultFile, colour: bool) -> String {
    advise::terminal(file, colour)
}

fn title(files: &[ResultFile]) -> String {
    let labels = fmt::machine_labels(files);
    match labels.len() {
        0 => "blobbench report".to_string(),
        1..=4 => format!("blobbench report: {}", labels.join(", ")),
        n => format!("blobbench report: {n} result files"),
    }
}

fn footer(files: &[ResultFile]) -> String {
    let studies: Vec<&str> = STUDIES
        .iter()
        .filter_map(|s| s.redraws.as_ref())
        .filter(|r| files.iter().any(r.in_file))
        .map(|r| r.title)
        .collect();
    let redraws = if studies.is_empty() { String::new() } else { format!(" Charts redraw {}.", studies.join(" and ")) };
    format!(
        "Made by blobbench {} from {} result file{}.{redraws}",
        env!("CARGO_PKG_VERSION"),
        files.len(),
        plural(files.len())
    )
}

/// The self-contained HTML page.
pub fn html(files: &[ResultFile], baseline: Option<&ResultFile>) -> String {
    html::page(&title(files), &footer(files), &document_against(files, baseline))
}

/// The report as Markdown, with tables where the charts would be.
pub fn markdown(files: &[ResultFile], baseline: Option<&ResultFile>) -> String {
    markdown::document(&title(files), &footer(files), &document_against(files, baseline), false)
}

/// The terminal summary: charts as numbers and sentences, disk usage and
/// latency; the environment is left to the HTML and Markdown.
pub fn text_summary(files: &[ResultFile], baseline: Option<&ResultFile>) -> String {
    let sections = document_against(files, baseline);
    let left_out: Vec<&str> = sections.iter().filter(|s| !s.in_summary).map(|s| s.title.as_str()).collect();
    text::document(&title(files), &sections, &left_out)
}

/// Checks, before any measuring, that [`render`] will be able to write `out_dir`.
pub fn check_out_dir(out_dir: &Path, options: &Options) -> Result<()> {
    output::check(out_dir, options.force)
}

/// Writes `index.html`, `summary.md`, `charts/<id>.svg` and the result
/// files themselves (`results.json`, or `results-N.json` for several) into `out_dir`,
/// replacing it as a whole (see [`Options::force`] for when that is refused).
pub fn render(files: &[ResultFile], out_dir: &Path, options: &Options) -> Result<Written> {
    if files.is_empty() {
        return Err(Error::invalid("no result files to report on"));
    }
    output::check(out_dir, options.force)?;
    let sections = document_against(files, options.baseline);
    let (title, footer) = (title(files), footer(files));
    let mut out: Vec<(PathBuf, Vec<u8>)> = vec![
        ("index.html".into(), html::page(&title, &footer, &sections).into_bytes()),
        ("summary.md".into(), markdown::document(&title, &footer, &sections, true).into_bytes()),
    ];
    // The data travels with the report, so it can be re-rendered or merged
    // with another machine's later.
    for (i, file) in files.iter().enumerate() {
        let name = if files.len() == 1 { "results.json".to_string() } else { format!("results-{}.json", i + 1) };
        let json = serde_json::to_vec_pretty(file).map_err(|e| Error::invalid(e.to_string()))?;
        out.push((name.into(), json));
    }
    if let Some(b) = options.baseline {
        let json = serde_json::to_vec_pretty(b).map_err(|e| Error::invalid(e.to_string()))?;
        out.push(("baseline.json".into(), json));
    }
    let figures: Vec<&Figure> = doc::figures(&sections).collect();
    let svgs: Vec<String> =
        figures.iter().map(|f| format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n", f.chart.to_svg())).collect();
    let pngs = png::many_from_svg(&svgs);
    for ((f, svg), png) in figures.iter().zip(svgs).zip(pngs) {
        if let Some(png) = png {
            out.push((Path::new("charts").join(format!("{}.png", f.id)), png));
        }
        out.push((Path::new("charts").join(format!("{}.svg", f.id)), svg.into_bytes()));
    }
    output::write(out_dir, &out, options.force)?;
    Ok(Written {
        dir: out_dir.to_path_buf(),
        files: out.into_iter().map(|(p, _)| p).collect(),
        charts: figures.len(),
        png_note: png::unavailable(),
    })
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
