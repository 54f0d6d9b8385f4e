use std::sync::Arc;

use super::*;
use crate::records::{DatasetSpec, EngineSettings};
use crate::util::progress::Silent;

/// Every latency summed to the nanosecond (an HDR histogram keeps 3
/// significant digits of each).
#[derive(Default)]
struct ExactSum {
    ns: u64,
    count: u64,
}

impl LatencySink for ExactSum {
    const ENABLED: bool = true;
    fn record(&mut self, ns: u64) {
        self.ns += ns;
        self.count += 1;
    }
}

/// The steady-state figure is the loop's time over its ops, the latencies'
/// mean their sum over their count: they agree only if no stretch of the
/// loop (before the first op's previous timestamp, after the last op's
/// own) lies outside every latency. On a busy machine such a stretch, a
/// preemption there, was a millisecond over 40 fsyncs: 1% of the figure.
#[test]
fn the_loops_time_is_the_sum_of_its_operations_latencies_misses_included() {
    let dir = tempfile::tempdir().unwrap();
    let (db, flat) = (dir.path().join("kv.db"), dir.path().join("flat"));
    let spec = DatasetSpec { count: 20, size: 1000, ..DatasetSpec::default() };
    crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
    crate::engine::dataset::export(&db, &flat, false, false, &Silent).unwrap();
    let engine = crate::engine::open(&flat, &EngineSettings::default()).unwrap();
    let mut session = engine.open(OpenMode::measured(false, false)).unwrap();
    // Key 1000 has no blob: one miss after each three reads, timed as well.
    let keys = KeySequence::listed(Arc::from([1, 1000, 2, 3]));
    let mut sum = ExactSum::default();
    let totals = timed_loop(session.as_mut(), keys, 30, 1000, ReadOps, &mut sum).unwrap();
    session.close().unwrap();
    assert_eq!((totals.ops, totals.misses, totals.bytes), (30, 10, 30 * 1000));
    assert_eq!(sum.count, totals.ops + totals.misses, "every op and every miss timed once");
    let loop_ns = (totals.end - totals.start).as_nanos() as u64;
    assert_eq!(loop_ns, sum.ns, "the loop's time is its ops' latencies, to the nanosecond");
}
