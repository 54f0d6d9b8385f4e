//! Filling a dataset: the marker, then one PUT per blob (a multipart
//! upload at or above the threshold), [`IN_FLIGHT`] requests in flight
//! (one connection each) and at most [`BYTES_IN_FLIGHT`] of blobs read
//! ahead of them, each tried again while the store answers busy (the build
//! is not timed). Ctrl-C stops it before the next blob.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::client::{Client, Store};
use super::descriptor::{Descriptor, Marker};
use super::inflight::{Failures, IN_FLIGHT};
use crate::engine::kv;
use crate::engine::kvtest_db::copy_rows;
use crate::engine::report::ExportReport;
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// The most bytes of blobs read from the database and not yet stored: the
/// export's memory is this (or one blob, if larger) plus the database's
/// own, whatever the blobs' sizes.
pub const BYTES_IN_FLIGHT: u64 = 256 << 20;

/// What a build stored: entries and bytes, the PUTs the store answered
/// busy before it took them, and the blobs sent in parts.
pub(super) struct Filled {
    counts: (u64, u64),
    busy: u64,
    multipart: u64,
}

impl Filled {
    pub fn report(&self, started: Instant, location: Option<String>) -> ExportReport {
        ExportReport {
            busy_retries: self.busy,
            multipart_blobs: self.multipart,
            location,
            ..kv::report(super::kind::KIND, self.counts, started)
        }
    }
}

/// Bytes of blobs read and not yet stored, at most [`BYTES_IN_FLIGHT`]
/// (a larger blob takes it all, alone).
struct Budget {
    left: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    fn new() -> Budget {
        Budget { left: Mutex::new(BYTES_IN_FLIGHT), freed: Condvar::new() }
    }

    fn take(&self, bytes: usize) {
        let want = (bytes as u64).min(BYTES_IN_FLIGHT);
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        while *left < want {
            left = self.freed.wait(left).unwrap_or_else(|e| e.into_inner());
        }
        *left -= want;
    }

    fn give(&self, bytes: usize) {
        *self.left.lock().unwrap_or_else(|e| e.into_inner()) += (bytes as u64).min(BYTES_IN_FLIGHT);
        self.freed.notify_all();
    }
}

/// PUTs the marker, then every row of `db` as one object, [`IN_FLIGHT`] at
/// a time, each tried again while the store answers busy (the build is
/// not timed). Ctrl-C stops it before the next blob.
pub(super) fn fill(
    store: &Arc<Store>,
    desc: &Descriptor,
    db: &Path,
    threshold: u64,
    progress: &dyn Progress,
) -> Result<Filled> {
    let marker = Marker::of(desc).to_json();
    let busy = AtomicU64::new(Client::new(store.clone()).put_patiently(&desc.marker(), &marker)?);
    let multipart = AtomicU64::new(0);
    let (tx, rx) = sync_channel::<(u32, Vec<u8>)>(IN_FLIGHT);
    let rx = Mutex::new(rx);
    let failures = Failures::default();
    let budget = Budget::new();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT {
            scope.spawn(|| {
                let client = Client::new(store.clone());
                let mut name = String::new();
                loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((key, value)) = job else { return };
                    if !failures.any() && !stop_requested() {
                        desc.key_into(key, &mut name);
                        match client.put_sized_patiently(&name, &value, threshold) {
                            Ok(n) => _ = busy.fetch_add(n, Ordering::Relaxed),
                            Err(e) => failures.add(e),
                        }
                        if super::multipart::in_parts(value.len(), threshold) {
                            multipart.fetch_add(1, Ordering::Relaxed);
                        }
                    } // else drain what was queued: the build has failed or stops
                    budget.give(value.len());
                }
            });
        }
        let sent = copy_rows(db, progress, &mut |key, value| {
            if stop_requested() {
                return Err(Error::Interrupted);
            }
            if failures.any() {
                return Err(Error::invalid("a PUT failed"));
            }
            budget.take(value.len());
            tx.send((key, value.to_vec())).map_err(|_| Error::invalid("the uploads stopped"))
        });
        drop(tx);
        sent
    })
    .and_then(|counts| {
        let stopped = if stop_requested() { Err(Error::Interrupted) } else { Ok(()) };
        failures.check().and(stopped).map(|()| Filled {
            counts,
            busy: busy.into_inner(),
            multipart: multipart.into_inner(),
        })
    })
    // At Ctrl-C the requests in flight end too: the build was interrupted,
    // not failed by them.
    .map_err(|e| if stop_requested() { Error::Interrupted } else { failures.first().unwrap_or(e) })
}
