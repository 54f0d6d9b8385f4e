//! What a timed loop does per operation, shared by the fixed-count loop
//! (`session.rs`) and the clients' window loop (`window.rs`): the content
//! and scripts made before any timer, the work done per key, monomorphised
//! per kind, and the loop's totals.

use std::time::Instant;

use rand::{RngCore, SeedableRng};

use super::classes::Classes;
use crate::engine::Session;
use crate::records::EngineKind;
use crate::{Error, Result};

/// Bytes of random content beyond the largest blob: each operation takes its
/// content from a different offset in this window.
const POOL_WINDOW: usize = 64 * 1024;
const POOL_STEP: usize = 4099;

/// Random content made before any timer starts, so that no engine pays for
/// random generation inside the loop.
pub struct ContentPool {
    bytes: Vec<u8>,
    blob_max: usize,
    /// Runs started so far: each run starts at another offset, so a repeated
    /// run writes different content than the one before it.
    runs: std::cell::Cell<usize>,
}

impl ContentPool {
    pub fn new(blob_max: usize, seed: u64) -> Self {
        let mut bytes = vec![0u8; blob_max + POOL_WINDOW];
        rand::rngs::SmallRng::seed_from_u64(seed ^ 0x5eed_b10b).fill_bytes(&mut bytes);
        ContentPool { bytes, blob_max, runs: std::cell::Cell::new(0) }
    }

    /// Where the next run starts in the window.
    fn next_run_offset(&self) -> usize {
        let run = self.runs.get();
        self.runs.set(run + 1);
        run * 7919 % POOL_WINDOW
    }
}

impl ContentPool {
    /// `len` bytes of content for the operation at `offset` in the window.
    #[inline]
    fn slice(&self, offset: usize, len: usize) -> &[u8] {
        &self.bytes[offset..offset + len]
    }

    /// The longest content the pool can give.
    pub fn blob_max(&self) -> usize {
        self.blob_max
    }
}

/// One operation of a [`Script`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptOp {
    Read,
    /// Same size, new content (kvtest's update).
    Overwrite,
    /// Replace (or insert) with new content of this many bytes.
    Put(u32),
    Delete,
}

/// Operations chosen before the timer (a mix of reads and writes, new
/// sizes for rewrites): the loop takes the next one in constant time and
/// allocates nothing. Op `i` of a run is `ops[i % ops.len()]`.
pub struct Script {
    pool: ContentPool,
    ops: Vec<ScriptOp>,
    /// Latency per class of operation (index [`ScriptOp::class`]), over the
    /// timed runs until taken; locked once per session, never per op.
    pub(super) classes: std::sync::Mutex<Classes>,
}

impl ScriptOp {
    /// Names of the classes, by [`ScriptOp::class`].
    pub const CLASSES: [&'static str; 4] = ["read", "overwrite", "put", "delete"];

    #[inline]
    pub fn class(self) -> usize {
        match self {
            ScriptOp::Read => 0,
            ScriptOp::Overwrite => 1,
            ScriptOp::Put(_) => 2,
            ScriptOp::Delete => 3,
        }
    }
}

impl Script {
    /// A script of `ops` whose content pool covers every `Put` and blobs of
    /// up to `blob_max` bytes (for overwrites).
    pub fn new(ops: Vec<ScriptOp>, blob_max: u32, seed: u64) -> Result<Self> {
        if ops.is_empty() {
            return Err(Error::invalid("a workload script needs at least one operation"));
        }
        let longest = ops.iter().map(|op| if let ScriptOp::Put(n) = op { *n } else { 0 }).max().unwrap_or(0);
        let classes = std::sync::Mutex::default();
        Ok(Script { pool: ContentPool::new(blob_max.max(longest) as usize, seed), ops, classes })
    }

    pub fn ops(&self) -> &[ScriptOp] {
        &self.ops
    }

    /// Whether any operation writes.
    pub fn writes(&self) -> bool {
        self.ops.iter().any(|op| *op != ScriptOp::Read)
    }

    /// Makes a histogram for each class of operation the script runs
    /// that has none yet, outside every timer: a timed session records
    /// into these.
    pub(super) fn arm_classes(&self) {
        let mut classes = self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        classes.arm(self.ops.iter().map(|op| op.class()));
    }

    /// The per-class histograms recorded so far, by [`ScriptOp::class`],
    /// leaving none in their place: the script keeps no histogram between
    /// runs, whatever the number of clients.
    pub fn take_classes(&self) -> Classes {
        let mut classes = self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *classes)
    }

    /// How many histograms the script holds now.
    pub fn histograms_held(&self) -> usize {
        self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).held()
    }

    /// Per-class latency recorded so far (timed runs only), by class name;
    /// classes the script never ran are left out.
    pub fn class_latency(&self) -> Vec<(&'static str, crate::measure::LatencySummary)> {
        let classes = self.classes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ScriptOp::CLASSES
            .iter()
            .enumerate()
            .filter_map(|(class, name)| classes.get(class).map(|l| (*name, l)))
            .filter(|(_, l)| l.count() > 0)
            .map(|(name, l)| (name, l.summary()))
            .collect()
    }
}

