//! What `concurrency` measures: the workloads, the study's parameters (one
//! axis each), which combinations of them to run, and the options.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measure::paired::MIN_ROUNDS_95;
use crate::measure::rounds::RoundsPlan;
pub use crate::records::Journal;
use crate::records::{EngineKind, SyncLevel};
use crate::studies::context::StudyRun;
use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Each thread selects a random row by key and reads its four values.
    Read,
    /// Each thread inserts rows of random values.
    Write,
    /// T reader threads and T writer threads at once.
    Mixed,
    /// kvtest blobs read by T threads: database vs files (`run --threads`).
    Blobs,
    /// Durable blob writers, readers beside them, on every engine given.
    Writers,
}

impl Workload {
    pub const ALL: [Workload; 5] =
        [Workload::Read, Workload::Write, Workload::Mixed, Workload::Blobs, Workload::Writers];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Read => "read",
            Workload::Write => "write",
            Workload::Mixed => "mixed",
            Workload::Blobs => "blobs",
            Workload::Writers => "writers",
        }
    }
}

/// Shared: one connection in serialized mode used by every thread.
/// Per-thread: one connection per thread, opened without SQLite's mutex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    PerThread,
    Shared,
}

/// One combination of the study's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub sharing: Sharing,
    pub journal: Journal,
    /// SQLITE_OPEN_SHAREDCACHE on every connection.
    pub shared_cache: bool,
    /// Readers open with SQLITE_OPEN_READONLY (writers never do).
    pub read_only: bool,
    pub sync: SyncLevel,
}

impl Config {
    /// Stable id, e.g. "per-thread+wal+private+rw+full".
    pub fn id(&self) -> String {
        format!(
            "{}+{}+{}+{}+{}",
            self.sharing_name(),
            self.journal.name(),
            if self.shared_cache { "shared-cache" } else { "private" },
            if self.read_only { "ro" } else { "rw" },
            self.sync.pragma().to_lowercase()
        )
    }

    /// What a person calls it; axes at their default are left out.
    pub fn label(&self) -> String {
        let mut s = format!("{} {}", self.sharing_name(), if self.journal == Journal::Wal { "WAL" } else { "DELETE" });
        if self.shared_cache {
            s.push_str(" shared-cache");
        }
        if self.read_only {
            s.push_str(" read-only");
        }
        if self.sync != SyncLevel::Full {
            s.push_str(&format!(" sync={}", self.sync.pragma().to_lowercase()));
        }
        s
    }

    fn sharing_name(&self) -> &'static str {
        match self.sharing {
            Sharing::PerThread => "per-thread",
            Sharing::Shared => "shared",
        }
    }

    /// Axes that mean nothing for a workload are set to their default, so
    /// that equal configurations compare equal: writers never open read-only;
    /// one shared connection cannot be read-only for some threads only; and
    /// in a shared cache the first connection decides whether the cache is
    /// writable, so read-only readers there would fail the writers.
    fn normalized(mut self, w: Workload) -> Config {
        let readers_share_with_writers = self.sharing == Sharing::Shared || self.shared_cache;
        if w == Workload::Write || (w == Workload::Mixed && readers_share_with_writers) {
            self.read_only = false;
        }
        self
    }

    /// Axes in which two configurations differ.
    pub fn differences(&self, other: &Config) -> usize {
        usize::from(self.sharing != other.sharing)
            + usize::from(self.journal != other.journal)
            + usize::from(self.shared_cache != other.shared_cache)
            + usize::from(self.read_only != other.read_only)
            + usize::from(self.sync != other.sync)
    }
}

/// The values of each axis to combine (`--modes`). An axis the user names
/// no value of keeps all of its values (synchronous: FULL, SQLite's default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Modes {
    pub sharing: Vec<Sharing>,
    pub journal: Vec<Journal>,
    pub shared_cache: Vec<bool>,
    pub read_only: Vec<bool>,
    pub sync: Vec<SyncLevel>,
}

impl Default for Modes {
    fn default() -> Self {
        Modes {
            sharing: vec![Sharing::PerThread, Sharing::Shared],
            journal: vec![Journal::Wal, Journal::Delete],
            shared_cache: vec![false, true],
            read_only: vec![false, true],
            sync: vec![SyncLevel::Full],
        }
    }
}

