//! The report as Markdown: `summary.md` beside the charts (with image links)
//! or printed (tables only, since no chart files exist then). Text from
//! result files is escaped so a hostname cannot inject markup or HTML.

use std::fmt::Write;

use super::doc::{Block, Section, Table};

/// Escapes Markdown syntax and the HTML that Markdown passes through.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Markdown has no spanning header: a column under a group title has the
/// title before its own header.
fn table(out: &mut String, t: &Table) {
    let row = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
    let mut headers = t.headers.clone();
    for g in &t.groups {
        for h in headers.iter_mut().skip(g.first).take(g.span) {
            *h = format!("{} {h}", g.title);
        }
    }
    out.push_str(&row(&headers));
    let _ = writeln!(out, "|{}", "---|".repeat(t.headers.len()));
    for r in &t.rows {
        out.push_str(&row(r));
    }
    out.push('\n');
    for n in &t.notes {
        let _ = write!(out, "*{}*\n\n", esc(n));
    }
}

/// `images`: link each figure's `charts/<id>.svg` (true only when the chart
/// files are written next to the Markdown).
pub fn document(title: &str, footer: &str, sections: &[Section], images: bool) -> String {
    let mut out = format!("# {}\n\n", esc(title));
    for s in sections {
        let _ = write!(out, "## {}\n\n", esc(&s.title));
        for b in &s.blocks {
            match b {
                Block::Heading(h) => {
                    let _ = write!(out, "#### {}\n\n", esc(h));
                }
                Block::Paragraph(p) => {
                    let _ = write!(out, "{}\n\n", esc(p));
                }
                Block::Note(n) => {
                    let _ = write!(out, "*{}*\n\n", esc(n));
                }
                Block::List(items) => {
                    for item in items {
                        let _ = writeln!(out, "- {}", esc(item));
                    }
                    out.push('\n');
                }
                Block::Table(t) => table(&mut out, t),
                Block::Verdict(v) => {
                    let t = v.table();
                    let _ = writeln!(out, "| {} |\n|{}", t.headers.join(" | "), "---|".repeat(t.headers.len()));
                    for (cells, r) in t.rows.iter().zip(&v.rows) {
                        let mut cells: Vec<String> = cells.iter().map(|c| esc(c)).collect();
                        // The chart: its SVG beside summary.md, or just its title.
                        match cells.last_mut() {
                            Some(chart) if images => *chart = format!("[{chart}](charts/{}.svg)", r.chart_id),
                            _ => {}
                        }
                        let _ = writeln!(out, "| {} |", cells.join(" | "));
                    }
                    out.push('\n');
                }
                Block::Figure(f) => {
                    let _ = write!(out, "### {}\n\n", esc(f.chart.title()));
                    for line in &f.caption {
                        let _ = write!(out, "*{}*\n\n", esc(line));
                    }
                    if images {
                        let _ = write!(out, "![{}](charts/{}.svg)\n\n", esc(f.chart.title()), f.id);
                    }
                    table(&mut out, &f.chart.table());
                    for finding in &f.findings {
                        let _ = write!(out, "{}\n\n", esc(finding));
                    }
                }
            }
        }
    }
    let _ = writeln!(out, "---\n\n{}", esc(footer));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_result_files_is_inert() {
        assert_eq!(esc("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(esc(r#"a&b"c"#), r#"a&amp;b"c"#);
        assert_eq!(esc("x|y [l](u) *b* _i_"), r"x\|y \[l\](u) \*b\* \_i\_");
        assert_eq!(esc("two\nlines"), "two lines", "a newline would end a table row");
    }

    #[test]
    fn tables_have_a_separator_row() {
        let mut out = String::new();
        table(&mut out, &Table::new(&["a", "b"], vec![vec!["1".into(), "x|y".into()]]));
        assert_eq!(out, "| a | b |\n|---|---|\n| 1 | x\\|y |\n\n");
    }
}
