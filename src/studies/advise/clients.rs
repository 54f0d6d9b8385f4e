//! advise's candidates under several clients at once (`--clients N`):
//! each candidate that meets the need runs the stated mix with 1, 2, 4 ...
//! N clients (threads, each with a session of its own, or processes,
//! each with its own engine; see [`crate::drivers::clients`]), every (candidate, clients) pair an arm of
//! one set of interleaved rounds, each run sized by time, on the suite's
//! datasets. The section records each arm's latencies per kind of
//! operation (the clients' histograms merged, serialised) and its busy
//! waits; its throughput per round is the round set's. The ranking at N
//! ([`at`]) is by throughput at the mix.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::rules::{self, Store};
use super::section::{CrashFacts, Durability};
use super::AdviseOptions;
use crate::drivers::clients::{ClientsArm, ClientsTally, MAX_CLIENTS};
use crate::drivers::processes::Launcher;
use crate::measure::paired::PairedRatio;
use crate::measure::rounds::{run_rounds, Arm, RoundSet, RoundsPlan};
use crate::measure::{Latency, LatencySummary};
use crate::records::Mix;
use crate::studies::suite::{self, SuiteObserver, SuiteOptions};
use crate::{Error, Result};

/// The id of the clients' round set in the result file.
pub const ROUNDS_ID: &str = "advise/clients";

/// Operations of a clients arm's warm-up and sizing run, over all clients.
const SIZING_OPS: u64 = 64;

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

/// What advise is asked about concurrency.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientsPlan {
    /// Clients at once (`--clients N`, 1 to 1,024; 1: none of this runs).
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
}

impl ClientsPlan {
    pub const ONE: ClientsPlan =
        ClientsPlan { clients: 1, are: ClientsAre::Threads, p99_write: None, rate: None, launcher: None };

    /// Checks what can be checked before any work, for the `stores`
    /// considered: under processes some must remain.
    pub fn validate(&self, stores: &[Store]) -> Result<()> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(Error::invalid(format!("--clients {} must be from 1 to {MAX_CLIENTS}", self.clients)));
        }
        if self.clients > 1 && self.are == ClientsAre::Processes {
            if self.launcher.is_none() {
                return Err(Error::invalid("--clients-are processes: no program to start the clients with"));
            }
            let excluded = excluded(stores, self.are);
            if excluded.len() == stores.len() {
                let why: Vec<String> = excluded.iter().map(|e| format!("{}: {}", e.candidate, e.why)).collect();
                return Err(Error::invalid(format!(
                    "--clients-are processes: no candidate remains ({})",
                    why.join("; ")
                )));
            }
        }
        crate::drivers::clients::check_rate(self.rate)?;
        if self.p99_write.is_some_and(|d| d.is_zero()) {
            return Err(Error::invalid("--p99-write must be longer than 0"));
        }
        Ok(())
    }

    /// The client counts measured: 1, 2, 4 ... and N.
    pub fn levels(&self) -> Vec<u32> {
        levels(self.clients)
    }
}

/// 1, 2, 4 ... up to `n`, and `n` itself.
pub fn levels(n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = std::iter::successors(Some(1u32), |&c| c.checked_mul(2)).take_while(|&c| c < n).collect();
    v.push(n.max(1));
    v.dedup();
    v
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

/// One candidate at one client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsArmRecord {
    /// The arm's id in the round set: `clients/N/STORE`.
    pub id: String,
    /// Its [`Store`] name.
    pub candidate: String,
    pub clients: u32,
    /// Operations per run, over all clients.
    pub ops_per_run: u64,
    /// Times a client found the store locked by another and waited.
    pub busy_waits: u64,
    pub classes: Vec<ClassLatency>,
}

impl ClientsArmRecord {
    pub fn class(&self, class: &str) -> Option<&ClassLatency> {
        self.classes.iter().find(|c| c.class == class)
    }
}

/// A candidate the clients' stage leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientsExclusion {
    /// Its [`Store`] name.
    pub candidate: String,
    pub why: String,
}

/// The candidates that cannot run as `are` (one process alone may open
/// their store), with the reason each engine declares.
pub fn excluded(stores: &[Store], are: ClientsAre) -> Vec<ClientsExclusion> {
    if are == ClientsAre::Threads {
        return Vec::new();
    }
    stores
        .iter()
        .filter_map(|s| {
            match s {
                Store::Engine(kind) => kind.one_process_only(),
                Store::Sqlite | Store::FilesInPlace | Store::FilesReplace => None,
            }
            .map(|why| ClientsExclusion { candidate: s.name().into(), why: why.into() })
        })
        .collect()
}

