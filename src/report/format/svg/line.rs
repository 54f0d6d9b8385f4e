//! The line chart over a numeric x axis; each axis linear or logarithmic.

use std::fmt::Write;

use super::canvas::{
    colour, esc, finite, fmt_tick, fmt_value, legend_height, Canvas, LEFT, MIN_W, PLOT_H, RIGHT, TITLE_H,
};
use super::scale::YScale;

/// One named line of a [`LineChart`], with a value (or a gap) per x.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
    /// Each point's interval (low, high), drawn as a bar through it; empty
    /// when the chart has none.
    pub intervals: Vec<Option<(f64, f64)>>,
}

/// Lines over a shared numeric x axis (threads, blob sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis; ignored (linear) unless every x is above zero.
    pub x_log: bool,
    /// Logarithmic y axis, for ratios that span decades; ignored (linear
    /// from zero) unless every value and the reference are above zero.
    pub y_log: bool,
    pub x: Vec<f64>,
    pub series: Vec<Series>,
    pub reference: Option<f64>,
    /// Under the title: runs behind each point.
    pub note: String,
}

impl LineChart {
    fn log_x(&self) -> bool {
        self.x_log && !self.x.is_empty() && self.x.iter().all(|x| x.is_finite() && *x > 0.0)
    }

    /// The finite values drawn, with the reference: what the y axis covers.
    fn y_values(&self) -> impl Iterator<Item = f64> + '_ {
        let values = self.series.iter().flat_map(|s| s.values.iter()).filter_map(|v| finite(*v));
        let ends = self.series.iter().flat_map(|s| s.intervals.iter().flatten()).flat_map(|&(lo, hi)| [lo, hi]);
        values.chain(ends.filter(|v| v.is_finite())).chain(finite(self.reference))
    }

    fn y_scale(&self) -> YScale {
        let (lo, hi) = self.y_values().fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if self.y_log && lo > 0.0 && lo.is_finite() {
            YScale::log(lo, hi, PLOT_H)
        } else {
            YScale::linear(hi)
        }
    }

    pub fn to_svg(&self) -> String {
        let width = MIN_W.max(LEFT + RIGHT + 48.0 * self.x.len() as f64);
        let top = TITLE_H + 10.0;
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let legend_top = top + PLOT_H + 62.0;
        let height = legend_top + legend_height(width, &names) + 6.0;
        let mut c = Canvas::new(width, height, &self.title);
        c.note(width, &self.note);
        let right = width - RIGHT;

        let scale = self.y_scale();
        let y_label = match scale {
            YScale::Log { .. } => format!("{} (log scale)", self.y_label),
            YScale::Linear { .. } => self.y_label.clone(),
        };
        c.y_axis(top, right, &scale, &y_label);

        let log = self.log_x();
        let tx = |x: f64| if log { x.log10() } else { x };
        let xs: Vec<f64> = self.x.iter().map(|x| tx(*x)).filter(|x| x.is_finite()).collect();
        let (lo, hi) =
            (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let span = if hi > lo { hi - lo } else { 1.0 };
        let pad = 16.0;
        let px = |x: f64| {
            let t = if hi > lo { (tx(x) - lo) / span } else { 0.5 };
            LEFT + pad + t * (right - LEFT - 2.0 * pad)
        };
        let py = |v: f64| top + PLOT_H - scale.fraction(v) * PLOT_H;

        // One tick per x value, thinned out when they would crowd.
        let every = self.x.len().div_ceil(12).max(1);
        for x in self.x.iter().step_by(every).filter(|x| x.is_finite()) {
            c.line("tick", (px(*x), top + PLOT_H), (px(*x), top + PLOT_H + 4.0), r##"stroke="#333333""##);
            c.text("tick", (px(*x), top + PLOT_H + 18.0), "middle", 0.0, "", &fmt_tick(*x));
        }
        let x_label = if log { format!("{} (log scale)", self.x_label) } else { self.x_label.clone() };
        c.label("axis-label", ((LEFT + right) / 2.0, top + PLOT_H + 40.0), "middle", 0.0, &x_label);
        c.reference(top, right, &scale, self.reference);

        for (s, series) in self.series.iter().enumerate() {
            let points: Vec<Option<(f64, f64)>> = self
                .x
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    finite(series.values.get(i).copied().flatten()).filter(|_| x.is_finite()).map(|v| (*x, v))
                })
                .collect();
            draw_series(&mut c, (s, series), &points, &px, &py);
        }
        c.legend(legend_top, width, &names);
        c.finish()
    }
}

/// One series' line (broken at each gap), its intervals and its points;
/// `points` are its (x, value) per x, `px` and `py` place them.
fn draw_series(
    c: &mut Canvas,
    (s, series): (usize, &Series),
    points: &[Option<(f64, f64)>],
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
) {
    // A gap (missing value) breaks the line into separate segments.
    let mut segment: Vec<(f64, f64)> = Vec::new();
    for p in points.iter().chain(std::iter::once(&None)) {
        match p {
            Some((x, v)) => segment.push((px(*x), py(*v))),
            None => {
                if segment.len() > 1 {
                    let pts: Vec<String> = segment.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
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
    for ((x, _), (lo, hi)) in points.iter().zip(&series.intervals).filter_map(|(p, i)| Some(((*p)?, (*i)?))) {
        if lo.is_finite() && hi.is_finite() {
            let _ = write!(
                c.out,
                r#"<line class="interval" data-series="{s}" data-low="{lo}" data-high="{hi}" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5"/>"#,
                py(lo),
                py(hi),
                colour(s),
                x = px(x)
            );
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
            fmt_tick(*x),
            fmt_value(*v)
        );
    }
}
