//! Where a dataset's objects are served from, behind one small trait: a
//! throwaway server blobbench starts in the dataset's directory (Swift or
//! SeaweedFS, `servers.rs`) or a store the user runs (`--s3 URL`,
//! `reach.rs`). The rest of the engine asks a [`Provider`] for its
//! [`Store`] and for what to record and evict, and never names a server.

use std::path::PathBuf;

use super::client::Store;
use crate::engine::throwaway::{self, Lease};
use crate::records::{ServerPlace, ServerSetting};
use crate::Result;

/// A store the engine reaches: the objects, and what a run records of it.
pub(super) trait Provider: Send + Sync {
    /// The store, with this provider's credentials, for `bucket`.
    fn store(&self, bucket: &str) -> Result<Store>;
    /// The product as results name it ("SeaweedFS"), and its version.
    fn product(&self) -> (String, String);
    fn place(&self) -> ServerPlace;
    /// Its settings as a run records them (endpoint, replicas).
    fn settings(&self) -> Vec<ServerSetting>;
    /// The directory holding its data on this machine (None: remote).
    fn data_dir(&self) -> Option<PathBuf>;
    /// Empties the server's own caches before a cold run.
    fn drop_caches(&self) -> Result<()>;
    /// Stops a throwaway server, its errors returned (a drop stops it too,
    /// silently).
    fn stop(&self) -> Result<()>;
}

/// A throwaway server shared across engines and processes is its server.
impl<T: Provider + throwaway::Server> Provider for Lease<T> {
    fn store(&self, bucket: &str) -> Result<Store> {
        (**self).store(bucket)
    }
    fn product(&self) -> (String, String) {
        (**self).product()
    }
    fn place(&self) -> ServerPlace {
        (**self).place()
    }
    fn settings(&self) -> Vec<ServerSetting> {
        (**self).settings()
    }
    fn data_dir(&self) -> Option<PathBuf> {
        (**self).data_dir()
    }
    fn drop_caches(&self) -> Result<()> {
        (**self).drop_caches()
    }
    /// A shared server stops with its last user (the lease's drop), never
    /// under another engine or process that still uses it.
    fn stop(&self) -> Result<()> {
        Ok(())
    }
}

pub(super) fn setting(name: &str, value: impl ToString) -> ServerSetting {
    ServerSetting { name: name.into(), value: value.to_string() }
}
