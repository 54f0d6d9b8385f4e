//! One timed run as the measurements record it: where its time went, what
//! the workload reports for it and its raw sample in the result file.

use serde::{Deserialize, Serialize};

use super::cold::EvictionReport;
use super::oscount::OsCounters;

/// Where the time of one run went. kvtest's single figure is `kvtest_total_ns`:
/// from before the database is opened to after the commit, plus the close
/// (which runs the WAL checkpoint) unless the checkpoint is excluded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Open, pragmas, statement preparation, BEGIN.
    pub setup_ns: u64,
    /// The operations themselves.
    pub loop_ns: u64,
    /// COMMIT of the single transaction (0 for files or --multitrans).
    pub commit_ns: u64,
    /// Closing the database, which checkpoints a WAL (in kvtest's total
    /// unless the checkpoint is excluded).
    pub close_ns: u64,
    /// An explicit checkpoint timed outside kvtest's total (--nocheckpoint).
    pub checkpoint_ns: u64,
    pub kvtest_total_ns: u64,
    /// Work the session's writes left to its close (an SQLite WAL's
    /// checkpoint, redb's and fjall's final sync): part of `close_ns` or
    /// `checkpoint_ns`, and counted with the writes in the steady-state
    /// figure. 0 for reads and in files from before schema version 4.
    #[serde(default)]
    pub deferred_ns: u64,
}

impl Phases {
    /// The steady-state time of the session's ops: the loop with every
    /// commit of its writes (the final one included: with one commit per N
    /// writes it commits the last batch, with one per run it is the run's
    /// commit) and the work its writes deferred to the close.
    pub fn steady_ns(&self) -> u64 {
        self.loop_ns + self.commit_ns + self.deferred_ns
    }

    /// The session's one-off cost, paid once however many ops it makes:
    /// the open (setup) and the close less the writes' deferred work.
    pub fn one_off_ns(&self) -> u64 {
        (self.setup_ns + self.close_ns + self.checkpoint_ns).saturating_sub(self.deferred_ns)
    }
}

/// What a workload reports for one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOutcome {
    /// Operations that found a blob (kvtest's --count).
    pub ops: u64,
    /// Keys that had no blob; each cost an extra cycle, as in kvtest.
    pub misses: u64,
    /// Blob bytes read or written.
    pub bytes: u64,
    pub phases: Phases,
    /// The run's setup opened the engine's long-lived handle (connection,
    /// environment, database) instead of finding it kept open by an
    /// earlier run: its `setup_ns` holds that one-off open.
    pub opened_handle: bool,
}

/// One timed run, raw, as stored in the result file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSample {
    pub index: u32,
    pub ops: u64,
    pub misses: u64,
    pub bytes: u64,
    pub phases: Phases,
    /// kvtest's "Microseconds per BLOB": kvtest total / ops.
    pub per_op_us: f64,
    /// Loop time only / ops: the operation without open and commit.
    pub loop_per_op_us: f64,
    /// The steady-state time per op ([`Phases::steady_ns`] / ops): the
    /// loop with every commit of its writes inside it, no open and no
    /// close. The figure comparisons, paired ratios, verdicts, rankings and
    /// charts use ([`RunSample::figure`]). Absent before schema version 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_per_op_us: Option<f64>,
    /// The session's one-off cost ([`Phases::one_off_ns`]), in
    /// microseconds per session (not per op). Absent before version 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_off_us: Option<f64>,
    /// kvtest's "Content rate": bytes / kvtest total, MB = 10^6 bytes.
    pub mb_per_s: f64,
    pub os: OsCounters,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<EvictionReport>,
    /// This run's setup opened the engine's handle (a cold run's does,
    /// each time; a warm run's finds it kept open by the warm-up).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub opened_handle: bool,
}

impl RunSample {
    /// The figure a comparison uses: the steady-state time per op, or in a
    /// file from before schema version 4 (which did not record it),
    /// kvtest's total per op.
    pub fn figure(&self) -> f64 {
        self.steady_per_op_us.unwrap_or(self.per_op_us)
    }
}
