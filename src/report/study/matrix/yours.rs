//! The matrix's "your data" cells (`matrix --from DIR`, `--size-dist`):
//! where the blobs came from, and per page size the same three reads as
//! the fixed-size cells, as a table and a sentence, for the page and the
//! terminal alike.

use crate::report::format::doc::{Block, Table};
use crate::report::format::fmt::{fmt_size, micros};
use crate::report::format::text::table_text;
use crate::studies::matrix::{ratio_figure, MatrixCell, MatrixSection};

const HEADERS: [&str; 6] = [
    "page size",
    "blobs",
    "mean size",
    "files (name in SQLite) / database",
    "files by key / database",
    "database µs per blob",
];

/// One row per page size of the your-data cells.
fn rows(s: &MatrixSection) -> Vec<Vec<String>> {
    s.yours
        .iter()
        .map(|c| {
            vec![
                c.page_size.to_string(),
                c.count.to_string(),
                fmt_size(f64::from(c.size_bytes)).to_uppercase() + "B",
                format!("{:.3}", c.external_ratio),
                format!("{:.3}", c.direct_ratio),
                micros(ratio_figure(&c.internal)),
            ]
        })
        .collect()
}

/// Where the blobs came from, and what the ratios say about them.
fn sentences(s: &MatrixSection) -> Vec<String> {
    let Some(from) = &s.params.sizes_from else { return Vec::new() };
    let mut out = vec![format!("Your data: {}.", from.describe())];
    if s.yours.is_empty() {
        out.push("No your-data cell was measured (interrupted).".into());
        return out;
    }
    let (files, db): (Vec<&MatrixCell>, Vec<&MatrixCell>) = s.yours.iter().partition(|c| c.external_ratio < 1.0);
    let pages = |v: &[&MatrixCell]| v.iter().map(|c| c.page_size.to_string()).collect::<Vec<_>>().join(", ");
    out.push(match (files.is_empty(), db.is_empty()) {
        (true, _) => "On your data, SQLite read faster than files (name in SQLite) at every page size measured.".into(),
        (false, true) => {
            "On your data, files (name in SQLite) read faster than SQLite at every page size measured.".into()
        }
        (false, false) => format!(
            "On your data, files (name in SQLite) read faster than SQLite at page size {}; SQLite read faster at {}.",
            pages(&files),
            pages(&db)
        ),
    });
    out
}

/// The page's blocks (nothing without your data).
pub fn blocks(s: &MatrixSection) -> Vec<Block> {
    if s.params.sizes_from.is_none() {
        return Vec::new();
    }
    let mut out = vec![Block::Heading("Your data".into())];
    out.extend(sentences(s).into_iter().map(Block::Paragraph));
    if !s.yours.is_empty() {
        out.push(Block::Table(Table::new(&HEADERS, rows(s))));
    }
    out
}

/// The terminal's lines (empty without your data).
pub fn text(s: &MatrixSection) -> String {
    let mut o: String = sentences(s).into_iter().map(|line| line + "\n").collect();
    if !s.yours.is_empty() {
        o.push_str(&table_text(&Table::new(&HEADERS, rows(s)), false).replace("µs", "us"));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{SizeDist, SizesFrom};
    use crate::studies::matrix::tests_support::fixed_section;

    #[test]
    fn your_cells_are_shown_with_their_source() {
        let mut s = fixed_section();
        assert!(blocks(&s).is_empty() && text(&s).is_empty(), "nothing without your data");
        s.params.sizes_from =
            Some(SizesFrom::Distribution { dist: SizeDist::Lognormal { median: 30_000, sigma: 1.0 } });
        s.yours = s.cells.iter().filter(|c| c.size_bytes == 10_000).cloned().collect();
        let t = text(&s);
        assert!(t.contains("Your data: sizes drawn from lognormal:30000:1 (random content)."), "{t}");
        assert!(t.contains("files (name in SQLite) / database"), "{t}");
        assert_eq!(t.lines().count(), 2 + 2 + s.yours.len(), "two sentences, the header, the rows, a blank: {t}");
        assert!(t.contains("SQLite read faster than files (name in SQLite) at every page size measured."), "{t}");
        let Block::Table(table) = &blocks(&s)[3] else { panic!("a table") };
        assert_eq!(table.rows.len(), s.yours.len());
        s.yours[1].external_ratio = 0.5;
        let t = text(&s);
        let mixed = "files (name in SQLite) read faster than SQLite at page size 4096; SQLite read faster at 1024.";
        assert!(t.contains(mixed), "{t}");
    }
}
