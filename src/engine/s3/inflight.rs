//! Several untimed requests at once (building and removing a dataset),
//! each thread on its own connection, and what to say when some fail.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::client::Client;
use crate::{Error, Result};

/// Requests in flight while building (and removing) a dataset: Swift's
/// proxy and object server are CPU-bound Python, and about eight keep
/// both cores of a small machine busy.
pub const IN_FLIGHT: usize = 8;

/// The requests that failed while several were in flight: how many, and
/// the first one's error (the one the build reports).
#[derive(Default)]
pub(super) struct Failures {
    count: AtomicU64,
    first: Mutex<Option<Error>>,
}

impl Failures {
    pub fn add(&self, e: Error) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.first.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
    }

    pub fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// The first failure, its message saying how many requests failed.
    pub fn first(&self) -> Option<Error> {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        match self.count.load(Ordering::SeqCst) {
            1 => Some(first),
            n => Some(Error::invalid(format!("{n} requests failed; the first: {first}"))),
        }
    }

    pub fn check(&self) -> Result<()> {
        self.first().map_or(Ok(()), Err)
    }
}

/// Calls `each` on every item, [`IN_FLIGHT`] at a time, each thread with
/// its own client from `client`; stops at the first failure, or when the
/// clients' stop says so (then Interrupted).
pub(super) fn for_each<T: Sync>(
    items: &[T],
    client: &(dyn Fn() -> Client + Sync),
    each: &(dyn Fn(&Client, &T) -> Result<()> + Sync),
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failures = Failures::default();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT.min(items.len()) {
            scope.spawn(|| {
                let client = client();
                while !failures.any() {
                    if (client.stop)() {
                        return failures.add(Error::Interrupted);
                    }
                    let Some(item) = items.get(next.fetch_add(1, Ordering::SeqCst)) else { return };
                    if let Err(e) = each(&client, item) {
                        failures.add(e);
                    }
                }
            });
        }
    });
    failures.check()
}
