//! Per-operation latency: an HDR histogram in nanoseconds (three significant
//! digits, so 1 us operations resolve to 1 ns), and the cost of the clock.
//!
//! Timestamps are chained: one clock read per operation, whose difference to
//! the previous read is that operation's latency, so the harness pays one
//! clock read per op. The per-op clock is the OS monotonic clock, the one
//! that times the loop itself, so the latencies add up to the loop's time on
//! any machine. (A time-stamp counter calibrated once per process, as
//! `quanta` does, is about 10 ns cheaper per read, but on a loaded VM its
//! calibration left the latencies' mean 30% below the loop's per-op time.)

use std::sync::OnceLock;
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency kept apart; anything slower is clamped (one hour).
const MAX_NS: u64 = 3_600_000_000_000;

/// Where a timed loop sends each operation's latency. [`NoLatency`] compiles
/// to nothing, so a loop run without latency reads no clock per operation.
pub trait LatencySink {
    const ENABLED: bool;
    fn record(&mut self, ns: u64);
}

pub struct NoLatency;

impl LatencySink for NoLatency {
    const ENABLED: bool = false;
    #[inline(always)]
    fn record(&mut self, _ns: u64) {}
}

#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencySink for Latency {
    const ENABLED: bool = true;
    /// Never allocates: the histogram's range is fixed when it is made.
    #[inline]
    fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }
}

impl Latency {
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds");
        Latency { hist }
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Adds another histogram (other runs, other threads).
    pub fn merge(&mut self, other: &Latency) {
        self.hist.add(&other.hist).expect("histograms share their bounds");
    }

    /// The histogram as text for the result file: base64 of HdrHistogram's
    /// V2 encoding (zero runs compressed), a few hundred bytes to a few KB,
    /// readable by any HdrHistogram implementation.
    pub fn to_base64(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::new();
        // Writing into a Vec cannot fail, and the histogram is never empty-ranged.
        let _ = hdrhistogram::serialization::Serializer::serialize(
            &mut hdrhistogram::serialization::V2Serializer::new(),
            &self.hist,
            &mut bytes,
        );
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads back [`Latency::to_base64`]; the error says what is wrong.
    pub fn from_base64(text: &str) -> Result<Latency, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim()).map_err(|e| e.to_string())?;
        let hist: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("{e:?}"))?;
        Ok(Latency { hist })
    }

    /// Latency in microseconds at each quantile (0.5, 0.99, ...).
    pub fn quantiles_us(&self, quantiles: &[f64]) -> Vec<f64> {
        quantiles.iter().map(|q| self.hist.value_at_quantile(*q) as f64 / 1000.0).collect()
    }

    /// Latency in nanoseconds at one quantile, as recorded.
    pub fn quantile_ns(&self, quantile: f64) -> u64 {
        self.hist.value_at_quantile(quantile)
    }

    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        let q = |q: f64| us(self.hist.value_at_quantile(q));
        LatencySummary {
            count: self.hist.len(),
            mean_us: self.hist.mean() / 1000.0,
            min_us: us(self.hist.min()),
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: us(self.hist.max()),
        }
    }
}

/// Percentiles of per-operation latency, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// The clock timed loops read once per operation.
pub fn op_clock() -> &'static OpClock {
    &OpClock
}

/// The per-op clock: reads of the OS monotonic clock ([`Instant`]).
#[derive(Debug, Clone, Copy)]
pub struct OpClock;

impl OpClock {
    /// One clock read.
    #[inline(always)]
    pub fn raw(&self) -> Instant {
        Instant::now()
    }

    /// Nanoseconds from `prev` to `now` (0 if `now` is earlier).
    #[inline(always)]
    pub fn delta_as_nanos(&self, prev: Instant, now: Instant) -> u64 {
        now.saturating_duration_since(prev).as_nanos() as u64
    }
}

