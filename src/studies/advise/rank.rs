//! The recommendation, as a pure function of result data: the candidates
//! the crash facts exclude, the others ranked by their time per operation
//! at the stated mix (warm reads), each against the leader with a paired
//! interval, ties within the noise floor, their cold reads and what the
//! short aging pass did to them, and what would change the answer. No
//! text: the report words it.

use super::candidate::Durability;
use super::candidate::Store;
use super::rules::{self, Test};
use super::section::{AdviseSection, CrashFact, CrashSource};
use crate::measure::paired::PairedRatio;
use crate::measure::rounds::RoundSet;
use crate::measure::Experiment;
use crate::records::{DiskUsage, LayoutId};
use crate::studies::aging::{AgePoint, AgingSection};
use crate::studies::matrix::{Crossover, DbRead, EngineCrossover, MatrixSection};
use crate::studies::suite::{ArmId, CONTROL_ID, CONTROL_OF};

/// What the recommendation is computed from: the parts of one result file.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    pub section: &'a AdviseSection,
    pub experiments: &'a [Experiment],
    pub rounds: &'a [RoundSet],
    pub disk: &'a [DiskUsage],
    /// The size matrix, when it ran.
    pub matrix: Option<&'a MatrixSection>,
    /// The short aging pass, when it ran.
    pub aging: Option<&'a AgingSection>,
}

/// A ratio with its interval; `paired` when it comes from rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factor {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub paired: bool,
    pub rounds: usize,
    /// Both sides are the same measurement (two file candidates read the
    /// same files): exactly 1, with no spread.
    pub same: bool,
}

impl Factor {
    fn exact(value: f64) -> Factor {
        Factor { value, low: value, high: value, paired: false, rounds: 0, same: false }
    }

    /// The faster side's advantage, at least 1, with the interval turned
    /// the same way (as `PairedRatio::inverse` turns a paired ratio): a
    /// "1.37x faster" row must not show the interval of the 0.73x it came from.
    pub fn oriented(&self) -> Factor {
        if self.value >= 1.0 {
            *self
        } else {
            Factor { value: 1.0 / self.value, low: 1.0 / self.high, high: 1.0 / self.low, ..*self }
        }
    }

    fn of(p: &PairedRatio) -> Factor {
        Factor { value: p.value, low: p.low, high: p.high, paired: true, rounds: p.rounds, same: false }
    }
}

/// One candidate that meets the need.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub store: Store,
    pub read_us: f64,
    pub write_us: f64,
    /// Time per operation at the stated mix (medians).
    pub mixed_us: f64,
    /// Its reads, writes and mixed time over the leader's (above 1:
    /// slower); None for the leader.
    pub reads: Option<Factor>,
    pub writes: Option<Factor>,
    pub mixed: Option<Factor>,
    /// Its mixed factor's interval holds 1 or lies within the noise floor.
    pub tie: bool,
    pub allocated_bytes: Option<u64>,
    /// Its crash facts, when the table has its method.
    pub crash: Option<CrashFact>,
    /// Median per-op read time with the page cache evicted before each run.
    pub cold_read_us: Option<f64>,
    /// Its cold reads over the leader's; None for the leader.
    pub cold_reads: Option<Factor>,
    /// What the short aging pass measured of its layout.
    pub aged: Option<Aged>,
}

/// One candidate's layout after the short aging pass, against age 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aged {
    /// Rewrites of every blob.
    pub age: u32,
    /// Its warm read time at `age` over its own at age 0 (two round sets:
    /// unpaired).
    pub read_change: Option<f64>,
    /// Blocks allocated at `age` over at age 0.
    pub growth: Option<f64>,
    pub allocated_bytes: u64,
    /// Its warm reads at `age` over the leader's layout's, paired over the
    /// aging rounds; None for the leader.
    pub reads: Option<Factor>,
}

/// A candidate whose writes were measured at another commit granularity
/// than the workload states: refused, never compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub store: Store,
    /// Writes per commit its write arm ran with (None: one transaction per run).
    pub measured: Option<u32>,
    /// Writes per commit the workload states.
    pub stated: Option<u32>,
}

/// A candidate that cannot meet the need, and why; with its figures when
/// measured (taken as the ranked candidates' are, for the table only).
#[derive(Debug, Clone, PartialEq)]
pub struct Excluded {
    pub store: Store,
    pub test: Test,
    pub fact: CrashFact,
    /// Where the failing fact comes from.
    pub source: CrashSource,
    pub read_us: Option<f64>,
    pub write_us: Option<f64>,
    /// Time per operation at the stated mix, when both were measured.
    pub mixed_us: Option<f64>,
    pub allocated_bytes: Option<u64>,
}

