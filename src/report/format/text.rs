//! The terminal summary: the sections marked for it, tables aligned in
//! columns, charts as their numbers plus the computed sentences. Control
//! characters from result files are replaced, so a crafted hostname cannot
//! send escape sequences to the terminal.

use std::fmt::Write;

use super::doc::{is_number, Block, Section, Table, VerdictRow};

fn clean(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// A table as the terminal shows it, for a study's own terminal text.
pub fn table_text(t: &Table) -> String {
    let mut out = String::new();
    table(&mut out, t);
    out
}

/// Columns padded to their widest cell; numbers right-aligned.
fn table(out: &mut String, t: &Table) {
    let cells: Vec<Vec<String>> =
        std::iter::once(&t.headers).chain(&t.rows).map(|r| r.iter().map(|c| clean(c)).collect()).collect();
    let cols = cells.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|j| cells.iter().filter_map(|r| r.get(j)).map(|c| width(c)).max().unwrap_or(0)).collect();
    for (i, row) in cells.iter().enumerate() {
        let mut line = String::from("  ");
        for (j, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[j] - width(cell));
            let numeric = i > 0 && is_number(cell);
            if numeric {
                let _ = write!(line, "{pad}{cell}  ");
            } else {
                let _ = write!(line, "{cell}{pad}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push('\n');
}

pub fn document(title: &str, sections: &[Section], left_out: &[&str]) -> String {
    let mut out = format!("{}\n\n", clean(title));
    for s in sections.iter().filter(|s| s.in_summary) {
        let _ = write!(out, "== {} ==\n\n", clean(&s.title));
        out.push_str(&blocks_text(&s.blocks));
    }
    if !left_out.is_empty() {
        let _ = writeln!(out, "Not shown here: {} (see --format html or markdown).", left_out.join(", "));
    }
    out
}

/// Blocks as the terminal shows them, each followed by a blank line, for
/// a command's own output outside a section.
pub fn blocks_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(h) => {
                let _ = write!(out, "-- {} --\n\n", clean(h));
            }
            Block::Paragraph(p) | Block::Note(p) => {
                let _ = write!(out, "{}\n\n", clean(p));
            }
            Block::List(items) => {
                for item in items {
                    let _ = writeln!(out, "  - {}", clean(item));
                }
                out.push('\n');
            }
            Block::Table(t) => table(&mut out, t),
            Block::Verdict(rows) => {
                let headers = VerdictRow::HEADERS.map(String::from).to_vec();
                table(&mut out, &Table { headers, rows: rows.iter().map(|r| r.cells().to_vec()).collect() });
            }
            Block::Figure(f) => {
                let _ = writeln!(out, "{}", clean(f.chart.title()));
                for line in &f.caption {
                    let _ = writeln!(out, "{}", clean(line));
                }
                out.push('\n');
                table(&mut out, &f.chart.table());
                for finding in &f.findings {
                    let _ = write!(out, "{}\n\n", clean(finding));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_numbers_align_right() {
        let mut out = String::new();
        let t = Table {
            headers: vec!["host".into(), "ratio".into()],
            rows: vec![vec!["a".into(), "1.50".into()], vec!["longer-name".into(), "12.3".into()]],
        };
        table(&mut out, &t);
        assert_eq!(out, "  host         ratio\n  a             1.50\n  longer-name   12.3\n\n");
    }

    #[test]
    fn escape_sequences_are_neutralised() {
        assert_eq!(clean("evil\u{1b}[2Jhost"), "evil?[2Jhost");
    }
}
