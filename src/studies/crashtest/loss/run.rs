//! One method's losses: writers overwrite the checked blobs again and
//! again, each write committed on its own, through blobbench's own
//! sessions; at a random moment one host of the cluster is lost; the store
//! fails over (its own way) and gets a new host in place of the lost one.
//! From the loss on, each writer writes only a probe blob of its own (so
//! that no later write hides a lost one), and stops once a write of its
//! own issued after the loss has been acknowledged; once one has, and the
//! store is whole again, the writers stop, and a reader of
//! blobbench's own reads every checked blob back (the newest copy) and
//! judges it against the newest version a writer was told was stored.
//!
//! A writer whose write fails drops its session and opens a new one (the
//! store's clients reconnect to wherever it now takes writes), trying
//! again with the next version of the next blob; a failed write is never
//! counted as acknowledged. The writers run on threads of their own, not
//! scoped: should writes never resume, the method ends with an error and
//! its cluster's removal ends their sessions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::Rng;

use super::super::blob::{self, Verdict};
use super::super::dataset::{blob_len, MAX_BLOB};
use super::tally::{self, Found};
use crate::engine::throwaway::hosts::Replicated;
use crate::engine::Session;
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// What the loop drives: the cluster, and new sessions of blobbench's
/// own on the store (each reaching wherever the store takes writes now).
pub trait Target: Send + Sync {
    fn cluster(&self) -> Arc<Mutex<dyn Replicated + Send>>;
    /// A writer's session (each write its own commit), or, `newest`, the
    /// reader's, which reads the newest copy the store holds.
    fn session(&self, newest: bool) -> Result<Box<dyn Session>>;
}

/// How one method's losses run.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub losses: u32,
    /// Blobs, keys 1..=count, each at version 0 before the first loss: the
    /// last `writers` are the probes, the others the checked ones.
    pub count: u32,
    /// Writer threads; writer `w` writes the checked keys `w + 1`,
    /// `w + 1 + writers`, ... until the loss, then its probe, `count - w`.
    pub writers: u32,
    pub seed: u64,
    /// The loss strikes a random delay in [0, max_delay] after the first
    /// acknowledged write of its round.
    pub max_delay: Duration,
    /// How long writes may take to succeed again after a loss, and the
    /// first write to be acknowledged, before the method is an error.
    pub bound: Duration,
}

impl Plan {
    /// The keys judged after each loss: all but the writers' probes.
    pub fn checked(&self) -> u32 {
        self.count - self.writers
    }
}

/// What one loss did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LossOutcome {
    /// The host lost.
    pub host: String,
    /// Writes acknowledged in this round.
    pub acknowledged: u64,
    /// Writes issued and not answered when the host was lost.
    pub in_flight: u64,
    /// From the loss to the acknowledgement of the first write issued
    /// after it.
    pub resumed_after: Duration,
    pub found: Found,
}

/// A writer's acknowledged writes and its write under way.
#[derive(Default)]
struct Log {
    acks: Vec<(u32, u64, Instant, Instant)>,
    /// (key, version, issued) of the write awaiting its answer.
    in_flight: Option<(u32, u64, Instant)>,
}

/// Round `round` (from 1): one loss and its check. Versions written are
/// `round << 32` and up, so every round's are newer than the last;
/// `before` holds each key's version known stored before it (by key), and
/// what the reader found after it.
pub fn one_loss(
    target: &Arc<dyn Target>,
    plan: &Plan,
    round: u32,
    before: &mut [u64],
    rng: &mut SmallRng,
) -> Result<LossOutcome> {
    let base = u64::from(round) << 32;
    let phase = Arc::new(Phase::default());
    let logs: Vec<Arc<Mutex<Log>>> = (0..plan.writers).map(|_| Arc::new(Mutex::new(Log::default()))).collect();
    let checked = plan.checked();
    let handles: Vec<_> = (0..plan.writers)
        .map(|w| {
            let (target, phase, log) = (Arc::clone(target), Arc::clone(&phase), Arc::clone(&logs[w as usize]));
            let keys: Vec<u32> = (w + 1..=checked).step_by(plan.writers as usize).collect();
            let probe = plan.count - w;
            let seed = plan.seed;
            std::thread::spawn(move || write_until_stopped(target.as_ref(), (&keys, probe), seed, base, &phase, &log))
        })
        .collect();
    let outcome = strike(target, plan, &logs, &phase, rng);
    phase.stop.store(true, Ordering::SeqCst);
    let mut outcome = outcome?;
    for h in handles {
        let _ = h.join();
    }
    let acks: Vec<(u32, u64)> = logs
        .iter()
        .flat_map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).acks.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>())
        .filter(|&(key, _)| key <= checked)
        .collect();
    outcome.acknowledged = acks.len() as u64;
    let found = read_back(target.as_ref(), plan)?;
    outcome.found = tally::judge(&acks, &found, before);
    Ok(outcome)
}

/// Where the writers are: before the loss (the checked keys), after it
/// (the probes), stopped; and when the loss struck.
#[derive(Default)]
struct Phase {
    lost: AtomicBool,
    stop: AtomicBool,
    lost_at: Mutex<Option<Instant>>,
}

