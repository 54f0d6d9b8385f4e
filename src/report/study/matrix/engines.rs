//! The engines beside the files (`matrix --engines`): per engine and blob
//! size, its read and overwrite times against the files', paired by round
//! with their intervals, where files start to beat it, and a chart of files
//! / engine by blob size; for the page and the terminal alike.

use std::fmt::Write as _;

use super::text::describe;
use crate::measure::paired::PairedRatio;
use crate::records::EngineKind;
use crate::report::format::doc::{Block, Chart, Figure, Table};
use crate::report::format::fmt::micros;
use crate::report::format::svg::{LineChart, Series};
use crate::report::format::text::table_text;
use crate::studies::matrix::{
    ratio_figure, Crossover, EngineCell, MatrixSection, ENGINE_READ_FIGURE, ENGINE_WRITE_FIGURE,
};
use crate::util::units::short_size;

const HEADERS: [&str; 7] = [
    "engine",
    "blob size",
    "engine µs per read",
    "files µs per read",
    "files / engine, read",
    "fast write",
    "durable write",
];

/// What the tables' ratios are, in one paragraph.
fn explanation(s: &MatrixSection) -> String {
    let page = s.params.engine_page_size.map_or_else(String::new, |p| format!(" (in the cells of page size {p})"));
    format!(
        "Each engine is measured once per blob size{page}, in the same interleaved rounds as the files opened by key, \
         so every ratio is paired by round: files time / engine time, above 1.0 the engine is faster. Reads: {}. \
         Writes: {}; fast is a file overwritten in place without fsync against the engine's fast commit \
         (PostgreSQL: synchronous_commit off), durable a new file fsynced and renamed against its durable commit. \
         Each ratio shows its 95% paired interval in brackets (min-max below 6 rounds); ~ marks an interval that \
         holds 1.0 (no clear winner).",
        ENGINE_READ_FIGURE, ENGINE_WRITE_FIGURE
    )
}

/// "0.095 [0.065-0.112]", with "~" when the interval holds 1.0.
fn ratio_cell(r: &PairedRatio) -> String {
    let unclear = if r.spans_one() { " ~" } else { "" };
    format!("{:.3} [{:.3}-{:.3}]{unclear}", r.value, r.low, r.high)
}

fn rows(s: &MatrixSection) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for &engine in &s.params.engines {
        for (size, e) in s.engine_cells(engine) {
            let direct = s.cells.iter().find(|c| c.size_bytes == size && c.engines.iter().any(|x| x.engine == engine));
            let writes = e.writes.as_ref();
            out.push(vec![
                engine.title().to_string(),
                short_size(u64::from(size)),
                micros(ratio_figure(&e.read)),
                direct.map_or_else(|| "-".into(), |c| micros(ratio_figure(&c.direct))),
                ratio_cell(&e.files_ratio),
                writes.map_or_else(|| "-".into(), |w| ratio_cell(&w.fast_ratio)),
                writes.map_or_else(|| "-".into(), |w| ratio_cell(&w.durable_ratio)),
            ]);
        }
    }
    out
}

/// Which of an engine's ratios a crossover is of.
#[derive(Clone, Copy)]
enum Of {
    Read,
    Fast,
    Durable,
}

/// One engine's ratio of `of` at one blob size.
fn ratio_of(e: &EngineCell, of: Of) -> Option<&PairedRatio> {
    match of {
        Of::Read => Some(&e.files_ratio),
        Of::Fast => e.writes.as_ref().map(|w| &w.fast_ratio),
        Of::Durable => e.writes.as_ref().map(|w| &w.durable_ratio),
    }
}

/// A crossover as the table gives it, with the sizes whose interval holds
/// 1.0: there the winner is not clear, and neither is a crossing near them.
fn crossover_cell(s: &MatrixSection, engine: EngineKind, c: Option<&Crossover>, of: Of) -> String {
    let Some(c) = c else { return "-".into() };
    let unclear: Vec<String> = s
        .engine_cells(engine)
        .into_iter()
        .filter(|(_, e)| ratio_of(e, of).is_some_and(PairedRatio::spans_one))
        .map(|(size, _)| short_size(u64::from(size)))
        .collect();
    let text = describe(c, &s.params.sizes_bytes);
    match unclear.is_empty() {
        true => text,
        false => format!("{text} (no clear winner at {})", unclear.join(", ")),
    }
}

/// Per engine: where files start to beat it, reading and writing.
fn crossover_table(s: &MatrixSection) -> Table {
    let rows = s
        .engine_crossovers
        .iter()
        .map(|c| {
            vec![
                c.engine.title().to_string(),
                crossover_cell(s, c.engine, Some(&c.read), Of::Read),
                crossover_cell(s, c.engine, c.fast.as_ref(), Of::Fast),
                crossover_cell(s, c.engine, c.durable.as_ref(), Of::Durable),
            ]
        })
        .collect();
    Table::new(&["engine", "read", "fast write", "durable write"], rows)
}

