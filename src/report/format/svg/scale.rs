//! Y scales: where a value sits on the plot's height and where the ticks go.
//! Linear from zero for times and rates; logarithmic for ratios that span
//! decades, so 0.02 and 5.4 are both readable on one chart.

/// The least room (pixels) between two y ticks on a log axis: with less,
/// the 2s and 5s between decades go, then every other decade, and so on.
const MIN_TICK_GAP: f64 = 16.0;

/// How values map to heights on a y axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum YScale {
    /// From 0 to `max`, a tick every `step`.
    Linear { max: f64, step: f64 },
    /// From `10^lo` to `10^hi`; only for values above zero.
    Log { lo: f64, hi: f64 },
}

impl YScale {
    /// A linear scale from zero with a round top covering `data_max`.
    pub(super) fn linear(data_max: f64) -> YScale {
        let (max, step) = nice_axis(data_max);
        YScale::Linear { max, step }
    }

    /// A log scale from `min` to `max` (both above zero), widened to round
    /// bounds: 1, 2 or 5 x 10^k when the 2s and 5s fit in `height` pixels,
    /// whole decades otherwise.
    pub(super) fn log(min: f64, max: f64, height: f64) -> YScale {
        let (min, max) = (min.min(max).log10(), max.max(min).log10());
        let (mut lo, mut hi) = (floor_125(min), ceil_125(max));
        if hi - lo < 0.1 {
            // One value on a tick: a step either side, so it is not on an edge.
            (lo, hi) = (floor_125(lo - 0.01), ceil_125(hi + 0.01));
        }
        if !fits_125(hi - lo, height) {
            (lo, hi) = (lo.floor(), hi.ceil());
        }
        YScale::Log { lo, hi }
    }

    /// Height of `v` as a share of the plot, 0 at the bottom and 1 at the
    /// top; a linear axis draws negatives at zero.
    pub(super) fn fraction(&self, v: f64) -> f64 {
        match *self {
            YScale::Linear { max, .. } => v.max(0.0) / max,
            YScale::Log { lo, hi } => (v.log10() - lo) / (hi - lo),
        }
    }

    /// Whether `v` lies on the axis (for a reference line).
    pub(super) fn contains(&self, v: f64) -> bool {
        match *self {
            YScale::Linear { max, .. } => (0.0..=max).contains(&v),
            YScale::Log { .. } => v > 0.0 && (-1e-9..=1.0 + 1e-9).contains(&self.fraction(v)),
        }
    }

    /// The values that get a gridline and a label, bottom to top.
    pub(super) fn ticks(&self, height: f64) -> Vec<f64> {
        match *self {
            YScale::Linear { max, step } => {
                (0..).map(|i| f64::from(i) * step).take_while(|v| *v <= max + step / 2.0).collect()
            }
            YScale::Log { lo, hi } => {
                let span = hi - lo;
                let mults: &[f64] = if fits_125(span, height) { &[1.0, 2.0, 5.0] } else { &[1.0] };
                // Whole decades only, and only every n-th when even those crowd.
                let every = (MIN_TICK_GAP * span / height).ceil().max(1.0) as i32;
                let (first, last) = (lo.floor() as i32, hi.ceil() as i32);
                (first..=last)
                    .filter(|k| mults.len() > 1 || (k - first) % every == 0)
                    .flat_map(|k| mults.iter().map(move |m| m * 10f64.powi(k)))
                    .filter(|v| (lo - 1e-9..=hi + 1e-9).contains(&v.log10()))
                    .collect()
            }
        }
    }
}

/// Whether ticks at 1, 2 and 5 x 10^k are far enough apart over `span`
/// decades in `height` pixels (the closest pair is 1 to 2, 0.3 decade).
fn fits_125(span: f64, height: f64) -> bool {
    span <= 0.0 || height * 2f64.log10() / span >= MIN_TICK_GAP
}

/// log10 of the 1, 2 or 5 x 10^k values within a decade of `log_v`.
fn steps_125(log_v: f64) -> impl Iterator<Item = f64> {
    let decade = log_v.floor();
    (-1..=1).flat_map(move |d| [1.0, 2.0, 5.0].map(|m: f64| decade + f64::from(d) + m.log10()))
}

/// log10 of the largest 1, 2 or 5 x 10^k at or below `10^log_v`.
fn floor_125(log_v: f64) -> f64 {
    steps_125(log_v).filter(|c| *c <= log_v + 1e-9).fold(f64::NEG_INFINITY, f64::max)
}

/// log10 of the smallest 1, 2 or 5 x 10^k at or above `10^log_v`.
fn ceil_125(log_v: f64) -> f64 {
    steps_125(log_v).filter(|c| *c >= log_v - 1e-9).fold(f64::INFINITY, f64::min)
}

/// A round upper bound for an axis and its tick step (1, 2, 2.5 or 5 x 10^k).
pub(super) fn nice_axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}
