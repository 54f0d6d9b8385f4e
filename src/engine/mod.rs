//! Places blobs live, behind one trait so each workload is written once.
//!
//! An [`Engine`] is a dataset on disk together with the settings of a run
//! (SQLite with its pragmas, a directory of files with its read and write
//! calls, a key-value store with its durability). It answers what the
//! drivers need from outside the timed loop (keys present, files to evict,
//! disk usage) and opens [`Session`]s, whose per-blob calls are the timed
//! operations. Implementations call each engine's own API directly: SQLite's
//! C API and libc as kvtest.c does, heed, redb and fjall as their own
//! benchmarks do, into reused buffers, so a timed loop holds the engine's
//! calls and nothing more.
//!
//! Each engine kind has one [`Backend`] (recognise, build, open, stat, its
//! crash-test write modes), listed in [`registry::BACKENDS`]. Adding an
//! engine: see "Adding an engine" in docs/architecture.md. Files here import
//! from the file that defines a name, never through this one, so `engine/`
//! has no import cycle.

pub mod api;
pub mod backend;
pub mod config;
pub mod dataset;
pub mod external;
pub mod files;
mod fjall;
mod keep;
mod kv;
pub mod kvtest_db;
#[cfg(test)]
mod layer_tests;
mod lmdb;
pub mod postgres;
mod redb;
pub mod registry;
pub mod report;
pub mod s3;
mod sizes;
pub mod sqlite;
pub mod staging;
pub mod throwaway;

pub use api::{Engine, OpenMode, Session, SessionInfo, SqliteStats, Survey};
pub use backend::{Backend, LocalBytes, WriteConfig, WriteSettings};
pub use external::{ExternalEngine, ExternalStore};
pub use files::FileStore;
pub use registry::{backend, detect, open, open_as};
pub use report::KvStat;
pub use sqlite::{blob_sizes, db_files, non_blob_values, DbSession};
