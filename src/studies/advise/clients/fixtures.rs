//! The clients' stage's test fixtures, shared by this folder's tests and
//! the report's (`report/study/advise/clients_tests.rs`), so the ranking
//! and the page on it are tested on the same arms: an arm's record, its
//! runs under a rate, the rates' p99s, and SQLite's four rows beside the
//! files.

use super::super::candidate::Store;
use super::row::{arm_id, Row};
use super::section::{ClientsArmRecord, ClientsSection};
use super::ROUNDS_ID;
use crate::drivers::clients::{Behind, WindowCount};
use crate::measure::rounds::{synthetic, RoundSet};
use crate::records::{DbAccess, DbWriters};

/// `row`'s arm at `clients`, 100 operations per client in each run's
/// 0.1 s window, with `runs`; no busy waits, no latency classes.
pub fn arm(row: Row, clients: u32, runs: Vec<WindowCount>) -> ClientsArmRecord {
    ClientsArmRecord {
        id: arm_id(row, clients),
        candidate: row.store.name().into(),
        sqlite: row.sqlite,
        clients,
        ops_per_run: 100 * u64::from(clients),
        window_s: Some(0.1),
        runs,
        busy_waits: 0,
        classes: Vec::new(),
    }
}

/// Six rounds' runs under a rate, every operation's p99 in each (µs) as
/// given: 100 operations due and done per client, none behind (or, where
/// `behind`, the furthest client 5% behind).
pub fn rate_runs(p99s_us: [f64; 6], behind: bool) -> Vec<WindowCount> {
    let furthest = Behind { judged: 100, behind: if behind { 5 } else { 0 } };
    let run = |p99_us: f64| WindowCount {
        ops: 100,
        due: Some(100),
        furthest_behind: Some(furthest),
        p99_ns: Some((p99_us * 1000.0) as u64),
        ..WindowCount::default()
    };
    p99s_us.map(run).to_vec()
}

/// The files' p99 in six rounds under a rate (µs).
pub const FILES_P99: [f64; 6] = [100.0, 110.0, 90.0, 100.0, 105.0, 95.0];
/// A higher median than the files', but lower in three rounds of six.
pub const CLOSE_P99: [f64; 6] = [96.0, 120.0, 101.0, 98.0, 102.0, 110.0];
/// Twice the files' in every round.
pub const TWICE_P99: [f64; 6] = [200.0, 220.0, 180.0, 200.0, 210.0, 190.0];

/// `arms` under a rate of 200 ops/s over all clients, by threads at
/// `levels`, in six rounds of 5 ms per operation over all clients (the
/// rate) for every arm.
pub fn at_rate(arms: Vec<ClientsArmRecord>, levels: Vec<u32>) -> (ClientsSection, RoundSet) {
    let ids: Vec<&str> = arms.iter().map(|a| a.id.as_str()).collect();
    let set = synthetic(ROUNDS_ID, &ids, &vec![vec![5000.0; ids.len()]; 6]);
    (ClientsSection { levels, rate_ops_s: Some(200.0), ..ClientsSection::threads_up_to_4(arms) }, set)
}

/// SQLite's two ways of writing by its two access paths, and the files.
pub fn access_path_rows() -> [Row; 5] {
    [
        Row::sqlite(DbWriters::One, DbAccess::BlobApi),
        Row::sqlite(DbWriters::One, DbAccess::Sql),
        Row::sqlite(DbWriters::PerClient, DbAccess::BlobApi),
        Row::sqlite(DbWriters::PerClient, DbAccess::Sql),
        Row::of(Store::FilesReplace),
    ]
}

/// [`access_path_rows`] at `clients` alone, in six alike rounds, µs per
/// op: one writer through SQL fastest, then the files, then one writer
/// through the blob handle, then the per-client rows.
pub fn access_paths(clients: u32) -> (ClientsSection, RoundSet) {
    let arms: Vec<ClientsArmRecord> = access_path_rows().iter().map(|&r| arm(r, clients, Vec::new())).collect();
    let ids: Vec<&str> = arms.iter().map(|a| a.id.as_str()).collect();
    let set = synthetic(ROUNDS_ID, &ids, &vec![vec![40.0, 30.0, 80.0, 90.0, 35.0]; 6]);
    (ClientsSection { clients, levels: vec![clients], ..ClientsSection::threads_up_to_4(arms) }, set)
}
