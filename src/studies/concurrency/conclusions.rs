//! The study's conclusions, each restated as a comparison of measured points
//! and judged on this machine. A comparison is a throughput ratio between two
//! points that differ in one parameter only (same workload and thread
//! count); ratios within [`TIE`] of 1 count as "no difference", because
//! single runs on a shared machine vary by about that much.

use serde::{Deserialize, Serialize};

use super::blobs::BlobReaders;
use super::comparison::Comparison;
use super::ids::{self, StoreId};
use super::options::{Config, Journal, Sharing, Workload};
use super::points::Point;
use super::writers::Writers;
use crate::measure::paired::{paired_ratio, PairedRatio};
use crate::measure::rounds::RoundSet;
use crate::records::DbWriters;
use crate::records::EngineKind;

/// Ratios in (1/TIE, TIE) are ties: 10%, the engine's noise threshold.
pub const TIE: f64 = 1.0 + crate::measure::NOISY_CV_PCT / 100.0;

/// What a claim says about its ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// The first is faster: every ratio at least TIE.
    Faster,
    /// The first is never faster: no ratio reaches TIE.
    NeverFaster,
    /// No difference: every ratio within the tie band.
    Same,
    /// The first is the best or tied with the best: no ratio below 1/TIE.
    Best,
}

impl Claim {
    fn confirms(self, r: f64) -> bool {
        match self {
            Claim::Faster => r >= TIE,
            Claim::NeverFaster => r < TIE,
            Claim::Same => r > 1.0 / TIE && r < TIE,
            Claim::Best => r > 1.0 / TIE,
        }
    }

    /// Whether a whole interval confirms the claim: the rounds leave no
    /// doubt, whichever value in it is the true ratio.
    fn confirmed_by(self, low: f64, high: f64) -> bool {
        self.confirms(low) && self.confirms(high)
    }
}

/// A conclusion's interval: from the lowest to the highest bound of its
/// comparisons' paired intervals (each the order-statistic interval of the
/// median of per-round ratios), so every ratio it rests on lies inside.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// The fewest rounds any of its ratios rests on.
    pub rounds: u32,
    /// The lowest coverage of its ratios' intervals, in percent.
    pub coverage_pct: f64,
}

