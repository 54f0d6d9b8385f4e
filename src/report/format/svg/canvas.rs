//! What every chart draws with: the canvas and its shapes, the layout
//! constants, the palette, axis steps, label cutting and escaping.

use std::fmt::Write;

use super::scale::YScale;

/// Colour-blind-safe palette (Okabe and Ito); series take colours in order.
const PALETTE: [&str; 8] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999", "#000000"];
/// Title and the note under it (runs behind the chart).
pub(super) const TITLE_H: f64 = 56.0;
pub(super) const LEFT: f64 = 70.0;
pub(super) const RIGHT: f64 = 24.0;
pub(super) const PLOT_H: f64 = 260.0;
pub(super) const MIN_W: f64 = 640.0;
/// Longest label drawn in full, by the label's class; longer ones are cut
/// and the full text is in a tooltip.
pub(super) fn label_limit(class: &str) -> usize {
    match class {
        "axis-label" => 64,
        "legend" => 44,
        "column" => 10,
        _ => 28,
    }
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

/// An x value as an axis names it: "8" threads, not "8.00".
pub fn fmt_tick(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        fmt_value(v)
    }
}

/// A y tick as the axis labels it: like a value, with the digits a tick
/// below 0.01 needs ("0.005", not "0.01").
pub(super) fn fmt_axis(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        let digits = (-v.abs().log10()).ceil().clamp(3.0, 12.0) as usize;
        format!("{v:.digits$}")
    } else {
        fmt_value(v)
    }
}

pub(super) fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

pub(super) fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Cuts a label to `max` characters (not bytes).
pub(super) fn short(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        let cut: String = label.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

/// The SVG text being built, with the few shapes the charts use.
pub(super) struct Canvas {
    pub(super) out: String,
}

impl Canvas {
    pub(super) fn new(width: f64, height: f64, title: &str) -> Canvas {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" role="img" aria-label="{t}" font-family="sans-serif" font-size="12">"#,
            w = width,
            h = height,
            t = esc(title)
        );
        let _ = write!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
        let _ = write!(
            out,
            r#"<text class="title" x="{:.1}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
            width / 2.0,
            esc(title)
        );
        Canvas { out }
    }

    /// The small line under the title: how many runs, what whiskers mean.
    pub(super) fn note(&mut self, width: f64, note: &str) {
        if !note.is_empty() {
            let max = ((width - 20.0) / 6.0) as usize;
            self.label_within("note", (width / 2.0, 42.0), "middle", 0.0, note, max.max(20));
        }
    }

    pub(super) fn line(&mut self, class: &str, (x1, y1): (f64, f64), (x2, y2): (f64, f64), style: &str) {
        let _ =
            write!(self.out, r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}/>"#);
    }

    /// Text at (x, y); `rotate` turns it about that point (degrees).
    pub(super) fn text(
        &mut self,
        class: &str,
        (x, y): (f64, f64),
        anchor: &str,
        rotate: f64,
        attrs: &str,
        content: &str,
    ) {
        let transform =
            if rotate == 0.0 { String::new() } else { format!(r#" transform="rotate({rotate:.0} {x:.1} {y:.1})""#) };
        let _ = write!(
            self.out,
            r#"<text class="{class}" x="{x:.1}" y="{y:.1}" text-anchor="{anchor}"{transform} {attrs}>{}</text>"#,
            esc(content)
        );
    }

    /// A label cut to length, with the full text as a tooltip.
    pub(super) fn label(&mut self, class: &str, at: (f64, f64), anchor: &str, rotate: f64, content: &str) {
        self.label_within(class, at, anchor, rotate, content, label_limit(class));
    }

    /// A label cut to at most `max` characters, to fit the space it has.
    pub(super) fn label_within(
        &mut self,
        class: &str,
        at: (f64, f64),
        anchor: &str,
        rotate: f64,
        content: &str,
        max: usize,
    ) {
        let shown = short(content, max);
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
    pub(super) fn y_axis(&mut self, top: f64, right: f64, scale: &YScale, y_label: &str) {
        for v in scale.ticks(PLOT_H) {
            let y = top + PLOT_H - scale.fraction(v) * PLOT_H;
            self.line("grid", (LEFT, y), (right, y), r##"stroke="#e0e0e0""##);
            self.text("tick", (LEFT - 6.0, y + 4.0), "end", 0.0, "", &fmt_axis(v));
        }
        self.line("axis", (LEFT, top), (LEFT, top + PLOT_H), r##"stroke="#333333""##);
        self.line("axis", (LEFT, top + PLOT_H), (right, top + PLOT_H), r##"stroke="#333333""##);
        self.label("axis-label", (18.0, top + PLOT_H / 2.0), "middle", -90.0, y_label);
    }

    /// The dashed line at `reference` (1.0 for a ratio), when it is on the axis.
    pub(super) fn reference(&mut self, top: f64, right: f64, scale: &YScale, reference: Option<f64>) {
        if let Some(r) = finite(reference).filter(|r| scale.contains(*r)) {
            let y = top + PLOT_H - scale.fraction(r) * PLOT_H;
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
    pub(super) fn legend(&mut self, top: f64, width: f64, names: &[String]) -> f64 {
        let (mut x, mut y) = (LEFT, top);
        for (i, name) in names.iter().enumerate() {
            let w = 28.0 + 7.0 * short(name, label_limit("legend")).chars().count() as f64;
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

    pub(super) fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// Rough height a legend will take, so the canvas can be sized first.
pub(super) fn legend_height(width: f64, names: &[String]) -> f64 {
    let mut x = LEFT;
    let mut rows = if names.is_empty() { 0.0 } else { 1.0 };
    for name in names {
        let w = 28.0 + 7.0 * short(name, label_limit("legend")).chars().count() as f64;
        if x + w > width - RIGHT && x > LEFT {
            x = LEFT;
            rows += 1.0;
        }
        x += w;
    }
    rows * 20.0
}
