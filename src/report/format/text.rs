//! The terminal summary: the sections marked for it, tables aligned in
//! columns, charts as their numbers plus the computed sentences. Control
//! characters from result files are replaced, so a crafted hostname cannot
//! send escape sequences to the terminal.

use std::fmt::Write;

use super::doc::{Block, ColumnKind, Section, Table};

fn clean(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// A table as the terminal shows it, for a command's own output. With
/// `colour`, ratio columns are green above 1.0 and red below.
pub fn table_text(t: &Table, colour: bool) -> String {
    let mut out = String::new();
    table(&mut out, t, colour);
    out
}

/// Columns as wide as their widest cell (or the title over them), two
/// spaces apart; figures and their headers right-aligned, words left; the
/// group titles above the headers, the notes under the rows.
fn table(out: &mut String, t: &Table, colour: bool) {
    let cleaned = |r: &Vec<String>| r.iter().map(|c| clean(c)).collect::<Vec<_>>();
    let (headers, rows): (Vec<String>, Vec<Vec<String>>) = (cleaned(&t.headers), t.rows.iter().map(cleaned).collect());
    let cols = rows.iter().map(Vec::len).chain([headers.len()]).max().unwrap_or(0);
    let mut widths: Vec<usize> = (0..cols)
        .map(|j| std::iter::once(&headers).chain(&rows).filter_map(|r| r.get(j)).map(|c| width(c)).max().unwrap_or(0))
        .collect();
    let groups: Vec<(usize, usize, String)> = (t.groups.iter())
        .filter(|g| g.first < cols && g.span > 0)
        .map(|g| (g.first, (g.first + g.span).min(cols), format!(" {} ", clean(&g.title))))
        .collect();
    let span = |w: &[usize], first: usize, end: usize| w[first..end].iter().sum::<usize>() + 2 * (end - first - 1);
    // A title drawn "- title -" wider than its columns widens the last of them.
    for (first, end, title) in &groups {
        widths[end - 1] += (width(title) + 2).saturating_sub(span(&widths, *first, *end));
    }
    if !groups.is_empty() {
        let mut line = String::from("  ");
        for j in (0..cols).filter(|j| !groups.iter().any(|g| g.0 < *j && *j < g.1)) {
            let _ = match groups.iter().find(|g| g.0 == j) {
                Some((first, end, title)) => {
                    let dashes = span(&widths, *first, *end) - width(title);
                    write!(line, "{}{title}{}  ", "-".repeat(dashes / 2), "-".repeat(dashes - dashes / 2))
                }
                None => write!(line, "{}  ", " ".repeat(widths[j])),
            };
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let right: Vec<bool> = (0..cols).map(|j| t.aligns_right(j)).collect();
    let ratio: Vec<bool> = (0..cols).map(|j| t.kind(j) == ColumnKind::Ratio).collect();
    let shown_headers = headers.iter().any(|h| !h.is_empty()).then_some(&headers);
    for (i, row) in shown_headers.into_iter().chain(&rows).enumerate() {
        let coloured = colour && (i > 0 || shown_headers.is_none());
        let mut line = String::from("  ");
        for (j, width_j) in widths.iter().enumerate() {
            let cell = row.get(j).map_or("", String::as_str);
            let pad = " ".repeat(width_j - width(cell));
            let (tint, reset) = match cell.split_whitespace().next().map(str::parse::<f64>) {
                Some(Ok(v)) if coloured && ratio[j] && v != 1.0 => {
                    (if v > 1.0 { "\x1b[32m" } else { "\x1b[31m" }, "\x1b[0m")
                }
                _ => ("", ""),
            };
            let _ = match right[j] {
                true => write!(line, "{pad}{tint}{cell}{reset}  "),
                false => write!(line, "{tint}{cell}{reset}{pad}  "),
            };
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for note in &t.notes {
        let _ = writeln!(out, "  {}", clean(note));
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
            Block::Table(t) => table(&mut out, t, false),
            Block::Verdict(v) => table(&mut out, &v.table(), false),
            Block::Figure(f) => {
                let _ = writeln!(out, "{}", clean(f.chart.title()));
                for line in &f.caption {
                    let _ = writeln!(out, "{}", clean(line));
                }
                out.push('\n');
                table(&mut out, &f.chart.table(), false);
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

    fn table(headers: &[&str], rows: &[&[&str]]) -> Table {
        Table::new(headers, rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect())
    }

    #[test]
    fn column_kinds_decide_alignment_headers_included() {
        let t = table(&["host", "ratio"], &[&["a", "1.50"], &["longer-name", "12.3"]]);
        assert_eq!(table_text(&t, false), "  host         ratio\n  a             1.50\n  longer-name   12.3\n\n");
        // Figures with units when the column says so; digits in a text
        // column stay left; numbers and dashes align right, header too.
        let t = table(&["store", "reads/s", "id", "n"], &[&["db", "1.2k", "7", "12"], &["files", "950", "12", "-"]]);
        let t = t.with_kinds(&[ColumnKind::Text, ColumnKind::Figure, ColumnKind::Text]);
        let out = table_text(&t, false);
        assert_eq!(out, "  store  reads/s  id   n\n  db        1.2k  7   12\n  files      950  12   -\n\n");
    }

    #[test]
    fn group_titles_span_their_columns_and_widen_them_when_longer() {
        let t = table(&["t", "p50", "p99", "p50", "p99"], &[&["1", "2.0", "9.0", "3.0", "12.5"]]);
        let out = table_text(&t.with_group("alone", 1, 2).with_group("with a writer", 3, 2), false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "     - alone -  - with a writer -", "{out}");
        assert_eq!(lines[1], "  t  p50   p99  p50           p99", "{out}");
        assert_eq!(lines[2], "  1  2.0   9.0  3.0          12.5", "{out}");
    }

    #[test]
    fn notes_follow_the_rows_and_empty_headers_draw_no_line() {
        let t = table(&["", ""], &[&["Content bytes:", "1000"], &["Journal mode:", "wal"]]);
        let t = t.with_kinds(&[ColumnKind::Text, ColumnKind::Figure]).with_notes(vec!["what the bytes are".into()]);
        let out = table_text(&t, false);
        assert_eq!(out, "  Content bytes:  1000\n  Journal mode:    wal\n  what the bytes are\n\n");
    }

    #[test]
    fn ratio_columns_are_coloured_only_when_asked() {
        let t = table(&["page", "10k", "1m"], &[&["1024", "2.000", "0.500"], &["4096", "1.000", "-"]]);
        let t = t.with_kinds(&[ColumnKind::Figure, ColumnKind::Ratio, ColumnKind::Ratio]);
        assert!(!table_text(&t, false).contains('\x1b'));
        let coloured = table_text(&t, true);
        assert!(coloured.contains("  1024  \x1b[32m2.000\x1b[0m  \x1b[31m0.500\x1b[0m\n"), "{coloured}");
        assert!(coloured.contains("  4096  1.000      -\n"), "1.0 and a dash are neither: {coloured}");
        assert!(coloured.starts_with("  page    10k     1m\n"), "headers stay plain: {coloured}");
    }

    #[test]
    fn escape_sequences_are_neutralised() {
        assert_eq!(clean("evil\u{1b}[2Jhost"), "evil?[2Jhost");
    }
}