impl Interval {
    /// The envelope of the comparisons' intervals; None when one of them
    /// has none (unpaired, or from older files).
    fn of(comparisons: &[Comparison]) -> Option<Interval> {
        let paired: Vec<&PairedRatio> = comparisons.iter().map(|c| c.paired.as_ref()).collect::<Option<_>>()?;
        let first = paired.first()?;
        Some(paired.iter().fold(
            Interval {
                low: first.low,
                high: first.high,
                rounds: first.rounds as u32,
                coverage_pct: first.coverage_pct,
            },
            |acc, p| Interval {
                low: acc.low.min(p.low),
                high: acc.high.max(p.high),
                rounds: acc.rounds.min(p.rounds as u32),
                coverage_pct: acc.coverage_pct.min(p.coverage_pct),
            },
        ))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    /// Confirmed at some points and not at others.
    Partly,
    DoesNotHold,
    /// The points it needs were not measured (modes or workloads left out).
    NotMeasured,
}

impl Comparison {
    /// `a`'s throughput over `b`'s (readers' or writers'), paired by round
    /// over the rounds both ran; None when either has no throughput.
    fn of(workload: Workload, a: &Point, b: &Point, writes: bool) -> Option<Comparison> {
        let (ra, rb) = (rate(a, writes)?, rate(b, writes)?);
        let per_run = |p: &Point| -> Vec<f64> {
            let side = |r: &super::points::PointRun| if writes { r.writes.clone() } else { r.reads.clone() };
            p.runs.iter().map(|r| side(r).map_or(f64::NAN, |s| s.ops_per_s)).collect()
        };
        let (pa, pb) = (per_run(a), per_run(b));
        let n = pa.len().min(pb.len());
        let paired = paired_ratio(&pa[..n], &pb[..n]);
        Some(Comparison {
            workload,
            threads: a.threads,
            a: a.label.clone(),
            b: b.label.clone(),
            ratio: paired.as_ref().map_or(ra / rb, |p| p.value),
            paired,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conclusion {
    /// The study's statement, as it put it.
    pub claim: String,
    /// Which ratios test it here.
    pub basis: String,
    pub kind: Claim,
    pub verdict: Verdict,
    pub confirming: u32,
    /// Comparisons whose whole paired interval confirms the claim (the
    /// others confirm it by their estimate only, or not at all).
    #[serde(default)]
    pub firm: u32,
    /// Over every comparison: see [`Interval`]. Absent when a ratio is
    /// unpaired (older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    pub comparisons: Vec<Comparison>,
    /// Geometric mean, smallest and largest ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor_max: Option<f64>,
}

impl Conclusion {
    pub fn new(claim: &str, basis: &str, kind: Claim, comparisons: Vec<Comparison>) -> Conclusion {
        let n = comparisons.len() as u32;
        let confirming = comparisons.iter().filter(|c| kind.confirms(c.ratio)).count() as u32;
        let firm = comparisons
            .iter()
            .filter(|c| c.paired.as_ref().is_some_and(|p| p.rounds >= 2 && kind.confirmed_by(p.low, p.high)))
            .count() as u32;
        let verdict = match (n, confirming) {
            (0, _) => Verdict::NotMeasured,
            (n, c) if c == n => Verdict::Holds,
            (_, 0) => Verdict::DoesNotHold,
            _ => Verdict::Partly,
        };
        let ratios: Vec<f64> = comparisons.iter().map(|c| c.ratio).filter(|r| *r > 0.0 && r.is_finite()).collect();
        let (factor, factor_min, factor_max) = if ratios.is_empty() {
            (None, None, None)
        } else {
            let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            (Some(geo), ratios.iter().copied().reduce(f64::min), ratios.iter().copied().reduce(f64::max))
        };
        Conclusion {
            claim: claim.to_string(),
            basis: basis.to_string(),
            kind,
            verdict,
            confirming,
            firm,
            interval: Interval::of(&comparisons),
            comparisons,
            factor,
            factor_min,
            factor_max,
        }
    }
}

/// Median throughput of a point's readers or writers.
fn rate(p: &Point, writes: bool) -> Option<f64> {
    p.side(writes).map(|s| s.ops_per_s.median).filter(|r| *r > 0.0)
}

/// Ratios `a / b` over every point `a` that `is_a` selects and its partner
/// `partner(a)`: same workload and threads, one parameter changed.
fn ratios(
    points: &[Point],
    workload: Workload,
    writes: bool,
    threads: impl Fn(u32) -> bool,
    is_a: impl Fn(&Config) -> bool,
    partner: impl Fn(Config) -> Config,
) -> Vec<Comparison> {
    let mut out = Vec::new();
    for a in points.iter().filter(|p| p.workload == workload && threads(p.threads) && is_a(&p.config)) {
        let want = partner(a.config);
        let b = points.iter().find(|p| p.workload == workload && p.threads == a.threads && p.config == want);
        out.extend(b.and_then(|b| Comparison::of(workload, a, b, writes)));
    }
    out
}

/// Per thread count, the best per-thread WAL configuration over the best of
/// all the others (the study's mixed-workload verdict).
fn best_ratios(points: &[Point], writes: bool) -> Vec<Comparison> {
    let mut threads: Vec<u32> = points.iter().filter(|p| p.workload == Workload::Mixed).map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut out = Vec::new();
    for t in threads {
        let best = |pick: &dyn Fn(&Config) -> bool| {
            points
                .iter()
                .filter(|p| p.workload == Workload::Mixed && p.threads == t && pick(&p.config))
                .filter_map(|p| rate(p, writes).map(|r| (r, p)))
                .max_by(|x, y| x.0.total_cmp(&y.0))
        };
        let winner = |c: &Config| c.sharing == Sharing::PerThread && c.journal == Journal::Wal;
        if let (Some((_, a)), Some((_, b))) = (best(&winner), best(&|c: &Config| !winner(c))) {
            out.extend(Comparison::of(Workload::Mixed, a, b, writes));
        }
    }
    out
}

/// What the study adds to the blog's table: the blob readers and the
/// durable writers, with the rounds of the result file they pair by.
#[derive(Clone, Copy, Default)]
pub struct Extensions<'a> {
    pub blobs: Option<&'a BlobReaders>,
    pub writers: Option<&'a Writers>,
    pub rounds: &'a [RoundSet],
}

/// Each of the study's conclusions, judged on `points` (and the
/// extensions the study did not have). `cores` splits "up to the core count".
pub fn evaluate(points: &[Point], ext: Extensions<'_>, cores: u32) -> Vec<Conclusion> {
    let mut out = journal_conclusions(points);
    out.extend(cache_and_mode_conclusions(points));
    out.extend(sharing_conclusions(points, cores));
    if let Some(b) = ext.blobs {
        out.push(Conclusion::new(
            "Extension: SQLite keeps its lead over files as reader threads grow",
            "kvtest blobs, random reads: best database / files, per thread count",
            Claim::Faster,
            b.leads(ext.rounds),
        ));
    }
    if let Some(w) = ext.writers {
        out.extend(writer_conclusions(w, ext.rounds));
    }
    out
}

fn any_threads(_: u32) -> bool {
    true
}

/// The configuration shared if per thread, per thread if shared.
fn flip_sharing(c: Config) -> Config {
    Config { sharing: if c.sharing == Sharing::Shared { Sharing::PerThread } else { Sharing::Shared }, ..c }
}

/// WAL against the default journal (DELETE), for reads, writes and both
/// sides of the mixed workload.
fn journal_conclusions(points: &[Point]) -> Vec<Conclusion> {
    let wal = |c: &Config| c.journal == Journal::Wal;
    let to_delete = |c: Config| Config { journal: Journal::Delete, ..c };
    vec![
        Conclusion::new(
            "WAL is faster than the default journal (DELETE) for reads",
            "read: WAL / DELETE, other parameters equal",
            Claim::Faster,
            ratios(points, Workload::Read, false, any_threads, wal, to_delete),
        ),
        Conclusion::new(
            "WAL drastically improves write performance",
            "write: WAL / DELETE",
            Claim::Faster,
            ratios(points, Workload::Write, true, any_threads, wal, to_delete),
        ),
        Conclusion::new(
            "WAL is faster for mixed reads and writes (reads)",
            "mixed, reads/s: WAL / DELETE",
            Claim::Faster,
            ratios(points, Workload::Mixed, false, any_threads, wal, to_delete),
        ),
        Conclusion::new(
            "WAL is faster for mixed reads and writes (writes)",
            "mixed, inserts/s: WAL / DELETE",
            Claim::Faster,
            ratios(points, Workload::Mixed, true, any_threads, wal, to_delete),
        ),
    ]
}

/// A shared cache, read-only connections and, with one thread, a shared
/// connection: the claims that they change nothing (or nothing good).
fn cache_and_mode_conclusions(points: &[Point]) -> Vec<Conclusion> {
    let flip_cache = |c: Config| Config { shared_cache: !c.shared_cache, ..c };
    let shared = |c: &Config| c.sharing == Sharing::Shared;
    let mut one_thread = ratios(points, Workload::Read, false, |t| t == 1, shared, flip_sharing);
    one_thread.extend(ratios(points, Workload::Write, true, |t| t == 1, shared, flip_sharing));
    vec![
        Conclusion::new(
            "A shared cache is never faster for reads",
            "read: shared cache / private cache",
            Claim::NeverFaster,
            ratios(points, Workload::Read, false, any_threads, |c| c.shared_cache, flip_cache),
        ),
        Conclusion::new(
            "A shared cache makes no real difference to writes",
            "write: shared cache / private cache",
            Claim::Same,
            ratios(points, Workload::Write, true, any_threads, |c| c.shared_cache, flip_cache),
        ),
        Conclusion::new(
            "Read-only connections do not change read performance",
            "read: read-only / read-write",
            Claim::Same,
            ratios(points, Workload::Read, false, any_threads, |c| c.read_only, |c| Config { read_only: false, ..c }),
        ),
        Conclusion::new(
            "With one thread, sharing a connection makes no difference",
            "read and write, 1 thread: shared / per-thread",
            Claim::Same,
            one_thread,
        ),
    ]
}

/// A connection per thread or one shared, by thread count against the
/// cores, for reads, writes and the mixed workload.
fn sharing_conclusions(points: &[Point], cores: u32) -> Vec<Conclusion> {
    let best_kind = |c: &Config| c.journal == Journal::Wal && !c.shared_cache;
    let shared_best = |c: &Config| c.sharing == Sharing::Shared && best_kind(c);
    let per_thread_best = |c: &Config| c.sharing == Sharing::PerThread && best_kind(c);
    vec![
        Conclusion::new(
            "Reading, threads <= cores: a connection per thread is faster",
            &format!("read, 2..={cores} threads, WAL, private cache: per-thread / shared"),
            Claim::Faster,
            ratios(points, Workload::Read, false, |t| t >= 2 && t <= cores, per_thread_best, flip_sharing),
        ),
        Conclusion::new(
            "Reading, threads > cores: a shared connection is faster",
            &format!("read, more than {cores} threads, WAL, private cache: shared / per-thread"),
            Claim::Faster,
            ratios(points, Workload::Read, false, |t| t > cores, shared_best, flip_sharing),
        ),
        Conclusion::new(
            "Writing: a shared connection is always faster with several threads",
            "write, 2+ threads, WAL, private cache: shared / per-thread",
            Claim::Faster,
            ratios(points, Workload::Write, true, |t| t >= 2, shared_best, flip_sharing),
        ),
        Conclusion::new(
            "Mixed: a connection per thread with WAL is best (reads)",
            "mixed, reads/s: best per-thread WAL / best of the rest",
            Claim::Best,
            best_ratios(points, false),
        ),
        Conclusion::new(
            "Mixed: a connection per thread with WAL is best (writes)",
            "mixed, inserts/s: best per-thread WAL / best of the rest",
            Claim::Best,
            best_ratios(points, true),
        ),
    ]
}

/// `a`'s durable writes/s over `b`'s, paired by the writers' rounds.
fn writer_ratio(w: &Writers, rounds: &[RoundSet], a: (StoreId, u32), b: (StoreId, u32)) -> Option<Comparison> {
    let (pa, pb) = (w.point(a.0, a.1)?, w.point(b.0, b.1)?);
    let set = rounds.iter().find(|s| s.id == ids::WRITERS_ROUNDS);
    // Rounds hold times per write: b's time over a's is a's throughput over b's.
    let paired = set.and_then(|s| s.ratio(&pb.experiment_id, &pa.experiment_id));
    let medians = (pb.writes_per_s > 0.0).then(|| pa.writes_per_s / pb.writes_per_s)?;
    Some(Comparison {
        workload: Workload::Writers,
        threads: a.1,
        a: format!("{} x{}", a.0, a.1),
        b: format!("{} x{}", b.0, b.1),
        ratio: paired.as_ref().map_or(medians, |p| p.value),
        paired,
    })
}

/// The blog's question (do several writers help?) asked of every store:
/// SQLite's single writer against files' independent fsyncs, SQLite's one
/// writer connection against its connection per writer (the blog's shared
/// connection for writes), and each store against itself at one writer.
/// SQLite's store in the first two is its connection per writer, the
/// configuration every process can use.
fn writer_conclusions(w: &Writers, rounds: &[RoundSet]) -> Vec<Conclusion> {
    let counts = w.counts();
    let stores = w.stores();
    let sqlite = StoreId::Engine(EngineKind::Db);
    let files = stores.iter().copied().find(|s| s.is_files());
    let most = counts.last().copied().unwrap_or(1);
    let lead: Vec<Comparison> = files
        .map(|f| counts.iter().filter_map(|&n| writer_ratio(w, rounds, (sqlite, n), (f, n))).collect())
        .unwrap_or_default();
    let flat: Vec<Comparison> =
        counts.iter().filter(|&&n| n > 1).filter_map(|&n| writer_ratio(w, rounds, (sqlite, n), (sqlite, 1))).collect();
    let connections: Vec<Comparison> = counts
        .iter()
        .filter(|&&n| n > 1)
        .filter_map(|&n| writer_ratio(w, rounds, (StoreId::SqliteWriters(DbWriters::One), n), (sqlite, n)))
        .collect();
    let grow: Vec<Comparison> = stores
        .iter()
        .filter(|&&s| s != sqlite && s != StoreId::SqliteWriters(DbWriters::One) && most > 1)
        .filter_map(|&s| writer_ratio(w, rounds, (s, most), (s, 1)))
        .collect();
    vec![
        Conclusion::new(
            "Extension: SQLite's durable writes outpace files' at every writer count",
            "writers: SQLite WAL / files, durable writes/s, per writer count (as many readers beside)",
            Claim::Faster,
            lead,
        ),
        Conclusion::new(
            "Extension: more writers do not raise SQLite's durable writes (one writer at a time)",
            "writers: SQLite WAL at N writers / at 1, durable writes/s",
            Claim::NeverFaster,
            flat,
        ),
        Conclusion::new(
            "Extension: writing blobs from several threads, one writer connection is faster than a connection per writer",
            "writers, 2+: SQLite one writer connection / a connection per writer, durable writes/s, per writer count",
            Claim::Faster,
            connections,
        ),
        Conclusion::new(
            "Extension: more writers raise the other stores' durable writes",
            &format!("writers: each other store at {most} writers / at 1, durable writes/s"),
            Claim::Faster,
            grow,
        ),
    ]
}

/// Which SQLite configuration to write blobs with at one writer count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionPick {
    /// One writer connection for the process, behind a mutex.
    OneWriter,
    /// A connection per writer, `BEGIN IMMEDIATE` under the busy timeout.
    PerWriter,
    /// Within the tie band of each other.
    Either,
}

/// The answer to "one writer connection or a connection per writer?" at
/// one writer count, from SQLite's two rows' ratio paired by round.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionAnswer {
    pub writers: u32,
    pub pick: ConnectionPick,
    /// The whole paired interval agrees with the pick: past the tie band
    /// on the pick's side, or inside it for [`ConnectionPick::Either`].
    pub firm: bool,
    /// Rounds the ratio is paired over (0: unpaired, the medians' ratio).
    pub rounds: u32,
    /// One writer connection's durable writes/s over a connection per
    /// writer's.
    pub comparison: Comparison,
}

impl ConnectionAnswer {
    /// Paired over enough rounds for a 95% interval of the median ratio.
    pub fn enough_rounds(&self) -> bool {
        self.rounds as usize >= crate::measure::paired::MIN_ROUNDS_95
    }
}

/// The blog's question for blobs, answered at every writer count both
/// SQLite rows ran at (none in files without the one-writer row).
pub fn connection_answers(w: &Writers, rounds: &[RoundSet]) -> Vec<ConnectionAnswer> {
    let per_writer = StoreId::Engine(EngineKind::Db);
    w.counts()
        .into_iter()
        .filter_map(|n| writer_ratio(w, rounds, (StoreId::SqliteWriters(DbWriters::One), n), (per_writer, n)))
        .map(|c| {
            let pick = match c.ratio {
                r if Claim::Faster.confirms(r) => ConnectionPick::OneWriter,
                r if Claim::Faster.confirms(1.0 / r) => ConnectionPick::PerWriter,
                _ => ConnectionPick::Either,
            };
            let paired = c.paired.as_ref().filter(|p| p.rounds >= 2);
            let firm = paired.is_some_and(|p| match pick {
                ConnectionPick::OneWriter => Claim::Faster.confirmed_by(p.low, p.high),
                ConnectionPick::PerWriter => Claim::Faster.confirmed_by(1.0 / p.high, 1.0 / p.low),
                ConnectionPick::Either => Claim::Same.confirmed_by(p.low, p.high),
            });
            let rounds = c.paired.as_ref().map_or(0, |p| p.rounds as u32);
            ConnectionAnswer { writers: c.threads, pick, firm, rounds, comparison: c }
        })
        .collect()
}

#[cfg(test)]
#[path = "conclusions_tests.rs"]
mod tests;
