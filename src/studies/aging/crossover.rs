//! Read time by blob size band at one age, warm and cold: where files start
//! to read faster than SQLite. In each band the database and file layouts
//! are the arms of one set of interleaved rounds, so files over SQLite is
//! paired by round.

use std::sync::Arc;

use super::arms::{files_vs_db, read_rounds, Reader};
use super::passes::shuffled;
use super::section::{band_rounds_id, files_faster_from, AgingSetting, Band, Crossover};
use super::steps::{check_stop, Run};
use crate::measure::rounds::compare;
use crate::Result;

/// Size bands the crossover is measured in.
const BANDS: u32 = 6;

impl Run<'_> {
    /// Read time per size band, warm and cold, for SQLite and files.
    pub(super) fn crossover(&self, age: u32, out: &mut AgingSetting) -> Result<()> {
        let (lo, hi) = (self.sizes.min_bytes, self.sizes.max_bytes);
        let width = (hi - lo).div_ceil(BANDS).max(1);
        let readers: Vec<Reader<'_>> =
            self.layouts.iter().filter(|l| !l.kind().is_key_value()).map(Reader::of).collect();
        let pairs = [files_vs_db(&readers)];
        for cold in [false, true] {
            let cache = if cold { "cold" } else { "warm" };
            let mut bands = Vec::new();
            for b in 0..BANDS {
                let (min, max) = (lo + b * width, (lo + (b + 1) * width).min(hi + 1));
                let Some(keys) = self.band_keys(age, b, min..max) else { continue };
                check_stop()?;
                self.step(&format!("{}: crossover, age {age}, {cache}, band {}, in rounds", self.sizes.name, b + 1));
                let id = band_rounds_id(&self.sizes.name, age, cold, b + 1);
                let (figures, set) = read_rounds(&id, &readers, &keys, cold, &self.opts.rounds, &pairs)?;
                let table = set.table();
                bands.push(Band {
                    min_bytes: min,
                    max_bytes: max - 1,
                    blobs: keys.len() as u32,
                    per_op_us: readers.iter().zip(&figures).map(|(r, f)| (r.layout.id(), f.per_op_us)).collect(),
                    files_over_db: compare(&table, &pairs[0]),
                });
                out.rounds.push(set);
            }
            let from = files_faster_from(&bands, &out.layouts);
            out.crossover.push(Crossover { age, cache: cache.into(), bands, files_faster_from_bytes: from });
        }
        Ok(())
    }

    /// The keys of the blobs whose size is in `sizes`, in an order shuffled
    /// per age and band; None when the band holds no blob.
    fn band_keys(&self, age: u32, band: u32, sizes: std::ops::Range<u32>) -> Option<Arc<[u32]>> {
        let keys: Vec<u32> =
            (1..=self.blob_sizes.len() as u32).filter(|&k| sizes.contains(&self.blob_sizes[k as usize - 1])).collect();
        if keys.is_empty() {
            return None;
        }
        let order = shuffled(keys.len() as u32, u64::from(age) ^ u64::from(band));
        Some(order.iter().map(|&i| keys[i as usize - 1]).collect())
    }
}
