//! The matrix as text, laid out like the study's table (rows page size,
//! columns blob size), with the crossovers, the best page sizes and the
//! study's 2011 matrix for comparison. Colour is optional ANSI: green where
//! the database is faster, red where files are.

use std::fmt::Write as _;

use crate::report::format::doc::{ColumnKind, Table};
use crate::report::format::fmt::{fmt_size, micros};
use crate::report::format::text::table_text;
use crate::studies::matrix::{
    self as m, study_grid, CellWrites, Crossover, CrossoverKind, Figure, Grid, MatrixSection,
};
use crate::util::units::plural;
use crate::util::units::short_size;

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
    let ratios = |g: &Grid| table_text(&grid_table(g, 3, ColumnKind::Ratio), colour);
    let _ = writeln!(o, "\nfiles (name in SQLite) / database, this machine:");
    o.push_str(&ratios(&section.grid(Figure::ExternalRatio)));
    let _ = writeln!(o, "files opened directly by key (no database) / database:");
    o.push_str(&ratios(&section.grid(Figure::DirectRatio)));
    let _ = writeln!(o, "database read, microseconds per blob (the figure above):");
    o.push_str(&table_text(&grid_table(&section.grid(Figure::InternalUs), 1, ColumnKind::Figure), false));
    let _ = writeln!(o, "Crossover: files are faster from this blob size up (interpolated on log size):");
    o.push_str(&table_text(&crossover_table(section), false));
    let _ = writeln!(o, "Best page size per blob size (fastest database read):");
    o.push_str(&table_text(&best_table(section), false).replace("µs", "us"));
    let study = study_grid();
    let _ = writeln!(o, "The study in 2011 (SQLite 3.7.8, Ubuntu, ext4 on a SATA disk), files / database:");
    o.push_str(&ratios(&study));
    let rows = (0..study.page_sizes.len())
        .filter_map(|row| {
            let c = crate::studies::matrix::crossover(&study.row_points(row))?;
            Some(vec![study.page_sizes[row].to_string(), describe(&c, &study.sizes)])
        })
        .collect();
    let _ = writeln!(o, "its crossovers:");
    o.push_str(&table_text(&Table::new(&["page size", "files faster from"], rows), false));
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
    let _ = writeln!(
        o,
        "Writes (random keys, each database write its own transaction): file time / database time, of kvtest's \
         per-op time (database: open + writes and commits + close with its WAL checkpoint); above 1.0 the database is faster.\n"
    );
    let grid = |f: fn(&CellWrites) -> f64| {
        let g = section.grid(Figure::ExternalRatio);
        let cell = |p: u32, b: u32| section.cells.iter().find(|c| c.page_size == p && c.size_bytes == b);
        let values =
            g.page_sizes.iter().map(|&p| g.sizes.iter().map(|&b| cell(p, b)?.writes.as_ref().map(f)).collect());
        table_text(&grid_table(&Grid { values: values.collect(), ..g }, 3, ColumnKind::Ratio), false)
    };
    let _ = writeln!(o, "fast: file overwritten in place (no fsync) / SQLite WAL + synchronous NORMAL:");
    o.push_str(&grid(|w| w.fast_ratio));
    let _ = writeln!(o, "durable: new file + fsync + rename / SQLite WAL + synchronous FULL:");
    o.push_str(&grid(|w| w.durable_ratio));
    let _ = writeln!(o, "grow and shrink (puts of 2x and 0.5x the size, deletes): files / SQLite WAL + NORMAL:");
    o.push_str(&grid(|w| w.churn_ratio));
    let sizes = &section.params.sizes_bytes;
    let _ = writeln!(o, "Crossover, reads beside writes: files are faster from this blob size up:");
    let rows = section
        .write_crossovers()
        .iter()
        .map(|w| {
            let read = section.crossovers.iter().find(|c| c.page_size == w.page_size);
            vec![
                w.page_size.to_string(),
                read.map_or_else(|| "-".into(), |c| describe(&c.external, sizes)),
                describe(&w.fast, sizes),
                describe(&w.durable, sizes),
            ]
        })
        .collect();
    let headers = ["page size", "read (name in SQLite)", "write, fast", "write, durable"];
    o.push_str(&table_text(&Table::new(&headers, rows), false));
    o
}

