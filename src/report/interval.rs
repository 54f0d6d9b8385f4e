//! How sure a ratio is. A file with interleaved rounds gives paired
//! ratios, computed in `measure::paired` ([`time_ratio`]). Older files, and
//! files whose rounds are inconsistent, fall back to the ratio of two
//! medians over the runs, marked "unpaired": a 95% bootstrap interval when
//! both sides have enough runs, the min-max range when they have few, and
//! nothing pretended when there is one run. The bootstrap's generator has
//! a fixed seed, so a report is the same every time it is rendered from
//! the same files.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::measure::paired::PairedRatio;
use crate::results::ResultFile;
use crate::util::units::plural;

/// Fewest runs on each side for a bootstrap interval; below this a
/// resample can only repeat a handful of values, so min-max is shown.
pub const BOOTSTRAP_MIN_RUNS: usize = 5;
const RESAMPLES: usize = 2000;
const SEED: u64 = 0x5EED_B10B;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Median of per-round ratios with its order-statistic interval.
    Paired,
    /// 95% percentile bootstrap over the runs.
    Bootstrap,
    /// Smallest to largest ratio the runs allow.
    MinMax,
    /// A single run on one side: no interval can be given.
    OneRun,
    /// One deterministic measurement (disk usage): no noise to speak of.
    Exact,
}

/// A ratio with its interval; `low <= value <= high`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub method: Method,
    /// Runs behind the numerator and the denominator (rounds, when paired).
    pub runs: (usize, usize),
    /// Paired only: the interval's exact coverage and far-out rounds.
    pub coverage_pct: f64,
    pub outliers: usize,
}

impl Ratio {
    pub fn exact(value: f64) -> Ratio {
        Ratio { value, low: value, high: value, method: Method::Exact, runs: (1, 1), coverage_pct: 100.0, outliers: 0 }
    }

    /// The report's form of a paired ratio.
    pub fn paired(p: &PairedRatio) -> Ratio {
        Ratio {
            value: p.value,
            low: p.low,
            high: p.high,
            method: Method::Paired,
            runs: (p.rounds, p.rounds),
            coverage_pct: p.coverage_pct,
            outliers: p.outliers.len(),
        }
    }

    /// Back to the statistics' form (paired ratios only).
    pub fn as_paired(&self) -> Option<PairedRatio> {
        (self.method == Method::Paired).then(|| PairedRatio {
            value: self.value,
            low: self.low,
            high: self.high,
            rounds: self.runs.0,
            coverage_pct: self.coverage_pct,
            outliers: Vec::new(),
        })
    }

    /// The interval holds 1.0 (or, for one run, nothing is known).
    pub fn spans_one(&self) -> bool {
        match self.method {
            Method::Exact | Method::OneRun => false,
            Method::Paired => self.as_paired().is_some_and(|p| p.spans_one()),
            _ => self.low <= 1.0 && self.high >= 1.0,
        }
    }

    /// The same comparison the other way round (1 / ratio).
    pub fn inverse(&self) -> Ratio {
        Ratio {
            value: 1.0 / self.value,
            low: 1.0 / self.high,
            high: 1.0 / self.low,
            runs: (self.runs.1, self.runs.0),
            ..*self
        }
    }

