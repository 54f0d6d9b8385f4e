//! Building an S3 dataset from a kvtest database: one PUT per blob, with
//! [`IN_FLIGHT`] requests in flight (one connection each), under the
//! dataset's prefix, beside a marker object naming the prefix blobbench's.
//!
//! A throwaway cluster is built under a temporary name beside the target
//! and renamed into place once stopped, so an interrupted build never looks
//! complete. On a store the user runs (`--s3 URL`) blobbench writes only
//! under its own prefix, replaces (with `--force`) only a prefix that holds
//! its marker, and deletes what it wrote when the build fails. It never
//! makes or deletes a bucket there.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::client::{Client, Store};
use super::descriptor::{self, prefix_for, Descriptor, LOCAL_BUCKET};
use super::provider::{self, Server};
use super::reach::user_store;
use crate::engine::kv;
use crate::engine::kvtest_db::copy_rows;
use crate::engine::report::ExportReport;
use crate::records::S3Params;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Requests in flight while building (and removing) a dataset: Swift's
/// proxy and object server are CPU-bound Python, and about eight keep
/// both cores of a small machine busy.
pub const IN_FLIGHT: usize = 8;

/// Builds the S3 dataset at `target` from the kvtest database `db`.
pub fn build(db: &Path, target: &Path, force: bool, s3: &S3Params, progress: &dyn Progress) -> Result<ExportReport> {
    match (&s3.url, &s3.bucket) {
        (Some(_), _) if s3.server.is_some() => {
            Err(Error::invalid("--s3-server picks a throwaway server; a store you run (--s3) needs none"))
        }
        (Some(url), Some(bucket)) => build_remote(db, target, force, url, bucket, progress),
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
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    server.init(&staging.path, replicas)?;
    let desc = Descriptor {
        engine: super::KIND,
        bucket: LOCAL_BUCKET.into(),
        prefix: prefix_for(target),
        endpoint: None,
        replicas: Some(replicas),
    };
    let filled = {
        // Declared after `staging`, so dropped (stopped) before it is removed.
        let running = server.start(&staging.path)?;
        let store = Arc::new(running.store(&desc.bucket)?);
        let client = Client::new(store.clone());
        // SeaweedFS makes its bucket at start (and a start waits for it).
        if client.any_under("").is_err() {
            client.create_bucket()?;
        }
        let filled = fill(&store, &desc, db, progress)?;
        running.stop()?;
        filled
    };
    desc.write(&staging.path)?;
    if target.exists() {
        provider::stop_any(target)?;
    }
    staging.finish()?;
    Ok(filled.report(started))
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

fn build_remote(
    db: &Path,
    target: &Path,
    force: bool,
    url: &str,
    bucket: &str,
    progress: &dyn Progress,
) -> Result<ExportReport> {
    let started = Instant::now();
    let store = Arc::new(user_store(url, bucket)?);
    let desc = Descriptor {
        engine: super::KIND,
        bucket: bucket.into(),
        prefix: prefix_for(target),
        endpoint: Some(url.trim_end_matches('/').to_string()),
        replicas: None,
    };
    let staging = kv::stage(super::KIND, target, force, is_dataset)?;
    let client = Client::new(store.clone());
    if client.any_under(&desc.prefix)? {
        if client.head(&desc.marker())?.is_none() {
            return Err(Error::bad_input(
                &store.label,
                format!(
                    "objects under {} are not blobbench's (no {}); refusing to touch them",
                    desc.prefix,
                    descriptor::MARKER
                ),
            ));
        }
        if !force {
            return Err(Error::bad_input(
                &store.label,
                format!("{} holds a blobbench dataset (use --force to replace it)", desc.prefix),
            ));
        }
        remove_prefix(&store, &desc)?;
    }
    let filled = match fill(&store, &desc, db, progress) {
        Ok(f) => f,
        Err(e) => {
            let _ = remove_prefix(&store, &desc);
            return Err(e);
        }
    };
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    desc.write(&staging.path)?;
    staging.finish()?;
    Ok(filled.report(started))
}

/// What a build stored: entries and bytes, and the PUTs the store answered
/// busy before it took them.
struct Filled {
    counts: (u64, u64),
    busy: u64,
}

impl Filled {
    fn report(&self, started: Instant) -> ExportReport {
        ExportReport { busy_retries: self.busy, ..kv::report(super::KIND, self.counts, started) }
    }
}

/// PUTs the marker, then every row of `db` as one object, [`IN_FLIGHT`] at
/// a time, each tried again while the store answers busy (the build is
/// not timed).
fn fill(store: &Arc<Store>, desc: &Descriptor, db: &Path, progress: &dyn Progress) -> Result<Filled> {
    let marker = serde_json::to_vec(desc).map_err(|e| Error::invalid(format!("cannot encode the marker: {e}")))?;
    let busy = AtomicU64::new(Client::new(store.clone()).put_patiently(&desc.marker(), &marker)?);
    let (tx, rx) = sync_channel::<(u32, Vec<u8>)>(IN_FLIGHT * 2);
    let rx = Mutex::new(rx);
    let failures = Failures::default();
    std::thread::scope(|scope| {
        for _ in 0..IN_FLIGHT {
            scope.spawn(|| {
                let client = Client::new(store.clone());
                let mut name = String::new();
                loop {
                    let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((key, value)) = job else { return };
                    if failures.any() {
                        continue; // drain what was queued: the build has failed
                    }
                    desc.key_into(key, &mut name);
                    match client.put_patiently(&name, &value) {
                        Ok(n) => _ = busy.fetch_add(n, Ordering::Relaxed),
                        Err(e) => failures.add(e),
                    }
                }
            });
        }
        let sent = copy_rows(db, progress, &mut |key, value| {
            if failures.any() {
                return Err(Error::invalid("a PUT failed"));
            }
            tx.send((key, value.to_vec())).map_err(|_| Error::invalid("the uploads stopped"))
        });
        drop(tx);
        sent
    })
    .and_then(|counts| failures.check().map(|_| Filled { counts, busy: busy.into_inner() }))
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

/// Deletes every object under the dataset's prefix (its blobs, then its
/// marker), [`IN_FLIGHT`] at a time.
pub fn remove_prefix(store: &Arc<Store>, desc: &Descriptor) -> Result<u64> {
    let mut keys = Vec::new();
    Client::new(store.clone()).list(&desc.prefix, &mut |object, _| {
        keys.push(object.to_string());
        Ok(())
    })?;
    let marker = desc.marker();
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
    Ok(keys.len() as u64)
}
