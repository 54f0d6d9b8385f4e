//! Building an S3 dataset from a kvtest database: one PUT per blob (a
//! multipart upload at or above the threshold), with [`IN_FLIGHT`]
//! requests in flight (one connection each) and at most [`BYTES_IN_FLIGHT`]
//! of blobs read ahead, under a prefix of the export's own (see
//! [`descriptor`]), beside a marker object naming the prefix blobbench's.
//!
//! A throwaway cluster is built under a temporary name beside the target
//! and renamed into place once stopped, so an interrupted build never looks
//! complete. On a store the user runs (`--s3 URL`) blobbench writes only
//! under its new prefix; with `--force` it switches the descriptor to it
//! and only then deletes the replaced dataset's prefix. A build that fails
//! or is interrupted (Ctrl-C, checked at every blob) deletes what it wrote
//! and says so; a clean-up that fails is named with the command that
//! finishes it. It never makes or deletes a bucket there.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::client::{Client, Store};
use super::descriptor::{self, check_bucket, prefix_for, Descriptor, LOCAL_BUCKET};
use super::provider::{self, Server};
use super::reach::user_store;
use crate::engine::kv;
use crate::engine::kvtest_db::copy_rows;
use crate::engine::report::ExportReport;
use crate::records::{Addressing, S3Params};
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Requests in flight while building (and removing) a dataset: Swift's
/// proxy and object server are CPU-bound Python, and about eight keep
/// both cores of a small machine busy.
pub const IN_FLIGHT: usize = 8;

/// The most bytes of blobs read from the database and not yet stored: the
/// export's memory is this (or one blob, if larger) plus the database's
/// own, whatever the blobs' sizes.
pub const BYTES_IN_FLIGHT: u64 = 256 << 20;

/// Builds the S3 dataset at `target` from the kvtest database `db`.
pub fn build(db: &Path, target: &Path, force: bool, s3: &S3Params, progress: &dyn Progress) -> Result<ExportReport> {
    match (&s3.url, &s3.bucket) {
        (Some(_), _) if s3.server.is_some() => {
            Err(Error::invalid("--s3-server picks a throwaway server; a store you run (--s3) needs none"))
        }
        (Some(url), Some(bucket)) => {
            check_bucket(bucket)?;
            build_remote(db, target, force, (url, bucket, s3), progress)
        }
        (Some(_), None) => Err(Error::invalid("--s3 needs --s3-bucket: the bucket to write in")),
        (None, Some(_)) => {
            Err(Error::invalid("--s3-bucket needs --s3 URL (blobbench's own cluster has its own bucket)"))
        }
        (None, None) => build_local(db, target, force, s3, progress),
    }
}

fn is_dataset(p: &Path) -> bool {
    descriptor::detect(p)
}

/// A new export's descriptor: a new id, and the prefix carrying it.
fn new_descriptor(target: &Path, bucket: &str, endpoint: Option<&str>, replicas: Option<u8>) -> Descriptor {
    let id = descriptor::new_id();
    Descriptor {
        engine: super::KIND,
        bucket: bucket.into(),
        prefix: prefix_for(target, &id),
        id: Some(id),
        endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
        replicas,
        ca: None,
        addressing: None,
        profile: None,
    }
}

/// A new export's descriptor on a store the user runs, keeping the CA file
/// (absolute: `drop` may run elsewhere) and addressing it was reached with.
fn remote_descriptor(target: &Path, url: &str, bucket: &str, s3: &S3Params) -> Result<Descriptor> {
    let ca = match &s3.ca {
        Some(ca) => Some(std::path::absolute(ca).map_err(|e| Error::io(ca, "--s3-ca: cannot resolve", e))?),
        None => None,
    };
    let addressing = (s3.addressing != Addressing::Auto).then_some(s3.addressing);
    Ok(Descriptor { ca, addressing, ..new_descriptor(target, bucket, Some(url), None) })
}

