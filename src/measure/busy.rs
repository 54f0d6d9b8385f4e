//! How busy the machine was during one round: the load average, the CPU
//! time other processes took and the hypervisor stole (`/proc/stat`), and
//! the CPU and I/O pressure stall time (`/proc/pressure/*`, where the kernel
//! has it). Read between runs, never inside a timer.

use serde::{Deserialize, Serialize};

/// Share of all CPUs other processes used, in percent, above which a round
/// counts as busy.
pub const BUSY_OTHER_CPU_PCT: f64 = 25.0;
/// Steal above which a round counts as busy.
pub const BUSY_STEAL_PCT: f64 = 5.0;
/// CPU or I/O pressure ("some" stall share) above which a round is busy.
pub const BUSY_PRESSURE_PCT: f64 = 10.0;

/// The machine's load during one round. Absent sources read as None.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// The 1-minute load average at the end of the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadavg_1m: Option<f64>,
    /// CPU time of other processes, as a share of all CPUs over the round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_cpu_pct: Option<f64>,
    /// Time the hypervisor ran something else, as a share of all CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_pct: Option<f64>,
    /// Share of the round some task waited for a CPU (/proc/pressure/cpu).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_pct: Option<f64>,
    /// Share of the round some task waited for I/O (/proc/pressure/io).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_pressure_pct: Option<f64>,
}

impl Load {
    /// Whether this round ran on a busy machine (any threshold passed).
    pub fn busy(&self) -> bool {
        self.other_cpu_pct.is_some_and(|v| v > BUSY_OTHER_CPU_PCT)
            || self.steal_pct.is_some_and(|v| v > BUSY_STEAL_PCT)
            || self.cpu_pressure_pct.is_some_and(|v| v > BUSY_PRESSURE_PCT)
            || self.io_pressure_pct.is_some_and(|v| v > BUSY_PRESSURE_PCT)
    }
}

/// How busy a set of rounds ran: how many were busy, and the worst of each
/// figure over those busy rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BusySummary {
    pub busy: usize,
    pub rounds: usize,
    pub max_loadavg: f64,
    pub max_other_cpu_pct: f64,
    pub max_steal_pct: f64,
    pub max_cpu_pressure_pct: f64,
    pub max_io_pressure_pct: f64,
}

impl BusySummary {
    pub fn of(loads: &[Load]) -> BusySummary {
        let busy: Vec<&Load> = loads.iter().filter(|l| l.busy()).collect();
        let max = |f: fn(&Load) -> Option<f64>| busy.iter().filter_map(|l| f(l)).fold(0.0, f64::max);
        BusySummary {
            busy: busy.len(),
            rounds: loads.len(),
            max_loadavg: max(|l| l.loadavg_1m),
            max_other_cpu_pct: max(|l| l.other_cpu_pct),
            max_steal_pct: max(|l| l.steal_pct),
            max_cpu_pressure_pct: max(|l| l.cpu_pressure_pct),
            max_io_pressure_pct: max(|l| l.io_pressure_pct),
        }
    }
}

/// The counters at one instant; two of them make a [`Load`].
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    at: std::time::Instant,
    /// Busy and steal jiffies of all CPUs, and the total.
    cpu: Option<(u64, u64, u64)>,
    /// This process's CPU time in microseconds.
    own_cpu_us: u64,
    cpu_stall_us: Option<u64>,
    io_stall_us: Option<u64>,
}

impl Snapshot {
    pub fn now() -> Self {
        let own = super::oscount::OsCounters::now();
        Snapshot {
            at: std::time::Instant::now(),
            cpu: std::fs::read_to_string("/proc/stat").ok().and_then(|t| parse_stat(&t)),
            own_cpu_us: own.user_cpu_us + own.system_cpu_us,
            cpu_stall_us: pressure("cpu"),
            io_stall_us: pressure("io"),
        }
    }

    /// The load between `earlier` and now.
    pub fn load_since(&self, earlier: &Snapshot) -> Load {
        let wall_us = self.at.duration_since(earlier.at).as_micros().max(1) as f64;
        let stall = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?) as f64 / wall_us * 100.0);
        let (other, steal) = match (self.cpu, earlier.cpu) {
            (Some((busy, steal, total)), Some((busy0, steal0, total0))) if total > total0 => {
                let total = (total - total0) as f64;
                // Jiffies are 1/100 s (USER_HZ) on Linux.
                let own = self.own_cpu_us.saturating_sub(earlier.own_cpu_us) as f64 / 10_000.0;
                let other = ((busy - busy0) as f64 - own).max(0.0);
                (Some(other / total * 100.0), Some((steal - steal0) as f64 / total * 100.0))
            }
            _ => (None, None),
        };
        Load {
            loadavg_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse().ok()),
            other_cpu_pct: other,
            steal_pct: steal,
            cpu_pressure_pct: stall(self.cpu_stall_us, earlier.cpu_stall_us),
            io_pressure_pct: stall(self.io_stall_us, earlier.io_stall_us),
        }
    }
}

/// (busy, steal, total) jiffies from `/proc/stat`'s aggregate "cpu" line:
/// busy is user + nice + system + irq + softirq (guest time is in user).
fn parse_stat(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let total: u64 = v.iter().take(8).sum();
    (total > 0).then_some((busy, at(7), total))
}

/// The "some" total stall time in microseconds of `/proc/pressure/KIND`.
fn pressure(kind: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/pressure/{kind}")).ok()?;
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace().find_map(|f| f.strip_prefix("total=")?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_aggregate_cpu_line() {
        let text = "cpu  100 5 20 800 10 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_stat(text), Some((130, 7, 947)));
        assert_eq!(parse_stat("intr 1 2 3\n"), None);
    }

    #[test]
    fn busy_when_any_threshold_passes() {
        assert!(!Load::default().busy(), "nothing known is not busy");
        assert!(Load { other_cpu_pct: Some(60.0), ..Load::default() }.busy());
        assert!(Load { io_pressure_pct: Some(30.0), ..Load::default() }.busy());
        assert!(!Load { other_cpu_pct: Some(5.0), steal_pct: Some(0.5), ..Load::default() }.busy());
    }

    #[test]
    fn summary_takes_the_worst_of_the_busy_rounds() {
        let quiet = Load { other_cpu_pct: Some(3.0), loadavg_1m: Some(0.5), ..Load::default() };
        let cpu = Load { other_cpu_pct: Some(80.0), loadavg_1m: Some(3.1), ..Load::default() };
        let io = Load { other_cpu_pct: Some(10.0), io_pressure_pct: Some(45.0), ..Load::default() };
        let s = BusySummary::of(&[quiet, cpu, io, quiet]);
        assert_eq!((s.busy, s.rounds), (2, 4));
        assert_eq!((s.max_other_cpu_pct, s.max_io_pressure_pct, s.max_loadavg), (80.0, 45.0, 3.1));
    }

    #[test]
    fn a_real_interval_reads_plausible_shares() {
        let a = Snapshot::now();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let load = Snapshot::now().load_since(&a);
        assert!(load.loadavg_1m.is_some(), "Linux has /proc/loadavg");
        let other = load.other_cpu_pct.expect("Linux has /proc/stat");
        assert!((0.0..=100.0).contains(&other), "{load:?}");
    }
}
