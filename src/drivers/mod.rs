//! Drivers: the timed session written once, and the commands that run it
//! (`run`, `run --threads`, several clients at once).

mod classes;
mod client;
pub mod clients;
pub mod mix;
mod ops;
pub mod parallel_read;
pub mod plan;
pub mod processes;
pub mod run;
pub mod session;
mod window;
