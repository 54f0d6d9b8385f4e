//! The throwaway SeaweedFS stores blobbench starts for `--s3-server
//! seaweedfs` (one `weed mini` on one host: [`mini`]). Every port a store
//! opens is picked free at each start, and its S3 gateway requires
//! blobbench's fixed credentials ([`weed`]).
//!
//! It starts as Swift's servers do (`process::spawn_server`: a session of
//! its own; a build's dies with it, a run's lives until its last user
//! stops it), is retried on new ports when one was taken, counts as up once
//! its bucket answers and the master knows every volume, stops when
//! dropped, and is ended by the next start or a study's [`reap_killed`]
//! when a killed run left it.

mod mini;
mod weed;

use std::path::{Path, PathBuf};

pub use mini::{Layout, Mini, DIR};
pub use weed::{check_installed, find_weed, ACCESS_KEY, BUCKET, SECRET};

use super::launch;
use crate::Result;

/// Ends the store of the dataset in `dir` a killed run left, if any.
pub fn stop_any(dir: &Path) -> Result<()> {
    mini::stop_any(dir)
}

/// The crash test's fault: SIGKILL of the store's processes, waited for.
pub fn kill_servers(dir: &Path) -> Result<()> {
    mini::kill_servers(dir)
}

/// Ends every store a killed blobbench left under `workdir`; how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    launch::reap_killed(workdir, |dir| Ok(Layout::of(dir)?.root), mini::running)
}

pub fn any_running(dir: &Path) -> bool {
    mini::running(dir).is_ok_and(|p| !p.is_empty())
}

/// The directory holding the objects of the dataset in `dir`.
pub fn data_dir(dir: &Path) -> Result<PathBuf> {
    Ok(Layout::of(dir)?.data())
}
