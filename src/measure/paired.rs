//! Paired ratios over rounds: the statistics every stated ratio comes from.
//!
//! Both arms of a comparison ran in the same round, so a burst of load that
//! slows one round slows both; the ratio of the same round cancels it. The
//! estimate is the median of the per-round log-ratios (robust: half the
//! rounds can be wild before it moves far), and the interval is the
//! distribution-free interval for a median from the binomial order
//! statistics (no assumption about the shape of the noise). Far-out rounds
//! are flagged by the modified z-score (Iglewicz & Hoaglin; hyperfine flags
//! outliers the same way) and shown, never dropped: the median already
//! holds up against them.

use serde::{Deserialize, Serialize};

/// Modified z-score above which a round is flagged as far out (Iglewicz &
/// Hoaglin's recommended threshold).
pub const OUTLIER_Z: f64 = 3.5;
/// Fewest rounds whose order-statistic interval covers the median with at
/// least 95% (1 - 2 / 2^6 = 96.9%); below it the interval is min-max with
/// the lower coverage stated.
pub const MIN_ROUNDS_95: usize = 6;

/// A ratio measured as paired rounds; `low <= value <= high`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedRatio {
    /// exp(median of ln(numerator / denominator)) over the rounds.
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// Rounds the ratio is based on.
    pub rounds: usize,
    /// The interval's exact coverage in percent (at least 95 from 6 rounds;
    /// 0 for one round, which has no interval).
    pub coverage_pct: f64,
    /// Indices (into the rounds given) of far-out rounds.
    pub outliers: Vec<usize>,
}

impl PairedRatio {
    /// The same comparison the other way round.
    pub fn inverse(&self) -> PairedRatio {
        PairedRatio { value: 1.0 / self.value, low: 1.0 / self.high, high: 1.0 / self.low, ..self.clone() }
    }

    /// The larger of the interval's two half-widths, as a share of the
    /// estimate: 0.05 means "within +/-5%".
    pub fn half_width(&self) -> f64 {
        (self.high / self.value - 1.0).max(1.0 - self.low / self.value)
    }

    /// The interval holds 1.0, or there is none (one round).
    pub fn spans_one(&self) -> bool {
        self.rounds < 2 || (self.low <= 1.0 && self.high >= 1.0)
    }

    /// The interval lies inside `floor`'s (the A/A noise floor): the
    /// difference is no larger than what identical arms show.
    pub fn within(&self, floor: &PairedRatio) -> bool {
        let floor_high = floor.high.max(1.0 / floor.low);
        let (lo, hi) = (self.value.min(1.0 / self.value), self.value.max(1.0 / self.value));
        lo >= 1.0 / floor_high && hi <= floor_high
    }
}

/// The paired ratio of `numerator[i] / denominator[i]` over the rounds;
/// None when no round has two usable (finite, positive) figures.
pub fn paired_ratio(numerator: &[f64], denominator: &[f64]) -> Option<PairedRatio> {
    if numerator.len() != denominator.len() {
        return None;
    }
    let usable = |v: f64| v.is_finite() && v > 0.0;
    let logs: Vec<f64> = numerator
        .iter()
        .zip(denominator)
        .filter(|(a, b)| usable(**a) && usable(**b))
        .map(|(a, b)| (a / b).ln())
        .collect();
    if logs.is_empty() {
        return None;
    }
    let outliers = outliers(&logs);
    let mut sorted = logs;
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let (k, coverage) = order_statistic_interval(n);
    Some(PairedRatio {
        value: median_sorted(&sorted).exp(),
        low: sorted[k].exp(),
        high: sorted[n - 1 - k].exp(),
        rounds: n,
        coverage_pct: coverage * 100.0,
        outliers,
    })
}

/// One arm's figure over rounds, unpaired: the median round's, and the
/// distribution-free interval that covers the median, from the same order
/// statistics as a paired ratio's (min-max up to [`MIN_ROUNDS_95`] rounds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianInterval {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// Rounds with a finite figure.
    pub rounds: usize,
    /// The interval's exact coverage in percent (0 for one round).
    pub coverage_pct: f64,
}

/// The median of `values` (one per round) and its interval; None when no
/// value is finite.
pub fn median_interval(values: &[f64]) -> Option<MedianInterval> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let (k, coverage) = order_statistic_interval(n);
    Some(MedianInterval {
        median: median_sorted(&sorted),
        low: sorted[k],
        high: sorted[n - 1 - k],
        rounds: n,
        coverage_pct: coverage * 100.0,
    })
}

/// The median of sorted values.
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

/// Indices of values whose modified z-score, 0.6745 (x - median) / MAD,
/// exceeds [`OUTLIER_Z`]. None when the MAD is zero (no spread to judge by).
pub fn outliers(values: &[f64]) -> Vec<usize> {
    if values.len() < 3 {
        return Vec::new();
    }
    let m = median(values);
    let mad = median(&values.iter().map(|v| (v - m).abs()).collect::<Vec<_>>());
    if mad <= 0.0 {
        return Vec::new();
    }
    values.iter().enumerate().filter(|(_, v)| (0.6745 * (*v - m) / mad).abs() > OUTLIER_Z).map(|(i, _)| i).collect()
}

