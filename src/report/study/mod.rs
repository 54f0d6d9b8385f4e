//! One report unit per study: each turns its part of the result files into
//! sections of the report.

pub(super) mod aging;
pub mod concurrency;
pub(super) mod crashtest;
pub(super) mod engines;
pub mod matrix;
pub(super) mod suite;
