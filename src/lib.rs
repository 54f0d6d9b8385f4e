//! blobbench: measure whether small blobs are faster in SQLite or in files,
//! on this machine, faithfully to SQLite's kvtest and beyond it.
//!
//! The library does all the work and returns data; the binary (`main.rs`,
//! `cli/`) parses arguments and prints.

pub mod cold;
pub mod concurrency;
pub mod crashtest;
pub mod csv;
pub mod dataset;
pub mod envinfo;
pub mod error;
pub mod fsutil;
pub mod keys;
pub mod matrix;
pub mod measure;
pub mod oscount;
pub mod parallel_read;
pub mod powercut;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod store;
pub mod suite;
pub mod units;
pub mod workload;

pub use error::{Error, Result};
