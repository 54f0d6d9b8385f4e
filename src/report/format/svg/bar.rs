//! The grouped bar chart: the article's charts, one group per machine.

use std::fmt::Write;

use super::canvas::{
    colour, esc, finite, fmt_value, label_limit, legend_height, Canvas, LEFT, MIN_W, PLOT_H, RIGHT, TITLE_H,
};
use super::scale::YScale;

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
    /// `errors[group][series]`: the interval drawn as a whisker on the bar.
    pub errors: Vec<Vec<Option<(f64, f64)>>>,
    /// Under the title: runs behind the bars and what the whiskers are.
    pub note: String,
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
        c.note(width, &self.note);

        let data_max = self.values.iter().flatten().filter_map(|v| finite(*v)).fold(0.0, f64::max);
        let whisker_max = self.errors.iter().flatten().flatten().filter_map(|e| finite(Some(e.1))).fold(0.0, f64::max);
        let data_max = data_max.max(whisker_max);
        let scale = YScale::linear(data_max.max(finite(self.reference).unwrap_or(0.0)));
        let right = width - RIGHT;
        c.y_axis(top, right, &scale, &self.y_label);

        // Groups are spread over the plot width, bars centred in each group.
        let slot = (right - LEFT) / self.groups.len().max(1) as f64;
        let plot = Plot { top, scale };
        for (g, group) in self.groups.iter().enumerate() {
            let x0 = LEFT + slot * g as f64 + (slot - n_series as f64 * bar_w) / 2.0;
            for s in 0..self.series.len() {
                self.draw_bar(&mut c, &plot, Place { g, s, x: x0 + s as f64 * bar_w, width: bar_w });
            }
            // About 6.5 pixels per character at this font size.
            let fits = ((slot / 6.5) as usize).clamp(4, label_limit("group"));
            c.label_within("group", (LEFT + slot * (g as f64 + 0.5), top + PLOT_H + 20.0), "middle", 0.0, group, fits);
        }
        c.reference(top, right, &plot.scale, self.reference);
        c.legend(legend_top, width, &self.series);
        c.finish()
    }

    /// One bar with its value above it (above its whisker when it has an
    /// interval), or "not measured" where it has no value.
    fn draw_bar(&self, c: &mut Canvas, plot: &Plot, at: Place) {
        let Place { g, s, x, width } = at;
        let cx = x + width / 2.0;
        let Some(v) = self.values.get(g).and_then(|row| row.get(s)).copied().and_then(finite) else {
            let _ = write!(c.out, r#"<g class="missing" data-group="{g}" data-series="{s}">"#);
            let at = (cx + 4.0, plot.top + PLOT_H - 6.0);
            c.text("missing", at, "start", -90.0, r##"font-size="10" fill="#777777""##, "not measured");
            c.out.push_str("</g>");
            return;
        };
        let (y, h) = (plot.y(v), plot.scale.fraction(v) * PLOT_H);
        let _ = write!(
            c.out,
            r#"<rect class="bar" x="{:.1}" y="{y:.2}" width="{:.1}" height="{h:.2}" fill="{}" data-group="{g}" data-series="{s}" data-value="{v}"><title>{}: {}: {}</title></rect>"#,
            x + 2.0,
            width - 4.0,
            colour(s),
            esc(&self.groups[g]),
            esc(&self.series[s]),
            fmt_value(v)
        );
        let error = self.errors.get(g).and_then(|row| row.get(s)).copied().flatten();
        let top_y = match error.filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && lo < hi) {
            Some(interval) => y.min(plot.whisker(c, cx, interval)),
            None => y,
        };
        c.text("value", (cx, top_y - 4.0), "middle", 0.0, r#"font-size="10""#, &fmt_value(v));
    }
}

/// The plot area's top and its y scale.
struct Plot {
    top: f64,
    scale: YScale,
}

impl Plot {
    /// The y of `v` on the plot.
    fn y(&self, v: f64) -> f64 {
        self.top + PLOT_H - self.scale.fraction(v) * PLOT_H
    }

    /// Draws the whisker of the interval (lo, hi) at `cx`; the y of its top.
    fn whisker(&self, c: &mut Canvas, cx: f64, (lo, hi): (f64, f64)) -> f64 {
        let (y_lo, y_hi) = (self.y(lo), self.y(hi));
        let _ = write!(
            c.out,
            r##"<g class="errorbar" data-low="{lo}" data-high="{hi}" stroke="#222222" stroke-width="1.2"><line x1="{cx:.1}" y1="{y_lo:.2}" x2="{cx:.1}" y2="{y_hi:.2}"/><line x1="{:.1}" y1="{y_hi:.2}" x2="{:.1}" y2="{y_hi:.2}"/><line x1="{:.1}" y1="{y_lo:.2}" x2="{:.1}" y2="{y_lo:.2}"/></g>"##,
            cx - 4.0,
            cx + 4.0,
            cx - 4.0,
            cx + 4.0
        );
        y_hi
    }
}

/// Where one bar goes: its group and series, its left edge and its width.
#[derive(Clone, Copy)]
struct Place {
    g: usize,
    s: usize,
    x: f64,
    width: f64,
}