fn chart(s: &MatrixSection) -> Figure {
    let sizes = &s.params.sizes_bytes;
    let series = s
        .params
        .engines
        .iter()
        .map(|&engine| {
            let cells = s.engine_cells(engine);
            let values = sizes
                .iter()
                .map(|size| cells.iter().find(|(s, _)| s == size).map(|(_, e)| e.files_ratio.value))
                .collect();
            Series { name: engine.title().to_string(), values, intervals: Vec::new() }
        })
        .collect();
    Figure {
        id: "matrix-engines-by-size".into(),
        chart: Chart::Lines(LineChart {
            title: "Files by key / engine, reads, by blob size".into(),
            x_label: "blob size (KB)".into(),
            y_label: "file time / engine time".into(),
            x_log: true,
            y_log: true,
            x: sizes.iter().map(|&b| f64::from(b) / 1000.0).collect(),
            series,
            reference: Some(1.0),
            note: "median of per-round ratios; above 1.0 the engine is faster".into(),
        }),
        caption: vec![ENGINE_READ_FIGURE.to_string()],
        findings: findings(s),
    }
}

/// One sentence per engine about its read crossover.
fn findings(s: &MatrixSection) -> Vec<String> {
    let sizes = &s.params.sizes_bytes;
    let (lo, hi) = (sizes.first().copied().unwrap_or(0), sizes.last().copied().unwrap_or(0));
    let range = format!("{} to {}", short_size(lo.into()), short_size(hi.into()));
    s.engine_crossovers
        .iter()
        .map(|c| {
            let title = c.engine.title();
            match (c.read.kind, c.read.size_bytes) {
                (crate::studies::matrix::CrossoverKind::At, Some(_)) => format!(
                    "{title} reads faster than files below about {}, files from there up.",
                    describe(&c.read, sizes)
                ),
                (crate::studies::matrix::CrossoverKind::BelowRange, _) => {
                    format!("Files opened by key read faster than {title} at every size measured ({range}).")
                }
                _ => format!(
                    "{title} reads faster than files at the largest size measured ({}): no crossover in range.",
                    short_size(hi.into())
                ),
            }
        })
        .collect()
}

/// The page's blocks (nothing without engines).
pub fn blocks(s: &MatrixSection) -> Vec<Block> {
    if s.params.engines.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Block::Heading("Engines beside the files".into()), Block::Note(explanation(s))];
    if s.engine_crossovers.is_empty() {
        out.push(Block::Paragraph("No engine cell was measured (interrupted).".into()));
        return out;
    }
    out.push(Block::Figure(chart(s)));
    out.push(Block::Table(Table::new(&HEADERS, rows(s))));
    out.push(Block::Heading("Engines: files are faster from this blob size up".into()));
    out.push(Block::Table(crossover_table(s)));
    out
}

/// The terminal's lines (empty without engines).
pub fn text(s: &MatrixSection) -> String {
    let mut o = String::new();
    if s.params.engines.is_empty() {
        return o;
    }
    let _ = writeln!(o, "Engines beside the files: {}\n", explanation(s));
    if s.engine_crossovers.is_empty() {
        let _ = writeln!(o, "No engine cell was measured (interrupted).\n");
        return o;
    }
    o.push_str(&table_text(&Table::new(&HEADERS, rows(s)), false).replace("µs", "us"));
    let _ = writeln!(o, "Engines: files are faster from this blob size up (interpolated on log size):");
    o.push_str(&table_text(&crossover_table(s), false));
    for line in findings(s) {
        let _ = writeln!(o, "{line}");
    }
    o.push('\n');
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::matrix::tests_support::section_with_engine;

    #[test]
    fn engines_show_their_ratios_intervals_and_crossover() {
        let s = section_with_engine();
        let t = text(&s);
        assert!(t.contains("PostgreSQL (bytea)"), "{t}");
        // The fixture: the engine costs 5, 10, 40 us where files cost 10:
        // files / engine 2.0, 1.0 (interval 0.9-1.1, unclear), 0.25.
        assert!(t.contains("2.000 [1.900-2.100]"), "{t}");
        assert!(t.contains("1.000 [0.900-1.100] ~"), "{t}");
        assert!(t.contains("0.250 [0.200-0.300]") && !t.contains("0.300] ~"), "{t}");
        assert!(t.contains("PostgreSQL (bytea) reads faster than files below about 100k (exactly)"), "{t}");
        assert!(t.contains("100k (exactly) (no clear winner at 100k)"), "the crossing sits on an unclear point: {t}");
        let b = blocks(&s);
        let Some(Block::Figure(f)) = b.iter().find(|b| matches!(b, Block::Figure(_))) else { panic!("a chart") };
        let Chart::Lines(l) = &f.chart else { panic!("lines") };
        assert_eq!(l.series[0].values, [Some(2.0), Some(1.0), Some(0.25)]);
        assert!(l.y_log, "ratios around 1.0 on a log axis");
        let mut none = s.clone();
        none.params.engines.clear();
        assert!(text(&none).is_empty() && blocks(&none).is_empty(), "nothing without engines");
        assert_eq!(s.engine_crossovers[0].engine, EngineKind::Postgres);
    }
}
