//! advise's candidates under several clients at once (`--clients N`, or
//! `--rate R` at any N): each candidate that meets the need runs the
//! stated mix with 1, 2, 4 ... N clients (threads, each with a session of
//! its own, or processes, each with its own engine; see
//! [`crate::drivers::clients`]), each in the configuration an application
//! with N clients would use, named in the section ([`row`]): SQLite under
//! threads both with one writer connection for the process and with a
//! connection per client, each through both access paths (the blob
//! handle, or SQL), each combination a row ranked on its own. Every (row,
//! clients) pair is an arm of one set of interleaved rounds, every run one
//! window shared by all its clients, on the suite's datasets. The section records each arm's latencies per
//! kind of operation (the clients' histograms merged, serialised), each
//! run's per-client counts and its busy waits; its throughput per round is
//! the round set's. The ranking at N is [`rank::at`].

#[cfg(test)]
pub(crate) mod fixtures;
pub mod rank;
pub mod row;
pub mod section;

use std::path::Path;
use std::time::Duration;

pub use rank::{at, leader_change, merge_histograms, p99_ratio, spread, AtClients, RankingAt, Spread};
pub use row::{arm_id, Row, SqliteClients};
pub use section::{ClassLatency, ClientsAre, ClientsArmRecord, ClientsExclusion, ClientsSection, Harness};

use super::candidate::Store;
use super::rules;
use super::section::CrashFacts;
use super::Advise;
use crate::drivers::clients::{ClientsArm, ClientsTally, WindowCount, DUE_PER_CLIENT, MAX_CLIENTS};
use crate::drivers::processes::Launcher;
use crate::engine::sqlite;
use crate::measure::rounds::{run_rounds, Arm, RoundSet, RoundsPlan};
use crate::records::ConfigId;
use crate::records::{DbAccess, DbWriters, Mix};
use crate::studies::context::StudyContext;
use crate::studies::suite;
use crate::{Error, Result};

/// The id of the clients' round set in the result file.
pub const ROUNDS_ID: &str = "advise/clients";

/// Which of SQLite's ways of writing with clients to measure
/// (`--sqlite-writers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqliteWriters {
    /// Both, each its own row (threads only).
    Both,
    Only(DbWriters),
}

/// What advise is asked about concurrency.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientsPlan {
    /// Clients at once (`--clients N`, 1 to 1,024; 1 without a rate: none
    /// of this runs).
    pub clients: u32,
    pub are: ClientsAre,
    /// A write p99 above this excludes a candidate at N (`--p99-write`).
    pub p99_write: Option<Duration>,
    /// Operations per second over all clients, an open loop (`--rate`);
    /// None: closed loop.
    pub rate: Option<f64>,
    /// How to start a client process (`--clients-are processes`): the
    /// command line gives its own binary.
    pub launcher: Option<Launcher>,
    /// SQLite's ways of writing asked for (`--sqlite-writers`); None: both
    /// with threads, a connection per client with processes.
    pub sqlite_writers: Option<SqliteWriters>,
}

impl ClientsPlan {
    pub const ONE: ClientsPlan = ClientsPlan {
        clients: 1,
        are: ClientsAre::Threads,
        p99_write: None,
        rate: None,
        launcher: None,
        sqlite_writers: None,
    };

    /// Whether the clients' stage runs: more than one client, or a rate.
    pub fn runs(&self) -> bool {
        self.clients > 1 || self.rate.is_some()
    }

