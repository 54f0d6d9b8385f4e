//! Latency percentile curves: x is the percentile on a log scale of
//! 1 / (1 - q) (so p90, p99, p99.9 are evenly spaced and the tail gets the
//! room), y is the latency on a log scale; one line per path.

use std::fmt::Write;

use super::canvas::{colour, esc, Canvas, LEFT, MIN_W, PLOT_H, RIGHT, TITLE_H};

/// The quantiles every curve is sampled at, then the maximum.
pub const PERCENTILES: [f64; 9] = [0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999];

/// One path's latencies at [`PERCENTILES`] and then its maximum, in µs.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileSeries {
    pub name: String,
    /// `PERCENTILES.len() + 1` values; None where not known.
    pub values_us: Vec<Option<f64>>,
    /// Drawn dotted: only a few stored percentiles, not the full histogram.
    pub sparse: bool,
    /// Colour by path and dash pattern by machine, so one path keeps its
    /// colour across machines.
    pub colour: usize,
    pub dash: usize,
}

/// Solid, dashed, dash-dot, long dash: one per machine, then again.
const DASHES: [&str; 4] = ["", "8 4", "8 3 2 3", "14 4"];

fn dash_attr(s: &PercentileSeries) -> String {
    let pattern = if s.sparse { "2 3" } else { DASHES[s.dash % DASHES.len()] };
    if pattern.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{pattern}""#)
    }
}