/// The result file's `advise.clients`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientsSection {
    pub clients: u32,
    pub are: ClientsAre,
    /// Client counts measured, ascending.
    pub levels: Vec<u32>,
    /// `--p99-write`, in microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_write_us: Option<f64>,
    /// `--rate`: operations per second over all clients (an open loop,
    /// latencies from each operation's due time); absent: closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_ops_s: Option<f64>,
    pub arms: Vec<ClientsArmRecord>,
    /// Candidates not measured with clients of this kind, and why.
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
    /// The candidate of that largest share.
    pub candidate: String,
}

/// The arm id of `store` at `clients`.
pub fn arm_id(store: Store, clients: u32) -> String {
    format!("clients/{clients}/{}", store.name())
}

/// The candidates that run with clients: those the crash facts do not
/// exclude for the need (after a short power-cut run, the documented
/// table's too, as the ranking reads it), and whose store the clients'
/// kind can share ([`excluded`]).
fn runnable(opts: &AdviseOptions, crash: &CrashFacts) -> Vec<Store> {
    let apart = excluded(&opts.stores(), opts.clients.are);
    let documented = rules::documented();
    let fails = |facts: &[super::section::CrashFact], method: &str| {
        facts.iter().any(|f| f.method == method && rules::excluded_by(opts.durability, f).is_some())
    };
    opts.stores()
        .into_iter()
        .filter(|s| {
            let method = s.crash_method(opts.durability);
            let short_run = crash.source == super::section::CrashSource::Measured;
            let shared = !apart.iter().any(|e| e.candidate == s.name());
            shared && !(fails(&crash.methods, &method) || (short_run && fails(&documented, &method)))
        })
        .collect()
}

/// Runs the candidates with 1, 2, 4 ... N clients in interleaved rounds
/// on the suite's datasets in `work`, within `budget`.
pub(super) fn measure(
    opts: &AdviseOptions,
    suite_opts: &SuiteOptions,
    work: &Path,
    crash: &CrashFacts,
    budget: Duration,
    observer: &dyn SuiteObserver,
) -> Result<(ClientsSection, RoundSet)> {
    let plan = &opts.clients;
    let mix = Mix { read: opts.mix_reads, write: opts.mix_writes };
    let mut arms: Vec<(Store, ClientsArm)> = Vec::new();
    for store in runnable(opts, crash) {
        let (read_id, write_id) = (store.read_id(), store.write_id(opts.durability, false));
        let Some((settings, path)) = suite::mixed_settings(suite_opts, work, &read_id, &write_id) else {
            return Err(Error::invalid(format!("advise: no dataset for {} with clients", store.name())));
        };
        for n in plan.levels() {
            let engine = crate::engine::open(&path, &settings)?;
            let seed = opts.spec.seed.wrapping_add(u64::from(n) << 16);
            let sizing = (SIZING_OPS, opts.commit_every);
            let arm = ClientsArm::prepare(engine, n, mix, sizing, seed, plan.rate)?;
            let arm = match (plan.are, &plan.launcher) {
                (ClientsAre::Processes, Some(launcher)) => arm.in_processes(&settings, launcher)?,
                _ => arm,
            };
            arms.push((store, arm));
        }
    }
    let ids: Vec<String> = arms.iter().map(|(s, a)| arm_id(*s, a.clients())).collect();
    let rounds_plan = RoundsPlan {
        max_rounds: super::LEAST_ROUNDS,
        least_rounds: super::LEAST_ROUNDS,
        budget: Some(budget),
        run_time: Some(run_time(opts.quick)),
        clock: opts.clock,
        ..RoundsPlan::new(super::LEAST_ROUNDS, None)
    };
    let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|(_, a)| a as &mut dyn Arm).collect();
    let runs = u64::from(rounds_plan.max_rounds + 2) * ids.len() as u64;
    observer.begin(&format!("{} arms with clients in rounds ({ROUNDS_ID})", ids.len()), runs);
    let out = run_rounds(ROUNDS_ID, &ids, &mut dyn_arms, &rounds_plan, &[], &mut |done, _| observer.advance(done))?;
    let records = arms
        .iter()
        .zip(&ids)
        .zip(&out.set.ops_per_run)
        .map(|(((store, arm), id), &ops)| record(id, *store, arm.clients(), ops, arm.tally()))
        .collect();
    let section = ClientsSection {
        clients: plan.clients,
        are: plan.are,
        levels: plan.levels(),
        p99_write_us: plan.p99_write.map(|d| d.as_secs_f64() * 1e6),
        rate_ops_s: plan.rate,
        harness: harness(plan.clients, &arms),
        arms: records,
        excluded: excluded(&opts.stores(), plan.are),
    };
    Ok((section, out.set))
}