/// For `n` sorted values, the 0-based index `k` such that
/// [x_k, x_(n-1-k)] covers the median with at least 95% (the binomial
/// order-statistic interval), and its exact coverage. Below
/// [`MIN_ROUNDS_95`] this is min-max with its lower coverage.
fn order_statistic_interval(n: usize) -> (usize, f64) {
    if n < 2 {
        return (0, 0.0);
    }
    // P(Binomial(n, 1/2) <= j), accumulated.
    let mut cdf = Vec::with_capacity(n + 1);
    let mut term = 0.5f64.powi(n as i32);
    let mut sum = 0.0;
    for j in 0..=n {
        sum += term;
        cdf.push(sum);
        term = term * (n - j) as f64 / (j + 1) as f64;
    }
    // The interval [x_k, x_(n-1-k)] misses the median with probability
    // 2 P(B <= k); take the largest k that keeps that at most 5%.
    let mut k = 0;
    while k + 1 < n / 2 && 2.0 * cdf[k + 1] <= 0.05 {
        k += 1;
    }
    (k, 1.0 - 2.0 * cdf[k])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_the_median_paired_ratio() {
        // The 12 alternating-process ratios: median 2.04.
        let ratios = [5.36, 2.16, 1.66, 2.05, 1.70, 1.50, 1.78, 2.03, 2.70, 1.92, 2.06, 2.45];
        let den = vec![10.0; ratios.len()];
        let num: Vec<f64> = ratios.iter().map(|r| r * 10.0).collect();
        let r = paired_ratio(&num, &den).unwrap();
        assert!((r.value - 2.04).abs() < 1e-3, "{r:?}");
        // n = 12: k = 2 (P(B <= 2) = 79/4096), interval x_3 .. x_10.
        assert!((r.low - 1.70).abs() < 1e-9 && (r.high - 2.45).abs() < 1e-9, "{r:?}");
        assert!((r.coverage_pct - (1.0 - 2.0 * 79.0 / 4096.0) * 100.0).abs() < 1e-9);
        assert_eq!(r.outliers, vec![0], "5.36 is far out and flagged");
        assert!(!r.spans_one());
    }

    #[test]
    fn pairing_cancels_load_that_hits_both_arms() {
        // Round 3 ran under load: both arms slowed threefold.
        let num = [20.0, 21.0, 60.0, 20.5, 19.5, 20.0, 20.2];
        let den = [10.0, 10.5, 30.0, 10.2, 9.8, 10.0, 10.1];
        let r = paired_ratio(&num, &den).unwrap();
        assert!(r.low > 1.95 && r.high < 2.05, "{r:?}");
        assert!(r.half_width() < 0.05);
    }

    #[test]
    fn order_statistic_interval_coverage() {
        assert_eq!(order_statistic_interval(1), (0, 0.0));
        let (k, c) = order_statistic_interval(5);
        assert_eq!(k, 0);
        assert!((c - 0.9375).abs() < 1e-12, "min-max of 5 covers 93.75%");
        let (k, c) = order_statistic_interval(6);
        assert_eq!(k, 0);
        assert!(c >= 0.95);
        let (k, c) = order_statistic_interval(20);
        assert_eq!(k, 5, "n = 20: x_6 .. x_15");
        assert!((0.95..0.99).contains(&c), "{c}");
    }

    #[test]
    fn one_round_has_no_interval_and_names_no_winner() {
        let r = paired_ratio(&[20.0], &[10.0]).unwrap();
        assert_eq!((r.value, r.low, r.high, r.rounds), (2.0, 2.0, 2.0, 1));
        assert!(r.spans_one());
    }

    #[test]
    fn mismatched_or_unusable_rounds_give_none() {
        assert_eq!(paired_ratio(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(paired_ratio(&[f64::NAN], &[1.0]), None);
    }

    #[test]
    fn within_the_noise_floor() {
        let floor = PairedRatio { value: 1.0, low: 0.97, high: 1.04, rounds: 10, coverage_pct: 97.9, outliers: vec![] };
        let small = PairedRatio { value: 1.03, low: 1.01, high: 1.05, ..floor.clone() };
        let big = PairedRatio { value: 1.30, low: 1.2, high: 1.4, ..floor.clone() };
        assert!(small.within(&floor));
        assert!(small.inverse().within(&floor), "either direction");
        assert!(!big.within(&floor));
    }

    #[test]
    fn an_arms_median_over_rounds_has_the_order_statistic_interval() {
        let six = median_interval(&[30.0, 10.0, f64::NAN, 20.0, 60.0, 40.0, 50.0, 25.0]).unwrap();
        assert_eq!((six.median, six.low, six.high, six.rounds), (30.0, 10.0, 60.0, 7), "{six:?}");
        let twenty: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&twenty).unwrap();
        assert_eq!((i.median, i.low, i.high), (10.5, 6.0, 15.0), "n = 20: x_6 .. x_15");
        assert!(i.coverage_pct >= 95.0);
        assert_eq!(median_interval(&[f64::INFINITY]), None);
    }

    #[test]
    fn no_spread_no_outliers() {
        assert!(outliers(&[1.0, 1.0, 1.0, 5.0]).is_empty(), "MAD 0: nothing to judge by");
        assert_eq!(outliers(&[1.0, 1.1, 0.9, 1.05, 0.95, 9.0]), vec![5]);
    }
}
