//! One size setting of `aging`, step by step: build the copies, age them,
//! measure each age (and its size bands), then the remedies
//! ([`super::crossover`], [`super::remedy_step`]).

use std::path::Path;
use std::sync::Arc;

use super::arms::{files_vs_db, read_rounds, Reader};
use super::layouts::{layouts, survey_disk, AgingLayout};
use super::passes::{sample, shuffled, write_pass};
use super::section::{AgePoint, AgingSetting, ReadFigures, WriteFigures};
use super::sizes::SizeSetting;
use super::Aging;
use crate::drivers::session::ScriptOp;
use crate::engine::dataset::{self, db_error, from_dir::Scan, open_kv};
use crate::measure::{stop_requested, Experiment, Stat};
use crate::studies::context::Observer;
use crate::util::fsutil::sync_filesystem;
use crate::util::progress::Silent;
use crate::{Error, Result};

/// Everything one setting needs while it runs.
pub(super) struct Run<'a> {
    pub opts: &'a Aging<'a>,
    pub work: &'a Path,
    pub sizes: &'a SizeSetting,
    pub layouts: Vec<AgingLayout>,
    /// Current size of each blob, by key - 1 (the same in every layout).
    pub blob_sizes: Vec<u32>,
    pub observer: &'a dyn Observer,
}

pub(super) fn run_setting(opts: &Aging, work: &Path, files: Option<&Scan>, out: &mut AgingSetting) -> Result<()> {
    let (ctx, observer) = (opts.ctx, opts.observer());
    let mut all = layouts(work, &ctx.engines, ctx.commit_every, &ctx.settings);
    if let Some(only) = &opts.layouts {
        all.retain(|l| only.contains(&l.id()));
    }
    let mut run = Run { opts, work, sizes: &out.sizes.clone(), layouts: all, blob_sizes: Vec::new(), observer };
    out.layouts = run.layouts.iter().map(|l| l.info.clone()).collect();
    out.count = run.build(out.count, files)?;
    let mut prev = 0;
    for &age in &opts.ages {
        let writes = run.age_to(prev, age)?;
        sync_filesystem(work)?;
        let reads = run.read_rounds(age, out)?;
        for ((layout, write), read) in run.layouts.iter().zip(writes).zip(reads) {
            check_stop()?;
            let point = run.point(layout, age, None, write, read)?;
            observer.point(run.sizes, &point);
            out.points.push(point);
        }
        if opts.bands && run.sizes.spans_crossover() {
            run.crossover(age, out)?;
        }
        prev = age;
    }
    if opts.remedies {
        run.remedies(prev, out)?;
    }
    Ok(())
}