pub const MODE_NAMES: &str =
    "shared, per-thread, wal, delete, private-cache, shared-cache, rw, ro, sync-off, sync-normal, sync-full, sync-extra";

impl Modes {
    /// Parses "shared,wal,sync-normal": each name picks a value of its axis.
    pub fn parse(list: &str) -> Result<Modes> {
        let mut m = Modes {
            sharing: Vec::new(),
            journal: Vec::new(),
            shared_cache: Vec::new(),
            read_only: Vec::new(),
            sync: Vec::new(),
        };
        for name in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
            match name.as_str() {
                "shared" => push(&mut m.sharing, Sharing::Shared),
                "per-thread" => push(&mut m.sharing, Sharing::PerThread),
                "private-cache" => push(&mut m.shared_cache, false),
                "shared-cache" => push(&mut m.shared_cache, true),
                "rw" => push(&mut m.read_only, false),
                "ro" => push(&mut m.read_only, true),
                "sync-off" => push(&mut m.sync, SyncLevel::Off),
                "sync-normal" => push(&mut m.sync, SyncLevel::Normal),
                "sync-full" => push(&mut m.sync, SyncLevel::Full),
                "sync-extra" => push(&mut m.sync, SyncLevel::Extra),
                "" => return Err(Error::invalid(format!("--modes {list:?}: empty element"))),
                // The journal axis: WAL or DELETE.
                other => match Journal::parse(other).filter(|j| Modes::default().journal.contains(j)) {
                    Some(journal) => push(&mut m.journal, journal),
                    None => return Err(Error::invalid(format!("unknown mode {other:?} (expected: {MODE_NAMES})"))),
                },
            }
        }
        let d = Modes::default();
        fill(&mut m.sharing, d.sharing);
        fill(&mut m.journal, d.journal);
        fill(&mut m.shared_cache, d.shared_cache);
        fill(&mut m.read_only, d.read_only);
        fill(&mut m.sync, d.sync);
        Ok(m)
    }

    /// The configuration every other is compared against in `--quick`: the
    /// first value of each axis (per-thread, WAL, private cache, read-write).
    pub fn baseline(&self) -> Config {
        Config {
            sharing: self.sharing[0],
            journal: self.journal[0],
            shared_cache: self.shared_cache[0],
            read_only: self.read_only[0],
            sync: self.sync[0],
        }
    }

    /// Every combination that means something for `w`, without duplicates;
    /// with `one_at_a_time`, only those that differ from the baseline in at
    /// most one axis (enough to test each of the study's claims once).
    pub fn configs(&self, w: Workload, one_at_a_time: bool) -> Vec<Config> {
        let base = self.baseline().normalized(w);
        let mut out: Vec<Config> = Vec::new();
        for &sharing in &self.sharing {
            for &journal in &self.journal {
                for &shared_cache in &self.shared_cache {
                    for &read_only in &self.read_only {
                        for &sync in &self.sync {
                            let c = Config { sharing, journal, shared_cache, read_only, sync }.normalized(w);
                            if (!one_at_a_time || c.differences(&base) <= 1) && !out.contains(&c) {
                                out.push(c);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

fn push<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn fill<T>(v: &mut Vec<T>, default: Vec<T>) {
    if v.is_empty() {
        *v = default;
    }
}

/// What one `concurrency` invocation does beyond its context
/// (`StudyContext`: the work directory, the engines asked for (the servers
/// read by clients, and the stores written beside [`DEFAULT_ENGINES`]),
/// the rounds of the blob readers and servers, the seed of the table's
/// content, the keys and the inserted values, `--quick` (few combinations,
/// one axis varied at a time, short points), the settings the servers'
/// datasets are built and checked with, the observer).
#[derive(Debug, Clone)]
pub struct ConcurrencyOptions {
    /// Thread counts; for mixed, T readers plus T writers.
    pub threads: Vec<u32>,
    /// Length of one timed run of one point.
    pub duration: Duration,
    /// Timed runs per point (a fresh copy of the table each).
    pub repeat: u32,
    /// Rows in the table for read and mixed runs.
    pub rows: u32,
    pub workloads: Vec<Workload>,
    pub modes: Modes,
    /// Inserts per write transaction.
    pub batch: u32,
    /// sqlite3_busy_timeout on every connection, in milliseconds.
    pub busy_timeout_ms: u32,
    /// Blobs in the kvtest dataset of the parallel-reader section.
    pub blob_count: u32,
    /// Reads per timed run in the parallel-reader section (all threads).
    pub blob_reads: u64,
    /// Reads per timed run of a server, all clients together: a server
    /// answers in milliseconds where a local read takes microseconds.
    pub server_reads: u64,
    /// Durable writers at once (as many readers beside them).
    pub writer_counts: Vec<u32>,
    /// What a writers' run is sized to take.
    pub writer_run_time: Duration,
}

/// The study as it runs: its context, its options and the parallel
/// readers' interleaved rounds, per thread count (the database, with and
/// without mmap, and the files as arms; the servers' too, per client
/// count).
pub type Concurrency<'a> = StudyRun<'a, ConcurrencyOptions>;

impl Concurrency<'_> {
    /// Server stores read by 1 to 16 clients: the engines asked for that
    /// are servers.
    pub fn servers(&self) -> Vec<EngineKind> {
        self.ctx.engines.iter().copied().filter(|k| k.is_server()).collect()
    }

    /// The engines the writers write: [`DEFAULT_ENGINES`], then the ones
    /// asked for, in the order given.
    pub fn writer_engines(&self) -> Vec<EngineKind> {
        let mut out = DEFAULT_ENGINES.to_vec();
        out.extend(self.ctx.engines.iter().copied().filter(|k| !DEFAULT_ENGINES.contains(k)));
        out
    }
}

/// The blob readers' and servers' rounds unless asked otherwise: at most
/// 20 within 60 s (12 within 4 s with `--quick`), at least the 6 that give
/// every ratio a 95% interval.
pub fn default_rounds(quick: bool) -> RoundsPlan {
    let (most, budget) = if quick { (12, 4) } else { (20, 60) };
    RoundsPlan { least_rounds: MIN_ROUNDS_95 as u32, ..RoundsPlan::new(most, Some(Duration::from_secs(budget))) }
}

/// Writer counts (and as many readers beside them).
pub const WRITERS: [u32; 5] = [1, 2, 4, 8, 16];
/// Writer counts with `--quick`.
pub const QUICK_WRITERS: [u32; 3] = [1, 2, 4];
/// The engines written when `--engines` names none: the SQLite
/// against files, and LMDB, the other single-writer store.
pub const DEFAULT_ENGINES: [EngineKind; 3] = [EngineKind::Db, EngineKind::Flat, EngineKind::Lmdb];

impl Default for ConcurrencyOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcurrencyOptions {
    /// The study's settings: 1..20 threads, 30 s per point, 50,000 rows.
    pub fn new() -> Self {
        ConcurrencyOptions {
            threads: vec![1, 2, 4, 8, 16, 20],
            duration: Duration::from_secs(30),
            repeat: 3,
            rows: 50_000,
            workloads: vec![Workload::Read, Workload::Write, Workload::Mixed, Workload::Blobs],
            modes: Modes::default(),
            batch: 1,
            busy_timeout_ms: 5000,
            blob_count: 10_000,
            blob_reads: 100_000,
            server_reads: 2000,
            writer_counts: WRITERS.to_vec(),
            writer_run_time: Duration::from_secs(1),
        }
    }

    /// `--quick`: threads 1,2,4, short points in 6 rounds (the fewest
    /// that give every ratio a 95% interval), one axis varied at a time, a
    /// small blob dataset, writers 1,2,4.
    pub fn quick() -> Self {
        ConcurrencyOptions {
            threads: vec![1, 2, 4],
            duration: Duration::from_millis(200),
            repeat: MIN_ROUNDS_95 as u32,
            blob_count: 1000,
            blob_reads: 20_000,
            server_reads: 200,
            writer_counts: QUICK_WRITERS.to_vec(),
            writer_run_time: Duration::from_millis(200),
            ..Self::new()
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.threads.is_empty() || self.threads.iter().any(|&t| t == 0 || t > MAX_THREADS) {
            return Err(Error::invalid(format!("--threads: each count must be from 1 to {MAX_THREADS}")));
        }
        if self.duration.is_zero() {
            return Err(Error::invalid("--duration must be more than 0 seconds"));
        }
        if self.repeat == 0 {
            return Err(Error::invalid("--repeat must be at least 1"));
        }
        if self.rows == 0 || self.rows > i32::MAX as u32 {
            return Err(Error::invalid(format!("--rows must be from 1 to {}", i32::MAX)));
        }
        if self.batch == 0 || self.batch > 1_000_000 {
            return Err(Error::invalid("--batch must be from 1 to 1000000"));
        }
        if self.workloads.is_empty() {
            return Err(Error::invalid("no workload selected"));
        }
        if self.blob_count == 0 || self.blob_reads == 0 || self.server_reads == 0 {
            return Err(Error::invalid("the blob section needs at least one blob and one read"));
        }
        if self.writer_counts.is_empty() || self.writer_counts.iter().any(|&w| w == 0 || w > MAX_THREADS) {
            return Err(Error::invalid(format!("--writers: each count must be from 1 to {MAX_THREADS}")));
        }
        if let Some(&w) = self.writer_counts.iter().find(|&&w| w > self.blob_count) {
            return Err(Error::invalid(format!("--writers {w}: more writers than the {} blobs", self.blob_count)));
        }
        if self.writer_run_time.is_zero() {
            return Err(Error::invalid("the writers need a run time above 0"));
        }
        Ok(())
    }

    /// The database workloads' points, in the order they run (`quick`:
    /// one axis varied at a time).
    pub fn plan(&self, quick: bool) -> Vec<(Workload, Config)> {
        let mut out = Vec::new();
        for &w in &self.workloads {
            if w != Workload::Blobs && w != Workload::Writers {
                out.extend(self.modes.configs(w, quick).into_iter().map(|c| (w, c)));
            }
        }
        out
    }
}

/// More threads than this is a typing mistake, not an experiment.
pub const MAX_THREADS: u32 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_pick_values_per_axis_and_keep_the_others() {
        let m = Modes::parse("shared, wal").unwrap();
        assert_eq!(m.sharing, [Sharing::Shared]);
        assert_eq!(m.journal, [Journal::Wal]);
        assert_eq!(m.shared_cache, [false, true]);
        assert_eq!(m.sync, [SyncLevel::Full]);
        assert!(Modes::parse("wal,fast").unwrap_err().to_string().contains("unknown mode \"fast\""));
        assert!(Modes::parse("wal,,delete").is_err());
    }

    #[test]
    fn combinations_are_normalized_and_unique() {
        let m = Modes::default();
        assert_eq!(m.configs(Workload::Read, false).len(), 16);
        assert_eq!(m.configs(Workload::Write, false).len(), 8, "writers never open read-only");
        // Mixed: shared 2x2 (no read-only), per-thread private cache 2x2,
        // per-thread shared cache 2 (no read-only).
        assert_eq!(m.configs(Workload::Mixed, false).len(), 10);
        let quick = m.configs(Workload::Read, true);
        assert_eq!(quick.len(), 5, "baseline plus one per axis: {quick:?}");
        assert!(quick.iter().all(|c| c.differences(&m.baseline()) <= 1));
        let ids: Vec<String> = m.configs(Workload::Read, false).iter().map(Config::id).collect();
        assert!(ids.contains(&"shared+delete+shared-cache+ro+full".to_string()));
    }

    #[test]
    fn bad_options_are_refused() {
        let ok = ConcurrencyOptions::quick();
        assert!(ok.validate().is_ok());
        for bad in [
            ConcurrencyOptions { threads: vec![], ..ok.clone() },
            ConcurrencyOptions { threads: vec![2, 0], ..ok.clone() },
            ConcurrencyOptions { duration: Duration::ZERO, ..ok.clone() },
            ConcurrencyOptions { batch: 0, ..ok.clone() },
            ConcurrencyOptions { rows: 0, ..ok.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