/// What would change the answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// At `reads_pct` percent reads (and beyond, in the direction given),
    /// `leader` would rank first instead.
    Mix { reads_pct: u32, more_reads: bool, leader: Store },
    /// An excluded candidate that the other durability need would admit.
    Durability { store: Store, need: Durability },
    /// Where files opened directly start to read faster than `against`
    /// (SQLite, or the leading engine; the size matrix's crossover at
    /// `page_size`), the largest size measured, and how the matrix read
    /// SQLite (its candidate's own path in files since advise read it so).
    Size { crossover: Crossover, page_size: u32, largest_bytes: u32, against: Store, db_read: DbRead },
    /// With cold reads (data not in the page cache) at the stated mix,
    /// `leader` would rank first; `reads` is its cold reads over the
    /// leader's (an interval holding 1 makes the change unclear).
    Cold { leader: Store, reads: Option<Factor> },
    /// With reads slowed as the aging pass measured after `age` rewrites
    /// of every blob, `leader` would rank first.
    Aged { age: u32, leader: Store },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Candidates meeting the need, fastest at the stated mix first.
    pub ranked: Vec<Ranked>,
    pub excluded: Vec<Excluded>,
    /// Candidates whose reads or writes were not measured.
    pub unmeasured: Vec<Store>,
    /// Candidates whose writes were measured at another commit granularity.
    pub refused: Vec<Refused>,
    /// Candidates without crash facts (not excluded, said so).
    pub untested: Vec<Store>,
    /// The A/A control's paired interval.
    pub noise: Option<PairedRatio>,
    pub changes: Vec<Change>,
}

impl Ranking {
    /// The leader and every candidate tied with it.
    pub fn recommended(&self) -> impl Iterator<Item = &Ranked> {
        self.ranked.iter().enumerate().filter(|(i, r)| *i == 0 || r.tie).map(|(_, r)| r)
    }
}

/// The median of the figure comparisons use: the steady-state time per op
/// (the loop with each commit inside it), or kvtest's total in a file from
/// before it.
fn median_us(inputs: &Inputs, id: ArmId) -> Option<f64> {
    inputs.experiments.iter().find(|e| id.is(&e.id)).map(|e| e.summary.figure().median).filter(|v| *v > 0.0)
}

/// The experiment that times `store`'s writes in the file's workload.
pub fn write_id(s: &AdviseSection, store: Store) -> ArmId {
    store.write_id(s.workload.durability, s.workload.one_commit_per_run())
}

/// Whether `store`'s writes were measured at another commit granularity
/// than the workload states (None: its writes were not measured at all).
fn other_granularity(inputs: &Inputs, store: Store) -> Option<Refused> {
    let s = inputs.section;
    let e = inputs.experiments.iter().find(|e| write_id(s, store).is(&e.id))?;
    let stated = s.workload.commit_every;
    (e.params.commit_every != stated).then_some(Refused { store, measured: e.params.commit_every, stated })
}

/// The paired ratio a / b over the rounds both ran in; exact 1 for the
/// same experiment; the ratio of medians when no rounds pair them.
fn ratio(inputs: &Inputs, a: ArmId, b: ArmId) -> Option<Factor> {
    if a == b {
        return Some(Factor { same: true, ..Factor::exact(1.0) });
    }
    let (a_name, b_name) = (a.to_string(), b.to_string());
    let set = inputs.rounds.iter().find(|r| r.consistent() && r.arms.contains(&a_name) && r.arms.contains(&b_name));
    match set.and_then(|s| s.ratio(&a_name, &b_name)) {
        Some(p) => Some(Factor::of(&p)),
        None => Some(Factor::exact(median_us(inputs, a)? / median_us(inputs, b)?)),
    }
}

/// The first exclusion test `store`'s write method at `need` fails: by the
/// file's crash facts, then (when those were measured by a short run) by
/// the documented table, since a few cuts cannot show a method safe.
fn failing(s: &AdviseSection, store: Store, need: Durability) -> Option<(Test, CrashFact, CrashSource)> {
    let method = store.crash_method(need);
    let documented = rules::documented();
    let mut facts: Vec<(&CrashFact, CrashSource)> =
        s.crash.of(method).map(|f| (f, s.crash.source)).into_iter().collect();
    if s.crash.source == CrashSource::Measured {
        facts.extend(documented.iter().filter(|f| f.method == method).map(|f| (f, CrashSource::Documented)));
    }
    facts.into_iter().find_map(|(f, source)| rules::excluded_by(need, f).map(|t| (t, f.clone(), source)))
}

/// Mixed time per operation: `reads_share` of reads, the rest writes.
fn mixed(read_us: f64, write_us: f64, reads_share: f64) -> f64 {
    reads_share * read_us + (1.0 - reads_share) * write_us
}