/// Nanoseconds one per-op clock read and its conversion cost on this
/// machine, measured once per process as the median of several batches.
pub fn clock_cost_ns() -> f64 {
    static COST: OnceLock<f64> = OnceLock::new();
    *COST.get_or_init(|| {
        const READS: u32 = 100_000;
        let clock = op_clock();
        let mut batches: Vec<f64> = (0..7)
            .map(|_| {
                let start = Instant::now();
                let mut prev = clock.raw();
                let mut sum = 0u64;
                for _ in 0..READS {
                    let now = std::hint::black_box(clock.raw());
                    sum = sum.wrapping_add(clock.delta_as_nanos(prev, now));
                    prev = now;
                }
                std::hint::black_box(sum);
                start.elapsed().as_nanos() as f64 / f64::from(READS)
            })
            .collect();
        batches.sort_by(f64::total_cmp);
        batches[batches.len() / 2]
    })
}

/// Nanoseconds of a client's CPU that the harness takes per operation
/// when `clients` threads run at once: one clock read and one histogram
/// record, each thread into a histogram of its own, as each client of
/// `advise --clients` does. Thread CPU time, so that the time a thread
/// waits for a core (16 threads on 2 cores) is not counted as the
/// harness's. The median over the threads.
pub fn harness_cost_ns(clients: u32) -> f64 {
    const OPS: u32 = 100_000;
    let barrier = std::sync::Barrier::new(clients.max(1) as usize);
    let mut per_op: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients.max(1))
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    let clock = op_clock();
                    let mut hist = Latency::new();
                    barrier.wait();
                    let start = thread_cpu_ns();
                    let mut prev = clock.raw();
                    for _ in 0..OPS {
                        let now = std::hint::black_box(clock.raw());
                        hist.record(clock.delta_as_nanos(prev, now));
                        prev = now;
                    }
                    std::hint::black_box(&hist);
                    thread_cpu_ns().saturating_sub(start) as f64 / f64::from(OPS)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    per_op.sort_by(f64::total_cmp);
    per_op.get(per_op.len() / 2).copied().unwrap_or(0.0)
}

/// The calling thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_ordered_and_match_a_known_distribution() {
        let mut lat = Latency::new();
        for us in 1..=1000u64 {
            lat.record(us * 1000);
        }
        let s = lat.summary();
        assert_eq!(s.count, 1000);
        assert!(s.min_us <= s.p50_us && s.p50_us <= s.p90_us && s.p90_us <= s.p99_us);
        assert!(s.p99_us <= s.p999_us && s.p999_us <= s.max_us);
        assert!((s.p50_us - 500.0).abs() <= 1.0, "p50 {}", s.p50_us);
        assert!((s.p99_us - 990.0).abs() <= 1.0, "p99 {}", s.p99_us);
        assert!((s.mean_us - 500.5).abs() <= 0.5, "mean {}", s.mean_us);
        assert!(s.min_us <= s.mean_us && s.mean_us <= s.max_us);
    }

    #[test]
    fn one_microsecond_resolves() {
        let mut lat = Latency::new();
        lat.record(1_000);
        lat.record(1_001);
        assert!((lat.summary().max_us - 1.001).abs() < 0.0015);
    }

    #[test]
    fn merge_adds_counts() {
        let (mut a, mut b) = (Latency::new(), Latency::new());
        a.record(10);
        b.record(20);
        b.record(30);
        a.merge(&b);
        assert_eq!(a.count(), 3);
    }

    #[test]
    fn base64_round_trip_keeps_every_count() {
        let mut lat = Latency::new();
        for ns in [1_000u64, 1_500, 20_000, 20_000, 9_000_000] {
            lat.record(ns);
        }
        let text = lat.to_base64();
        assert!(text.len() < 200, "compact: {} chars", text.len());
        let back = Latency::from_base64(&text).unwrap();
        assert_eq!(back.count(), 5);
        assert_eq!(back.summary(), lat.summary());
        assert!((back.quantiles_us(&[0.5])[0] - 20.0).abs() < 0.02, "three significant digits");
        assert!(Latency::from_base64("not base64!").is_err());
        assert!(Latency::from_base64("aGVsbG8=").is_err(), "base64 but not a histogram");
    }

    #[test]
    fn the_harness_cost_of_several_clients_is_counted_per_operation() {
        // At any speed a clock read and a record take some CPU.
        let c = harness_cost_ns(3);
        assert!(c > 0.0 && c.is_finite(), "{c}");
    }

    #[test]
    fn clock_cost_is_plausible() {
        let c = clock_cost_ns();
        assert!(c > 0.0 && c < 10_000.0, "clock read costs {c} ns");
    }
}
