//! One timed run of one point: open the connections the configuration asks
//! for, let every thread prepare, start them together, collect their tallies.

use std::ffi::c_int;
use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use rusqlite::ffi;

use super::options::{Config, Sharing, Workload};
use super::table::{self, Values};
use super::worker::{Reader, Tally, Worker, Writer};
use crate::engine::sqlite::raw::{Conn, SharedConn};
use crate::{Error, Result};

/// What one run is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec<'a> {
    pub db: &'a Path,
    pub workload: Workload,
    pub config: Config,
    /// Threads; for mixed, this many readers and this many writers.
    pub threads: u32,
    pub duration: Duration,
    pub batch: u32,
    pub busy_timeout_ms: u32,
    /// Rows the table holds (readers pick keys in 1..=rows).
    pub rows: u32,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Reader,
    Writer,
}

/// The tallies of every thread of one run.
#[derive(Debug)]
pub struct RunTallies {
    pub readers: Vec<Tally>,
    pub writers: Vec<Tally>,
    /// From the first thread's start to the last thread's end.
    pub elapsed: Duration,
}

fn roles(w: Workload, threads: u32) -> Vec<Role> {
    match w {
        Workload::Read => vec![Role::Reader; threads as usize],
        Workload::Write => vec![Role::Writer; threads as usize],
        // Interleaved so that readers and writers start in the same order.
        _ => (0..threads).flat_map(|_| [Role::Reader, Role::Writer]).collect(),
    }
}

fn flags(c: &Config, role: Role, whole_connection_writes: bool) -> c_int {
    let access = if c.read_only && role == Role::Reader && !whole_connection_writes {
        ffi::SQLITE_OPEN_READONLY
    } else {
        ffi::SQLITE_OPEN_READWRITE
    };
    let cache = if c.shared_cache { ffi::SQLITE_OPEN_SHAREDCACHE } else { ffi::SQLITE_OPEN_PRIVATECACHE };
    access | cache
}

/// Every connection gets the same settings: the busy timeout and the
/// synchronous level (which only matters to writers, but costs nothing).
fn configure(conn: &Conn, spec: &RunSpec<'_>) -> Result<()> {
    conn.busy_timeout(spec.busy_timeout_ms);
    conn.exec(&format!("PRAGMA synchronous={}", spec.config.sync.pragma()))
}

pub fn run_once(spec: &RunSpec<'_>) -> Result<RunTallies> {
    if matches!(spec.workload, Workload::Blobs | Workload::Writers) {
        return Err(Error::invalid("the blob workload does not run on the study's table"));
    }
    if spec.threads == 0 {
        return Err(Error::invalid("a run needs at least one thread"));
    }
    let roles = roles(spec.workload, spec.threads);
    let shared = match spec.config.sharing {
        Sharing::Shared => {
            let any_writer = roles.contains(&Role::Writer);
            let conn = SharedConn::open(spec.db, flags(&spec.config, roles[0], any_writer))?;
            configure(conn.conn(), spec)?;
            Some(conn)
        }
        Sharing::PerThread => None,
    };
    let barrier = Barrier::new(roles.len());
    let results: Vec<(Role, Result<Tally>)> = std::thread::scope(|s| {
        let handles: Vec<_> = roles
            .iter()
            .enumerate()
            .map(|(i, &role)| {
                let (shared, barrier) = (shared.as_ref(), &barrier);
                s.spawn(move || thread_main(spec, role, i as u32, shared, barrier))
            })
            .collect();
        handles
            .into_iter()
            .zip(&roles)
            .map(|(h, &role)| (role, h.join().unwrap_or_else(|_| Err(Error::invalid("a worker thread panicked")))))
            .collect()
    });
    drop(shared);
    let (mut readers, mut writers) = (Vec::new(), Vec::new());
    for (role, r) in results {
        match role {
            Role::Reader => readers.push(r?),
            Role::Writer => writers.push(r?),
        }
    }
    let all = || readers.iter().chain(writers.iter());
    let start = all().map(|t| t.start).min();
    let end = all().map(|t| t.end).max();
    let elapsed = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s),
        _ => Duration::ZERO,
    };
    Ok(RunTallies { readers, writers, elapsed })
}

/// One thread: its own connection (per-thread) or the shared one, its
/// statements and pools, then the barrier, then the timed loop. A thread
/// that fails to prepare still reaches the barrier, so none waits forever.
fn thread_main(
    spec: &RunSpec<'_>,
    role: Role,
    index: u32,
    shared: Option<&SharedConn>,
    barrier: &Barrier,
) -> Result<Tally> {
    let own = match shared {
        Some(_) => None,
        None => match open_private(spec, role) {
            Ok(c) => Some(c),
            Err(e) => {
                barrier.wait();
                return Err(e);
            }
        },
    };
    let worker = match own.as_ref().or(shared.map(SharedConn::conn)) {
        Some(conn) => match role {
            Role::Reader => Reader::new(conn, table::keys(spec.seed, index, spec.rows)).map(Worker::Reader),
            Role::Writer => Writer::new(conn, Values::new(spec.seed, index), spec.batch).map(Worker::Writer),
        },
        None => Err(Error::invalid("no connection for a worker thread")),
    };
    barrier.wait();
    match worker {
        Ok(w) => w.run(spec.duration),
        Err(e) => Err(e),
    }
}

fn open_private(spec: &RunSpec<'_>, role: Role) -> Result<Conn> {
    let conn = Conn::open(spec.db, flags(&spec.config, role, false) | ffi::SQLITE_OPEN_NOMUTEX)?;
    configure(&conn, spec)?;
    Ok(conn)
}
