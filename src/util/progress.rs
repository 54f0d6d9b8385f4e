//! Progress reporting as the library sees it: a trait the command line
//! implements with a progress bar, and a silent implementation for tests
//! and for output that is not a terminal.

pub trait Progress: Sync {
    /// A new phase of work with `total` units ("init", 100000 blobs).
    fn start(&self, what: &str, total: u64);
    fn advance(&self, units: u64);
    fn finish(&self);
}

pub struct Silent;

impl Progress for Silent {
    fn start(&self, _what: &str, _total: u64) {}
    fn advance(&self, _units: u64) {}
    fn finish(&self) {}
}