fn build_local(db: &Path, target: &Path, force: bool, s3: &S3Params, progress: &dyn Progress) -> Result<ExportReport> {
    let server = Server::from_setting(s3.server.as_deref())?;
    let (default, most) = server.replicas();
    let replicas = s3.replicas.unwrap_or(default);
    if !(1..=most).contains(&replicas) {
        let name = server.name();
        return Err(Error::invalid(format!("--s3-replicas {replicas}: {name} keeps 1 to {most}")));
    }
    server.check_installed()?;
    let started = Instant::now();
    reap_killed_builds(target)?;
    let staging = kv::stage(super::KIND, target, force, is_dataset)?;
    let replaced = replaced(target, force);
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    server.init(&staging.path, replicas)?;
    let desc = new_descriptor(target, LOCAL_BUCKET, None, Some(replicas));
    let filled = {
        // Declared after `staging`, so dropped (stopped) before it is removed.
        let running = server.start(&staging.path)?;
        let store = Arc::new(running.store(&desc.bucket)?);
        let client = Client::new(store.clone());
        // SeaweedFS makes its bucket at start (and a start waits for it).
        if client.any_under("").is_err() {
            client.create_bucket()?;
        }
        let filled = fill(&store, &desc, db, s3.multipart_threshold, progress)?;
        running.stop()?;
        filled
    };
    desc.write(&staging.path)?;
    if target.exists() {
        provider::stop_any(target)?;
    }
    staging.finish()?;
    retire(target, replaced, s3)?;
    Ok(filled.report(started, None))
}

/// A killed build leaves `.NAME.s3-PID` beside the target (its servers die
/// with it): end any still running and remove the directory.
fn reap_killed_builds(target: &Path) -> Result<()> {
    for dir in crate::engine::throwaway::killed_builds(target, super::KIND) {
        provider::stop_any(&dir)?;
        std::fs::remove_dir_all(&dir).map_err(|err| Error::io(&dir, "cannot remove a killed build", err))?;
    }
    Ok(())
}

/// The dataset `--force` replaces at `target` whose objects live in a
/// store the user runs (a throwaway cluster's go with its directory).
fn replaced(target: &Path, force: bool) -> Option<Descriptor> {
    force.then(|| Descriptor::read(target).ok()).flatten().filter(|d| !d.local())
}

fn build_remote(
    db: &Path,
    target: &Path,
    force: bool,
    (url, bucket, s3): (&str, &str, &S3Params),
    progress: &dyn Progress,
) -> Result<ExportReport> {
    let started = Instant::now();
    let store = Arc::new(user_store(url, bucket, s3)?);
    let desc = Descriptor { profile: store.source_profile(), ..remote_descriptor(target, url, bucket, s3)? };
    let staging = kv::stage(super::KIND, target, force, is_dataset)?;
    let replaced = replaced(target, force);
    if Client::new(store.clone()).any_under(&desc.prefix)? {
        return Err(Error::bad_input(
            &store.label,
            format!("{} already holds objects (an id drawn twice); export again for a new one", desc.prefix),
        ));
    }
    let filled = fill(&store, &desc, db, s3.multipart_threshold, progress).map_err(|e| cleaned_up(e, &store, &desc))?;
    let switched = if replaced.is_some() && target.is_dir() {
        // The directory holds the descriptor only: switched by a rename.
        drop(staging);
        desc.write(target)
    } else {
        let stopped = if target.exists() { provider::stop_any(target) } else { Ok(()) };
        stopped.and_then(|()| {
            std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
            desc.write(&staging.path)?;
            staging.finish()
        })
    };
    switched.map_err(|e| cleaned_up(e, &store, &desc))?;
    retire(target, replaced, s3)?;
    Ok(filled.report(started, Some(format!("bucket {bucket} at {}, prefix {}", store.label.display(), desc.prefix))))
}

/// `e`, once the objects a failed build wrote are deleted, saying so; or
/// naming the command that finishes the clean-up when it failed too.
fn cleaned_up(e: Error, store: &Arc<Store>, desc: &Descriptor) -> Error {
    let what = format!("under {} in bucket {}", desc.prefix, desc.bucket);
    match (remove_prefix(store, &desc.prefix), e) {
        (Ok(n), Error::Interrupted) => Error::invalid(format!("interrupted: removed the {n} objects written {what}")),
        (Ok(n), e) => Error::invalid(format!("{e} (removed the {n} objects written {what})")),
        (Err(rm), e) => {
            Error::invalid(format!("{e}; removing the objects written {what} failed too ({rm}); {}", finish_with(desc)))
        }
    }
}

