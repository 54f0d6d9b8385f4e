//! The ranking at N clients, from the section and its round set alone.
//!
//! Closed loop: by throughput at the mix (the operations of every client
//! in the window per second), each candidate against the leader paired by
//! round. SQLite's rows are ranked once per way of writing, each with the
//! faster of its two read paths at that N (the other's figure kept
//! beside it). Under `--rate R`: first whether a candidate keeps up
//! (its client furthest behind started [`KEEP_UP`] of its operations due
//! at least one interval before the deadline, [`kept_up`]), then by
//! its p99 at R; every candidate that keeps up ranks above every one that
//! does not, whose throughput is about R alike and says nothing.

use super::row::{arm_id, Row};
use super::section::{ClientsArmRecord, ClientsSection};
use crate::drivers::clients::{kept_up, KEEP_UP};
use crate::measure::paired::{median_sorted, PairedRatio};
use crate::measure::rounds::RoundSet;
use crate::measure::Latency;

/// One candidate at N clients, as ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct AtClients {
    pub row: Row,
    /// Operations per second over all clients (the median round's).
    pub ops_per_s: f64,
    /// Its time per operation over the leader's at the same N, paired by
    /// round (above 1: less throughput); None for the leader and under a
    /// rate.
    pub against_leader: Option<PairedRatio>,
    pub write_p99_us: Option<f64>,
    pub read_p99_us: Option<f64>,
    /// Every operation's p99, whatever its class.
    pub p99_us: Option<f64>,
    pub busy_waits: u64,
    /// The slowest client's operations over the median client's, in the
    /// median run and in the lowest (None in older files).
    pub spread: Option<Spread>,
    /// Under a rate: how much of its schedule the client furthest behind
    /// kept (the share of its operations due at least one interval before
    /// the deadline that it had started by then), pooled over the timed
    /// runs ([`kept_up`]).
    pub kept: Option<f64>,
    /// SQLite: the other read path's throughput at this N, set aside.
    pub other_read_ops_per_s: Option<f64>,
}

impl AtClients {
    /// Under a rate: whether it kept up. Always true in a closed loop.
    pub fn keeps_up(&self) -> bool {
        self.kept.is_none_or(|c| c >= KEEP_UP)
    }
}

/// The slowest client's share of the median client's operations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// In the median run.
    pub median: f64,
    /// In the run where it was lowest.
    pub lowest: f64,
}

/// The ranking at `clients`: the candidates, the leader first, and those
/// whose write p99 exceeds `--p99-write` apart.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingAt {
    pub clients: u32,
    /// `--rate`, when the ranking is by keeping up, then p99.
    pub rate: Option<f64>,
    pub ranked: Vec<AtClients>,
    pub over_p99: Vec<AtClients>,
}

impl RankingAt {
    /// The leader: the first, unless under a rate none kept up.
    pub fn leader(&self) -> Option<&AtClients> {
        self.ranked.first().filter(|a| a.keeps_up())
    }
}

