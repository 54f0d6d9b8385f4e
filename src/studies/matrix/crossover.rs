//! The blob size at which files start to beat the database: where the ratio
//! (file time / database time) falls to 1.0. Blob sizes are spaced roughly
//! geometrically (10k, 20k, 50k, ...), so the crossing is interpolated
//! linearly in the ratio against the logarithm of the size.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossoverKind {
    /// Files are faster from `size_bytes` up to the largest size measured.
    At,
    /// The database is faster at the largest size measured: the crossover,
    /// if any, lies above the range.
    AboveRange,
    /// Files are faster at every size measured: the crossover lies below.
    BelowRange,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    pub kind: CrossoverKind,
    /// For `at`: the blob size where the ratio reaches 1.0 for the last time
    /// coming from above, interpolated between the two sizes around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<f64>,
    /// True when a measured ratio is exactly 1.0 there (no interpolation).
    #[serde(default)]
    pub exact: bool,
    /// Every size where the ratio crosses or touches 1.0, in either direction,
    /// ascending. More than one means the ratio is not monotonic in size.
    #[serde(default)]
    pub crossings_bytes: Vec<f64>,
}

/// The crossover of `(size, ratio)` points in ascending size; None when
/// there are no points. A ratio above 1.0 means the database is faster.
pub fn crossover(points: &[(f64, f64)]) -> Option<Crossover> {
    if points.is_empty() {
        return None;
    }
    let crossings_bytes = crossings(points);
    let last_above = points.iter().rposition(|&(_, r)| r > 1.0);
    let (kind, size_bytes, exact) = match last_above {
        Some(i) if i + 1 == points.len() => (CrossoverKind::AboveRange, None, false),
        Some(i) => {
            let (a, b) = (points[i], points[i + 1]);
            if b.1 == 1.0 {
                (CrossoverKind::At, Some(b.0), true)
            } else {
                (CrossoverKind::At, Some(interpolate(a, b)), false)
            }
        }
        None if points[0].1 == 1.0 => (CrossoverKind::At, Some(points[0].0), true),
        None => (CrossoverKind::BelowRange, None, false),
    };
    Some(Crossover { kind, size_bytes, exact, crossings_bytes })
}

/// Every point where the ratio is exactly 1.0 or changes side of it.
fn crossings(points: &[(f64, f64)]) -> Vec<f64> {
    let mut out = Vec::new();
    for (i, &(size, ratio)) in points.iter().enumerate() {
        if ratio == 1.0 {
            out.push(size);
        }
        if let Some(&next) = points.get(i + 1) {
            if (ratio - 1.0) * (next.1 - 1.0) < 0.0 {
                out.push(interpolate((size, ratio), next));
            }
        }
    }
    out
}

/// The size between `a` and `b` where the ratio is 1.0, linear in log size.
fn interpolate(a: (f64, f64), b: (f64, f64)) -> f64 {
    let t = (a.1 - 1.0) / (a.1 - b.1);
    (a.0.ln() + t * (b.0.ln() - a.0.ln())).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(ratios: &[f64]) -> Vec<(f64, f64)> {
        let sizes = [10e3, 20e3, 50e3, 100e3, 200e3, 500e3, 1e6];
        sizes.iter().copied().zip(ratios.iter().copied()).collect()
    }

    #[test]
    fn crossing_is_interpolated_on_log_size() {
        // The study's 1024 row: 1.020 at 20k, 0.608 at 50k.
        let c = crossover(&pts(&[1.535, 1.020, 0.608, 0.456, 0.330, 0.247, 0.233])).unwrap();
        assert_eq!(c.kind, CrossoverKind::At);
        let t: f64 = 0.020 / 0.412;
        let expected = (20e3f64.ln() + t * (50e3f64.ln() - 20e3f64.ln())).exp();
        assert!((c.size_bytes.unwrap() - expected).abs() < 1e-6);
        assert!(c.size_bytes.unwrap() > 20e3 && c.size_bytes.unwrap() < 21e3);
        assert!(!c.exact);
        assert_eq!(c.crossings_bytes.len(), 1);
        // Halfway in ratio is the geometric mean of the sizes.
        let mid = crossover(&[(10e3, 1.5), (40e3, 0.5)]).unwrap();
        assert!((mid.size_bytes.unwrap() - 20e3).abs() < 1e-6);
    }

    #[test]
    fn no_crossing_is_beyond_the_range() {
        let above = crossover(&pts(&[2.0, 1.8, 1.5, 1.2, 1.1, 1.05, 1.01])).unwrap();
        assert_eq!((above.kind, above.size_bytes), (CrossoverKind::AboveRange, None));
        assert!(above.crossings_bytes.is_empty());
        let below = crossover(&pts(&[0.9, 0.8, 0.5])).unwrap();
        assert_eq!((below.kind, below.size_bytes), (CrossoverKind::BelowRange, None));
        assert!(crossover(&[]).is_none());
    }

    #[test]
    fn exact_one_is_the_crossover_itself() {
        let c = crossover(&pts(&[1.5, 1.0, 0.5])).unwrap();
        assert_eq!((c.kind, c.size_bytes, c.exact), (CrossoverKind::At, Some(20e3), true));
        assert_eq!(c.crossings_bytes, vec![20e3]);
        let first = crossover(&pts(&[1.0, 0.7])).unwrap();
        assert_eq!((first.kind, first.size_bytes, first.exact), (CrossoverKind::At, Some(10e3), true));
        let last = crossover(&pts(&[1.3, 1.0])).unwrap();
        assert_eq!((last.kind, last.size_bytes), (CrossoverKind::At, Some(20e3)));
    }

    #[test]
    fn non_monotonic_takes_the_last_fall_and_lists_every_crossing() {
        // Falls below 1 at ~15k, rises above at ~70k, falls again at ~300k.
        let c = crossover(&pts(&[1.2, 0.9, 0.95, 1.1, 1.05, 0.9, 0.8])).unwrap();
        assert_eq!(c.kind, CrossoverKind::At);
        let s = c.size_bytes.unwrap();
        assert!(s > 200e3 && s < 500e3, "{s}");
        assert_eq!(c.crossings_bytes.len(), 3);
        assert!(c.crossings_bytes.windows(2).all(|w| w[0] < w[1]));
        // Rises above 1 at the end: the database is faster at the top.
        let up = crossover(&pts(&[1.2, 0.8, 1.1])).unwrap();
        assert_eq!(up.kind, CrossoverKind::AboveRange);
        assert_eq!(up.crossings_bytes.len(), 2);
    }
}
