//! The matrix as text, laid out like the study's table (rows page size,
//! columns blob size), with the crossovers, the best page sizes and the
//! study's 2011 matrix for comparison. Colour is optional ANSI: green where
//! the database is faster, red where files are.

use std::fmt::Write as _;

use crate::report::format::fmt::fmt_size;
use crate::studies::matrix::{study_grid, CellWrites, Crossover, CrossoverKind, Figure, Grid, MatrixSection};
use crate::util::units::plural;
use crate::util::units::short_size;

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// The fixed-size cells as the study lays them out: the read matrix, then
/// the writes.
pub(super) fn grids(s: &MatrixSection, colour: bool) -> String {
    render_text(s, colour) + &render_writes(s)
}

/// The read matrix, its crossovers and best page sizes, and the 2011 study's.
fn render_text(section: &MatrixSection, colour: bool) -> String {
    let mut o = String::new();
    let p = &section.params;
    let _ = writeln!(
        o,
        "Internal vs external blobs: time to read a blob from its own file, whose name is looked up in SQLite,\n\
         divided by the time to read it from the database (above 1.0 the database is faster)."
    );
    let _ = writeln!(
        o,
        "Figure: {}; {}, after {} warm-up{}{}.",
        section.ratio_figure,
        section.runs_phrase(),
        p.plan.warmup,
        plural(p.plan.warmup),
        if p.plan.cold { ", page cache evicted before each timed run" } else { ", warm page cache" }
    );
    let _ = writeln!(
        o,
        "Random order (kvtest's), each blob read once per run on average; {} of blobs per cell; \
         SQLite page cache {} bytes per database; files read with open/fstat/read/close.",
        fmt_size(p.total_bytes as f64).to_uppercase() + "B",
        p.cache_bytes
    );
    if let Some(w) = noise_warning(section) {
        let _ = writeln!(o, "warning: {w}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "files (name in SQLite) / database, this machine:");
    o.push_str(&grid_table(&section.grid(Figure::ExternalRatio), 3, colour));
    let _ = writeln!(o, "\nfiles opened directly by key (no database) / database:");
    o.push_str(&grid_table(&section.grid(Figure::DirectRatio), 3, colour));
    let _ = writeln!(o, "\ndatabase read, microseconds per blob (the figure above):");
    o.push_str(&grid_table(&section.grid(Figure::InternalUs), 1, false));

    let _ = writeln!(o, "\nCrossover: files are faster from this blob size up (interpolated on log size):");
    let sizes = &section.params.sizes_bytes;
    let rows: Vec<(u32, String, String)> = section
        .crossovers
        .iter()
        .map(|c| (c.page_size, describe(&c.external, sizes), describe(&c.direct, sizes)))
        .collect();
    let first = "name in SQLite + file";
    let w = rows.iter().map(|r| r.1.chars().count()).chain([first.len()]).max().unwrap_or(0);
    let _ = writeln!(o, "{:>9}  {first:<w$}  file by key", "page size");
    for (page, external, direct) in &rows {
        let _ = writeln!(o, "{page:>9}  {external:<w$}  {direct}");
    }
    let _ = writeln!(o, "\nBest page size per blob size (fastest database read):");
    for b in &section.best_page_sizes {
        let _ = writeln!(
            o,
            "{:>9}: {:>5} ({:.1} us per blob; files/database {:.3})",
            short_size(u64::from(b.size_bytes)),
            b.page_size,
            b.internal_us,
            b.external_ratio
        );
    }

    let study = study_grid();
    let _ = writeln!(o, "\nThe study in 2011 (SQLite 3.7.8, Ubuntu, ext4 on a SATA disk), files / database:");
    o.push_str(&grid_table(&study, 3, colour));
    let _ = writeln!(o, "its crossovers:");
    for (row, page) in study.page_sizes.iter().enumerate() {
        if let Some(c) = crate::studies::matrix::crossover(&study.row_points(row)) {
            let _ = writeln!(o, "{page:>9}  {}", describe(&c, &study.sizes));
        }
    }
    o
}

/// A sentence about run-to-run variation, when some cells had much of it.
pub fn noise_warning(section: &MatrixSection) -> Option<String> {
    let (n, worst) = section.noisy_cells();
    let paired = section.cells.iter().all(|c| c.rounds.as_ref().is_some_and(|r| r.consistent()));
    (n > 0).then(|| {
        format!(
            "in {n} of {} cells a measurement varied by more than {:.0}% between runs (up to {worst:.0}%, \
             coefficient of variation); the machine was busy or noisy, so {}",
            section.cells.len(),
            crate::measure::NOISY_CV_PCT,
            if paired {
                "each ratio is paired by round (a slow spell that hit every read of a round cancels out), \
                 but treat ratios near 1.0 with care"
            } else {
                "treat ratios near 1.0 with care (unpaired)"
            }
        )
    })
}

/// A grid as the study lays it out: a header of blob sizes, one row per
/// page size; "-" where nothing was measured.
pub fn grid_table(grid: &Grid, decimals: usize, colour: bool) -> String {
    let mut o = String::new();
    let _ = write!(o, "{:>9}", "page size");
    for &s in &grid.sizes {
        let _ = write!(o, "{:>9}", short_size(u64::from(s)));
    }
    o.push('\n');
    for (row, &page) in grid.page_sizes.iter().enumerate() {
        let _ = write!(o, "{page:>9}");
        for v in &grid.values[row] {
            let cell = match v {
                Some(v) => format!("{v:>9.decimals$}"),
                None => format!("{:>9}", "-"),
            };
            match v {
                Some(v) if colour && *v > 1.0 => o.push_str(&format!("{GREEN}{cell}{RESET}")),
                Some(v) if colour && *v < 1.0 => o.push_str(&format!("{RED}{cell}{RESET}")),
                _ => o.push_str(&cell),
            }
        }
        o.push('\n');
    }
    o
}

/// "23.4k", "beyond the range (> 1m)", ... plus the other crossings when
/// the ratio is not monotonic. `sizes` is the measured range.
pub fn describe(c: &Crossover, sizes: &[u32]) -> String {
    let edge = |s: Option<&u32>| s.map_or(String::new(), |&s| short_size(u64::from(s)));
    let mut s = match (c.kind, c.size_bytes) {
        (CrossoverKind::At, Some(size)) => format!("{}{}", fmt_size(size), if c.exact { " (exactly)" } else { "" }),
        (CrossoverKind::BelowRange, _) => format!("beyond the range (< {})", edge(sizes.first())),
        _ => format!("beyond the range (> {})", edge(sizes.last())),
    };
    if c.crossings_bytes.len() > 1 {
        let all: Vec<String> = c.crossings_bytes.iter().map(|&b| fmt_size(b)).collect();
        let _ = write!(s, "; not monotonic, crosses 1.0 at {}", all.join(", "));
    }
    s
}

/// The write tables and crossovers beside the read crossover.
fn render_writes(section: &MatrixSection) -> String {
    let mut o = String::new();
    if section.cells.iter().all(|c| c.writes.is_none()) {
        return o;
    }
    let table = |title: &str, f: fn(&CellWrites) -> f64, o: &mut String| {
        let _ = writeln!(o, "\n{title}");
        let grid = section.grid(Figure::ExternalRatio);
        let _ = write!(o, "{:>9}", "page size");
        for &s in &grid.sizes {
            let _ = write!(o, "{:>9}", crate::util::units::short_size(u64::from(s)));
        }
        let _ = writeln!(o);
        for &p in &grid.page_sizes {
            let _ = write!(o, "{p:>9}");
            for &s in &grid.sizes {
                let v = section.cells.iter().find(|c| c.page_size == p && c.size_bytes == s);
                match v.and_then(|c| c.writes.as_ref()) {
                    Some(w) => {
                        let _ = write!(o, "{:>9.3}", f(w));
                    }
                    None => {
                        let _ = write!(o, "{:>9}", "-");
                    }
                }
            }
            let _ = writeln!(o);
        }
    };
    let _ = writeln!(
        o,
        "\nWrites (random keys, each database write its own transaction): file time / database time, of kvtest's \
         per-op time (database: open + writes and commits + close with its WAL checkpoint); above 1.0 the database is faster."
    );
    table("fast: file overwritten in place (no fsync) / SQLite WAL + synchronous NORMAL:", |w| w.fast_ratio, &mut o);
    table("durable: new file + fsync + rename / SQLite WAL + synchronous FULL:", |w| w.durable_ratio, &mut o);
    table(
        "grow and shrink (puts of 2x and 0.5x the size, deletes): files / SQLite WAL + NORMAL:",
        |w| w.churn_ratio,
        &mut o,
    );
    let sizes = &section.params.sizes_bytes;
    let _ = writeln!(o, "\nCrossover, reads beside writes: files are faster from this blob size up:");
    let rows: Vec<[String; 4]> = section
        .write_crossovers()
        .iter()
        .map(|w| {
            let read = section.crossovers.iter().find(|c| c.page_size == w.page_size);
            [
                w.page_size.to_string(),
                read.map_or_else(|| "-".into(), |c| describe(&c.external, sizes)),
                describe(&w.fast, sizes),
                describe(&w.durable, sizes),
            ]
        })
        .collect();
    let head = ["page size".to_string(), "read (name in SQLite)".into(), "write, fast".into(), "write, durable".into()];
    let width = |i: usize| rows.iter().chain([&head]).map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for r in std::iter::once(&head).chain(&rows) {
        let _ = writeln!(o, "{:>w0$}  {:<w1$}  {:<w2$}  {}", r[0], r[1], r[2], r[3]);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::matrix::tests_support::fixed_section;
    use crate::studies::matrix::RATIO_FIGURE;

    #[test]
    fn table_renders_from_fixed_results() {
        let s = fixed_section();
        let plain = render_text(&s, false);
        assert!(plain.contains("page size      10k     100k       1m"), "{plain}");
        assert!(plain.contains("     1024    2.000    1.000    0.500"), "{plain}");
        assert!(plain.contains("     4096    2.500    0.800        -"), "{plain}");
        assert!(plain.contains("100k (exactly)"), "{plain}");
        assert!(plain.contains(RATIO_FIGURE));
        assert!(plain.contains("The study in 2011"));
        assert!(plain.contains("     1024    1.535    1.020    0.608"), "the study's first row: {plain}");
        assert!(!plain.contains('\x1b'), "no colour unless asked");
        assert!(!plain.contains("warning"), "steady runs, no warning");
        let mut noisy = s.clone();
        noisy.cells[2].external.summary.loop_per_op_us.cv_pct = 25.0;
        noisy.cells[3].internal.summary.loop_per_op_us.cv_pct = 12.0;
        let text = render_text(&noisy, false);
        assert!(text.contains("warning: in 2 of 5 cells a measurement varied by more than 10% between runs (up to 25%, coefficient of variation);"));
        let coloured = render_text(&s, true);
        assert!(coloured.contains("\x1b[32m    2.000\x1b[0m"), "green where the database is faster");
        assert!(coloured.contains("\x1b[31m    0.500\x1b[0m"), "red where files are faster");
        assert!(coloured.contains("\x1b[0m    1.000\x1b[31m"), "1.0 exactly is neither");
    }
}
