//! blobbench: measure where blobs should live (SQLite, one file each, or an
//! embedded key-value store) on this machine, faithfully to SQLite's kvtest
//! and beyond it.
//!
//! Layers, each using only those listed before it (docs/architecture.md):
//! `util`, `records` -> `engine` -> `measure` -> `drivers` -> `studies` ->
//! `results` -> `report`. The library does all the work and returns data;
//! the binary (`main.rs`, `cli/`) parses arguments and prints.

pub mod drivers;
pub mod engine;
pub mod measure;
pub mod powercut;
pub mod records;
pub mod report;
pub mod results;
pub mod studies;
pub mod util;

pub use util::error::{Error, Result};

/// No import cycle between the crate's files (checked by every `cargo test`).
#[cfg(test)]
mod tests_module_cycles;