/// The recommendation for the file's stated workload.
pub fn rank(inputs: &Inputs) -> Ranking {
    let s = inputs.section;
    let need = s.workload.durability;
    let total = f64::from(s.workload.mix_reads + s.workload.mix_writes).max(1.0);
    let share = f64::from(s.workload.mix_reads) / total;
    let mut out = Ranking {
        ranked: Vec::new(),
        excluded: Vec::new(),
        unmeasured: Vec::new(),
        refused: Vec::new(),
        untested: Vec::new(),
        noise: inputs
            .rounds
            .iter()
            .find(|r| r.consistent() && r.arms.iter().any(|a| CONTROL_ID.is(a)))
            .and_then(|r| r.ratio(&CONTROL_OF.to_string(), &CONTROL_ID.to_string())),
        changes: Vec::new(),
    };
    for &store in &s.candidates {
        let crash = s.crash.of(store.crash_method(need)).cloned();
        let (read, write) = (median_us(inputs, store.read_id()), median_us(inputs, write_id(s, store)));
        let allocated_bytes = inputs.disk.iter().find(|d| d.layout == store.layout()).map(|d| d.allocated_bytes);
        if let Some((test, fact, source)) = failing(s, store, need) {
            let mixed_us = read.zip(write).map(|(r, w)| mixed(r, w, share));
            let (read_us, write_us) = (read, write);
            out.excluded.push(Excluded { store, test, fact, source, read_us, write_us, mixed_us, allocated_bytes });
            continue;
        }
        if crash.is_none() {
            out.untested.push(store);
        }
        if let Some(refused) = other_granularity(inputs, store) {
            out.refused.push(refused);
            continue;
        }
        let (Some(read_us), Some(write_us)) = (read, write) else {
            out.unmeasured.push(store);
            continue;
        };
        let mixed_us = mixed(read_us, write_us, share);
        out.ranked.push(Ranked {
            store,
            read_us,
            write_us,
            mixed_us,
            reads: None,
            writes: None,
            mixed: None,
            tie: false,
            allocated_bytes,
            crash,
            cold_read_us: median_us(inputs, store.cold_read_id()),
            cold_reads: None,
            aged: None,
        });
    }
    out.ranked.sort_by(|a, b| a.mixed_us.total_cmp(&b.mixed_us));
    compare_to_leader(inputs, share, &mut out);
    age(inputs, &mut out);
    out.changes = changes(inputs, share, &out);
    out
}

/// The aging pass's point of `layout` at `age` (not after a remedy).
fn point(a: &AgingSection, layout: LayoutId, age: u32) -> Option<&AgePoint> {
    let setting = a.settings.last()?;
    setting.points.iter().find(|p| p.layout == layout && p.age == age && p.remedy.is_none())
}

/// What the aging pass did to each candidate's layout, from its first age
/// to its last; reads against the leader's layout at the last age.
fn age(inputs: &Inputs, out: &mut Ranking) {
    let Some(a) = inputs.aging else { return };
    let (Some(&first), Some(&last), Some(setting)) = (a.ages.first(), a.ages.last(), a.settings.last()) else {
        return;
    };
    let lead = out.ranked.first().and_then(|r| r.store.aging_layout());
    let rounds = setting.read_rounds(last, false).filter(|s| s.consistent());
    for (i, r) in out.ranked.iter_mut().enumerate() {
        let Some(layout) = r.store.aging_layout() else { continue };
        let (Some(old), Some(new)) = (point(a, layout, first), point(a, layout, last)) else { continue };
        let warm = |p: &AgePoint| p.read_warm.map(|w| w.per_op_us).filter(|v| *v > 0.0);
        let reads = lead.filter(|_| i > 0).and_then(|l| match rounds.and_then(|s| s.ratio(layout.name(), l.name())) {
            Some(p) => Some(Factor::of(&p)),
            None => Some(Factor::exact(warm(new)? / warm(point(a, l, last)?)?)),
        });
        let (was, is) = (old.usage.allocated_bytes, new.usage.allocated_bytes);
        r.aged = Some(Aged {
            age: last,
            read_change: warm(old).and_then(|o| Some(warm(new)? / o)),
            growth: (was > 0).then(|| is as f64 / was as f64),
            allocated_bytes: is,
            reads,
        });
    }
}