/// The blob sizes as column headers.
pub(super) fn columns(g: &Grid) -> Vec<String> {
    g.sizes.iter().map(|&s| short_size(u64::from(s))).collect()
}

pub(super) fn crossover_table(s: &MatrixSection) -> Table {
    let sizes = &s.params.sizes_bytes;
    let study = m::study_grid();
    let rows = s
        .crossovers
        .iter()
        .map(|c| {
            let then = study
                .page_sizes
                .iter()
                .position(|&p| p == c.page_size)
                .and_then(|row| m::crossover(&study.row_points(row)))
                .map_or_else(|| "not in the study".to_string(), |x| describe(&x, &study.sizes));
            vec![c.page_size.to_string(), describe(&c.external, sizes), describe(&c.direct, sizes), then]
        })
        .collect();
    let headers = ["page size", "files, name in SQLite", "files by key", "2011 study"];
    Table::new(&headers, rows)
}

pub(super) fn best_table(s: &MatrixSection) -> Table {
    let rows = s
        .best_page_sizes
        .iter()
        .map(|b| {
            vec![
                short_size(b.size_bytes.into()),
                b.page_size.to_string(),
                micros(b.internal_us),
                format!("{:.3}", b.external_ratio),
            ]
        })
        .collect();
    let headers = ["blob size", "fastest page size", "database µs per blob", "files / database there"];
    Table::new(&headers, rows)
}

/// A grid as the study lays it out: a column per blob size, a row per page
/// size, each value of `kind`; "-" where nothing was measured.
pub(super) fn grid_table(g: &Grid, decimals: usize, kind: ColumnKind) -> Table {
    let headers = std::iter::once("page size".to_string()).chain(columns(g)).collect();
    let rows = g
        .page_sizes
        .iter()
        .zip(&g.values)
        .map(|(p, row)| {
            std::iter::once(p.to_string())
                .chain(row.iter().map(|v| v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))))
                .collect()
        })
        .collect();
    let kinds: Vec<ColumnKind> = std::iter::once(ColumnKind::Figure).chain(g.sizes.iter().map(|_| kind)).collect();
    Table { headers, rows, kinds, ..Table::default() }.with_group("blob size", 1, g.sizes.len())
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
        assert!(plain.contains("  page size    10k   100k     1m\n"), "{plain}");
        assert!(plain.contains("       1024  2.000  1.000  0.500\n"), "{plain}");
        assert!(plain.contains("       4096  2.500  0.800      -\n"), "{plain}");
        assert!(plain.contains("100k (exactly)"), "{plain}");
        assert!(plain.contains(RATIO_FIGURE));
        assert!(plain.contains("The study in 2011"));
        assert!(plain.contains("       1024  1.535  1.020  0.608  0.456"), "the study's first row: {plain}");
        assert!(!plain.contains('\x1b'), "no colour unless asked");
        assert!(!plain.contains("warning"), "steady runs, no warning");
        let mut noisy = s.clone();
        noisy.cells[2].external.summary.loop_per_op_us.cv_pct = 25.0;
        noisy.cells[3].internal.summary.loop_per_op_us.cv_pct = 12.0;
        let text = render_text(&noisy, false);
        assert!(text.contains("warning: in 2 of 5 cells a measurement varied by more than 10% between runs (up to 25%, coefficient of variation);"));
        let coloured = render_text(&s, true);
        assert!(coloured.contains("\x1b[32m2.000\x1b[0m"), "green where the database is faster");
        assert!(coloured.contains("\x1b[31m0.500\x1b[0m"), "red where files are faster");
        assert!(coloured.contains("\x1b[0m  1.000  \x1b[31m"), "1.0 exactly is neither");
    }
}
