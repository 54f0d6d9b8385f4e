//! Helpers with no knowledge of blobs: errors, number parsing, file system
//! calls, the progress trait.

pub mod error;
pub mod fsutil;
pub mod heap;
pub mod interrupt;
pub mod progress;
pub mod units;

/// CPUs this process may use.
pub fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}
