//! The report as format-neutral data: sections of paragraphs, tables and
//! figures. Section renderers build it from result files; the HTML,
//! Markdown and text writers each turn the same document into their format,
//! so a new kind of result needs one section renderer and no writer changes.

use super::svg::{fmt_tick, fmt_value, BarChart, Heatmap, LineChart, PercentileChart};

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Anchor in the HTML page, unique within a report.
    pub id: String,
    pub title: String,
    /// Shown by the terminal summary too, not only by HTML and Markdown.
    pub in_summary: bool,
    pub blocks: Vec<Block>,
}

// A report holds a few dozen blocks: boxing figures would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(String),
    Paragraph(String),
    /// Small print: what a figure includes and excludes.
    Note(String),
    List(Vec<String>),
    Table(Table),
    Figure(Figure),
    /// The verdict: one answered question per row, linking to its chart.
    Verdict(Verdict),
}

impl Section {
    /// Leaves out every column that names the result file (the verdict's
    /// and each table's [`ColumnKind::Result`]): for a document made from
    /// one result, where that column would say the same on every row.
    pub fn drop_result_columns(&mut self) {
        for b in &mut self.blocks {
            match b {
                Block::Table(t) => t.drop_result_columns(),
                Block::Verdict(v) => v.result_column = false,
                _ => {}
            }
        }
    }
}

/// The verdict's rows, and whether its result column is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub rows: Vec<VerdictRow>,
    pub result_column: bool,
}

impl Verdict {
    pub fn new(rows: Vec<VerdictRow>) -> Verdict {
        Verdict { rows, result_column: true }
    }

    /// The rows as every writer lays them out, the chart named by its title.
    pub fn table(&self) -> Table {
        use ColumnKind::{Figure, Result, Text};
        let headers = ["question", "result", "answer", "factor", "uncertainty", "compared", "chart"];
        let cells = |r: &VerdictRow| {
            [&r.question, &r.result, &r.outcome, &r.factor, &r.uncertainty, &r.compared, &r.chart_title]
                .map(String::clone)
        };
        let rows = self.rows.iter().map(|r| cells(r).to_vec()).collect();
        let mut t = Table::new(&headers, rows).with_kinds(&[Text, Result, Text, Figure]);
        if !self.result_column {
            t.drop_result_columns();
        }
        t
    }
}

/// One row of the verdict, as every writer shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictRow {
    pub question: String,
    /// The result file's label.
    pub result: String,
    /// "SQLite, blob API: 1.93x faster" or "no clear winner ...".
    pub outcome: String,
    pub factor: String,
    pub uncertainty: String,
    /// "SQLite, blob API vs files, one directory (open/read)".
    pub compared: String,
    pub chart_id: String,
    pub chart_title: String,
    /// The interval spans 1.0.
    pub unclear: bool,
}

/// A chart with its caption and the sentences computed from its data.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File stem of `charts/<id>.svg`; unique within a report.
    pub id: String,
    pub chart: Chart,
    pub caption: Vec<String>,
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    Bars(BarChart),
    Lines(LineChart),
    Heatmap(Heatmap),
    Percentiles(PercentileChart),
}

/// Rows under column headers (all empty: a label/value list without a
/// header line), with what each column holds, titles over groups of
/// columns, and notes under the table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Each column's kind, by position; a column past the end is `Auto`.
    pub kinds: Vec<ColumnKind>,
    /// Titles over runs of adjacent columns ("alone", "with a writer").
    pub groups: Vec<ColumnGroup>,
    /// Lines under the table: what its marks mean, why something failed.
    pub notes: Vec<String>,
}

/// What a column holds, which decides its alignment and whether it stays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnKind {
    /// Figures when every cell is a number (or blank), else words.
    #[default]
    Auto,
    /// Words, aligned left.
    Text,
    /// Figures with or without a unit ("1.23k"), aligned right, header too.
    Figure,
    /// Factors against 1.0, aligned right; the terminal may colour them.
    Ratio,
    /// The result file's name: left out of a document made from one result.
    Result,
}

/// A title over `span` adjacent columns from column `first`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnGroup {
    pub title: String,
    pub first: usize,
    pub span: usize,
}

