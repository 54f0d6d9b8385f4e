//! A power-cut filesystem layer (FUSE, over a backing directory), in the
//! spirit of LazyFS and SQLite's test6.c.
//!
//! Programs on the mount see an ordinary filesystem. Underneath, data
//! written and not yet fsync'd, and names created, renamed or removed in a
//! directory not yet fsync'd, live only in the layer's memory (`state`);
//! the backing directory holds only what a disk would hold (`durable`). A
//! power cut hands what is pending to a model (`model`): the strict model
//! drops all of it, the torn models let a random subset land, torn at
//! sector granularity. Extended attributes (`xattrs`) are volatile until
//! the node's own fsync, as data is. Faults (`fault`) make a chosen read,
//! write or fsync fail. `mount` mounts, cuts and cleans up after killed runs; `cost`
//! measures what the layer adds to a write and an fsync.

pub mod cost;
mod durable;
pub mod fault;
mod fs;
pub mod model;
pub mod mount;
mod reply;
pub mod state;
mod xattrs;

pub use fault::FaultPlan;
pub use model::{CutStats, Model};
pub use mount::{clean_stale, Mounted};
