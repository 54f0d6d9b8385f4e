//! Summary statistics across repeated runs.

use serde::{Deserialize, Serialize};

use super::sample::RunSample;

/// Spread (coefficient of variation) above which a comparison is doubtful.
pub const NOISY_CV_PCT: f64 = 10.0;

/// One figure across runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub mean: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// (max - min) / median, in percent.
    pub spread_pct: f64,
    /// Standard deviation / mean, in percent (0 for a single run).
    pub cv_pct: f64,
}

impl Stat {
    pub fn of(values: &[f64]) -> Stat {
        if values.is_empty() {
            return Stat::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let (min, max) = (sorted[0], sorted[n - 1]);
        let var = if n > 1 { sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
        let pct = |x: f64, of: f64| if of > 0.0 { x / of * 100.0 } else { 0.0 };
        Stat { mean, median, min, max, spread_pct: pct(max - min, median), cv_pct: pct(var.sqrt(), mean) }
    }
}

/// The summary of an experiment's timed runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub runs: u32,
    /// kvtest's per-blob time (open and commit included), in microseconds.
    pub per_op_us: Stat,
    /// Loop-only per-op time, in microseconds.
    pub loop_per_op_us: Stat,
    /// The steady-state per-op time (the loop with its commits and the
    /// writes' deferred work; `RunSample::steady_per_op_us`), in
    /// microseconds: what comparisons use. Absent before schema version 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_per_op_us: Option<Stat>,
    /// The session's one-off cost (open and close), in microseconds per
    /// session. Absent before schema version 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_off_us: Option<Stat>,
    pub mb_per_s: Stat,
    /// Index of the run whose per-op time is the median (the lower middle
    /// one for an even count): the run kvtest-style output shows.
    pub median_run: u32,
    /// Spread large enough to make a comparison doubtful.
    pub noisy: bool,
}

impl Summary {
    pub fn of(runs: &[RunSample]) -> Summary {
        let per_op: Vec<f64> = runs.iter().map(|r| r.per_op_us).collect();
        let per_op_us = Stat::of(&per_op);
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_by(|&a, &b| per_op[a].total_cmp(&per_op[b]));
        let median_run = order.get(runs.len().saturating_sub(1) / 2).map_or(0, |&i| runs[i].index);
        let all = |f: fn(&RunSample) -> Option<f64>| -> Option<Stat> {
            let v: Option<Vec<f64>> = runs.iter().map(f).collect();
            v.filter(|v| !v.is_empty()).map(|v| Stat::of(&v))
        };
        let steady_per_op_us = all(|r| r.steady_per_op_us);
        let figure = steady_per_op_us.unwrap_or(per_op_us);
        Summary {
            runs: runs.len() as u32,
            per_op_us,
            loop_per_op_us: Stat::of(&runs.iter().map(|r| r.loop_per_op_us).collect::<Vec<_>>()),
            steady_per_op_us,
            one_off_us: all(|r| r.one_off_us),
            mb_per_s: Stat::of(&runs.iter().map(|r| r.mb_per_s).collect::<Vec<_>>()),
            median_run,
            noisy: runs.len() > 1 && figure.cv_pct > NOISY_CV_PCT,
        }
    }

    /// The figure comparisons use: the steady-state per-op time, or
    /// kvtest's total per op in a file from before schema version 4.
    pub fn figure(&self) -> &Stat {
        self.steady_per_op_us.as_ref().unwrap_or(&self.per_op_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_of_known_values() {
        let s = Stat::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.min, s.max, s.median, s.mean), (1.0, 4.0, 2.5, 2.5));
        assert!((s.spread_pct - 120.0).abs() < 1e-9);
        assert!(s.cv_pct > 0.0);
        let one = Stat::of(&[7.0]);
        assert_eq!((one.median, one.cv_pct, one.spread_pct), (7.0, 0.0, 0.0));
    }
}
