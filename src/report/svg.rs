//! Hand-made SVG charts: a grouped bar chart (the article's five charts), a
//! line chart (concurrency, blob-size sweeps) and a diverging heatmap (the
//! internal-vs-external matrix). Each is plain data in, a self-contained SVG
//! string out: no scripts, no external fonts, every label escaped, so the
//! same string works as a standalone file and inline in the HTML page.
//!
//! A missing value (`None`, or a non-finite number) is drawn as "not
//! measured" rather than as zero, so a gap is never mistaken for a result.

use std::fmt::Write;

/// Colour-blind-safe palette (Okabe and Ito); series take colours in order.
const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999", "#000000",
];
const TITLE_H: f64 = 40.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 24.0;
const PLOT_H: f64 = 260.0;
const MIN_W: f64 = 640.0;
/// Longest axis or legend label drawn in full; the full text is in a tooltip.
const LABEL_CHARS: usize = 28;

/// Bars grouped by category (one group per machine), one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    /// One group of bars per entry, labelled under the x axis.
    pub groups: Vec<String>,
    /// One bar per series in every group, named in the legend.
    pub series: Vec<String>,
    /// `values[group][series]`.
    pub values: Vec<Vec<Option<f64>>>,
    /// A dashed horizontal line, e.g. at 1.0 for a ratio.
    pub reference: Option<f64>,
}

/// One named line of a [`LineChart`], with a value (or a gap) per x.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// Lines over a shared numeric x axis (threads, blob sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis; ignored (linear) unless every x is above zero.
    pub x_log: bool,
    pub x: Vec<f64>,
    pub series: Vec<Series>,
    pub reference: Option<f64>,
}

/// A grid of cells coloured on a log scale centred on `center` (blue above,
/// red below, white at the centre).
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub columns: Vec<String>,
    pub rows: Vec<String>,
    /// `values[row][column]`.
    pub values: Vec<Vec<Option<f64>>>,
    pub center: f64,
}

/// Escapes text for XML and HTML, in element content and in attributes.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 at all.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A value as a chart labels it: two decimals for ratios, fewer for big numbers.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Cuts a label to [`LABEL_CHARS`] characters (not bytes).
fn short(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let cut: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{cut}…")
    }
}

/// A round upper bound for an axis and its tick step (1, 2, 2.5 or 5 x 10^k).
fn nice_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// The SVG text being built, with the few shapes the charts use.
struct Canvas {
    out: String,
}