pub(super) fn check_stop() -> Result<()> {
    if stop_requested() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

impl Run<'_> {
    /// Tells the observer a step starts (building, a rewrite pass, a
    /// measurement).
    pub fn step(&self, what: &str) {
        self.observer.begin(what, 0);
    }

    /// The kvtest database (or your files copied into one), then each
    /// layout's copy of it; returns the blobs made.
    fn build(&mut self, count: u32, files: Option<&Scan>) -> Result<u32> {
        let pristine = self.work.join("pristine.db");
        self.step(&format!("{}: init ({count} blobs)", self.sizes.name));
        let made = match files {
            Some(scan) => dataset::from_dir::init_from(&pristine, scan, 4096, false, &Silent)?.init,
            None => dataset::init(&pristine, &self.sizes.spec(count, self.opts.ctx.seed), false, &Silent)?,
        };
        let count = made.count as u32;
        for l in &self.layouts {
            check_stop()?;
            self.step(&format!("{}: copy for {}", self.sizes.name, l.id()));
            match l.kind() {
                crate::engine::sqlite::KIND => {
                    std::fs::copy(&pristine, &l.path).map_err(|e| Error::io(&l.path, "cannot copy the database", e))?;
                }
                kind => {
                    crate::engine::registry::build_with(kind, &pristine, &l.path, false, &l.settings, &Silent)?;
                }
            }
        }
        self.blob_sizes = current_sizes(&pristine, count)?;
        std::fs::remove_file(&pristine).map_err(|e| Error::io(&pristine, "cannot remove", e))?;
        Ok(count)
    }

    /// Rewrite passes (and churn) from age `from` to `to`; per layout, the
    /// figures of those passes.
    fn age_to(&mut self, from: u32, to: u32) -> Result<Vec<Option<WriteFigures>>> {
        let n = self.blob_sizes.len() as u32;
        let mut per_layout: Vec<Vec<Experiment>> = vec![Vec::new(); self.layouts.len()];
        for pass in from..to {
            let seed = self.opts.ctx.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(pass));
            let keys = shuffled(n, seed);
            let new_sizes = self.sizes.draw(keys.len(), seed ^ 0xa9e);
            let ops: Vec<ScriptOp> = new_sizes.iter().map(|&s| ScriptOp::Put(s)).collect();
            for (i, l) in self.layouts.iter().enumerate() {
                check_stop()?;
                self.step(&format!("{}: rewrite pass {} of {to}, {}", self.sizes.name, pass + 1, l.id()));
                per_layout[i].push(write_pass(l, &keys, ops.clone(), seed.wrapping_add(i as u64))?);
            }
            self.note_sizes(&keys, &new_sizes);
        }
        let churn = if to > from && self.opts.churn_pct > 0.0 { Some(self.churn(to)?) } else { None };
        Ok(per_layout
            .iter()
            .enumerate()
            .map(|(i, passes)| {
                write_figures(passes).map(|mut w| {
                    if let Some(c) = &churn {
                        (w.churn_delete_us, w.churn_insert_us) = (Some(c[i].0), Some(c[i].1));
                    }
                    w
                })
            })
            .collect())
    }

    /// Deletes a share of the blobs, then inserts them again with new sizes.
    fn churn(&mut self, age: u32) -> Result<Vec<(f64, f64)>> {
        let seed = self.opts.ctx.seed ^ 0xc4_u64.wrapping_mul(u64::from(age) + 1);
        let keys = sample(self.blob_sizes.len() as u32, self.opts.churn_pct / 100.0, seed);
        let new_sizes = self.sizes.draw(keys.len(), seed ^ 0x51e);
        let puts: Vec<ScriptOp> = new_sizes.iter().map(|&s| ScriptOp::Put(s)).collect();
        let mut out = Vec::new();
        for (i, l) in self.layouts.iter().enumerate() {
            check_stop()?;
            self.step(&format!("{}: churn, {}", self.sizes.name, l.id()));
            let del = write_pass(l, &keys, vec![ScriptOp::Delete; keys.len()], seed)?;
            let ins = write_pass(l, &keys, puts.clone(), seed.wrapping_add(i as u64))?;
            out.push((del.summary.figure().median, ins.summary.figure().median));
        }
        self.note_sizes(&keys, &new_sizes);
        Ok(out)
    }

    pub(super) fn note_sizes(&mut self, keys: &[u32], sizes: &[u32]) {
        for (&k, &s) in keys.iter().zip(sizes) {
            self.blob_sizes[k as usize - 1] = s;
        }
    }

    /// The keys of the reads at `age`, in their shuffled order.
    pub(super) fn read_keys(&self, age: u32) -> Arc<[u32]> {
        shuffled(self.blob_sizes.len() as u32, self.opts.ctx.seed ^ 0x4ead ^ u64::from(age))
    }

    /// Every layout's reads at `age`, warm then cold, each as interleaved
    /// rounds stored in `out`; per layout, (warm, cold).
    fn read_rounds(&self, age: u32, out: &mut AgingSetting) -> Result<Vec<(ReadFigures, ReadFigures)>> {
        let keys = self.read_keys(age);
        let mut by_cache = Vec::with_capacity(2);
        for cold in [false, true] {
            let cache = if cold { "cold" } else { "warm" };
            self.step(&format!("{}: reads at age {age}, {cache}, in rounds", self.sizes.name));
            let id = super::section::rounds_id(&self.sizes.name, age, cold);
            let readers: Vec<Reader<'_>> = self.layouts.iter().map(Reader::of).collect();
            let pairs = [files_vs_db(&readers)];
            let (figures, set) = read_rounds(&id, &readers, &keys, cold, &self.opts.rounds, &pairs)?;
            out.rounds.push(set);
            by_cache.push(figures);
        }
        let cold = by_cache.pop().unwrap_or_default();
        let warm = by_cache.pop().unwrap_or_default();
        Ok(warm.into_iter().zip(cold).collect())
    }

    /// Disk usage and fragmentation after the reads (whose scans would
    /// otherwise warm the cache before them), and the point.
    pub(super) fn point(
        &self,
        layout: &AgingLayout,
        age: u32,
        remedy: Option<&str>,
        rewrite: Option<WriteFigures>,
        (read_warm, read_cold): (ReadFigures, ReadFigures),
    ) -> Result<AgePoint> {
        let content = self.blob_sizes.iter().map(|&s| u64::from(s)).sum();
        let (usage, fragmentation) = survey_disk(layout, content)?;
        Ok(AgePoint {
            layout: layout.id(),
            age,
            remedy: remedy.map(str::to_string),
            rewrite,
            read_warm: Some(read_warm),
            read_cold: Some(read_cold),
            usage,
            fragmentation,
        })
    }
}

/// Median per-op time and rate over the passes that led to an age.
pub(super) fn write_figures(passes: &[Experiment]) -> Option<WriteFigures> {
    if passes.is_empty() {
        return None;
    }
    let per_op: Vec<f64> = passes.iter().map(|e| e.summary.figure().median).collect();
    let rate: Vec<f64> = passes.iter().map(|e| e.summary.mb_per_s.median).collect();
    Some(WriteFigures {
        passes: passes.len() as u32,
        per_op_us: Stat::of(&per_op).median,
        mb_per_s: Stat::of(&rate).median,
        churn_delete_us: None,
        churn_insert_us: None,
    })
}

/// Blob sizes by key - 1, from the database that init made (keys 1..=count).
fn current_sizes(db: &Path, count: u32) -> Result<Vec<u32>> {
    let kv = open_kv(db, false)?;
    let err = |e| db_error(db, "cannot read blob sizes", e);
    let mut sizes = vec![0u32; count as usize];
    let mut stmt = kv.conn.prepare("SELECT k, length(v) FROM kv").map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        let (k, len): (i64, i64) = (r.get(0).map_err(err)?, r.get(1).map_err(err)?);
        if let Some(slot) = usize::try_from(k - 1).ok().and_then(|i| sizes.get_mut(i)) {
            *slot = len as u32;
        }
    }
    Ok(sizes)
}