    /// Checks what can be checked before any work, for the `stores`
    /// considered: under processes some must remain, and SQLite's one
    /// writer connection cannot be asked for.
    pub fn validate(&self, stores: &[Store], quick: bool) -> Result<()> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(Error::invalid(format!("--clients {} must be from 1 to {MAX_CLIENTS}", self.clients)));
        }
        if self.are == ClientsAre::Processes && self.runs() {
            if self.launcher.is_none() {
                return Err(Error::invalid("--clients-are processes: no program to start the clients with"));
            }
            let asked = match self.sqlite_writers {
                Some(SqliteWriters::Only(w)) => vec![w],
                Some(SqliteWriters::Both) => DbWriters::ALL.to_vec(),
                None => Vec::new(),
            };
            let threads_only = sqlite::WRITERS.iter().filter(|row| asked.contains(&row.id));
            if let Some((row, why)) = threads_only.filter_map(|row| Some((row, row.threads_only?))).next() {
                return Err(Error::invalid(format!(
                    "--sqlite-writers {} with --clients-are processes: SQLite's {why} (use --clients-are threads, or \
                     --sqlite-writers {})",
                    row.id.name(),
                    DbWriters::PerClient.name()
                )));
            }
            let excluded: Vec<ClientsExclusion> = excluded(stores, self.are)
                .into_iter()
                .filter(|e| stores.iter().any(|&s| Row::of(s) == e.candidate))
                .collect();
            if excluded.len() == stores.len() {
                let why: Vec<String> = excluded.iter().map(|e| format!("{}: {}", e.candidate.name(), e.why)).collect();
                return Err(Error::invalid(format!(
                    "--clients-are processes: no candidate remains ({})",
                    why.join("; ")
                )));
            }
        }
        // Before anything is built: the rate is one client's alone at the
        // first client count, and every count's window must hold an
        // operation due for each of its clients.
        if self.runs() {
            let cost = crate::measure::pace::wait_cost();
            crate::drivers::clients::check_rate(self.rate, 1, crate::util::cores(), cost)?;
            for n in self.levels() {
                crate::drivers::clients::check_window(n, window(quick, n, self.rate), self.rate)?;
            }
        }
        if self.p99_write.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid("--p99-write must be longer than 0"));
        }
        Ok(())
    }

    /// The client counts measured: 1, 2, 4 ... and N.
    pub fn levels(&self) -> Vec<u32> {
        levels(self.clients)
    }

    /// SQLite's ways of writing measured, in the order of its rows
    /// (`engine::sqlite::WRITERS`): with processes, those processes can
    /// share.
    pub fn sqlite_writers(&self) -> Vec<DbWriters> {
        let rows = sqlite::WRITERS.iter();
        match (self.sqlite_writers, self.are) {
            (Some(SqliteWriters::Only(w)), _) => vec![w],
            (_, ClientsAre::Processes) => rows.filter(|r| r.threads_only.is_none()).map(|r| r.id).collect(),
            (_, ClientsAre::Threads) => rows.map(|r| r.id).collect(),
        }
    }

    /// The rows `store` runs as: SQLite once per way of writing and
    /// access path, every other store once.
    pub fn rows(&self, store: Store) -> Vec<Row> {
        if store != Store::Sqlite {
            return vec![Row::of(store)];
        }
        let paths = [DbAccess::BlobApi, DbAccess::Sql];
        self.sqlite_writers().into_iter().flat_map(|w| paths.map(|a| Row::sqlite(w, a))).collect()
    }
}

/// 1, 2, 4 ... up to `n`, and `n` itself.
pub fn levels(n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = std::iter::successors(Some(1u32), |&c| c.checked_mul(2)).take_while(|&c| c < n).collect();
    v.push(n.max(1));
    v.dedup();
    v
}

/// The candidates (and SQLite rows) that cannot run as `are`: stores one
/// process alone may open, with the reason each engine declares, and
/// under processes SQLite's ways of writing only threads can share.
pub fn excluded(stores: &[Store], are: ClientsAre) -> Vec<ClientsExclusion> {
    if are == ClientsAre::Threads {
        return Vec::new();
    }
    let threads_only = || sqlite::WRITERS.iter().filter_map(|w| Some((w.id, w.threads_only?)));
    stores
        .iter()
        .flat_map(|&s| -> Vec<(Row, &str)> {
            match s {
                Store::Engine(kind) => kind.one_process_only().map(|why| (Row::of(s), why)).into_iter().collect(),
                Store::Sqlite => threads_only().map(|(w, why)| (Row::sqlite(w, DbAccess::BlobApi), why)).collect(),
                Store::FilesInPlace | Store::FilesReplace => Vec::new(),
            }
        })
        .map(|(candidate, why)| ClientsExclusion { candidate, why: why.to_string() })
        .collect()
}

