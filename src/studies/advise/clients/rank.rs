//! The ranking at N clients, from the section and its round set alone.
//! Every row is ranked on its own, SQLite's once per way of writing and
//! access path, so that no store is ranked by the best of several.
//!
//! Closed loop: by throughput at the mix (the operations of every client
//! in the window per second), each candidate against the leader paired by
//! round. Under `--rate R`: first whether a candidate keeps up (its client
//! furthest behind started [`KEEP_UP`] of its operations due at least one
//! interval before the deadline, [`kept_up`]), then by its p99 at R (the
//! median round's), each against the leader's paired by round; every
//! candidate that keeps up ranks above every one that does not, whose
//! throughput is about R alike and says nothing. Either way a candidate
//! whose paired interval against the leader holds 1 is tied with it.

use super::row::{arm_id, Row};
use super::section::{ClientsArmRecord, ClientsSection};
use crate::drivers::clients::{kept_up, KEEP_UP};
use crate::measure::paired::{median_interval, median_sorted, paired_ratio, MedianInterval, PairedRatio};
use crate::measure::rounds::RoundSet;
use crate::measure::Latency;

/// One candidate at N clients, as ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct AtClients {
    pub row: Row,
    /// Operations per second over all clients (the median round's).
    pub ops_per_s: f64,
    /// Against the leader at the same N, paired by round (above 1: worse;
    /// an interval holding 1: tied with it). Closed loop: its time per
    /// operation over the leader's. Under a rate: its p99 over the
    /// leader's, round by round, for a candidate that keeps up. None for
    /// the leader, and where rounds cannot be paired.
    pub against_leader: Option<PairedRatio>,
    pub write_p99_us: Option<f64>,
    pub read_p99_us: Option<f64>,
    /// Every operation's p99, whatever its class, over every timed run.
    pub p99_us: Option<f64>,
    /// Every operation's p99 in each round (µs): its median over the
    /// rounds and that median's interval. None in older files, whose runs
    /// did not keep it.
    pub round_p99: Option<MedianInterval>,
    pub busy_waits: u64,
    /// The slowest client's operations over the median client's, in the
    /// median run and in the lowest (None in older files).
    pub spread: Option<Spread>,
    /// Under a rate: how much of its schedule the client furthest behind
    /// kept (the share of its operations due at least one interval before
    /// the deadline that it had started by then), pooled over the timed
    /// runs ([`kept_up`]).
    pub kept: Option<f64>,
}

impl AtClients {
    /// Under a rate: whether it kept up. Always true in a closed loop.
    pub fn keeps_up(&self) -> bool {
        self.kept.is_none_or(|c| c >= KEEP_UP)
    }

    /// The p99 a rate ranks by: the median round's, or in an older file
    /// the one over every run.
    pub fn rate_p99_us(&self) -> Option<f64> {
        self.round_p99.map(|r| r.median).or(self.p99_us)
    }

