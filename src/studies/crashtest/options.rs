//! What the crash test is asked: its own knobs ([`CrashOptions`]), and
//! the same resolved in its context ([`Crash`]), which every part of the
//! test reads.

use std::path::PathBuf;
use std::time::Duration;

use crate::records::ConfigId;
use crate::studies::context::StudyContext;

/// The kills and the blobs per method, by default and with `--quick`.
pub const DEFAULT_KILLS: u32 = 50;
pub const DEFAULT_COUNT: u32 = 100;
pub const QUICK_KILLS: u32 = 6;
pub const QUICK_COUNT: u32 = 40;

/// What the crash test is asked beyond its context (`StudyContext`: the
/// work directory, the seed of the kill schedule and of the blob sizes,
/// the writes per commit, the settings every method's dataset is built
/// with, the observer).
#[derive(Debug, Clone)]
pub struct CrashOptions {
    pub methods: Vec<ConfigId>,
    pub kills: u32,
    /// Blobs in each dataset.
    pub count: u32,
    /// Each writer runs for a delay uniform in [0, max_delay] once its first write returned.
    pub max_delay: Duration,
    /// A blobbench binary, which has the hidden `crash-writer` command.
    pub writer: PathBuf,
}

impl CrashOptions {
    pub fn new(writer: PathBuf) -> Self {
        CrashOptions {
            methods: ConfigId::methods(),
            kills: DEFAULT_KILLS,
            count: DEFAULT_COUNT,
            max_delay: Duration::from_millis(50),
            writer,
        }
    }
}

/// Writes per commit unless asked: each write its own commit.
pub const COMMIT_EVERY: u32 = 1;

/// The crash test's options in their context: what every part of the test
/// reads (its context's work directory, seed and settings, which every
/// method's dataset is built with and its writer writes with).
#[derive(Debug, Clone)]
pub(super) struct Crash {
    pub methods: Vec<ConfigId>,
    pub kills: u32,
    pub count: u32,
    pub max_delay: Duration,
    pub writer: PathBuf,
    pub ctx: StudyContext,
    /// Writes per commit (`--commit-every N`): a write returns once its
    /// batch of N is committed (1: each write its own commit).
    pub commit_every: u32,
}

impl Crash {
    pub fn new(ctx: &StudyContext, opts: &CrashOptions) -> Crash {
        let CrashOptions { methods, kills, count, max_delay, writer } = opts.clone();
        let commit_every = ctx.commit_every_or(COMMIT_EVERY);
        Crash { methods, kills, count, max_delay, writer, ctx: ctx.clone(), commit_every }
    }
}
