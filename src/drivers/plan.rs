//! A clients run's plan, checked before anything is built: how many
//! clients, the window, and a rate this machine can pace (from what one
//! wait for a due time costs here, [`crate::measure::pace::wait_cost`]);
//! and each client's due times under a rate.

use std::time::Duration;

use super::window::Pace;
use crate::measure::pace::WaitCost;
use crate::{Error, Result};

/// Most clients at once (`--clients`).
pub const MAX_CLIENTS: u32 = 1024;

/// The share of the machine's cores the clients' waits for their due
/// times may take at most: the rest is the store's and the operations'.
pub const PACING_SHARE: f64 = 0.5;

/// The shortest interval between one client's due times, however cheap
/// a wait is.
pub const MIN_INTERVAL: Duration = Duration::from_micros(10);

/// Client `client` of `clients`' due times at `rate` operations per second
/// over all of them: one every `clients / rate` seconds, the clients'
/// first due times spread evenly over one interval (client i at i/N of
/// it), so that N clients do not fire together. None: a closed loop.
pub fn pace_of(client: u32, clients: u32, rate: Option<f64>) -> Option<Pace> {
    let rate = rate?;
    let interval = Duration::from_secs_f64(f64::from(clients) / rate);
    Some(Pace { offset: interval.mul_f64(f64::from(client) / f64::from(clients)), interval })
}

/// Operations due in a window of `window` at `pace`.
pub fn due_in(window: Duration, pace: Pace) -> u64 {
    let (w, off, i) = (window.as_nanos(), pace.offset.as_nanos(), pace.interval.as_nanos().max(1));
    if off >= w {
        0
    } else {
        ((w - off).div_ceil(i)) as u64
    }
}

/// A clients run's plan, checked before any work: the client count, a
/// window longer than 0 in which every client has an operation due, and
/// a rate this machine can pace ([`check_rate`], on its measured wait).
pub fn check_plan(clients: u32, window: Duration, rate: Option<f64>) -> Result<()> {
    if clients == 0 || clients > MAX_CLIENTS {
        return Err(Error::invalid(format!("--clients must be from 1 to {MAX_CLIENTS}")));
    }
    if window.is_zero() {
        return Err(Error::invalid("a clients run needs a window longer than 0"));
    }
    check_rate(rate, clients, crate::util::cores(), crate::measure::pace::wait_cost())?;
    check_window(clients, window, rate)
}

/// Under a rate, every client must have an operation due in the window:
/// the last client's first is due latest (at (N-1)/N of an interval).
pub fn check_window(clients: u32, window: Duration, rate: Option<f64>) -> Result<()> {
    let Some(last) = pace_of(clients - 1, clients, rate) else { return Ok(()) };
    if due_in(window, last) > 0 {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "--rate {}: in a window of {}, nothing can be due for every client ({clients} clients each have one \
         operation due every {}, the last client's first {} after the window's start); lengthen the window or \
         raise the rate",
        rate.unwrap_or(0.0),
        human(window),
        human(last.interval),
        human(last.offset),
    )))
}

/// `--rate`: operations per second over all clients, above 0 and within
/// what this machine can pace, a wait for a due time costing `cost`: one
/// client's interval no shorter than a wait and its wake-up (nor than
/// [`MIN_INTERVAL`]), and all the clients' waits within [`PACING_SHARE`]
/// of the `cores`.
pub fn check_rate(rate: Option<f64>, clients: u32, cores: u32, cost: WaitCost) -> Result<()> {
    let Some(r) = rate else { return Ok(()) };
    if !(r.is_finite() && r > 0.0) {
        return Err(Error::invalid(format!("--rate {r}: must be above 0 ops/s")));
    }
    let interval_ns = f64::from(clients.max(1)) / r * 1e9;
    let reach_ns = (cost.cpu_ns + cost.late_ns).max(MIN_INTERVAL.as_nanos() as f64);
    if interval_ns < reach_ns {
        return Err(Error::invalid(format!(
            "--rate {r}: more than this machine can pace ({clients} client(s) would each start an operation every \
             {interval_ns:.0} ns, and one wait for a due time takes {:.1} µs of a core and wakes {:.1} µs late here)",
            cost.cpu_ns / 1e3,
            cost.late_ns / 1e3
        )));
    }
    let most = f64::from(cores.max(1)) * 1e9 * PACING_SHARE / cost.cpu_ns.max(1.0);
    if r > most {
        return Err(Error::invalid(format!(
            "--rate {r}: more than this machine can pace (one wait for a due time takes {:.1} µs of a core here, \
             so the clients' waits alone would take more than {:.0}% of its {cores} cores above {most:.0} ops/s)",
            cost.cpu_ns / 1e3,
            PACING_SHARE * 100.0
        )));
    }
    Ok(())
}

/// A duration as a person reads it: ms below a second, else s.
fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.3} ms", d.as_secs_f64() * 1e3).replace(".000 ms", " ms")
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: WaitCost = WaitCost { cpu_ns: 10_000.0, late_ns: 50_000.0 };

    #[test]
    fn bad_rates_are_refused_on_the_measured_cost_of_a_wait() {
        for rate in [0.0, -5.0, f64::NAN] {
            let e = check_rate(Some(rate), 2, 2, COST).unwrap_err().to_string();
            assert!(e.contains("--rate") && e.contains("above 0"), "{e}");
        }
        // One client at 20,000 a second: an interval of 50 µs, shorter
        // than a wait (10 µs) and its wake-up (50 µs late).
        let e = check_rate(Some(20_000.0), 1, 64, COST).unwrap_err().to_string();
        assert!(e.contains("more than this machine can pace") && e.contains("every 50000 ns"), "{e}");
        assert!(e.contains("10.0 µs of a core and wakes 50.0 µs late"), "{e}");
        // At 16 clients each has 800 µs; but 2 cores at half their time
        // pace 100,000 waits of 10 µs a second, no more.
        assert!(check_rate(Some(20_000.0), 16, 2, COST).is_ok());
        let e = check_rate(Some(150_000.0), 1024, 2, COST).unwrap_err().to_string();
        assert!(e.contains("more than 50% of its 2 cores above 100000 ops/s"), "{e}");
        assert!(check_rate(None, 1024, 1, COST).is_ok());
    }

    #[test]
    fn a_window_where_a_client_has_nothing_due_is_refused_naming_the_window_and_the_rate() {
        // 16 clients at 10 ops/s: one due every 1.6 s each, the last
        // client's first 1.5 s in; a 400 ms window holds none of its.
        let e = check_window(16, Duration::from_millis(400), Some(10.0)).unwrap_err().to_string();
        assert!(e.contains("--rate 10: in a window of 400 ms") && e.contains("every 1.600 s"), "{e}");
        assert!(check_window(16, Duration::from_secs(2), Some(10.0)).is_ok());
        assert!(check_window(16, Duration::from_millis(1), None).is_ok(), "a closed loop has no due times");
    }

    #[test]
    fn the_clients_due_times_are_spread_over_one_interval() {
        let pace = |i| pace_of(i, 2, Some(2000.0)).unwrap();
        assert_eq!((pace(0).offset, pace(1).offset), (Duration::ZERO, Duration::from_micros(500)));
        assert_eq!(pace(1).interval, Duration::from_millis(1));
        let window = Duration::from_millis(40);
        assert_eq!((due_in(window, pace(0)), due_in(window, pace(1))), (40, 40));
        assert_eq!(due_in(Duration::from_micros(400), pace(1)), 0, "its first op is due after the window");
        assert_eq!(pace_of(0, 2, None), None, "closed loop");
    }
}
