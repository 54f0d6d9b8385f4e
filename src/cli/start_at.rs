//! `run --start-at TIME`: clients on several hosts (or processes) begin
//! their timed runs at one wall-clock time, so that `report --merge` sums
//! throughputs measured at once. Everything before the timed runs (the
//! open, the survey, the warm-ups) happens first; then the run sleeps
//! until TIME. Each run records the wall-clock window of its timed runs.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blobbench::drivers::run::{self, RunOptions, RunReport};
use blobbench::results::RunSection;

use super::servers::ServerArgs;

/// Farthest a start may be, either way: a wrong day or milliseconds given
/// for seconds is refused rather than waited for.
const MAX_AWAY: Duration = Duration::from_secs(24 * 3600);

/// clap's parser for `--start-at`: RFC 3339 (`2026-11-27T19:00:00Z`, any
/// offset) or unix seconds (`1795806000`, `1795806000.5`), within a day.
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    parse_at(s, SystemTime::now())
}

fn parse_at(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    let s = s.trim();
    let unix = !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
    let at = if unix {
        let secs: f64 = s.parse().map_err(|_| format!("--start-at {s}: not a number of unix seconds"))?;
        Duration::try_from_secs_f64(secs).ok().and_then(|d| UNIX_EPOCH.checked_add(d))
    } else {
        let ts: jiff::Timestamp = s
            .parse()
            .map_err(|_| format!("--start-at {s:?}: neither RFC 3339 (e.g. 2026-11-27T19:00:00Z) nor unix seconds"))?;
        u64::try_from(ts.as_nanosecond()).ok().and_then(|n| UNIX_EPOCH.checked_add(Duration::from_nanos(n)))
    };
    let at = at.ok_or_else(|| format!("--start-at {s}: out of range"))?;
    let away = at.duration_since(now).unwrap_or_else(|e| e.duration());
    if away > MAX_AWAY {
        let hours = away.as_secs_f64() / 3600.0;
        let when = if at > now { "ahead" } else { "ago" };
        return Err(format!("--start-at {s} is {hours:.1} hours {when}; it must be within a day of now"));
    }
    Ok(at)
}

/// Sleeps until `at`; a Ctrl-C ends the wait (the runs then stop at once).
fn wait_until(at: Option<SystemTime>) {
    let Some(at) = at else { return };
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if blobbench::measure::stop_requested() || left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// A run (or a `--threads` run) with its timed runs started at `start_at`,
/// and the wall-clock window they took.
pub fn timed(
    opts: &RunOptions,
    threads: Option<u32>,
    start_at: Option<SystemTime>,
) -> anyhow::Result<(RunReport, u64, u64)> {
    if let Some(t) = threads {
        // The readers' open and warm-up happen inside: the window holds them.
        wait_until(start_at);
        let start = unix_ns(SystemTime::now());
        let report = blobbench::drivers::parallel_read::run(opts, t, "run", "run")?;
        return Ok((report, start, unix_ns(SystemTime::now())));
    }
    let engine = blobbench::engine::open(&opts.path, &opts.settings)?;
    let warmup = opts.plan.warmup;
    let mut start = 0;
    let mut end = 0;
    if warmup == 0 {
        wait_until(start_at);
        start = unix_ns(SystemTime::now());
    }
    let mut after_run = |done: u32, _total: u32| {
        if done == warmup {
            wait_until(start_at);
            start = unix_ns(SystemTime::now());
        } else if done > warmup {
            end = unix_ns(SystemTime::now());
        }
    };
    let report = run::run_engine(engine, opts, "run", "run", &mut after_run)?;
    Ok((report, start, end.max(start)))
}

/// What `report --merge` needs of a run: its window and its store.
pub fn section(
    servers: &ServerArgs,
    path: &Path,
    host: &str,
    window: (u64, u64),
    at: Option<SystemTime>,
) -> RunSection {
    RunSection {
        timed_start_unix_ns: window.0,
        timed_end_unix_ns: window.1,
        start_at_unix_ns: at.map(unix_ns),
        endpoint: endpoint(servers, path, host),
    }
}

/// The store a run measured: the server the user runs (its URL without a
/// password), or this host's dataset.
fn endpoint(servers: &ServerArgs, path: &Path, host: &str) -> String {
    if let Some(url) = &servers.pg {
        return blobbench::engine::postgres::redact(url);
    }
    if let (Some(url), Some(bucket)) = (&servers.s3, &servers.s3_bucket) {
        return format!("{} bucket {bucket}", url.trim_end_matches('/'));
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    format!("{host}:{}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_is_rfc_3339_or_unix_seconds_within_a_day() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_806_000);
        let at = |s: &str| parse_at(s, now);
        assert_eq!(at("1795806060").unwrap(), now + Duration::from_secs(60));
        assert_eq!(at("1795806000.5").unwrap(), now + Duration::from_millis(500));
        let rfc = at("2026-11-27T19:20:00Z").unwrap();
        assert_eq!(rfc, now + Duration::from_secs(1_200));
        assert_eq!(at("2026-11-27T20:20:00+01:00").unwrap(), rfc, "an offset is honoured");
        assert!(at("1795805000").is_ok(), "a start a little in the past begins at once");
        for (bad, why) in [
            ("tomorrow", "neither RFC 3339"),
            ("", "neither RFC 3339"),
            ("1.2.3", "not a number"),
            ("1795999999", "hours ahead"),
            ("1795806000000", "hours ahead"),
            ("2026-11-25T19:00:00Z", "hours ago"),
        ] {
            let e = at(bad).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{bad}: {e}");
        }
    }
}