/// The command that removes what is left of a prefix.
pub(super) fn finish_with(desc: &Descriptor) -> String {
    format!(
        "finish with: blobbench drop --s3 {} --s3-bucket {} --prefix {}",
        desc.endpoint.as_deref().unwrap_or("URL"),
        desc.bucket,
        desc.prefix
    )
}

/// Deletes the objects of the dataset `--force` replaced at `target`,
/// once the new one is in place.
fn retire(target: &Path, replaced: Option<Descriptor>, s3: &S3Params) -> Result<()> {
    let Some(old) = replaced else { return Ok(()) };
    let removed = user_store(old.endpoint.as_deref().unwrap_or_default(), &old.bucket, s3)
        .and_then(|store| remove_prefix(&Arc::new(store), &old.prefix));
    removed.map(drop).map_err(|e| {
        Error::invalid(format!(
            "{} holds the new export, but the replaced one's objects under {} were not all removed ({e}); {}",
            target.display(),
            old.prefix,
            finish_with(&old)
        ))
    })
}

/// What a build stored: entries and bytes, the PUTs the store answered
/// busy before it took them, and the blobs sent in parts.
struct Filled {
    counts: (u64, u64),
    busy: u64,
    multipart: u64,
}

impl Filled {
    fn report(&self, started: Instant, location: Option<String>) -> ExportReport {
        ExportReport {
            busy_retries: self.busy,
            multipart_blobs: self.multipart,
            location,
            ..kv::report(super::KIND, self.counts, started)
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
fn fill(store: &Arc<Store>, desc: &Descriptor, db: &Path, threshold: u64, progress: &dyn Progress) -> Result<Filled> {
    let marker = serde_json::to_vec(desc).map_err(|e| Error::invalid(format!("cannot encode the marker: {e}")))?;
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
    .map_err(|e| failures.first().unwrap_or(e))
}

/// The requests that failed while several were in flight: how many, and
/// the first one's error (the one the build reports).
#[derive(Default)]
struct Failures {
    count: AtomicU64,
    first: Mutex<Option<Error>>,
}

impl Failures {
    fn add(&self, e: Error) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.first.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
    }

    fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// The first failure, its message saying how many requests failed.
    fn first(&self) -> Option<Error> {
        let first = self.first.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        match self.count.load(Ordering::SeqCst) {
            1 => Some(first),
            n => Some(Error::invalid(format!("{n} requests failed; the first: {first}"))),
        }
    }

    fn check(&self) -> Result<()> {
        self.first().map_or(Ok(()), Err)
    }
}

/// Deletes every object under `prefix` (the blobs, then the marker, so a
/// removal cut short can be finished: the prefix still says it is
/// blobbench's), [`IN_FLIGHT`] at a time; how many there were.
pub fn remove_prefix(store: &Arc<Store>, prefix: &str) -> Result<u64> {
    let mut keys = Vec::new();
    Client::new(store.clone()).list(prefix, &mut |object, _| {
        keys.push(object.to_string());
        Ok(())
    })?;
    let marker = format!("{prefix}{}", descriptor::MARKER);
    let listed = keys.len() as u64;
    keys.retain(|k| *k != marker);
    let next = AtomicU64::new(0);
    let failures = Failures::default();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT {
            scope.spawn(|| {
                let client = Client::new(store.clone());
                while !failures.any() {
                    let Some(key) = keys.get(next.fetch_add(1, Ordering::SeqCst) as usize) else { return };
                    if let Err(e) = client.delete_patiently(key) {
                        failures.add(e);
                    }
                }
            });
        }
    });
    failures.check()?;
    Client::new(store.clone()).delete_patiently(&marker)?;
    Ok(listed)
}