/// What one timed loop did, and when it started and ended.
pub(super) struct LoopTotals {
    pub ops: u64,
    pub misses: u64,
    pub bytes: u64,
    pub start: Instant,
    pub end: Instant,
}

/// Misses in a row after which a loop gives up: kvtest loops forever when
/// no key in range has a blob; blobbench stops with an error once every key
/// in range has been tried about four times without a hit.
pub(super) fn miss_limit(max_id: u32) -> u64 {
    4 * u64::from(max_id) + 1000
}

#[cold]
pub(super) fn no_blob_found(max_id: u32, tries: u64) -> Error {
    Error::invalid(format!(
        "no blob found among keys 1..={max_id} in {tries} tries in a row; stopped (kvtest would loop forever)"
    ))
}

/// What a timed loop does per key, monomorphised per kind of work so a
/// read-only loop carries nothing a script needs.
pub(super) trait LoopWork {
    /// Does one operation on `key`; returns the bytes it moved (0: no blob)
    /// and its class for per-class latency.
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)>;

    /// Per-class latency of the operation just done (only scripts keep it).
    #[inline(always)]
    fn record_class(&mut self, _class: usize, _ns: u64) {}
}

pub(super) struct ReadOps;

impl LoopWork for ReadOps {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        Ok((session.read(key)?, 0))
    }
}

/// A round trip with no work per key (PostgreSQL's `SELECT 1`); each
/// counts the bytes its answer carried (PostgreSQL's int4: 4).
pub(super) struct RoundTripOps;

impl LoopWork for RoundTripOps {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, _key: u32) -> Result<(u64, usize)> {
        match session.round_trip()? {
            Some(bytes) => Ok((bytes, 0)),
            None => Err(no_server()),
        }
    }
}

#[cold]
fn no_server() -> Error {
    let servers: Vec<&str> = EngineKind::ALL.into_iter().filter(|k| k.is_server()).map(EngineKind::name).collect();
    Error::invalid(format!(
        "--round-trip measures a server's round trip with no work; this engine has no server (use {})",
        servers.join(" or ")
    ))
}

/// Where the next operation's content starts in the pool's window: one
/// run's content, each operation's from a new offset.
pub struct PoolCursor<'a> {
    pool: &'a ContentPool,
    offset: usize,
}

impl<'a> PoolCursor<'a> {
    /// `len` bytes of content for the next operation.
    #[inline(always)]
    pub fn next(&mut self, len: usize) -> &'a [u8] {
        let at = self.offset;
        self.offset += POOL_STEP;
        if self.offset >= POOL_WINDOW {
            self.offset -= POOL_WINDOW;
        }
        self.pool.slice(at, len)
    }
}

impl ContentPool {
    /// The content of one run's writes. Each run starts at another offset,
    /// so a run that writes the keys of the run before it, in the same
    /// order, writes new content: a write of the bytes a blob already
    /// holds is a commit with nothing to write (SQLite leaves an equal page
    /// clean, and syncs nothing).
    pub fn writes(&self) -> PoolCursor<'_> {
        PoolCursor { pool: self, offset: self.next_run_offset() }
    }
}

impl LoopWork for PoolCursor<'_> {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        let content = self.next(self.pool.blob_max);
        Ok((session.overwrite(key, content)?, 1))
    }
}

pub(super) struct ScriptOps<'a, 'c> {
    ops: &'a [ScriptOp],
    step: usize,
    content: PoolCursor<'a>,
    /// None when latency is off (warm-up runs).
    classes: Option<&'c mut Classes>,
}

impl<'a, 'c> ScriptOps<'a, 'c> {
    pub(super) fn new(script: &'a Script, classes: Option<&'c mut Classes>) -> Self {
        ScriptOps { ops: &script.ops, step: 0, content: script.pool.writes(), classes }
    }

    /// Records the script's next operation as not started, `ns` late (an
    /// open loop's due operation the deadline came before), and moves on.
    pub(super) fn skip(&mut self, ns: u64) {
        let class = self.ops[self.step].class();
        self.step = (self.step + 1) % self.ops.len();
        self.record_class(class, ns);
    }
}

impl LoopWork for ScriptOps<'_, '_> {
    #[inline(always)]
    fn step<S: Session + ?Sized>(&mut self, session: &mut S, key: u32) -> Result<(u64, usize)> {
        let op = self.ops[self.step];
        self.step += 1;
        if self.step == self.ops.len() {
            self.step = 0;
        }
        let n = match op {
            ScriptOp::Read => session.read(key)?,
            ScriptOp::Overwrite => session.overwrite(key, self.content.next(self.content.pool.blob_max))?,
            ScriptOp::Put(len) => {
                session.put(key, self.content.next(len as usize))?;
                u64::from(len.max(1))
            }
            ScriptOp::Delete => u64::from(session.delete(key)?),
        };
        Ok((n, op.class()))
    }

    #[inline(always)]
    fn record_class(&mut self, class: usize, ns: u64) {
        if let Some(classes) = self.classes.as_mut() {
            classes.record(class, ns);
        }
    }
}
