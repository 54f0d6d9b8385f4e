//! Hand-made SVG charts: a grouped bar chart (the article's five charts), a
//! line chart (concurrency, blob-size sweeps) and a diverging heatmap (the
//! internal-vs-external matrix). Each is plain data in, a self-contained SVG
//! string out: no scripts, no external fonts, every label escaped, so the
//! same string works as a standalone file and inline in the HTML page.
//!
//! A missing value (`None`, or a non-finite number) is drawn as "not
//! measured" rather than as zero, so a gap is never mistaken for a result.

mod bar;
mod canvas;
mod heatmap;
mod line;
pub mod percentiles;
mod scale;

pub use bar::BarChart;
pub use canvas::{esc, fmt_tick, fmt_value};
pub use heatmap::Heatmap;
pub use line::{LineChart, Series};
pub use percentiles::{PercentileChart, PercentileSeries, PERCENTILES};

#[cfg(test)]
mod tests;