/// Each candidate's factors against the leader. The mixed factor is the
/// leader's time shares applied to the paired read and write factors:
/// a * reads + (1 - a) * writes, a being the leader's share of time in
/// reads; its interval takes both ends the same way (conservative).
fn compare_to_leader(inputs: &Inputs, share: f64, out: &mut Ranking) {
    let Some(leader) = out.ranked.first().cloned() else { return };
    let a = share * leader.read_us / leader.mixed_us.max(f64::MIN_POSITIVE);
    let noise = out.noise.clone();
    for r in out.ranked.iter_mut().skip(1) {
        let reads = ratio(inputs, r.store.read_id(), leader.store.read_id());
        let s = inputs.section;
        let writes = ratio(inputs, write_id(s, r.store), write_id(s, leader.store));
        if let (Some(fr), Some(fw)) = (reads, writes) {
            let blend = |x: f64, y: f64| a * x + (1.0 - a) * y;
            let m = Factor {
                value: blend(fr.value, fw.value),
                low: blend(fr.low, fw.low),
                high: blend(fr.high, fw.high),
                paired: (fr.paired || fr.same) && (fw.paired || fw.same) && !(fr.same && fw.same),
                rounds: [fr, fw].iter().filter(|f| !f.same).map(|f| f.rounds).min().unwrap_or(0),
                same: fr.same && fw.same,
            };
            let within_noise = noise.as_ref().is_some_and(|n| m.value <= n.high.max(1.0 / n.low));
            r.tie = (m.paired && m.low <= 1.0) || within_noise || m.value <= 1.0;
            r.mixed = Some(m);
        }
        r.reads = reads;
        r.writes = writes;
        if r.cold_read_us.is_some() && leader.cold_read_us.is_some() {
            r.cold_reads = ratio(inputs, r.store.cold_read_id(), leader.store.cold_read_id());
        }
    }
}

/// The leader at each whole percentage of reads, by the medians.
fn leader_at(ranked: &[Ranked], pct: u32) -> Option<Store> {
    let share = f64::from(pct) / 100.0;
    ranked
        .iter()
        .min_by(|a, b| mixed(a.read_us, a.write_us, share).total_cmp(&mixed(b.read_us, b.write_us, share)))
        .map(|r| r.store)
}

/// The candidate fastest at `share` with each one's read time replaced by
/// `read` (None when some candidate lacks it).
fn leader_with(ranked: &[Ranked], share: f64, read: impl Fn(&Ranked) -> Option<f64>) -> Option<Store> {
    let times: Option<Vec<(Store, f64)>> =
        ranked.iter().map(|r| read(r).map(|us| (r.store, mixed(us, r.write_us, share)))).collect();
    times?.into_iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(s, _)| s)
}

/// The nearest mix, each way, at which another candidate leads; the leader
/// with cold reads and after aging, when another; the size crossover; and
/// the excluded candidates the other durability need would admit.
fn changes(inputs: &Inputs, share: f64, out: &Ranking) -> Vec<Change> {
    let mut changes = Vec::new();
    let leader = out.ranked.first().map(|r| r.store);
    if out.ranked.len() > 1 {
        if let Some(cold) = leader_with(&out.ranked, share, |r| r.cold_read_us).filter(|s| Some(*s) != leader) {
            let reads = out.ranked.iter().find(|r| r.store == cold).and_then(|r| r.cold_reads);
            changes.push(Change::Cold { leader: cold, reads });
        }
        let aged = |r: &Ranked| Some(r.read_us * r.aged?.read_change?);
        if let Some(other) = leader_with(&out.ranked, share, aged).filter(|s| Some(*s) != leader) {
            let age = out.ranked.iter().find_map(|r| r.aged.map(|a| a.age)).unwrap_or(0);
            changes.push(Change::Aged { age, leader: other });
        }
    }
    if let Some(leader) = out.ranked.first().map(|r| r.store) {
        let here = (share * 100.0).round() as u32;
        let up = (here..=100).find(|&p| leader_at(&out.ranked, p) != Some(leader));
        let down = (0..=here).rev().find(|&p| leader_at(&out.ranked, p) != Some(leader));
        for (pct, more_reads) in [(down, false), (up, true)] {
            if let Some(p) = pct {
                if let Some(other) = leader_at(&out.ranked, p) {
                    changes.push(Change::Mix { reads_pct: p, more_reads, leader: other });
                }
            }
        }
    }
    if let Some(m) = inputs.matrix {
        let largest_bytes = m.cells.iter().map(|c| c.size_bytes).max().unwrap_or(0);
        let db_read = m.params.db_read;
        for c in &m.crossovers {
            let (crossover, page_size, against) = (c.direct.clone(), c.page_size, Store::Sqlite);
            changes.push(Change::Size { crossover, page_size, largest_bytes, against, db_read });
        }
        let leading_engine = |e: &&EngineCrossover| leader == Some(Store::Engine(e.engine));
        for c in m.engine_crossovers.iter().filter(leading_engine) {
            let (crossover, against) = (c.read.clone(), Store::Engine(c.engine));
            changes.push(Change::Size { crossover, page_size: c.page_size, largest_bytes, against, db_read });
        }
    }
    let other = inputs.section.workload.durability.other();
    for e in &out.excluded {
        let admitted = inputs.section.crash.of(e.store.crash_method(other)).is_some();
        let admitted = admitted && failing(inputs.section, e.store, other).is_none();
        if admitted {
            changes.push(Change::Durability { store: e.store, need: other });
        }
    }
    changes
}