/// Legend entries, a line sample each, wrapped to the width; the height used.
fn legend(c: &mut Canvas, top: f64, width: f64, series: &[PercentileSeries], draw: bool) -> f64 {
    let (mut x, mut y) = (LEFT, top);
    for s in series {
        let w = 40.0 + 7.0 * s.name.chars().count().min(super::canvas::label_limit("legend")) as f64;
        if x + w > width - RIGHT && x > LEFT {
            x = LEFT;
            y += 20.0;
        }
        if draw {
            let _ = write!(
                c.out,
                r#"<line class="swatch" x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2.5"{}/>"#,
                y - 4.0,
                x + 26.0,
                y - 4.0,
                colour(s.colour),
                dash_attr(s)
            );
            c.label("legend", (x + 32.0, y), "start", 0.0, &s.name);
        }
        x += w;
    }
    if series.is_empty() {
        0.0
    } else {
        y - top + 20.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PercentileChart {
    pub title: String,
    pub series: Vec<PercentileSeries>,
    /// Under the title: operations and runs behind the curves.
    pub note: String,
}

/// Name of the i-th point: "p50" ... "p99.99", then "max".
pub fn point_name(i: usize) -> String {
    match PERCENTILES.get(i) {
        Some(q) => {
            let p = format!("{:.2}", q * 100.0);
            format!("p{}", p.trim_end_matches('0').trim_end_matches('.'))
        }
        None => "max".to_string(),
    }
}

/// Position on the x axis: decades of 1 / (1 - q); the maximum one decade
/// past the last percentile.
fn x_of(i: usize) -> f64 {
    match PERCENTILES.get(i) {
        Some(q) => (1.0 / (1.0 - q)).log10(),
        None => (1.0 / (1.0 - PERCENTILES[PERCENTILES.len() - 1])).log10() + 1.0,
    }
}

/// "1 µs", "10 ms", for a power of ten in microseconds.
fn decade_label(exp: i32) -> String {
    let us = 10f64.powi(exp);
    if us >= 1e6 {
        format!("{} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{} ms", us / 1e3)
    } else if us >= 1.0 {
        format!("{us} µs")
    } else {
        format!("{} ns", us * 1e3)
    }
}

impl PercentileChart {
    pub fn to_svg(&self) -> String {
        let width = MIN_W;
        let top = TITLE_H + 10.0;
        let legend_top = top + PLOT_H + 62.0;
        let mut sizing = Canvas { out: String::new() };
        let height = legend_top + legend(&mut sizing, legend_top, width, &self.series, false) + 6.0;
        let mut c = Canvas::new(width, height, &self.title);
        c.note(width, &self.note);
        let right = width - RIGHT;
        let values =
            self.series.iter().flat_map(|s| s.values_us.iter().flatten()).filter(|v| v.is_finite() && **v > 0.0);
        let (lo, hi) = values.fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
        let (lo_exp, hi_exp) = if hi > 0.0 {
            let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
            (a, b.max(a + 1))
        } else {
            (0, 1)
        };
        let py = |v: f64| top + PLOT_H - (v.log10() - f64::from(lo_exp)) / f64::from(hi_exp - lo_exp) * PLOT_H;
        let (x0, x1) = (x_of(0), x_of(PERCENTILES.len()));
        let px = |i: usize| LEFT + 16.0 + (x_of(i) - x0) / (x1 - x0) * (right - LEFT - 32.0);
        for e in lo_exp..=hi_exp {
            let y = py(10f64.powi(e));
            c.line("grid", (LEFT, y), (right, y), r##"stroke="#e0e0e0""##);
            c.text("tick", (LEFT - 6.0, y + 4.0), "end", 0.0, "", &decade_label(e));
        }
        c.line("axis", (LEFT, top), (LEFT, top + PLOT_H), r##"stroke="#333333""##);
        c.line("axis", (LEFT, top + PLOT_H), (right, top + PLOT_H), r##"stroke="#333333""##);
        c.label("axis-label", (14.0, top + PLOT_H / 2.0), "middle", -90.0, "latency per operation (log scale)");
        for i in [0, 2, 4, 6, 8, PERCENTILES.len()] {
            c.line("tick", (px(i), top + PLOT_H), (px(i), top + PLOT_H + 4.0), r##"stroke="#333333""##);
            c.text("tick", (px(i), top + PLOT_H + 18.0), "middle", 0.0, "", &point_name(i));
        }
        c.label(
            "axis-label",
            ((LEFT + right) / 2.0, top + PLOT_H + 40.0),
            "middle",
            0.0,
            "percentile (log scale of the tail)",
        );
        for (s, series) in self.series.iter().enumerate() {
            let pts: Vec<(usize, f64)> = series
                .values_us
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| (i, v)))
                .collect();
            let dash = dash_attr(series);
            if pts.len() > 1 {
                let line: Vec<String> = pts.iter().map(|(i, v)| format!("{:.1},{:.1}", px(*i), py(*v))).collect();
                let _ = write!(
                    c.out,
                    r#"<polyline class="line" data-series="{s}" points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                    line.join(" "),
                    colour(series.colour)
                );
            }
            for (i, v) in &pts {
                let _ = write!(
                    c.out,
                    r#"<circle class="point" data-series="{s}" data-value="{v}" cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"><title>{}: {}: {:.1} µs</title></circle>"#,
                    px(*i),
                    py(*v),
                    colour(series.colour),
                    esc(&series.name),
                    point_name(*i),
                    v
                );
            }
        }
        legend(&mut c, legend_top, width, &self.series, true);
        c.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_named_and_the_tail_is_spread_evenly() {
        assert_eq!(point_name(0), "p50");
        assert_eq!(point_name(6), "p99.9");
        assert_eq!(point_name(8), "p99.99");
        assert_eq!(point_name(PERCENTILES.len()), "max");
        assert!(((x_of(4) - x_of(2)) - (x_of(6) - x_of(4))).abs() < 1e-9, "p90, p99, p99.9 a decade apart");
        assert_eq!(decade_label(3), "1 ms");
        assert_eq!(decade_label(0), "1 µs");
    }

    #[test]
    fn the_svg_is_well_formed_with_a_line_per_series() {
        let chart = PercentileChart {
            title: "t <&>".into(),
            series: vec![
                PercentileSeries {
                    name: "db".into(),
                    values_us: (1..=10).map(|i| Some(i as f64)).collect(),
                    sparse: false,
                    colour: 0,
                    dash: 1,
                },
                PercentileSeries {
                    name: "files".into(),
                    values_us: vec![Some(5.0), None, Some(9.0)],
                    sparse: true,
                    colour: 1,
                    dash: 0,
                },
            ],
            note: "3 runs".into(),
        };
        let svg = chart.to_svg();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let lines = doc.descendants().filter(|n| n.attribute("class") == Some("line")).count();
        assert_eq!(lines, 2);
        assert!(svg.contains("stroke-dasharray=\"2 3\""), "sparse curves are dotted");
        assert!(svg.contains("stroke-dasharray=\"8 4\""), "the second machine is dashed");
    }
}
