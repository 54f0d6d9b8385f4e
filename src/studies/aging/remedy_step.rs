//! The remedies after the last age, as interleaved rounds: each remedy
//! works on a copy of an aged layout (VACUUM and auto_vacuum=INCREMENTAL for
//! SQLite, a copy-rewrite for files), and the aged layouts and their
//! remedied copies are the arms of one set of rounds, warm then cold, so
//! each remedy's effect (its read time over its aged layout's) is paired
//! by round.

use super::arms::{read_rounds, Reader};
use super::layouts::AgingLayout;
use super::passes::{shuffled, write_pass};
use super::remedies;
use super::section::{remedy_arm, remedy_rounds_id, AgingSetting, ReadFigures, WriteFigures};
use super::steps::{check_stop, write_figures, Run};
use crate::drivers::session::ScriptOp;
use crate::measure::rounds::Comparison;
use crate::{Error, Result};

/// A remedied copy of one aged layout.
struct Remedied {
    /// Index of the aged layout in [`Run::layouts`].
    aged: usize,
    remedy: &'static str,
    copy: AgingLayout,
    /// Its storage age: the last age, or one more for the incremental copy.
    age: u32,
    /// The pass that led here (the incremental copy's one more pass).
    rewrite: Option<WriteFigures>,
    /// Blob sizes by key - 1 where they differ from the aged layouts'.
    sizes: Option<Vec<u32>>,
}

impl Run<'_> {
    /// Makes every remedied copy, reads them beside the aged layouts in
    /// rounds, then surveys each copy's disk; the points go to `out`.
    pub(super) fn remedies(&self, age: u32, out: &mut AgingSetting) -> Result<()> {
        let mut remedied = Vec::new();
        for (i, layout) in self.layouts.iter().enumerate() {
            check_stop()?;
            match layout.kind() {
                crate::engine::sqlite::KIND => {
                    let copy = self.copy_db(layout, "vacuum")?;
                    self.step(&format!("{}: VACUUM, a copy of {}", self.sizes.name, layout.id()));
                    remedies::vacuum(&copy.path)?;
                    remedied.push(Remedied { aged: i, remedy: "vacuum", copy, age, rewrite: None, sizes: None });
                    remedied.push(self.incremental(i, age)?);
                }
                kind if kind.is_files() => {
                    let copy = AgingLayout {
                        path: self.work.join(format!("{}-copy-rewrite.dir", layout.id())),
                        ..layout.clone()
                    };
                    self.step(&format!("{}: copy-rewrite, {}", self.sizes.name, layout.id()));
                    remedies::copy_rewrite(&layout.path, &copy.path, kind)?;
                    remedied.push(Remedied { aged: i, remedy: "copy-rewrite", copy, age, rewrite: None, sizes: None });
                }
                _ => {}
            }
        }
        if remedied.is_empty() {
            return Ok(());
        }
        let (warm, cold) = self.remedy_rounds(age, &remedied, out)?;
        for ((r, warm), cold) in remedied.iter().zip(warm).zip(cold) {
            check_stop()?;
            let point = match &r.sizes {
                None => self.point(&r.copy, r.age, Some(r.remedy), r.rewrite, (warm, cold))?,
                Some(sizes) => {
                    self.with_sizes(sizes.clone()).point(&r.copy, r.age, Some(r.remedy), r.rewrite, (warm, cold))?
                }
            };
            self.observer.point(self.sizes, &point);
            out.remedies.push(point);
        }
        Ok(())
    }

    /// The aged layouts that have a remedy and every remedied copy as the
    /// arms of one set of rounds, warm then cold, each remedy paired with
    /// its aged layout; per remedied copy, its (warm, cold) figures.
    fn remedy_rounds(
        &self,
        age: u32,
        remedied: &[Remedied],
        out: &mut AgingSetting,
    ) -> Result<(Vec<ReadFigures>, Vec<ReadFigures>)> {
        let mut aged: Vec<usize> = remedied.iter().map(|r| r.aged).collect();
        aged.dedup();
        let mut readers: Vec<Reader<'_>> = aged.iter().map(|&i| Reader::of(&self.layouts[i])).collect();
        readers.extend(remedied.iter().map(|r| Reader { arm: remedy_arm(r.copy.id(), r.remedy), layout: &r.copy }));
        let pairs: Vec<Comparison> = remedied
            .iter()
            .enumerate()
            .map(|(k, r)| Comparison {
                a: vec![aged.len() + k],
                b: aged.iter().position(|&i| i == r.aged).into_iter().collect(),
            })
            .collect();
        let keys = self.read_keys(age);
        let mut by_cache = Vec::with_capacity(2);
        for cold in [false, true] {
            let cache = if cold { "cold" } else { "warm" };
            self.step(&format!("{}: reads after the remedies, {cache}, in rounds", self.sizes.name));
            let id = remedy_rounds_id(&self.sizes.name, age, cold);
            let (mut figures, set) = read_rounds(&id, &readers, &keys, cold, &self.opts.rounds, &pairs)?;
            out.rounds.push(set);
            by_cache.push(figures.split_off(aged.len()));
        }
        let cold = by_cache.pop().unwrap_or_default();
        let warm = by_cache.pop().unwrap_or_default();
        Ok((warm, cold))
    }

    /// A copy of an aged database, for `remedy` to work on.
    fn copy_db(&self, layout: &AgingLayout, remedy: &str) -> Result<AgingLayout> {
        let copy = AgingLayout { path: self.work.join(format!("{}-{remedy}.db", layout.id())), ..layout.clone() };
        std::fs::copy(&layout.path, &copy.path).map_err(|e| Error::io(&copy.path, "cannot copy", e))?;
        Ok(copy)
    }

    /// A copy switched to auto_vacuum=INCREMENTAL, aged one more pass, then
    /// incremental_vacuum: what a database kept in that mode looks like.
    fn incremental(&self, aged: usize, age: u32) -> Result<Remedied> {
        let layout = &self.layouts[aged];
        let copy = self.copy_db(layout, "incremental-vacuum")?;
        self.step(&format!("{}: auto_vacuum=INCREMENTAL, one more pass, a copy of {}", self.sizes.name, layout.id()));
        remedies::make_incremental(&copy.path)?;
        let seed = self.opts.ctx.seed ^ 0x1_4c2;
        let keys = shuffled(self.blob_sizes.len() as u32, seed);
        let new_sizes = self.sizes.draw(keys.len(), seed);
        let ops = new_sizes.iter().map(|&s| ScriptOp::Put(s)).collect();
        let pass = write_pass(&copy, &keys, ops, seed)?;
        remedies::incremental_vacuum(&copy.path)?;
        // The other layouts keep their sizes: this copy has its own.
        let mut own = self.with_sizes(self.blob_sizes.clone());
        own.note_sizes(&keys, &new_sizes);
        Ok(Remedied {
            aged,
            remedy: "incremental-vacuum",
            copy,
            age: age + 1,
            rewrite: write_figures(&[pass]),
            sizes: Some(own.blob_sizes),
        })
    }

    /// This run with other blob sizes and no layouts (for one copy's point).
    fn with_sizes(&self, blob_sizes: Vec<u32>) -> Run<'_> {
        Run {
            opts: self.opts,
            work: self.work,
            sizes: self.sizes,
            layouts: Vec::new(),
            blob_sizes,
            observer: self.observer,
        }
    }
}
