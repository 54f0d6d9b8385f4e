//! The heatmap with a diverging colour scale centred on a value (1.0 for ratios).

use std::fmt::Write;

use super::canvas::{finite, fmt_value, Canvas, MIN_W, RIGHT, TITLE_H};

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
    /// `noisy[row][column]`: cells marked "~" (no clear winner, or runs
    /// that varied too much: the caller's note says which).
    pub noisy: Vec<Vec<bool>>,
    /// Under the title: runs behind each cell, what "~" means.
    pub note: String,
}

/// Fill for a heatmap cell: white at `center`, blue above, red below, on a
/// log scale saturating at `span` times (or 1/`span`) the centre.
pub fn diverging_colour(v: f64, center: f64, span: f64) -> String {
    let t = ((v / center).ln() / span.ln()).clamp(-1.0, 1.0);
    let (r, g, b) = if t >= 0.0 { (33.0, 102.0, 172.0) } else { (178.0, 24.0, 43.0) };
    let a = t.abs();
    let mix = |c: f64| (255.0 + (c - 255.0) * a).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b))
}

impl Heatmap {
    pub fn to_svg(&self) -> String {
        let (cell_w, cell_h) = (72.0, 30.0);
        let left = 150.0;
        let top = TITLE_H + 30.0;
        let grid_w = cell_w * self.columns.len() as f64;
        let width = MIN_W.max(left + grid_w + RIGHT);
        let grid_h = cell_h * self.rows.len() as f64;
        let height = top + grid_h + 90.0;
        let mut c = Canvas::new(width, height, &self.title);
        c.note(width, &self.note);
        let center = if self.center.is_finite() && self.center > 0.0 { self.center } else { 1.0 };

        let logs = self
            .values
            .iter()
            .flatten()
            .filter_map(|v| finite(*v))
            .filter(|v| *v > 0.0)
            .map(|v| (v / center).ln().abs());
        let span = logs.fold(2f64.ln(), f64::max).exp();

        c.label("axis-label", (left + grid_w / 2.0, top - 26.0), "middle", 0.0, &self.x_label);
        for (j, col) in self.columns.iter().enumerate() {
            c.label("column", (left + cell_w * (j as f64 + 0.5), top - 8.0), "middle", 0.0, col);
        }
        c.label("axis-label", (16.0, top + grid_h / 2.0), "middle", -90.0, &self.y_label);
        for (i, row) in self.rows.iter().enumerate() {
            let y = top + cell_h * i as f64;
            c.label("row", (left - 8.0, y + cell_h / 2.0 + 4.0), "end", 0.0, row);
            for j in 0..self.columns.len() {
                let x = left + cell_w * j as f64;
                let value = self.values.get(i).and_then(|r| r.get(j)).copied().and_then(finite);
                let (fill, text, ink) = match value {
                    Some(v) if v > 0.0 => {
                        let strong = ((v / center).ln().abs() / span.ln()) > 0.6;
                        (diverging_colour(v, center, span), fmt_value(v), if strong { "#ffffff" } else { "#111111" })
                    }
                    Some(v) => ("#dddddd".to_string(), fmt_value(v), "#111111"),
                    None => ("#eeeeee".to_string(), "–".to_string(), "#777777"),
                };
                let _ = write!(
                    c.out,
                    r##"<rect class="cell" x="{x:.1}" y="{y:.1}" width="{cell_w:.1}" height="{cell_h:.1}" fill="{fill}" stroke="#ffffff" data-row="{i}" data-column="{j}"/>"##
                );
                let noisy = self.noisy.get(i).and_then(|r| r.get(j)).copied().unwrap_or(false) && value.is_some();
                let text = if noisy { format!("{text} ~") } else { text };
                c.text(
                    if noisy { "cell-value noisy" } else { "cell-value" },
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
        c.text("key", (left, key_y + 28.0), "start", 0.0, "", &fmt_value(center / span));
        c.text("key", (left + 24.0 * 4.5, key_y + 28.0), "middle", 0.0, "", &fmt_value(center));
        c.text("key", (left + 24.0 * 9.0, key_y + 28.0), "end", 0.0, "", &fmt_value(center * span));
        c.finish()
    }
}
