//! Plain records: what a workload, a dataset and a key order are. No
//! dependencies on the rest of the crate, so every layer can use them.

pub mod config;
mod dataset;
mod engine_kind;
mod journal;
pub mod keys;
pub mod mix;
mod postgres;
mod rng;
mod s3;
mod server;
pub mod sizes;
mod source;
mod workload;
pub mod zipf;

pub use config::{ConfigId, DbWriters, LayoutId};
pub use dataset::{DatasetSpec, DiskUsage};
pub use engine_kind::EngineKind;
pub use journal::Journal;
pub use keys::Order;
pub use postgres::{PgParams, PgServerInfo, PgStorage};
pub use s3::{Addressing, S3Params, DEFAULT_MULTIPART_THRESHOLD};
pub use server::{ServerInfo, ServerPlace, ServerSetting};
pub use sizes::{SizeBucket, SizeDist};
pub use source::{SizeSource, SizesFrom};
pub use workload::*;