    /// "1.71-2.10 (95% bootstrap, 5 and 5 runs)", "min-max over 3 and 3 runs", ...
    pub fn describe(&self) -> String {
        let (a, b) = self.runs;
        let runs = if a == b { format!("{a} runs each") } else { format!("{a} and {b} runs") };
        match self.method {
            Method::Paired => {
                let n = self.runs.0;
                let far = match self.outliers {
                    0 => String::new(),
                    k => format!(", {k} far-out round{} flagged", plural(k)),
                };
                if n < 2 {
                    format!("none (1 round: spread unknown){far}")
                } else if self.coverage_pct >= 95.0 {
                    format!("{:.2}-{:.2} (95% paired, {n} rounds{far})", self.low, self.high)
                } else {
                    format!(
                        "{:.2}-{:.2} (min-max, {:.0}% paired, {n} rounds{far})",
                        self.low, self.high, self.coverage_pct
                    )
                }
            }
            Method::Bootstrap => format!("{:.2}-{:.2} (95% bootstrap, unpaired, {runs})", self.low, self.high),
            Method::MinMax => format!("{:.2}-{:.2} (min-max, unpaired, {runs})", self.low, self.high),
            Method::OneRun => format!("none (unpaired, {runs}: spread unknown)"),
            Method::Exact => "exact (one deterministic measurement)".to_string(),
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn usable(values: &[f64]) -> Vec<f64> {
    values.iter().copied().filter(|v| v.is_finite() && *v > 0.0).collect()
}

/// `numerator`'s per-op time over `denominator`'s in `file`, by the figure
/// comparisons use (the steady-state time per op: the loop with each
/// commit inside it; kvtest's total in a file from before it): paired by
/// round when one consistent round set holds both, else the unpaired ratio
/// of medians over their runs.
pub fn time_ratio(file: &ResultFile, numerator: &str, denominator: &str) -> Option<Ratio> {
    if let Some(p) = file.rounds_of(numerator, denominator).and_then(|set| set.ratio(numerator, denominator)) {
        return Some(Ratio::paired(&p));
    }
    let times = |id: &str| file.experiment(id).map(crate::measure::Experiment::figures);
    ratio_of_medians(&times(numerator)?, &times(denominator)?)
}

/// [`time_ratio`] of kvtest's totals per op (open, loop, commit and close
/// over the ops): the article's figure, for the charts that redraw it.
pub fn kvtest_ratio(file: &ResultFile, numerator: &str, denominator: &str) -> Option<Ratio> {
    if let Some(p) = file.rounds_of(numerator, denominator).and_then(|set| set.kvtest_ratio(numerator, denominator)) {
        return Some(Ratio::paired(&p));
    }
    let times = |id: &str| file.experiment(id).map(|e| e.runs.iter().map(|r| r.per_op_us).collect::<Vec<_>>());
    ratio_of_medians(&times(numerator)?, &times(denominator)?)
}

/// median(numerator) / median(denominator), with its interval; None when
/// either side has no usable (finite, positive) value.
pub fn ratio_of_medians(numerator: &[f64], denominator: &[f64]) -> Option<Ratio> {
    let (mut num, mut den) = (usable(numerator), usable(denominator));
    if num.is_empty() || den.is_empty() {
        return None;
    }
    let value = median(&mut num) / median(&mut den);
    let runs = (num.len(), den.len());
    if runs.0 == 1 || runs.1 == 1 {
        return Some(Ratio { value, low: value, high: value, method: Method::OneRun, runs, ..Ratio::exact(value) });
    }
    if runs.0 < BOOTSTRAP_MIN_RUNS || runs.1 < BOOTSTRAP_MIN_RUNS {
        // Sorted by median() above.
        let low = num[0] / den[den.len() - 1];
        let high = num[num.len() - 1] / den[0];
        let (low, high) = (low.min(value), high.max(value));
        return Some(Ratio { low, high, method: Method::MinMax, runs, ..Ratio::exact(value) });
    }
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut draw = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        buf.extend((0..v.len()).map(|_| v[rng.gen_range(0..v.len())]));
        median(buf)
    };
    let (mut a, mut b) = (Vec::with_capacity(num.len()), Vec::with_capacity(den.len()));
    let mut ratios: Vec<f64> = (0..RESAMPLES).map(|_| draw(&num, &mut a) / draw(&den, &mut b)).collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((RESAMPLES - 1) as f64 * q).round() as usize];
    let (low, high) = (at(0.025).min(value), at(0.975).max(value));
    Some(Ratio { low, high, method: Method::Bootstrap, runs, ..Ratio::exact(value) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_gives_no_interval() {
        let r = ratio_of_medians(&[20.0], &[10.0]).unwrap();
        assert_eq!((r.value, r.low, r.high, r.method), (2.0, 2.0, 2.0, Method::OneRun));
        assert!(!r.spans_one());
        assert_eq!(r.describe(), "none (unpaired, 1 runs each: spread unknown)");
    }

    #[test]
    fn few_runs_give_the_min_max_range() {
        let r = ratio_of_medians(&[18.0, 20.0, 22.0], &[9.0, 10.0, 12.0]).unwrap();
        assert_eq!(r.method, Method::MinMax);
        assert!((r.value - 2.0).abs() < 1e-12);
        assert!((r.low - 1.5).abs() < 1e-12 && (r.high - 22.0 / 9.0).abs() < 1e-12, "{r:?}");
        assert_eq!(r.describe(), "1.50-2.44 (min-max, unpaired, 3 runs each)");
        let close = ratio_of_medians(&[9.0, 10.0, 11.0], &[9.5, 10.0, 10.5]).unwrap();
        assert!(close.spans_one());
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_ratio() {
        let num = [19.0, 20.0, 21.0, 20.5, 19.5, 22.0, 18.0];
        let den = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0, 10.3];
        let a = ratio_of_medians(&num, &den).unwrap();
        let b = ratio_of_medians(&num, &den).unwrap();
        assert_eq!(a, b, "the same files give the same report");
        assert_eq!(a.method, Method::Bootstrap);
        assert!(a.low < a.value && a.value < a.high, "{a:?}");
        assert!(a.low > 1.7 && a.high < 2.3, "{a:?}");
        assert!(!a.spans_one());
        assert!(a.describe().ends_with("(95% bootstrap, unpaired, 7 runs each)"), "{}", a.describe());
        let inv = a.inverse();
        assert!((inv.low - 1.0 / a.high).abs() < 1e-12 && (inv.value * a.value - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unusable_sides_give_none() {
        assert_eq!(ratio_of_medians(&[], &[1.0]), None);
        assert_eq!(ratio_of_medians(&[1.0], &[0.0, f64::NAN]), None);
    }
}
