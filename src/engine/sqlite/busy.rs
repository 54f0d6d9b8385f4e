//! SQLite's own busy-timeout schedule (`sqliteDefaultBusyCallback`), for
//! writers that wait for the write lock themselves so that every wait is
//! counted: advise's clients and the concurrency study's writers.

/// In milliseconds: the n-th wait of one lock event sleeps `DELAYS[n]`, the
/// last one repeated.
const DELAYS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/// Whether the `count`-th wait of one lock event may still sleep within
/// `timeout_ms`, and for how long.
pub fn busy_delay(count: u32, timeout_ms: u32) -> Option<u64> {
    let n = count as usize;
    let delay = DELAYS[n.min(DELAYS.len() - 1)];
    let slept: u64 =
        DELAYS.iter().take(n).sum::<u64>() + n.saturating_sub(DELAYS.len()) as u64 * DELAYS[DELAYS.len() - 1];
    let left = u64::from(timeout_ms).checked_sub(slept).filter(|&l| l > 0)?;
    Some(delay.min(left))
}

#[cfg(test)]
mod tests {
    use super::busy_delay;

    #[test]
    fn busy_waits_follow_sqlites_schedule_and_stop_at_the_timeout() {
        assert_eq!(busy_delay(0, 5000), Some(1));
        assert_eq!(busy_delay(11, 5000), Some(100));
        assert_eq!(busy_delay(2, 4), Some(1), "1 + 2 ms slept, 1 ms left of 4");
        assert_eq!(busy_delay(2, 3), None, "the timeout is spent");
        assert_eq!(busy_delay(0, 0), None, "no timeout: no wait");
        // 328 ms over the schedule, then 100 ms a wait: wait 58 has 72 ms
        // left of 5 s, wait 59 none.
        assert_eq!((busy_delay(58, 5000), busy_delay(59, 5000)), (Some(72), None));
    }
}
