//! Drivers: the timed session written once, and the commands that run it
//! (`run`, `run --threads`).

pub mod mix;
pub mod parallel_read;
pub mod run;
pub mod session;
