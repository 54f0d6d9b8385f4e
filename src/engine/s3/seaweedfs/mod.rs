//! The throwaway SeaweedFS stores blobbench starts: `--s3-server
//! seaweedfs`, one `weed mini` on one host ([`mini`]), and `--s3-server
//! seaweedfs-2hosts`, a copy of every object on each of two storage hosts
//! ([`cluster`]). Every port a store opens is picked free at each start,
//! and its S3 gateway requires blobbench's fixed credentials ([`weed`]).
//!
//! Each starts as Swift's servers do (`process::spawn_server`: a session
//! of its own; a build's dies with it, a run's lives until its last user
//! stops it), is retried on new ports when one was taken, counts as up once
//! its bucket answers and the master knows every volume, stops when
//! dropped, and is ended by the next start or a study's [`reap_killed`]
//! when a killed run left it.

mod cluster;
mod mini;
mod weed;

use std::path::{Path, PathBuf};

pub use cluster::{Cluster, DIR as HOSTS_DIR, HOSTS};
pub use mini::{Layout, Mini, DIR};
pub use weed::{check_installed, find_weed, ACCESS_KEY, BUCKET, SECRET};

use super::launch;
use crate::Result;

/// Whether the dataset in `dir` holds the replicated store.
fn replicated(dir: &Path) -> bool {
    dir.join(HOSTS_DIR).is_dir()
}

/// Ends the store of the dataset in `dir` a killed run left, if any.
pub fn stop_any(dir: &Path) -> Result<()> {
    match replicated(dir) {
        true => cluster::stop_any(dir),
        false => mini::stop_any(dir),
    }
}

/// The crash test's fault: SIGKILL of the store's processes, waited for.
pub fn kill_servers(dir: &Path) -> Result<()> {
    match replicated(dir) {
        true => cluster::kill_servers(dir),
        false => mini::kill_servers(dir),
    }
}

/// The store's processes still running for the dataset in `dir`.
fn running(dir: &Path) -> Result<Vec<i32>> {
    match replicated(dir) {
        true => cluster::running(dir),
        false => mini::running(dir),
    }
}

/// Ends every store a killed blobbench left under `workdir`; how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let root = |dir: &Path| -> Result<PathBuf> {
        let name = if replicated(dir) { HOSTS_DIR } else { DIR };
        Ok(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()).join(name))
    };
    launch::reap_killed(workdir, root, running)
}

pub fn any_running(dir: &Path) -> bool {
    running(dir).is_ok_and(|p| !p.is_empty())
}

/// The directory holding the objects of the dataset in `dir`.
pub fn data_dir(dir: &Path) -> Result<PathBuf> {
    match replicated(dir) {
        true => Ok(cluster::Layout::of(dir)?.disks()),
        false => Ok(Layout::of(dir)?.data()),
    }
}
