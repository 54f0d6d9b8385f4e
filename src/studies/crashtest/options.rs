//! What the crash test is asked: its own knobs ([`CrashOptions`]), and
//! the same resolved in its context ([`Crash`]), which every part of the
//! test reads.

use std::path::PathBuf;
use std::time::Duration;

use crate::records::ConfigId;
use crate::studies::context::StudyContext;
use crate::{Error, Result};

/// Name prefix of the temporary work directory; the writer refuses to
/// write anywhere else, so a stray `crash-writer` cannot touch real data.
pub(super) const WORK_PREFIX: &str = ".blobbench-crashtest-";

/// Versions one writer can use: kill `n` writes versions from `n << 32`.
pub(super) const ROUND_SPAN: u64 = 1 << 32;

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

/// The most kills and blobs per method.
const LIMIT: u32 = 100_000;

/// The range of the blobs' sizes.
pub const MIN_BLOB: usize = 512;
pub const MAX_BLOB: usize = 64 * 1024;

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

impl Crash {
    /// Checks what can be checked before any method runs.
    pub fn validate(&self) -> Result<()> {
        let opts = self;
        if opts.methods.is_empty() {
            return Err(Error::invalid("--method: no write method chosen"));
        }
        crate::records::check_commit_every(opts.commit_every).map_err(Error::invalid)?;
        if !(1..=LIMIT).contains(&opts.kills) || !(1..=LIMIT).contains(&opts.count) {
            return Err(Error::invalid(format!("--kills and --count must be from 1 to {LIMIT}")));
        }
        match std::fs::metadata(&opts.ctx.workdir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotFound(opts.ctx.workdir.clone()))
            }
            Err(e) => return Err(Error::io(&opts.ctx.workdir, "cannot access", e)),
            Ok(m) if !m.is_dir() => return Err(Error::bad_input(&opts.ctx.workdir, "is not a directory")),
            Ok(_) => {}
        }
        // One dataset at a time, plus a WAL or a journal as large as it.
        let need = 2 * u64::from(opts.count) * (MAX_BLOB as u64 + 512);
        let free = crate::util::fsutil::free_bytes(&opts.ctx.workdir)?;
        if free < need {
            return Err(Error::bad_input(
                &opts.ctx.workdir,
                format!(
                    "not enough free space: the test needs about {} MB, {} MB free",
                    need / 1_000_000,
                    free / 1_000_000
                ),
            ));
        }
        Ok(())
    }
}