    /// Its paired interval against the leader holds 1 (or has one round):
    /// this machine cannot tell it from the leader.
    pub fn tied_with_leader(&self) -> bool {
        self.against_leader.as_ref().is_some_and(PairedRatio::spans_one)
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

/// Every operation's p99 in each round of an arm, in µs, by round; None
/// when a run did not keep it (an older file).
fn round_p99s(a: &ClientsArmRecord) -> Option<Vec<f64>> {
    a.runs.iter().map(|r| r.p99_ns.map(|ns| ns as f64 / 1000.0)).collect::<Option<Vec<f64>>>().filter(|v| !v.is_empty())
}

/// Under a rate: `numerator`'s p99 over `denominator`'s at `clients`,
/// paired by round; None when either's rounds did not keep their p99.
pub fn p99_ratio(section: &ClientsSection, numerator: Row, denominator: Row, clients: u32) -> Option<PairedRatio> {
    let figures = |row: Row| {
        let id = arm_id(row, clients);
        section.arms.iter().find(|a| a.id == id).and_then(round_p99s)
    };
    paired_ratio(&figures(numerator)?, &figures(denominator)?)
}

fn measured(section: &ClientsSection, set: &RoundSet, a: &ClientsArmRecord) -> Option<AtClients> {
    Some(AtClients {
        row: a.row(),
        ops_per_s: ops_per_s(set, &a.id)?,
        against_leader: None,
        write_p99_us: a.class("overwrite").map(|c| c.latency.p99_us),
        read_p99_us: a.class("read").map(|c| c.latency.p99_us),
        p99_us: all_p99(a),
        round_p99: round_p99s(a).as_deref().and_then(median_interval),
        busy_waits: a.busy_waits,
        spread: client_spread(a),
        kept: section.rate_ops_s.and_then(|_| kept_up(&a.runs)),
    })
}

/// The ranking at `clients` from the section and its round set.
pub fn at(section: &ClientsSection, set: &RoundSet, clients: u32) -> RankingAt {
    let mut all: Vec<AtClients> =
        section.arms.iter().filter(|a| a.clients == clients).filter_map(|a| measured(section, set, a)).collect();
    let rate = section.rate_ops_s;
    match rate {
        None => all.sort_by(|a, b| b.ops_per_s.total_cmp(&a.ops_per_s)),
        Some(_) => all.sort_by(|a, b| {
            let p99 = |x: &AtClients| x.rate_p99_us().unwrap_or(f64::INFINITY);
            let done = |x: &AtClients| x.kept.unwrap_or(0.0);
            b.keeps_up().cmp(&a.keeps_up()).then_with(|| match a.keeps_up() {
                true => p99(a).total_cmp(&p99(b)),
                false => done(b).total_cmp(&done(a)),
            })
        }),
    }
    let limit = section.p99_write_us;
    let (mut ranked, over_p99): (Vec<AtClients>, Vec<AtClients>) =
        all.into_iter().partition(|a| !matches!((limit, a.write_p99_us), (Some(l), Some(p)) if p > l));
    if let Some(leader) = ranked.first().map(|l| l.row) {
        let leader_keeps_up = ranked[0].keeps_up();
        for r in ranked.iter_mut().skip(1) {
            r.against_leader = match rate {
                None => set.ratio(&arm_id(r.row, clients), &arm_id(leader, clients)),
                Some(_) if leader_keeps_up && r.keeps_up() => p99_ratio(section, r.row, leader, clients),
                Some(_) => None,
            };
        }
    }
    RankingAt { clients, rate, ranked, over_p99 }
}

/// The leader at each client count, and the first count at which another
/// candidate leads in place of the one-client leader, beyond the noise
/// only: at that count, its paired interval against that leader wholly on
/// its side (closed loop: on time per operation; under a rate: on p99, or
/// the one-client leader no longer keeps up there). A leader by the
/// median alone is a tie. None: it never changes.
pub fn leader_change(section: &ClientsSection, set: &RoundSet) -> (Vec<(u32, Option<Row>)>, Option<u32>) {
    let leaders: Vec<(u32, Option<Row>)> =
        section.levels.iter().map(|&n| (n, at(section, set, n).leader().map(|a| a.row))).collect();
    let first = leaders.first().and_then(|l| l.1);
    let beats = |n: u32, new: Row| {
        let Some(old) = first else { return true };
        match section.rate_ops_s {
            None => set.ratio(&arm_id(old, n), &arm_id(new, n)).is_some_and(|r| r.low > 1.0),
            Some(_) => {
                let there = at(section, set, n);
                let old_at_n = there.ranked.iter().chain(&there.over_p99).find(|a| a.row == old);
                old_at_n.is_some_and(|a| !a.keeps_up()) || p99_ratio(section, old, new, n).is_some_and(|r| r.low > 1.0)
            }
        }
    };
    let change = leaders.iter().find(|(n, l)| l.is_some_and(|l| Some(l) != first && beats(*n, l)));
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
