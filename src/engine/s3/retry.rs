//! Trying a request again, only where nothing is timed (building and
//! removing a dataset): after a pause when the store answered busy, and a
//! few times when the connection broke; a timed request's failure says
//! that it was not tried again.

use std::time::Duration;

use crate::{Error, Result};

/// The pauses before each new try of a request the store answered busy,
/// when building or removing a dataset (never in a timed loop): about 30 s
/// in all, as S3 clients back off from 503 SlowDown.
pub const BUSY_PAUSES: [Duration; 6] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
];

/// Tries of one request whose connection broke (reset, timed out) before
/// building gives up: a blip is retried, a dead store is not waited on
/// for minutes.
pub(super) const BROKEN_TRIES: usize = 3;

/// The answers S3 clients try again: a server error or a busy store
/// (S3's 503 SlowDown; Swift's proxy answers 503 when a storage server
/// missed its timeouts, as a single-process one in a long fsync can).
pub fn is_busy(status: u16) -> bool {
    matches!(status, 500 | 502 | 503 | 504)
}

/// Why a request is worth another try while building or removing.
pub enum Again {
    /// The store answered busy ([`is_busy`]).
    Busy(Error),
    /// The connection broke ([`is_broken`]).
    Broken(Error),
}

impl Again {
    /// A timed request's answer: another try is never made, so any is an
    /// error.
    pub fn none(again: Option<Again>) -> Result<()> {
        match again {
            None => Ok(()),
            Some(Again::Busy(e)) => Err(timed(e, true)),
            Some(Again::Broken(e)) => Err(e),
        }
    }
}

/// A timed request's failure, saying, when the store answered busy (S3's
/// 503 SlowDown), that it was not tried again and what may help.
pub(super) fn timed(e: Error, busy: bool) -> Error {
    match e {
        Error::BadInput { path, why } if busy => Error::BadInput {
            path,
            why: format!(
                "{why}: timed requests are never tried again (a retry would hide its wait in the figures); \
                 fewer clients at once (--threads, --clients) may keep the store from slowing down"
            ),
        },
        other => other,
    }
}

/// A failure S3 clients try again: a reset or closed connection, or a
/// request that timed out (never a refused connection: that store is down).
pub(super) fn is_broken(e: &ureq::Error) -> bool {
    use std::io::ErrorKind::*;
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => {
            matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | TimedOut)
        }
        _ => false,
    }
}

/// Runs `once` until it needs no other try, pausing `pauses` between
/// tries (each pause ends early when `stop` says so); a broken connection
/// is tried at most [`BROKEN_TRIES`] times. How many tries failed; the
/// last failure is the error.
pub fn patiently(
    pauses: &[Duration],
    stop: fn() -> bool,
    mut once: impl FnMut() -> Result<Option<Again>>,
) -> Result<u64> {
    let (mut tries, mut broken) = (0, 0);
    loop {
        let (e, last) = match once()? {
            None => return Ok(tries as u64),
            Some(Again::Busy(e)) => (e, tries >= pauses.len()),
            Some(Again::Broken(e)) => {
                broken += 1;
                (e, broken >= BROKEN_TRIES || tries >= pauses.len())
            }
        };
        if last {
            let why = if broken > 0 { "the connection kept breaking" } else { "the store stayed busy" };
            return Err(gave_up(e, tries + 1, &pauses[..tries], why));
        }
        pause(pauses[tries], stop)?;
        tries += 1;
    }
}

/// Sleeps `d`, or less when `stop` says so (then Interrupted).
fn pause(d: Duration, stop: fn() -> bool) -> Result<()> {
    let step = Duration::from_millis(100);
    let mut left = d;
    while !left.is_zero() {
        if stop() {
            return Err(Error::Interrupted);
        }
        std::thread::sleep(left.min(step));
        left = left.saturating_sub(step);
    }
    Ok(())
}

/// The last failure, saying that it was the last of several tries.
fn gave_up(e: Error, tries: usize, paused: &[Duration], why: &str) -> Error {
    let waited = paused.iter().map(Duration::as_secs_f64).sum::<f64>().round() as u64;
    match e {
        Error::BadInput { path, why: what } => {
            Error::BadInput { path, why: format!("{what} ({tries} tries over {waited} s: {why})") }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn never() -> bool {
        false
    }

    #[test]
    fn busy_answers_and_broken_connections_are_tried_again_and_others_end_at_once() {
        let busy = || {
            Again::Busy(Error::bad_input(Path::new("s"), "PUT k failed: the store answered 503 Service Unavailable"))
        };
        let no_pause = [Duration::ZERO; 3];
        let mut calls = 0;
        let twice_busy = patiently(&no_pause, never, || {
            calls += 1;
            Ok((calls <= 2).then(busy))
        });
        assert_eq!((twice_busy.unwrap(), calls), (2, 3));
        let mut calls = 0;
        let e = patiently(&no_pause, never, || {
            calls += 1;
            Ok(Some(busy()))
        })
        .unwrap_err()
        .to_string();
        assert_eq!(calls, 4, "one try, then one after each pause");
        assert!(e.ends_with("503 Service Unavailable (4 tries over 0 s: the store stayed busy)"), "{e}");
        let mut calls = 0;
        let e = patiently(&[Duration::ZERO; 6], never, || {
            calls += 1;
            Ok(Some(Again::Broken(Error::bad_input(Path::new("s"), "PUT k: no answer within 30 s"))))
        })
        .unwrap_err()
        .to_string();
        assert_eq!(calls, BROKEN_TRIES, "a broken connection is tried {BROKEN_TRIES} times");
        assert!(e.ends_with("(3 tries over 0 s: the connection kept breaking)"), "{e}");
        let mut calls = 0;
        let refused = patiently(&no_pause, never, || {
            calls += 1;
            Err(Error::bad_input(Path::new("s"), "the store refused access key k"))
        });
        assert!(refused.is_err() && calls == 1, "a refusal is not tried again");
        assert!([500, 502, 503, 504].into_iter().all(is_busy) && ![200, 403, 404, 507].into_iter().any(is_busy));
        assert!(BUSY_PAUSES.iter().sum::<Duration>() < Duration::from_secs(60), "a dead store fails within a minute");
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(is_broken(&ureq::Error::Io(reset)) && is_broken(&ureq::Error::Timeout(ureq::Timeout::PerRead)));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!is_broken(&ureq::Error::Io(refused)), "a refused connection: the store is down");
    }
}