/// The harness's cost at `clients`, against the mean operation there.
fn harness(clients: u32, arms: &[(Store, ClientsArm)]) -> Option<Harness> {
    let cost_ns = crate::measure::harness_cost_ns(clients);
    let (store, mean_us) = arms
        .iter()
        .filter(|(_, a)| a.clients() == clients && a.tally().ops > 0)
        .map(|(s, a)| (*s, a.tally().all().summary().mean_us))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let share_pct = cost_ns / (mean_us * 1000.0).max(1.0) * 100.0;
    Some(Harness { clients, cost_ns, share_pct, candidate: store.name().into() })
}

fn record(id: &str, store: Store, clients: u32, ops_per_run: u64, tally: &ClientsTally) -> ClientsArmRecord {
    let classes = tally
        .by_class()
        .into_iter()
        .map(|(class, l)| ClassLatency { class: class.into(), latency: l.summary(), histogram: l.to_base64() })
        .collect();
    ClientsArmRecord {
        id: id.into(),
        candidate: store.name().into(),
        clients,
        ops_per_run,
        busy_waits: tally.busy_waits,
        classes,
    }
}

/// The time each clients arm's run is sized to take: as a write arm's,
/// and 50 ms with `--quick`, where every candidate runs at each of 1, 2,
/// 4 ... N clients (24 arms at `--clients 8`) in [`super::LEAST_ROUNDS`]
/// rounds and a sized run of 0.15 s made the stage outlast the whole quick
/// budget. A run is never under [`crate::measure::rounds::MIN_SIZED_OPS`]
/// operations over all clients, nor under
/// [`crate::drivers::clients::LEAST_OPS_PER_CLIENT`] per client, however
/// slow they are; the page states
/// each arm's operations per run.
pub fn run_time(quick: bool) -> Duration {
    if quick {
        Duration::from_millis(50)
    } else {
        super::sizing(false).write_time
    }
}

/// The time the clients' rounds take at most, from their plan: each arm's
/// warm-up and sizing run and [`super::LEAST_ROUNDS`] rounds of its sized
/// run, plus a second per arm for opening and surveying its store.
pub fn least_time(opts: &AdviseOptions) -> Duration {
    if opts.clients.clients <= 1 {
        return Duration::ZERO;
    }
    let arms = (opts.stores().len() * opts.clients.levels().len()) as f64;
    let runs = f64::from(super::LEAST_ROUNDS + 2);
    Duration::from_secs_f64((arms * (runs * run_time(opts.quick).as_secs_f64() + 1.0)).ceil())
}

/// One candidate at N clients, as ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct AtClients {
    pub store: Store,
    /// Operations per second over all clients (the median round's).
    pub ops_per_s: f64,
    /// Its time per operation over the leader's at the same N, paired by
    /// round (above 1: less throughput); None for the leader.
    pub against_leader: Option<PairedRatio>,
    pub write_p99_us: Option<f64>,
    pub read_p99_us: Option<f64>,
    pub busy_waits: u64,
}

/// The ranking at `clients`: the candidates by throughput at the mix,
/// most first, and those whose write p99 exceeds `--p99-write` apart.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingAt {
    pub clients: u32,
    pub ranked: Vec<AtClients>,
    pub over_p99: Vec<AtClients>,
}

/// Median operations per second of an arm over the rounds.
fn ops_per_s(set: &RoundSet, id: &str) -> Option<f64> {
    let mut v = set.figures(id)?;
    v.sort_by(f64::total_cmp);
    let median = crate::measure::paired::median_sorted(&v);
    (median > 0.0).then(|| 1e6 / median)
}

