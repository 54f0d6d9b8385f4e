//! Building an S3 dataset from a kvtest database (see [`fill`] for how
//! the blobs go up), under a prefix of the export's own (see
//! [`descriptor`]), beside a marker object naming the prefix blobbench's.
//!
//! A throwaway cluster is built under a temporary name beside the target
//! and renamed into place once stopped, so an interrupted build never looks
//! complete. A store the user runs (`--s3 URL`) is [`remote`]'s.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::client::Client;
use super::descriptor::{self, check_bucket, Descriptor, LOCAL_BUCKET};
use super::fill::fill;
use super::lock::{DatasetLock, Holding};
use super::remote::{build_remote, replaced, retire};
use super::servers::{self, Server};
use crate::engine::kv;
use crate::engine::report::ExportReport;
use crate::records::S3Params;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Builds the S3 dataset at `target` from the kvtest database `db`.
pub fn build(db: &Path, target: &Path, force: bool, s3: &S3Params, progress: &dyn Progress) -> Result<ExportReport> {
    super::multipart::check_threshold(s3.multipart_threshold)?;
    if force && target.join(descriptor::DESCRIPTOR).is_file() {
        // A descriptor --force would replace says why it is not blobbench's.
        Descriptor::read(target)?;
    }
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
    let staging = kv::stage(super::kind::KIND, target, force, descriptor::detect)?;
    // A dataset replaced in a store the user runs is retired under the
    // directory's lock, as an export there would.
    let _lock = if force && target.join(descriptor::DESCRIPTOR).is_file() {
        DatasetLock::take(target, Holding::Export)?
    } else {
        None
    };
    let replaced = replaced(target, if force { Descriptor::read(target).ok() } else { None })?;
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    server.init(&staging.path, replicas)?;
    let desc = Descriptor { replaces: replaced, ..Descriptor::new_export(target, LOCAL_BUCKET, None, Some(replicas)) };
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
        servers::stop_any(target)?;
    }
    staging.finish()?;
    retire(target, &desc, s3)?;
    Ok(filled.report(started, None))
}

/// A killed build leaves `.NAME.s3-PID` beside the target (its servers die
/// with it): end any still running and remove the directory.
fn reap_killed_builds(target: &Path) -> Result<()> {
    for dir in crate::engine::throwaway::killed_builds(target, super::kind::KIND) {
        servers::stop_any(&dir)?;
        std::fs::remove_dir_all(&dir).map_err(|err| Error::io(&dir, "cannot remove a killed build", err))?;
    }
    Ok(())
}