impl Canvas {
    fn new(width: f64, height: f64, title: &str) -> Canvas {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">"#,
            w = width,
            h = height,
            t = esc(title)
        );
        let _ = write!(
            out,
            r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
        );
        let _ = write!(
            out,
            r#"<text class="title" x="{:.1}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            width / 2.0,
            esc(title)
        );
        Canvas { out }
    }

    fn line(&mut self, class: &str, (x1, y1): (f64, f64), (x2, y2): (f64, f64), style: &str) {
        let _ = write!(
            self.out,
            r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}/>"#
        );
    }

    /// Text at (x, y); `rotate` turns it about that point (degrees).
    fn text(
        &mut self,
        class: &str,
        (x, y): (f64, f64),
        anchor: &str,
        rotate: f64,
        attrs: &str,
        content: &str,
    ) {
        let transform = if rotate == 0.0 {
            String::new()
        } else {
            format!(r#" transform="rotate({rotate:.0} {x:.1} {y:.1})""#)
        };
        let _ = write!(
            self.out,
            r#"<text class="{class}" x="{x:.1}" y="{y:.1}" text-anchor="{anchor}"{transform} {attrs}>{}</text>"#,
            esc(content)
        );
    }

    /// A label cut to length, with the full text as a tooltip.
    fn label(&mut self, class: &str, at: (f64, f64), anchor: &str, rotate: f64, content: &str) {
        let shown = short(content);
        if shown == content {
            self.text(class, at, anchor, rotate, "", content);
        } else {
            let _ = write!(self.out, "<g><title>{}</title>", esc(content));
            self.text(class, at, anchor, rotate, "", &shown);
            self.out.push_str("</g>");
        }
    }

    /// Horizontal gridlines, tick labels and the rotated y label of a plot
    /// whose area is `top..top + PLOT_H` and `LEFT..right`.
    fn y_axis(&mut self, top: f64, right: f64, y_max: f64, step: f64, y_label: &str) {
        let mut v = 0.0;
        while v <= y_max + step / 2.0 {
            let y = top + PLOT_H - v / y_max * PLOT_H;
            self.line("grid", (LEFT, y), (right, y), r##"stroke="#e0e0e0""##);
            self.text("tick", (LEFT - 6.0, y + 4.0), "end", 0.0, "", &fmt_value(v));
            v += step;
        }
        self.line(
            "axis",
            (LEFT, top),
            (LEFT, top + PLOT_H),
            r##"stroke="#333333""##,
        );
        self.line(
            "axis",
            (LEFT, top + PLOT_H),
            (right, top + PLOT_H),
            r##"stroke="#333333""##,
        );
        self.label(
            "axis-label",
            (18.0, top + PLOT_H / 2.0),
            "middle",
            -90.0,
            y_label,
        );
    }

    fn reference(&mut self, top: f64, right: f64, y_max: f64, reference: Option<f64>) {
        if let Some(r) = finite(reference).filter(|r| *r >= 0.0 && *r <= y_max) {
            let y = top + PLOT_H - r / y_max * PLOT_H;
            self.line(
                "reference",
                (LEFT, y),
                (right, y),
                r##"stroke="#333333" stroke-width="1.5" stroke-dasharray="6 4""##,
            );
        }
    }

    /// Colour swatches with series names, wrapped to the chart width;
    /// returns the height used.
    fn legend(&mut self, top: f64, width: f64, names: &[String]) -> f64 {
        let (mut x, mut y) = (LEFT, top);
        for (i, name) in names.iter().enumerate() {
            let w = 28.0 + 7.0 * short(name).chars().count() as f64;
            if x + w > width - RIGHT && x > LEFT {
                x = LEFT;
                y += 20.0;
            }
            let _ = write!(
                self.out,
                r#"<rect class="swatch" x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/>"#,
                y - 10.0,
                colour(i)
            );
            self.label("legend", (x + 18.0, y), "start", 0.0, name);
            x += w;
        }
        if names.is_empty() {
            0.0
        } else {
            y - top + 20.0
        }
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// Rough height a legend will take, so the canvas can be sized first.
fn legend_height(width: f64, names: &[String]) -> f64 {
    let mut x = LEFT;
    let mut rows = if names.is_empty() { 0.0 } else { 1.0 };
    for name in names {
        let w = 28.0 + 7.0 * short(name).chars().count() as f64;
        if x + w > width - RIGHT && x > LEFT {
            x = LEFT;
            rows += 1.0;
        }
        x += w;
    }
    rows * 20.0
}

impl BarChart {
    pub fn to_svg(&self) -> String {
        let n_series = self.series.len().max(1);
        let bar_w = if n_series > 4 { 22.0 } else { 34.0 };
        let group_w = n_series as f64 * bar_w + 30.0;
        let width = (LEFT + RIGHT + group_w * self.groups.len().max(1) as f64).max(MIN_W);
        let top = TITLE_H + 10.0;
        let legend_top = top + PLOT_H + 46.0;
        let height = legend_top + legend_height(width, &self.series) + 6.0;
        let mut c = Canvas::new(width, height, &self.title);

        let data_max = self
            .values
            .iter()
            .flatten()
            .filter_map(|v| finite(*v))
            .fold(0.0, f64::max);
        let (y_max, step) = nice_axis(data_max.max(finite(self.reference).unwrap_or(0.0)));
        let right = width - RIGHT;
        c.y_axis(top, right, y_max, step, &self.y_label);

        // Groups are spread over the plot width, bars centred in each group.
        let slot = (right - LEFT) / self.groups.len().max(1) as f64;
        for (g, group) in self.groups.iter().enumerate() {
            let x0 = LEFT + slot * g as f64 + (slot - n_series as f64 * bar_w) / 2.0;
            for (s, name) in self.series.iter().enumerate() {
                let x = x0 + s as f64 * bar_w;
                let cx = x + bar_w / 2.0;
                let value = self
                    .values
                    .get(g)
                    .and_then(|row| row.get(s))
                    .copied()
                    .and_then(finite);
                match value {
                    Some(v) => {
                        let h = v.max(0.0) / y_max * PLOT_H;
                        let y = top + PLOT_H - h;
                        let _ = write!(
                            c.out,
                            r#"<rect class="bar" x="{:.1}" y="{y:.2}" width="{:.1}" height="{h:.2}" fill="{}" data-group="{g}" data-series="{s}" data-value="{v}"><title>{}: {}: {}</title></rect>"#,
                            x + 2.0,
                            bar_w - 4.0,
                            colour(s),
                            esc(group),
                            esc(name),
                            fmt_value(v)
                        );
                        c.text(
                            "value",
                            (cx, y - 4.0),
                            "middle",
                            0.0,
                            r#"font-size="10""#,
                            &fmt_value(v),
                        );
                    }
                    None => {
                        let _ = write!(
                            c.out,
                            r#"<g class="missing" data-group="{g}" data-series="{s}">"#
                        );
                        c.text(
                            "missing",
                            (cx + 4.0, top + PLOT_H - 6.0),
                            "start",
                            -90.0,
                            r##"font-size="10" fill="#777777""##,
                            "not measured",
                        );
                        c.out.push_str("</g>");
                    }
                }
            }
            c.label(
                "group",
                (LEFT + slot * (g as f64 + 0.5), top + PLOT_H + 20.0),
                "middle",
                0.0,
                group,
            );
        }
        c.reference(top, right, y_max, self.reference);
        c.legend(legend_top, width, &self.series);
        c.finish()
    }
}

impl LineChart {
    fn log_x(&self) -> bool {
        self.x_log && !self.x.is_empty() && self.x.iter().all(|x| x.is_finite() && *x > 0.0)
    }

    pub fn to_svg(&self) -> String {
        let width = MIN_W.max(LEFT + RIGHT + 48.0 * self.x.len() as f64);
        let top = TITLE_H + 10.0;
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let legend_top = top + PLOT_H + 62.0;
        let height = legend_top + legend_height(width, &names) + 6.0;
        let mut c = Canvas::new(width, height, &self.title);
        let right = width - RIGHT;

        let data_max = self
            .series
            .iter()
            .flat_map(|s| s.values.iter())
            .filter_map(|v| finite(*v))
            .fold(0.0, f64::max);
        let (y_max, step) = nice_axis(data_max.max(finite(self.reference).unwrap_or(0.0)));
        c.y_axis(top, right, y_max, step, &self.y_label);

        let log = self.log_x();
        let tx = |x: f64| if log { x.log10() } else { x };
        let xs: Vec<f64> = self
            .x
            .iter()
            .map(|x| tx(*x))
            .filter(|x| x.is_finite())
            .collect();
        let (lo, hi) = (
            xs.iter().copied().fold(f64::INFINITY, f64::min),
            xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let span = if hi > lo { hi - lo } else { 1.0 };
        let pad = 16.0;
        let px = |x: f64| {
            let t = if hi > lo { (tx(x) - lo) / span } else { 0.5 };
            LEFT + pad + t * (right - LEFT - 2.0 * pad)
        };
        let py = |v: f64| top + PLOT_H - v.max(0.0) / y_max * PLOT_H;

        // One tick per x value, thinned out when they would crowd.
        let every = self.x.len().div_ceil(12).max(1);
        for x in self.x.iter().step_by(every).filter(|x| x.is_finite()) {
            c.line(
                "tick",
                (px(*x), top + PLOT_H),
                (px(*x), top + PLOT_H + 4.0),
                r##"stroke="#333333""##,
            );
            c.text(
                "tick",
                (px(*x), top + PLOT_H + 18.0),
                "middle",
                0.0,
                "",
                &fmt_value(*x),
            );
        }
        let x_label = if log {
            format!("{} (log scale)", self.x_label)
        } else {
            self.x_label.clone()
        };
        c.label(
            "axis-label",
            ((LEFT + right) / 2.0, top + PLOT_H + 40.0),
            "middle",
            0.0,
            &x_label,
        );
        c.reference(top, right, y_max, self.reference);

        for (s, series) in self.series.iter().enumerate() {
            // A gap (missing value) breaks the line into separate segments.
            let mut segment: Vec<(f64, f64)> = Vec::new();
            let points: Vec<Option<(f64, f64)>> = self
                .x
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    finite(series.values.get(i).copied().flatten())
                        .filter(|_| x.is_finite())
                        .map(|v| (*x, v))
                })
                .collect();
            for p in points.iter().chain(std::iter::once(&None)) {
                match p {
                    Some((x, v)) => segment.push((px(*x), py(*v))),
                    None => {
                        if segment.len() > 1 {
                            let pts: Vec<String> = segment
                                .iter()
                                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                                .collect();
                            let _ = write!(
                                c.out,
                                r#"<polyline class="line" data-series="{s}" points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
                                pts.join(" "),
                                colour(s)
                            );
                        }
                        segment.clear();
                    }
                }
            }
            for (x, v) in points.iter().flatten() {
                let _ = write!(
                    c.out,
                    r#"<circle class="point" data-series="{s}" data-value="{v}" cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{}: {}: {}</title></circle>"#,
                    px(*x),
                    py(*v),
                    colour(s),
                    esc(&series.name),
                    fmt_value(*x),
                    fmt_value(*v)
                );
            }
        }
        c.legend(legend_top, width, &names);
        c.finish()
    }
}

/// Fill for a heatmap cell: white at `center`, blue above, red below, on a
/// log scale saturating at `span` times (or 1/`span`) the centre.
pub fn diverging_colour(v: f64, center: f64, span: f64) -> String {
    let t = ((v / center).ln() / span.ln()).clamp(-1.0, 1.0);
    let (r, g, b) = if t >= 0.0 {
        (33.0, 102.0, 172.0)
    } else {
        (178.0, 24.0, 43.0)
    };
    let a = t.abs();
    let mix = |c: f64| (255.0 + (c - 255.0) * a).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b))
}

