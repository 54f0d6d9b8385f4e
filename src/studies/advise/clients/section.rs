//! What the clients' stage records in the result file (`advise.clients`).

use serde::{Deserialize, Serialize};

use super::super::candidate::Store;
use super::row::{Row, SqliteClients};
use crate::drivers::clients::WindowCount;
use crate::measure::LatencySummary;

/// How the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientsAre {
    /// Threads of one process, each with its own session.
    Threads,
    /// Processes, as a pre-fork server's workers.
    Processes,
}

impl ClientsAre {
    pub fn name(self) -> &'static str {
        match self {
            ClientsAre::Threads => "threads",
            ClientsAre::Processes => "processes",
        }
    }
}

/// One kind of operation's latencies over every client and timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassLatency {
    /// `read` or `overwrite`.
    pub class: String,
    pub latency: LatencySummary,
    /// The merged HDR histogram (V2, base64), so files can be merged exactly.
    pub histogram: String,
}

/// One candidate, in one configuration, at one client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsArmRecord {
    /// The arm's id in the round set: `clients/N/ROW` ([`super::arm_id`]).
    pub id: String,
    /// Its store (its name in the file).
    pub candidate: Store,
    /// SQLite's configuration in this row (absent for the other stores,
    /// and in older files, whose SQLite row is
    /// [`SqliteClients::BEFORE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<SqliteClients>,
    pub clients: u32,
    /// Operations of its median timed run, over all clients.
    pub ops_per_run: u64,
    /// Each run's window, in seconds (absent in older files, whose runs
    /// made a fixed count of operations per client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
    /// Each timed run's operations in its window: over all clients, the
    /// slowest client's, the median client's, and under a rate those due.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<WindowCount>,
    /// Times a client found the store locked by another and waited.
    pub busy_waits: u64,
    pub classes: Vec<ClassLatency>,
}

impl ClientsArmRecord {
    /// The row it ran.
    pub fn row(&self) -> Row {
        Row::of_record(self.candidate, self.sqlite)
    }

    pub fn class(&self, class: &str) -> Option<&ClassLatency> {
        self.classes.iter().find(|c| c.class == class)
    }
}

/// A candidate (or one of SQLite's rows) the clients' stage leaves out,
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientsExclusion {
    /// Its row (its name in the file, [`super::Row::name`]).
    pub candidate: Row,
    pub why: String,
}

/// The result file's `advise.clients`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsSection {
    pub clients: u32,
    pub are: ClientsAre,
    /// Client counts measured, ascending.
    pub levels: Vec<u32>,
    /// CPUs the clients ran on (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// `--p99-write`, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_write_us: Option<f64>,
    /// `--rate`: operations per second over all clients (an open loop,
    /// latencies from each operation's due time); absent: closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_ops_s: Option<f64>,
    pub arms: Vec<ClientsArmRecord>,
    /// Candidates (or SQLite rows) not measured with clients of this
    /// kind, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<ClientsExclusion>,
    /// The harness's cost at the most clients (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<Harness>,
}

#[cfg(test)]
impl ClientsSection {
    /// The tests' fixture: `arms` by threads at 1, 2 and 4 clients in a
    /// closed loop, nothing excluded, no harness cost recorded.
    pub(crate) fn threads_up_to_4(arms: Vec<ClientsArmRecord>) -> ClientsSection {
        ClientsSection {
            clients: 4,
            are: ClientsAre::Threads,
            levels: vec![1, 2, 4],
            cores: Some(2),
            p99_write_us: None,
            rate_ops_s: None,
            arms,
            excluded: Vec::new(),
            harness: None,
        }
    }
}

/// What the harness costs each client per operation at N clients, as `run`
/// reports it at one thread: one clock read and one histogram record,
/// measured with N threads at once after the rounds, and its share of the
/// mean operation's latency at N (the candidate where it is largest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Harness {
    pub clients: u32,
    /// CPU nanoseconds per operation of each client.
    pub cost_ns: f64,
    /// Its share of the mean latency of one operation at N, in percent.
    pub share_pct: f64,
    /// The row of that largest share.
    pub candidate: Row,
}
