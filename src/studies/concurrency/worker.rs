//! What one thread does for the length of a run: read random rows, or insert
//! rows in transactions. Statements, keys and values are ready before the
//! loop; the loop is the SQLite calls and one clock read per operation, whose
//! chained differences are the latencies and whose value is compared with
//! the deadline, so stopping on time costs no extra clock read.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use rusqlite::ffi;

use super::table::{self, Values};
use crate::engine::sqlite::raw::{is_contention, Conn, MutexGuard, Stmt};
use crate::measure::{op_clock, stop_requested, Latency, LatencySink};
use crate::{Error, Result};

/// Ctrl-C is checked every this many operations (an atomic load).
const STOP_CHECK_MASK: u64 = 1023;

/// What one thread did in one run.
#[derive(Debug)]
pub struct Tally {
    /// Successful operations: rows read, or rows inserted and committed.
    pub ops: u64,
    /// Operations lost to contention: a read or a whole write transaction
    /// whose call still returned SQLITE_BUSY or SQLITE_LOCKED.
    pub failed_ops: u64,
    /// Calls that returned SQLITE_BUSY (any extended code).
    pub busy: u64,
    /// Calls that returned SQLITE_LOCKED (e.g. a shared cache's table lock).
    pub locked: u64,
    pub start: Instant,
    pub end: Instant,
    /// Per successful read, or per committed write transaction.
    pub latency: Latency,
}

impl Tally {
    fn new(start: Instant) -> Tally {
        Tally { ops: 0, failed_ops: 0, busy: 0, locked: 0, start, end: start, latency: Latency::new() }
    }

    fn contention(&mut self, rc: c_int, lost: u64) {
        self.failed_ops += lost;
        if rc & 0xff == ffi::SQLITE_BUSY {
            self.busy += 1;
        } else {
            self.locked += 1;
        }
    }
}

pub enum Worker<'c> {
    Reader(Reader<'c>),
    Writer(Writer<'c>),
}

impl Worker<'_> {
    pub fn run(&self, duration: Duration) -> Result<Tally> {
        match self {
            Worker::Reader(r) => r.run(duration),
            Worker::Writer(w) => w.run(duration),
        }
    }
}

/// Selects a random row by key and reads all four values.
pub struct Reader<'c> {
    conn: &'c Conn,
    stmt: Stmt<'c>,
    keys: Vec<u32>,
}

impl<'c> Reader<'c> {
    pub fn new(conn: &'c Conn, keys: Vec<u32>) -> Result<Self> {
        debug_assert!(keys.len().is_power_of_two());
        Ok(Reader { conn, stmt: conn.prepare(table::SELECT)?, keys })
    }

    #[inline(never)]
    fn run(&self, duration: Duration) -> Result<Tally> {
        let mask = self.keys.len() - 1;
        let mut sum = 0u64;
        let mut n = 0u64;
        let clock = op_clock();
        let mut t = Tally::new(Instant::now());
        let limit_ns = duration.as_nanos() as u64;
        let first = clock.raw();
        let mut prev = first;
        loop {
            let key = self.keys[(n as usize) & mask];
            n += 1;
            self.stmt.bind_i64(1, i64::from(key));
            let rc = self.stmt.step();
            if rc == ffi::SQLITE_ROW {
                let s = &self.stmt;
                sum = sum.wrapping_add(
                    s.column_i64(0) as u64
                        ^ s.column_i64(1) as u64
                        ^ s.column_f64(2).to_bits()
                        ^ s.column_text_len(3) as u64,
                );
            }
            // Reset at once: a statement left open would hold its read
            // transaction (a SHARED lock, or a WAL snapshot) between reads.
            self.stmt.reset();
            let now = clock.raw();
            match rc {
                ffi::SQLITE_ROW => {
                    t.ops += 1;
                    t.latency.record(clock.delta_as_nanos(prev, now));
                }
                rc if is_contention(rc) => t.contention(rc, 1),
                ffi::SQLITE_DONE => return Err(Error::bad_input(self.conn.path(), format!("row {key} is missing"))),
                rc => return Err(self.conn.error(&format!("cannot read row {key}"), rc)),
            }
            prev = now;
            if clock.delta_as_nanos(first, now) >= limit_ns || (n & STOP_CHECK_MASK == 0 && stop_requested()) {
                break;
            }
        }
        std::hint::black_box(sum);
        t.end = Instant::now();
        Ok(t)
    }
}