/// The candidates that run with clients: those the crash facts do not
/// exclude for the need (after a short power-cut run, the documented
/// table's too, as the ranking reads it), and whose store the clients'
/// kind can share ([`excluded`]; SQLite keeps its per-client rows).
fn runnable(opts: &Advise, crash: &CrashFacts) -> Vec<Store> {
    let apart = excluded(&opts.stores(), opts.clients.are);
    let documented = rules::documented();
    let fails = |facts: &[super::section::CrashFact], method: Option<ConfigId>| {
        facts.iter().any(|f| f.method == method && rules::excluded_by(opts.durability, f).is_some())
    };
    opts.stores()
        .into_iter()
        .filter(|s| {
            let method = s.crash_method(opts.durability);
            let short_run = crash.source == super::section::CrashSource::Measured;
            let shared = !apart.iter().any(|e| e.candidate == Row::of(*s));
            shared && !(fails(&crash.methods, method) || (short_run && fails(&documented, method)))
        })
        .collect()
}

/// The run's window at `clients` clients: [`run_time`] in a closed loop;
/// under a rate, long enough for [`DUE_PER_CLIENT`] operations due per
/// client, within four times that (the page says when a rate left fewer).
pub fn window(quick: bool, clients: u32, rate: Option<f64>) -> Duration {
    let closed = run_time(quick);
    match rate {
        None => closed,
        Some(r) => Duration::from_secs_f64(DUE_PER_CLIENT as f64 * f64::from(clients) / r).clamp(closed, closed * 4),
    }
}

/// Runs the candidates with 1, 2, 4 ... N clients in interleaved rounds
/// on the suite's datasets in `work`, within `budget`.
pub(super) fn measure(
    opts: &Advise,
    suite: &StudyContext,
    work: &Path,
    crash: &CrashFacts,
    budget: Duration,
) -> Result<(ClientsSection, RoundSet)> {
    let observer = opts.observer();
    let plan = &opts.clients;
    let mix = Mix { read: opts.mix_reads, write: opts.mix_writes };
    let mut arms: Vec<(Row, ClientsArm)> = Vec::new();
    for store in runnable(opts, crash) {
        let (read_id, write_id) = (store.read_id(), store.write_id(opts.durability, false));
        let Some((settings, path)) = suite::mixed_settings(suite, work, read_id, write_id) else {
            return Err(Error::invalid(format!("advise: no dataset for {} with clients", store.name())));
        };
        for (r, row) in plan.rows(store).into_iter().enumerate() {
            let mut settings = settings.clone();
            if let Some(c) = row.sqlite {
                settings.db.writers = c.writers;
                settings.db.access = c.access;
            }
            // One engine per row, shared by its client counts: an engine
            // may keep one handle per process (LMDB's environment).
            let first = arms.len();
            for n in plan.levels() {
                let seed = arm_seed(opts.ctx.seed, r, n);
                let window = window(opts.quick(), n, plan.rate);
                let arm = match arms.get(first) {
                    Some((_, first)) => first.at(n, window, seed)?,
                    None => {
                        ClientsArm::prepare(crate::engine::open(&path, &settings)?, n, mix, window, seed, plan.rate)?
                    }
                };
                let arm = match (plan.are, &plan.launcher) {
                    (ClientsAre::Processes, Some(launcher)) => arm.in_processes(&settings, launcher)?,
                    _ => arm,
                };
                arms.push((row, arm));
            }
        }
    }
    let ids: Vec<String> = arms.iter().map(|(r, a)| arm_id(*r, a.clients())).collect();
    let rounds_plan = RoundsPlan {
        max_rounds: super::LEAST_ROUNDS,
        least_rounds: super::LEAST_ROUNDS,
        budget: Some(budget),
        clock: opts.ctx.clock,
        ..RoundsPlan::new(super::LEAST_ROUNDS, None)
    };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|(_, a)| a as &mut dyn Arm).collect();
    let runs = u64::from(rounds_plan.max_rounds + 1) * ids.len() as u64;
    observer.begin(&format!("{} arms with clients in rounds ({ROUNDS_ID})", ids.len()), runs);
    let out = run_rounds(ROUNDS_ID, &ids, &mut dyn_arms, &rounds_plan, &[], &mut |done, _| observer.advance(done))?;
    let records = arms.iter().zip(&ids).map(|((row, arm), id)| record(id, *row, arm)).collect();
    let section = ClientsSection {
        clients: plan.clients,
        are: plan.are,
        levels: plan.levels(),
        cores: Some(crate::util::cores()),
        p99_write_us: plan.p99_write.map(|d| d.as_secs_f64() * 1e6),
        rate_ops_s: plan.rate,
        harness: harness(plan.clients, &arms),
        arms: records,
        excluded: excluded(&opts.stores(), plan.are),
    };
    Ok((section, out.set))
}

