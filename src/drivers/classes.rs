//! One script's latency by class of operation (read, overwrite, put,
//! delete): a histogram only for each class the script runs, made outside
//! every timer when a timed session starts, and taken at the end of the
//! run to be merged into the run's. A full-range histogram is about
//! 270 KB; when every client kept four between runs and a copy of them
//! for the merge, an arm of 1024 clients held about 2.2 GB.

use crate::measure::{Latency, LatencySink};

/// Latency per class of operation (index `ScriptOp::class`); a class with
/// no histogram holds none.
#[derive(Debug, Clone, Default)]
pub struct Classes([Option<Latency>; 4]);

impl Classes {
    /// Each class's histogram, or none.
    pub fn of(each: [Option<Latency>; 4]) -> Classes {
        Classes(each)
    }

    /// Makes a histogram for each of `classes` that has none (one a timed
    /// session of several runs keeps adding to).
    pub fn arm(&mut self, classes: impl IntoIterator<Item = usize>) {
        for class in classes {
            self.0[class].get_or_insert_with(Latency::new);
        }
    }

    /// Records `ns` in `class`'s histogram, which [`Classes::arm`] made
    /// for every class the script runs.
    #[inline(always)]
    pub fn record(&mut self, class: usize, ns: u64) {
        if let Some(hist) = &mut self.0[class] {
            hist.record(ns);
        }
    }

    /// `class`'s histogram, if it has one.
    pub fn get(&self, class: usize) -> Option<&Latency> {
        self.0[class].as_ref()
    }

    /// Adds each class's histogram into `into`'s of the same class.
    pub fn merge_into(&self, into: &mut [Latency; 4]) {
        for (mine, theirs) in into.iter_mut().zip(&self.0) {
            if let Some(theirs) = theirs {
                mine.merge(theirs);
            }
        }
    }

    /// How many histograms it holds.
    pub fn held(&self) -> usize {
        self.0.iter().flatten().count()
    }
}

/// The p99 of every operation of one run, its classes merged; None
/// when the run timed none.
pub fn p99_ns(run: &[Latency; 4]) -> Option<u64> {
    let mut all = Latency::new();
    for class in run {
        all.merge(class);
    }
    (all.count() > 0).then(|| all.quantile_ns(0.99))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_classes_armed_hold_a_histogram_and_merge_by_class() {
        let mut c = Classes::default();
        assert_eq!(c.held(), 0);
        c.arm([0, 1, 1]);
        assert_eq!(c.held(), 2);
        c.record(1, 500);
        c.arm([1]);
        assert_eq!(c.get(1).map(Latency::count), Some(1), "arming again keeps what it holds");
        c.record(3, 500);
        assert!(c.get(3).is_none());
        let mut into: [Latency; 4] = Default::default();
        c.merge_into(&mut into);
        assert_eq!(into.iter().map(Latency::count).collect::<Vec<_>>(), [0, 1, 0, 0]);
    }
}