impl Phase {
    /// Whether a write issued at `issued` came after the loss: once one of
    /// a writer's is acknowledged, that writer has shown writes resumed
    /// and stops. Writing on through the store's restore measures nothing
    /// and, where writes go on meanwhile (an asynchronous standby's
    /// primary), bloats the store that each restore then copies whole:
    /// the restores grew longer and the lost hosts' disks larger at every
    /// loss, until the disk was full.
    fn after_loss(&self, issued: Instant) -> bool {
        self.lost_at.lock().unwrap_or_else(|e| e.into_inner()).is_some_and(|at| issued > at)
    }
}

/// Waits for the first acknowledged write, lets the writers write for a
/// random delay, loses a random host, fails over, restores, and waits for
/// a write issued after the loss to be acknowledged.
fn strike(
    target: &Arc<dyn Target>,
    plan: &Plan,
    logs: &[Arc<Mutex<Log>>],
    phase: &Phase,
    rng: &mut SmallRng,
) -> Result<LossOutcome> {
    let started = Instant::now();
    while !logs.iter().any(|l| !l.lock().unwrap_or_else(|e| e.into_inner()).acks.is_empty()) {
        bounded(started, plan.bound, "no write was acknowledged")?;
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_micros(rng.gen_range(0..=plan.max_delay.as_micros() as u64)));
    let cluster = target.cluster();
    let mut cluster = cluster.lock().unwrap_or_else(|e| e.into_inner());
    let losable = cluster.losable();
    if losable.is_empty() {
        return Err(Error::invalid(format!("{}: no host can be lost", cluster.describe())));
    }
    let host = losable[rng.gen_range(0..losable.len())];
    phase.lost.store(true, Ordering::SeqCst);
    let lost = cluster.lose(host)?;
    let at = lost.at;
    *phase.lost_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(at);
    let in_flight =
        logs.iter().filter(|l| l.lock().unwrap_or_else(|e| e.into_inner()).in_flight.is_some_and(|f| f.2 < at)).count();
    cluster.fail_over()?;
    cluster.restore()?;
    drop(cluster);
    loop {
        let resumed = logs
            .iter()
            .filter_map(|l| {
                let log = l.lock().unwrap_or_else(|e| e.into_inner());
                log.acks.iter().filter(|a| a.2 > at).map(|a| a.3).min()
            })
            .min();
        if let Some(when) = resumed {
            return Ok(LossOutcome {
                host: lost.name,
                in_flight: in_flight as u64,
                resumed_after: when.saturating_duration_since(at),
                ..LossOutcome::default()
            });
        }
        bounded(at, plan.bound, &format!("writes did not succeed again after the loss of host {}", lost.name))?;
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// An error once `bound` has passed since `since` (or at Ctrl-C).
fn bounded(since: Instant, bound: Duration, what: &str) -> Result<()> {
    if stop_requested() {
        return Err(Error::Interrupted);
    }
    if since.elapsed() > bound {
        return Err(Error::invalid(format!("{what} within {} s", bound.as_secs())));
    }
    Ok(())
}

/// A writer: each pass writes the next version of each of its keys (of
/// its probe, once a host is lost); a failed write drops the session (a
/// new one is opened for the next). It ends at the stop, or once a write
/// it issued after the loss is acknowledged.
fn write_until_stopped(
    target: &dyn Target,
    (keys, probe): (&[u32], u32),
    seed: u64,
    base: u64,
    phase: &Phase,
    log: &Mutex<Log>,
) {
    let mut session: Option<Box<dyn Session>> = None;
    let mut buf = vec![0u8; MAX_BLOB];
    let mut version = base;
    while !phase.stop.load(Ordering::SeqCst) {
        version += 1;
        let pass: &[u32] = if phase.lost.load(Ordering::SeqCst) { &[probe] } else { keys };
        for &key in pass {
            if phase.stop.load(Ordering::SeqCst) || (key != probe && phase.lost.load(Ordering::SeqCst)) {
                break;
            }
            let Some(s) = session.as_mut() else {
                match target.session(false) {
                    Ok(s) => session = Some(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
                continue;
            };
            let content = &mut buf[..blob_len(seed, key)];
            blob::encode(content, key, version);
            let issued = Instant::now();
            log.lock().unwrap_or_else(|e| e.into_inner()).in_flight = Some((key, version, issued));
            let written = s.overwrite(key, content);
            let answered = Instant::now();
            let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
            l.in_flight = None;
            let acknowledged = matches!(written, Ok(n) if n > 0);
            match acknowledged {
                true => l.acks.push((key, version, issued, answered)),
                false => session = None,
            }
            if acknowledged && phase.after_loss(issued) {
                return;
            }
        }
    }
}

/// Every checked key's value, read by a new session of the reader's (the
/// newest copy), each judged by the blob itself.
fn read_back(target: &dyn Target, plan: &Plan) -> Result<Vec<Option<Verdict>>> {
    let mut session = target.session(true)?;
    let mut found = vec![None; plan.checked() as usize + 1];
    for key in 1..=plan.checked() {
        let n = session.read(key)? as usize;
        if n > 0 {
            let value = session.last_read().and_then(|b| b.get(..n));
            let value = value.ok_or_else(|| Error::invalid("the engine kept no copy of the value read"))?;
            found[key as usize] = Some(blob::check(value, key, blob_len(plan.seed, key)));
        }
    }
    session.close()?;
    Ok(found)
}