/// The seed of the scripts of a store's `row`-th row at `clients`: its
/// own for each, so that rows on one dataset (SQLite's) write other
/// content in their k-th runs; the same blobs rewritten with the same
/// bytes would commit nothing (SQLite skips pages that do not change).
fn arm_seed(base: u64, row: usize, clients: u32) -> u64 {
    base.wrapping_add(u64::from(clients) << 16).wrapping_add((row as u64) << 40)
}

/// The harness's cost at `clients`, against the mean operation there.
fn harness(clients: u32, arms: &[(Row, ClientsArm)]) -> Option<Harness> {
    let cost_ns = crate::measure::harness_cost_ns(clients);
    let (row, mean_us) = arms
        .iter()
        .filter(|(_, a)| a.clients() == clients && a.tally().ops > 0)
        .map(|(r, a)| (*r, a.tally().all().summary().mean_us))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let share_pct = cost_ns / (mean_us * 1000.0).max(1.0) * 100.0;
    Some(Harness { clients, cost_ns, share_pct, candidate: row })
}

fn record(id: &str, row: Row, arm: &ClientsArm) -> ClientsArmRecord {
    let tally: &ClientsTally = arm.tally();
    let classes = tally
        .by_class()
        .into_iter()
        .map(|(class, l)| ClassLatency { class: class.into(), latency: l.summary(), histogram: l.to_base64() })
        .collect();
    let mut ops: Vec<u64> = tally.runs.iter().map(|r: &WindowCount| r.ops).collect();
    ops.sort_unstable();
    ClientsArmRecord {
        id: id.into(),
        candidate: row.store,
        sqlite: row.sqlite,
        clients: arm.clients(),
        ops_per_run: ops.get(ops.len() / 2).copied().unwrap_or(0),
        window_s: Some(arm.window().as_secs_f64()),
        runs: tally.runs.clone(),
        busy_waits: tally.busy_waits,
        classes,
    }
}

/// Each clients run's window in a closed loop: as a write arm's run, and
/// 100 ms with `--quick`, where every candidate runs at each of 1, 2, 4
/// ... N clients in [`super::LEAST_ROUNDS`] rounds (45 arms at `--clients
/// 16`). Every client counts the operations that end in it.
pub fn run_time(quick: bool) -> Duration {
    if quick {
        Duration::from_millis(100)
    } else {
        super::sizing(false).write_time
    }
}

/// The time the clients' rounds take at most, from their plan: each arm's
/// warm-up and [`super::LEAST_ROUNDS`] rounds of its window (and the lead
/// before it), plus a second per arm for opening and surveying its store.
pub fn least_time(opts: &Advise) -> Duration {
    let plan = &opts.clients;
    if !plan.runs() {
        return Duration::ZERO;
    }
    let rows: usize = opts.stores().into_iter().map(|s| plan.rows(s).len()).sum();
    let runs = f64::from(super::LEAST_ROUNDS + 1);
    let per_row: f64 = plan
        .levels()
        .into_iter()
        .map(|n| {
            let run = window(opts.quick(), n, plan.rate) + crate::drivers::clients::lead(n);
            runs * run.as_secs_f64() + 1.0
        })
        .sum();
    Duration::from_secs_f64((rows as f64 * per_row).ceil())
}

#[cfg(test)]
mod tests;