impl Table {
    /// A table under these column headers.
    pub fn new(headers: &[&str], rows: Vec<Vec<String>>) -> Table {
        Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows, ..Table::default() }
    }

    /// The columns' kinds, from the first.
    pub fn with_kinds(mut self, kinds: &[ColumnKind]) -> Table {
        self.kinds = kinds.to_vec();
        self
    }

    /// A title over `span` columns from column `first`.
    pub fn with_group(mut self, title: &str, first: usize, span: usize) -> Table {
        self.groups.push(ColumnGroup { title: title.to_string(), first, span });
        self
    }

    pub fn with_notes(mut self, notes: Vec<String>) -> Table {
        self.notes = notes;
        self
    }

    /// Column `col`'s kind, `Auto` decided by its cells.
    pub fn kind(&self, col: usize) -> ColumnKind {
        match self.kinds.get(col).copied().unwrap_or_default() {
            ColumnKind::Auto => {
                let mut cells = self.rows.iter().filter_map(|r| r.get(col)).map(String::as_str);
                let blank = |c: &str| ["", "-", NOT_MEASURED].contains(&c);
                let figures = cells.clone().any(is_number) && cells.all(|c| blank(c) || is_number(c));
                if figures {
                    ColumnKind::Figure
                } else {
                    ColumnKind::Text
                }
            }
            kind => kind,
        }
    }

    /// Whether column `col` holds figures, which line up on the right.
    pub fn aligns_right(&self, col: usize) -> bool {
        matches!(self.kind(col), ColumnKind::Figure | ColumnKind::Ratio)
    }

    /// Leaves out the [`ColumnKind::Result`] columns.
    pub fn drop_result_columns(&mut self) {
        while let Some(col) = self.kinds.iter().position(|k| *k == ColumnKind::Result) {
            self.kinds.remove(col);
            for row in std::iter::once(&mut self.headers).chain(&mut self.rows).filter(|r| col < r.len()) {
                row.remove(col);
            }
            for g in &mut self.groups {
                let (before, inside) = (col < g.first, g.first <= col && col < g.first + g.span);
                (g.first, g.span) = (g.first - usize::from(before), g.span - usize::from(inside));
            }
        }
    }
}

/// What a table cell says when an experiment is absent from a file.
pub const NOT_MEASURED: &str = "not measured";

/// A cell that is just a figure ("1,234", "12.5%", "+2.5%"), which tables
/// align right; anything with words or units stays left-aligned.
fn is_number(cell: &str) -> bool {
    cell.chars().any(|c| c.is_ascii_digit()) && cell.chars().all(|c| c.is_ascii_digit() || ".,%+-".contains(c))
}

impl Chart {
    pub fn title(&self) -> &str {
        match self {
            Chart::Bars(c) => &c.title,
            Chart::Lines(c) => &c.title,
            Chart::Heatmap(c) => &c.title,
            Chart::Percentiles(c) => &c.title,
        }
    }

    pub fn to_svg(&self) -> String {
        match self {
            Chart::Bars(c) => c.to_svg(),
            Chart::Lines(c) => c.to_svg(),
            Chart::Heatmap(c) => c.to_svg(),
            Chart::Percentiles(c) => c.to_svg(),
        }
    }