/// Inserts rows of random values, `batch` per transaction.
pub struct Writer<'c> {
    conn: &'c Conn,
    insert: Stmt<'c>,
    begin: Stmt<'c>,
    commit: Stmt<'c>,
    rollback: Stmt<'c>,
    values: Values,
    batch: u32,
}

impl<'c> Writer<'c> {
    pub fn new(conn: &'c Conn, values: Values, batch: u32) -> Result<Self> {
        Ok(Writer {
            conn,
            insert: conn.prepare(table::INSERT)?,
            // IMMEDIATE takes the write lock at BEGIN, under the busy
            // timeout, instead of failing at the first insert of a batch.
            begin: conn.prepare(c"BEGIN IMMEDIATE")?,
            commit: conn.prepare(c"COMMIT")?,
            rollback: conn.prepare(c"ROLLBACK")?,
            values,
            batch,
        })
    }

    #[inline(never)]
    fn run(&self, duration: Duration) -> Result<Tally> {
        let batch = u64::from(self.batch);
        let mut next = 0usize;
        let mut n = 0u64;
        let clock = op_clock();
        let mut t = Tally::new(Instant::now());
        let limit_ns = duration.as_nanos() as u64;
        let first = clock.raw();
        let mut prev = first;
        loop {
            n += 1;
            let rc = if self.batch == 1 { self.insert_one(&mut next) } else { self.transaction(&mut next) };
            let now = clock.raw();
            match rc {
                ffi::SQLITE_DONE => {
                    t.ops += batch;
                    t.latency.record(clock.delta_as_nanos(prev, now));
                }
                rc if is_contention(rc) => t.contention(rc, batch),
                rc => return Err(self.conn.error("cannot insert", rc)),
            }
            prev = now;
            if clock.delta_as_nanos(first, now) >= limit_ns || (n & STOP_CHECK_MASK == 0 && stop_requested()) {
                break;
            }
        }
        t.end = Instant::now();
        Ok(t)
    }

    /// One row, in its own (automatic) transaction.
    #[inline]
    fn insert_one(&self, next: &mut usize) -> c_int {
        let (a, b, c) = self.values.get(*next);
        *next += 1;
        self.insert.bind_i64(1, a);
        self.insert.bind_f64(2, b);
        self.insert.bind_text(3, c);
        let rc = self.insert.step();
        self.insert.reset();
        rc
    }

    /// BEGIN IMMEDIATE, `batch` inserts, COMMIT; rolled back if any step
    /// fails. On a shared connection the connection's own mutex is held for
    /// the whole transaction: a connection has one transaction, so batches
    /// of different threads must not interleave. That is SQLite's serialized
    /// mode extended from one call to one transaction, not a lock of ours.
    fn transaction(&self, next: &mut usize) -> c_int {
        let _whole = MutexGuard::enter(self.conn);
        let rc = step_reset(&self.begin);
        if rc != ffi::SQLITE_DONE {
            return rc;
        }
        for _ in 0..self.batch {
            let rc = self.insert_one(next);
            if rc != ffi::SQLITE_DONE {
                step_reset(&self.rollback);
                return rc;
            }
        }
        let rc = step_reset(&self.commit);
        if rc != ffi::SQLITE_DONE {
            // A COMMIT that is still busy leaves the transaction open.
            step_reset(&self.rollback);
        }
        rc
    }
}

#[inline]
fn step_reset(s: &Stmt<'_>) -> c_int {
    let rc = s.step();
    s.reset();
    rc
}