/// The lowest and the highest round's operations per second of an arm:
/// the spread behind its median.
pub fn spread(set: &RoundSet, id: &str) -> Option<(f64, f64)> {
    let v = set.figures(id)?;
    let slowest = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let fastest = v.iter().copied().fold(f64::INFINITY, f64::min);
    (fastest > 0.0 && slowest.is_finite()).then(|| (1e6 / slowest, 1e6 / fastest))
}

/// The ranking at `clients` from the section and its round set.
pub fn at(section: &ClientsSection, set: &RoundSet, clients: u32) -> RankingAt {
    let mut all: Vec<AtClients> = section
        .arms
        .iter()
        .filter(|a| a.clients == clients)
        .filter_map(|a| {
            Some(AtClients {
                store: Store::from_name(&a.candidate)?,
                ops_per_s: ops_per_s(set, &a.id)?,
                against_leader: None,
                write_p99_us: a.class("overwrite").map(|c| c.latency.p99_us),
                read_p99_us: a.class("read").map(|c| c.latency.p99_us),
                busy_waits: a.busy_waits,
            })
        })
        .collect();
    all.sort_by(|a, b| b.ops_per_s.total_cmp(&a.ops_per_s));
    let limit = section.p99_write_us;
    let (mut ranked, over_p99): (Vec<AtClients>, Vec<AtClients>) =
        all.into_iter().partition(|a| !matches!((limit, a.write_p99_us), (Some(l), Some(p)) if p > l));
    if let Some(leader) = ranked.first().map(|l| arm_id(l.store, clients)) {
        for r in ranked.iter_mut().skip(1) {
            r.against_leader = set.ratio(&arm_id(r.store, clients), &leader);
        }
    }
    RankingAt { clients, ranked, over_p99 }
}

/// The leader at each client count, and the first count at which another
/// candidate beats the leader at one client beyond the noise: its paired
/// interval against that leader, at that count, lies wholly on its side
/// (None: it never changes; a leader by the median alone is a tie).
pub fn leader_change(section: &ClientsSection, set: &RoundSet) -> (Vec<(u32, Option<Store>)>, Option<u32>) {
    let leaders: Vec<(u32, Option<Store>)> =
        section.levels.iter().map(|&n| (n, at(section, set, n).ranked.first().map(|a| a.store))).collect();
    let first = leaders.first().and_then(|l| l.1);
    let beats = |n: u32, new: Store| {
        first.is_none_or(|old| set.ratio(&arm_id(old, n), &arm_id(new, n)).is_some_and(|r| r.low > 1.0))
    };
    let change = leaders.iter().find(|(n, l)| l.is_some_and(|l| Some(l) != first && beats(*n, l))).map(|(n, _)| *n);
    (leaders, change)
}

/// Merges serialised histograms exactly (several files' or clients').
pub fn merge_histograms(encoded: &[&str]) -> std::result::Result<Latency, String> {
    let mut all = Latency::new();
    for e in encoded {
        all.merge(&Latency::from_base64(e)?);
    }
    Ok(all)
}

/// The durability need's words for the page: how each candidate's
/// clients, threads or processes, write.
pub fn configuration(store: Store, need: Durability, are: ClientsAre) -> String {
    let commit = if need == Durability::Required { "durably" } else { "without waiting for the disk" };
    let client = if are == ClientsAre::Processes { "client process" } else { "client" };
    match store {
        Store::Sqlite => format!(
            "SQLite: WAL, a connection per {client}; each commit's writes as BEGIN IMMEDIATE, waiting while another \
             client holds the write lock (busy waits counted), committed {commit}"
        ),
        Store::FilesInPlace => format!("files, overwrite in place: each {client} its own descriptors, {commit}"),
        Store::FilesReplace => {
            format!("files, temp + rename: each {client} its own temporary names (KEY.cI.tmp), {commit}")
        }
        Store::Engine(kind) if kind.is_server() => format!("{}: a connection per {client}, {commit}", kind.title()),
        Store::Engine(kind) => match (are, kind.one_process_only()) {
            (ClientsAre::Processes, Some(why)) => {
                format!("{}: not measured with client processes: {why}", kind.title())
            }
            (ClientsAre::Processes, None) => {
                format!("{}: one environment per client process, a transaction per commit, {commit}", kind.title())
            }
            (ClientsAre::Threads, _) => {
                format!("{}: one handle for the process, a transaction per client's commit, {commit}", kind.title())
            }
        },
    }
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