    /// The numbers behind the chart, for formats that cannot show a picture.
    pub fn table(&self) -> Table {
        let cell = |v: &Option<f64>| v.filter(|x| x.is_finite()).map_or_else(|| NOT_MEASURED.to_string(), fmt_value);
        let grid = |corner: String, cols: &[String], names: &[String], values: &[Vec<Option<f64>>]| Table {
            headers: std::iter::once(corner).chain(cols.iter().cloned()).collect(),
            rows: names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    let row = values.get(i);
                    std::iter::once(name.clone())
                        .chain((0..cols.len()).map(|j| cell(&row.and_then(|r| r.get(j)).copied().flatten())))
                        .collect()
                })
                .collect(),
            ..Table::default()
        };
        match self {
            Chart::Bars(c) => {
                let mut t = grid(String::new(), &c.series, &c.groups, &c.values);
                // The whisker beside its bar's value: "1.93 (1.71-2.10)".
                for (g, row) in t.rows.iter_mut().enumerate() {
                    for (s, cell) in row.iter_mut().skip(1).enumerate() {
                        if let Some((lo, hi)) = c.errors.get(g).and_then(|r| r.get(s)).copied().flatten() {
                            if *cell != NOT_MEASURED && lo < hi {
                                cell.push_str(&format!(" ({}-{})", fmt_value(lo), fmt_value(hi)));
                            }
                        }
                    }
                }
                t
            }
            Chart::Heatmap(c) => {
                let mut t = grid(format!("{} \\ {}", c.y_label, c.x_label), &c.columns, &c.rows, &c.values);
                for (i, row) in t.rows.iter_mut().enumerate() {
                    for (j, cell) in row.iter_mut().skip(1).enumerate() {
                        if c.noisy.get(i).and_then(|r| r.get(j)).copied().unwrap_or(false) && *cell != NOT_MEASURED {
                            cell.push_str(" ~");
                        }
                    }
                }
                t
            }
            Chart::Percentiles(c) => {
                let names: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
                let n = super::svg::PERCENTILES.len() + 1;
                let points: Vec<String> = (0..n).map(super::svg::percentiles::point_name).collect();
                let by_point: Vec<Vec<Option<f64>>> =
                    (0..n).map(|i| c.series.iter().map(|s| s.values_us.get(i).copied().flatten()).collect()).collect();
                grid("latency (µs)".to_string(), &names, &points, &by_point)
            }
            Chart::Lines(c) => {
                let names: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
                let xs: Vec<String> = c.x.iter().map(|x| fmt_tick(*x)).collect();
                let by_x: Vec<Vec<Option<f64>>> = (0..c.x.len())
                    .map(|i| c.series.iter().map(|s| s.values.get(i).copied().flatten()).collect())
                    .collect();
                grid(c.x_label.clone(), &names, &xs, &by_x)
            }
        }
    }
}

/// Every figure of a document, in order.
pub fn figures(sections: &[Section]) -> impl Iterator<Item = &Figure> {
    sections.iter().flat_map(|s| &s.blocks).filter_map(|b| match b {
        Block::Figure(f) => Some(f),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::format::svg::Series;

    #[test]
    fn chart_tables_name_missing_values() {
        let bars = Chart::Bars(BarChart {
            title: "t".into(),
            y_label: "y".into(),
            groups: vec!["a".into(), "b".into()],
            series: vec!["db".into(), "files".into()],
            values: vec![vec![Some(1.0), Some(1.934)], vec![Some(1.0)]],
            reference: Some(1.0),
            errors: Vec::new(),
            note: String::new(),
        });
        let t = bars.table();
        assert_eq!(t.headers, ["", "db", "files"]);
        assert_eq!(t.rows, [["a", "1.00", "1.93"], ["b", "1.00", NOT_MEASURED]]);

        let lines = Chart::Lines(LineChart {
            title: "t".into(),
            x_label: "threads".into(),
            y_label: "ops/s".into(),
            x_log: false,
            y_log: false,
            x: vec![1.0, 2.0],
            series: vec![Series { name: "db".into(), values: vec![Some(5.0), None], intervals: Vec::new() }],
            reference: None,
            note: String::new(),
        });
        assert_eq!(lines.table().rows, [["1", "5.00"], ["2", NOT_MEASURED]]);
    }

    #[test]
    fn result_columns_are_left_out_with_their_place_in_groups() {
        let row = |c: &[&str]| c.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let mut t = Table::new(&["a", "machine", "b"], vec![row(&["1", "host", "2"])])
            .with_kinds(&[ColumnKind::Auto, ColumnKind::Result])
            .with_group("both", 0, 3)
            .with_group("last", 2, 1);
        t.drop_result_columns();
        assert_eq!((t.headers, t.rows), (row(&["a", "b"]), vec![row(&["1", "2"])]));
        assert_eq!(t.groups.iter().map(|g| (g.first, g.span)).collect::<Vec<_>>(), [(0, 2), (1, 1)]);
    }

    #[test]
    fn numbers_are_told_from_text() {
        for n in ["1", "1,234", "12.5%", "+2.5%", "-0.3"] {
            assert!(is_number(n), "{n}");
        }
        for t in ["", "-", "10.00 MB", "2017-06-05 14:03 UTC", "host-1", "not measured"] {
            assert!(!is_number(t), "{t}");
        }
    }
}