impl Heatmap {
    pub fn to_svg(&self) -> String {
        let (cell_w, cell_h) = (72.0, 30.0);
        let left = 150.0;
        let top = TITLE_H + 40.0;
        let grid_w = cell_w * self.columns.len() as f64;
        let width = MIN_W.max(left + grid_w + RIGHT);
        let grid_h = cell_h * self.rows.len() as f64;
        let height = top + grid_h + 90.0;
        let mut c = Canvas::new(width, height, &self.title);
        let center = if self.center.is_finite() && self.center > 0.0 {
            self.center
        } else {
            1.0
        };

        let logs = self
            .values
            .iter()
            .flatten()
            .filter_map(|v| finite(*v))
            .filter(|v| *v > 0.0)
            .map(|v| (v / center).ln().abs());
        let span = logs.fold(2f64.ln(), f64::max).exp();

        c.label(
            "axis-label",
            (left + grid_w / 2.0, top - 26.0),
            "middle",
            0.0,
            &self.x_label,
        );
        for (j, col) in self.columns.iter().enumerate() {
            c.label(
                "column",
                (left + cell_w * (j as f64 + 0.5), top - 8.0),
                "middle",
                0.0,
                col,
            );
        }
        c.label(
            "axis-label",
            (16.0, top + grid_h / 2.0),
            "middle",
            -90.0,
            &self.y_label,
        );
        for (i, row) in self.rows.iter().enumerate() {
            let y = top + cell_h * i as f64;
            c.label("row", (left - 8.0, y + cell_h / 2.0 + 4.0), "end", 0.0, row);
            for j in 0..self.columns.len() {
                let x = left + cell_w * j as f64;
                let value = self
                    .values
                    .get(i)
                    .and_then(|r| r.get(j))
                    .copied()
                    .and_then(finite);
                let (fill, text, ink) = match value {
                    Some(v) if v > 0.0 => {
                        let strong = ((v / center).ln().abs() / span.ln()) > 0.6;
                        (
                            diverging_colour(v, center, span),
                            fmt_value(v),
                            if strong { "#ffffff" } else { "#111111" },
                        )
                    }
                    Some(v) => ("#dddddd".to_string(), fmt_value(v), "#111111"),
                    None => ("#eeeeee".to_string(), "–".to_string(), "#777777"),
                };
                let _ = write!(
                    c.out,
                    r##"<rect class="cell" x="{x:.1}" y="{y:.1}" width="{cell_w:.1}" height="{cell_h:.1}" fill="{fill}" stroke="#ffffff" data-row="{i}" data-column="{j}"/>"##
                );
                c.text(
                    "cell-value",
                    (x + cell_w / 2.0, y + cell_h / 2.0 + 4.0),
                    "middle",
                    0.0,
                    &format!(r#"fill="{ink}""#),
                    &text,
                );
            }
        }
        // Colour key: nine steps from 1/span to span.
        let key_y = top + grid_h + 30.0;
        for k in 0..9 {
            let v = center * span.powf((k as f64 - 4.0) / 4.0);
            let _ = write!(
                c.out,
                r##"<rect class="key" x="{:.1}" y="{key_y:.1}" width="24" height="12" fill="{}"/>"##,
                left + 24.0 * k as f64,
                diverging_colour(v, center, span)
            );
        }
        c.text(
            "key",
            (left, key_y + 28.0),
            "start",
            0.0,
            "",
            &fmt_value(center / span),
        );
        c.text(
            "key",
            (left + 24.0 * 4.5, key_y + 28.0),
            "middle",
            0.0,
            "",
            &fmt_value(center),
        );
        c.text(
            "key",
            (left + 24.0 * 9.0, key_y + 28.0),
            "end",
            0.0,
            "",
            &fmt_value(center * span),
        );
        c.finish()
    }
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
