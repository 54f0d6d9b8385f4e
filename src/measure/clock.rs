//! The clock that budgets and deadlines read (`--budget`, advise's whole
//! command budget, the suite's deadline). Commands read the real monotonic
//! clock; unit tests give a fake one that moves only when the test moves
//! it, so a test of a budget holds however fast or busy the machine is.
//! Timed runs never read this clock: their loops have their own
//! ([`super::op_clock`]) and per-run phases (`drivers::session`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where "now" comes from for a budget. Small and `Copy`, so a
/// [`super::rounds::RoundsPlan`] that holds one stays `Copy`.
#[derive(Clone, Copy)]
pub struct Clock {
    fake: Option<&'static FakeClock>,
}

impl Clock {
    /// The real monotonic clock (`Instant::now`).
    pub const REAL: Clock = Clock { fake: None };

    pub fn now(&self) -> Instant {
        match self.fake {
            None => Instant::now(),
            Some(f) => f.origin + Duration::from_nanos(f.offset_ns.fetch_add(f.tick_ns, Ordering::SeqCst)),
        }
    }

    /// Time since `earlier` (a reading of this clock).
    pub fn since(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::REAL
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.fake.is_some() { "Clock(fake)" } else { "Clock(real)" })
    }
}

/// Two plans are equal only if they read the same clock.
impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        match (self.fake, other.fake) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a, b),
            _ => false,
        }
    }
}

/// A clock for tests: it starts at the moment it is made and moves only by
/// [`FakeClock::advance`] (from any thread) and, when ticking, by a fixed
/// step after each reading.
#[derive(Debug)]
pub struct FakeClock {
    origin: Instant,
    offset_ns: AtomicU64,
    tick_ns: u64,
}

impl FakeClock {
    /// A new fake clock that moves only when advanced. It is leaked (a few
    /// bytes per test) so that the [`Clock`] reading it can be `Copy`.
    pub fn new() -> &'static FakeClock {
        FakeClock::ticking(Duration::ZERO)
    }

    /// A fake clock that moves on by `step` after each reading: a machine
    /// so slow that whatever runs between two readings takes `step`.
    pub fn ticking(step: Duration) -> &'static FakeClock {
        let clock = FakeClock { origin: Instant::now(), offset_ns: AtomicU64::new(0), tick_ns: step.as_nanos() as u64 };
        Box::leak(Box::new(clock))
    }

    /// The [`Clock`] that reads this one.
    pub fn clock(&'static self) -> Clock {
        Clock { fake: Some(self) }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.offset_ns.fetch_add(by.as_nanos() as u64, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_clock_moves_only_when_advanced() {
        let fake = FakeClock::new();
        let clock = fake.clock();
        let start = clock.now();
        assert_eq!(clock.since(start), Duration::ZERO);
        fake.advance(Duration::from_secs(90));
        assert_eq!(clock.since(start), Duration::from_secs(90));
        assert_eq!(clock, fake.clock());
        assert_ne!(clock, Clock::REAL);
        assert_ne!(clock, FakeClock::new().clock(), "another fake clock is another clock");
    }

    #[test]
    fn a_ticking_clock_moves_at_each_reading() {
        let clock = FakeClock::ticking(Duration::from_secs(60)).clock();
        let start = clock.now();
        assert_eq!(clock.since(start), Duration::from_secs(60));
        assert_eq!(clock.since(start), Duration::from_secs(120));
    }
}
