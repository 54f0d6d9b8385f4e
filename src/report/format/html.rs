//! One self-contained HTML page: inline CSS, inline SVG, no scripts, fonts
//! or links to anything outside the file, so it opens offline and can be
//! mailed as it is. The markup is also well-formed XML (void elements
//! closed, no named entities), which lets tests parse it strictly. On a
//! narrow screen (390 px, checked by bench/screenshot-advise.sh) a wide
//! table scrolls in its own box, shaded at the edge that hides more; a
//! label/value table wraps its long values (paths, hashes) instead.

use std::fmt::Write;

use super::doc::{Block, Figure, Section, Table, Verdict, NOT_MEASURED};
use super::svg::esc;

const CSS: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #1a1a1a; max-width: 1100px;
  margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
nav ul { columns: 2; } .note { color: #555; font-size: 0.92em; }
figure { margin: 1.5em 0; padding: 1em; border: 1px solid #e3e3e3; border-radius: 6px; }
figcaption { margin-bottom: 0.6em; } figcaption .title { font-weight: bold; display: block; }
figure svg { max-width: 100%; height: auto; display: block; }
.finding { font-size: 1.05em; margin: 0.4em 0; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; vertical-align: top; text-align: left; }
th { background: #f4f4f4; } th.num { text-align: right; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.missing { color: #888; font-style: italic; }
body { overflow-wrap: break-word; } tr > td:nth-child(2):last-child { overflow-wrap: anywhere; }
.wide { overflow-x: auto; background-repeat: no-repeat; background-attachment: local, local, scroll, scroll;
  background-image: linear-gradient(to right, #fff 30%, rgba(255,255,255,0)),
    linear-gradient(to left, #fff 30%, rgba(255,255,255,0)),
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.2), rgba(0,0,0,0)),
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.2), rgba(0,0,0,0));
  background-position: 0 0, 100% 0, 0 0, 100% 0; background-size: 40px 100%, 40px 100%, 14px 100%, 14px 100%; }
details summary { cursor: pointer; color: #333; }
table.verdict td.answer { font-weight: bold; } table.verdict tr.unclear td { color: #666; }
table.verdict tr.unclear td.answer { font-weight: normal; font-style: italic; }
@media (max-width: 640px) {
  table.verdict thead { display: none; }
  table.verdict tr { display: block; border: 1px solid #ddd; margin-bottom: 0.6em; }
  table.verdict td { display: block; border: none; padding: 0.1em 0.5em; text-align: left; white-space: normal; }
  table.verdict td::before { content: attr(data-label) \": \"; color: #666; font-weight: normal; font-style: normal; }
}
footer { margin-top: 3em; color: #666; font-size: 0.85em; }
";

fn table(out: &mut String, t: &Table) {
    let cols = t.rows.iter().map(Vec::len).chain([t.headers.len()]).max().unwrap_or(0);
    let right: Vec<bool> = (0..cols).map(|col| t.aligns_right(col)).collect();
    let mut head = String::new();
    if !t.groups.is_empty() {
        head.push_str("<tr>");
        for col in (0..cols).filter(|c| !t.groups.iter().any(|g| g.first < *c && *c < g.first + g.span)) {
            let _ = match t.groups.iter().find(|g| g.first == col && g.span > 0) {
                Some(g) => write!(head, "<th colspan=\"{}\">{}</th>", g.span, esc(&g.title)),
                None => write!(head, "<th></th>"),
            };
        }
        head.push_str("</tr>");
    }
    if t.headers.iter().any(|h| !h.is_empty()) {
        head.push_str("<tr>");
        for (col, h) in t.headers.iter().enumerate() {
            let class = if right[col] { " class=\"num\"" } else { "" };
            let _ = write!(head, "<th{class}>{}</th>", esc(h));
        }
        head.push_str("</tr>");
    }
    out.push_str("<div class=\"wide\"><table>");
    if !head.is_empty() {
        let _ = write!(out, "<thead>{head}</thead>");
    }
    out.push_str("<tbody>");
    for row in &t.rows {
        out.push_str("<tr>");
        for (col, cell) in row.iter().enumerate() {
            let class = if cell == NOT_MEASURED {
                " class=\"missing\""
            } else if right[col] {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
    for n in &t.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
    }
}

/// The verdict table: the answer cell stands out, unclear rows are muted,
/// and each row links to its chart on the page.
fn verdict(out: &mut String, v: &Verdict) {
    let t = v.table();
    out.push_str("<div class=\"wide\"><table class=\"verdict\"><thead><tr>");
    for h in &t.headers {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for (cells, r) in t.rows.iter().zip(&v.rows) {
        let _ = write!(out, "<tr{}>", if r.unclear { " class=\"unclear\"" } else { "" });
        // data-label: the column's name, shown beside each cell when a
        // narrow screen stacks the row as a card.
        for (col, (h, cell)) in t.headers.iter().zip(cells).enumerate() {
            let class = match h.as_str() {
                "answer" => " class=\"answer\"",
                _ if t.aligns_right(col) => " class=\"num\"",
                _ => "",
            };
            let cell = match h.as_str() {
                "chart" => format!("<a href=\"#fig-{}\">{}</a>", esc(&r.chart_id), esc(cell)),
                _ => esc(cell),
            };
            let _ = write!(out, "<td{class} data-label=\"{h}\">{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

fn figure(out: &mut String, f: &Figure) {
    let _ = write!(
        out,
        "<figure id=\"fig-{}\"><figcaption><span class=\"title\">{}</span>",
        esc(&f.id),
        esc(f.chart.title())
    );
    for line in &f.caption {
        let _ = write!(out, "<span class=\"note\">{}</span><br/>", esc(line));
    }
    out.push_str("</figcaption>\n");
    out.push_str(&f.chart.to_svg());
    out.push('\n');
    for finding in &f.findings {
        let _ = write!(out, "<p class=\"finding\">{}</p>", esc(finding));
    }
    out.push_str("<details><summary>Numbers behind the chart</summary>");
    table(out, &f.chart.table());
    out.push_str("</details></figure>\n");
}

fn block(out: &mut String, b: &Block) {
    match b {
        Block::Heading(h) => {
            let _ = writeln!(out, "<h3>{}</h3>", esc(h));
        }
        Block::Paragraph(p) => {
            let _ = writeln!(out, "<p>{}</p>", esc(p));
        }
        Block::Note(n) => {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
        }
        Block::List(items) => {
            out.push_str("<ul>");
            for item in items {
                let _ = write!(out, "<li>{}</li>", esc(item));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(t) => table(out, t),
        Block::Figure(f) => figure(out, f),
        Block::Verdict(rows) => verdict(out, rows),
    }
}

/// The whole page. `title` names the machines; `footer` says what made it.
pub fn page(title: &str, footer: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <meta name=\"generator\" content=\"blobbench {}\"/><title>{}</title><style>{CSS}</style></head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    );
    let _ = write!(out, "<header><h1>{}</h1></header>\n<nav><ul>", esc(title));
    for s in sections {
        let _ = write!(out, "<li><a href=\"#{}\">{}</a></li>", esc(&s.id), esc(&s.title));
    }
    out.push_str("</ul></nav>\n");
    for s in sections {
        let _ = writeln!(out, "<section id=\"{}\"><h2>{}</h2>", esc(&s.id), esc(&s.title));
        for b in &s.blocks {
            block(&mut out, b);
        }
        out.push_str("</section>\n");
    }
    let _ = write!(out, "<footer>{}</footer>\n</body></html>\n", esc(footer));
    out
}
