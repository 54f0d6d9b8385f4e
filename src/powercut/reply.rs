//! What the layer answers a request with and what it counts: the small
//! shared words of `state`, `fault` and `xattrs`, kept apart so that none
//! of those needs another to say them.

/// An errno for the FUSE reply.
pub type Errno = i32;
pub type Res<T> = std::result::Result<T, Errno>;

/// What the FUSE side counts, for the layer-cost figures and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Counters {
    pub writes: u64,
    pub fsyncs: u64,
    pub dir_fsyncs: u64,
    pub faults_injected: u64,
}
