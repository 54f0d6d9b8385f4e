//! Studies: each builds its datasets, runs drivers and returns its own
//! result section.

pub mod advise;
pub mod aging;
pub mod concurrency;
pub mod context;
pub mod crashtest;
pub mod matrix;
pub mod suite;
