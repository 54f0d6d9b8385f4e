//! Places blobs live, behind one trait so each workload is written once.
//! Implementations call SQLite's C API and libc directly: the timed loop must
//! make the same calls as kvtest.c and nothing more.

pub mod dataset;
mod external;
mod files;
mod sqlite;

pub use external::ExternalStore;
pub use files::FileStore;
pub use sqlite::{blob_sizes, non_blob_values, DbSession, SqliteStats};

use crate::Result;

pub trait BlobStore {
    /// Reads blob `key`; returns its size, or 0 when there is no such blob.
    fn read(&mut self, key: u32) -> Result<u64>;
    /// Overwrites blob `key` with as many bytes of `content` as it already
    /// has (sizes never change, as in kvtest); returns that size, or 0 when
    /// there is no such blob. `content` is at least as long as any blob.
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64>;
}