/// Median operations per second of an arm over the rounds.
fn ops_per_s(set: &RoundSet, id: &str) -> Option<f64> {
    let mut v = set.figures(id)?;
    v.sort_by(f64::total_cmp);
    let median = median_sorted(&v);
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

/// The per-client spread of an arm's timed runs.
fn client_spread(a: &ClientsArmRecord) -> Option<Spread> {
    let mut shares: Vec<f64> =
        a.runs.iter().map(|r| if r.median == 0 { 1.0 } else { r.slowest as f64 / r.median as f64 }).collect();
    shares.sort_by(f64::total_cmp);
    let lowest = *shares.first()?;
    Some(Spread { median: median_sorted(&shares), lowest })
}

/// Every operation's p99 over the classes' histograms merged.
fn all_p99(a: &ClientsArmRecord) -> Option<f64> {
    let encoded: Vec<&str> = a.classes.iter().map(|c| c.histogram.as_str()).collect();
    match merge_histograms(&encoded) {
        Ok(l) if l.count() > 0 => Some(l.summary().p99_us),
        // An older or hand-made file without histograms: the worst class's.
        _ => a.classes.iter().map(|c| c.latency.p99_us).max_by(f64::total_cmp),
    }
}

fn measured(section: &ClientsSection, set: &RoundSet, a: &ClientsArmRecord) -> Option<AtClients> {
    Some(AtClients {
        row: a.row(),
        ops_per_s: ops_per_s(set, &a.id)?,
        against_leader: None,
        write_p99_us: a.class("overwrite").map(|c| c.latency.p99_us),
        read_p99_us: a.class("read").map(|c| c.latency.p99_us),
        p99_us: all_p99(a),
        busy_waits: a.busy_waits,
        spread: client_spread(a),
        kept: section.rate_ops_s.and_then(|_| kept_up(&a.runs)),
        other_read_ops_per_s: None,
    })
}

/// The ranking at `clients` from the section and its round set.
pub fn at(section: &ClientsSection, set: &RoundSet, clients: u32) -> RankingAt {
    let all: Vec<AtClients> =
        section.arms.iter().filter(|a| a.clients == clients).filter_map(|a| measured(section, set, a)).collect();
    // SQLite once per way of writing: the faster read path, the other beside it.
    let mut lines: Vec<AtClients> = Vec::new();
    for a in all {
        match lines.iter_mut().find(|l| l.row.line() == a.row.line()) {
            Some(l) if a.ops_per_s > l.ops_per_s => {
                let other = l.ops_per_s;
                *l = AtClients { other_read_ops_per_s: Some(other), ..a };
            }
            Some(l) => l.other_read_ops_per_s = Some(a.ops_per_s),
            None => lines.push(a),
        }
    }
    let rate = section.rate_ops_s;
    match rate {
        None => lines.sort_by(|a, b| b.ops_per_s.total_cmp(&a.ops_per_s)),
        Some(_) => lines.sort_by(|a, b| {
            let p99 = |x: &AtClients| x.p99_us.unwrap_or(f64::INFINITY);
            let done = |x: &AtClients| x.kept.unwrap_or(0.0);
            b.keeps_up().cmp(&a.keeps_up()).then_with(|| match a.keeps_up() {
                true => p99(a).total_cmp(&p99(b)),
                false => done(b).total_cmp(&done(a)),
            })
        }),
    }
    let limit = section.p99_write_us;
    let (mut ranked, over_p99): (Vec<AtClients>, Vec<AtClients>) =
        lines.into_iter().partition(|a| !matches!((limit, a.write_p99_us), (Some(l), Some(p)) if p > l));
    if let (None, Some(leader)) = (rate, ranked.first().map(|l| arm_id(l.row, clients))) {
        for r in ranked.iter_mut().skip(1) {
            r.against_leader = set.ratio(&arm_id(r.row, clients), &leader);
        }
    }
    RankingAt { clients, rate, ranked, over_p99 }
}

/// The leader at each client count, and the first count at which another
/// candidate leads in place of the one-client leader. Closed loop: beyond
/// the noise only, its paired interval against that leader, at that
/// count, wholly on its side (a leader by the median alone is a tie).
/// Under a rate: the first count where the leader by keeping up and p99
/// differs. None: it never changes.
pub fn leader_change(section: &ClientsSection, set: &RoundSet) -> (Vec<(u32, Option<Row>)>, Option<u32>) {
    let leaders: Vec<(u32, Option<Row>)> =
        section.levels.iter().map(|&n| (n, at(section, set, n).leader().map(|a| a.row))).collect();
    let first = leaders.first().and_then(|l| l.1);
    let beats = |n: u32, new: Row| {
        section.rate_ops_s.is_some()
            || first.is_none_or(|old| set.ratio(&arm_id(old, n), &arm_id(new, n)).is_some_and(|r| r.low > 1.0))
    };
    let change =
        leaders.iter().find(|(n, l)| l.is_some_and(|l| Some(l.line()) != first.map(Row::line) && beats(*n, l)));
    (leaders.clone(), change.map(|(n, _)| *n))
}

/// Merges serialised histograms exactly (several files' or clients').
pub fn merge_histograms(encoded: &[&str]) -> std::result::Result<Latency, String> {
    let mut all = Latency::new();
    for e in encoded {
        all.merge(&Latency::from_base64(e)?);
    }
    Ok(all)
}
