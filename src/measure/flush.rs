//! What one flush costs on the disk a dataset lives on, measured outside
//! every timer: every durable ranking rests on it. Two flushes an
//! application makes: `fdatasync` after rewriting one 4 KiB block of an
//! existing file (a database's commit, an overwrite in place), and a new
//! 4 KiB file's `fsync` with its directory's (a file written by temp +
//! rename, a new blob). A flush answered in well under 100 µs did not
//! wait for a disk's media: the device acknowledges it from a cache (a
//! hypervisor's, or a drive's with power-loss protection), and
//! durability there rests on that cache, which blobbench cannot see.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

use rand::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Flushes of each kind measured.
pub const TRIALS: u32 = 40;

/// Below this median a flush is taken to be acknowledged from a cache.
pub const CACHED_BELOW_US: f64 = 100.0;

/// Bytes of one write before a flush.
const BLOCK: usize = 4096;

/// One kind of flush's median and slowest trial, in microseconds. Over
/// [`TRIALS`] trials no tail percentile above the 97.5th is more than the
/// slowest one (a p99 needs 100), so the tail is named for what it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlushTimes {
    pub p50_us: f64,
    /// Older files call it `p99_us`: the nearest-rank p99 of their 40
    /// trials, which was the slowest.
    #[serde(alias = "p99_us")]
    pub max_us: f64,
}

/// What one flush cost on a directory's disk.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlushCost {
    /// Flushes of each kind behind the figures.
    pub trials: u32,
    /// `fdatasync` after rewriting one 4 KiB block of an existing file.
    pub rewrite_fdatasync: FlushTimes,
    /// A new 4 KiB file written, `fsync`ed, and its directory `fsync`ed.
    pub new_file_fsync_dir: FlushTimes,
}

impl FlushCost {
    /// The device seems to acknowledge flushes from a cache: the
    /// rewrite's median flush is under [`CACHED_BELOW_US`].
    pub fn from_cache(&self) -> bool {
        self.rewrite_fdatasync.p50_us < CACHED_BELOW_US
    }
}

/// Measures both flushes `trials` times each in a temporary directory
/// made inside `dir` (removed after).
pub fn measure(dir: &Path, trials: u32) -> Result<FlushCost> {
    let io = |what: &'static str| move |e| Error::io(dir, what, e);
    let tmp = tempfile::Builder::new()
        .prefix(".blobbench-flush")
        .tempdir_in(dir)
        .map_err(io("cannot make a directory in"))?;
    let here = tmp.path();
    let mut block = vec![0u8; BLOCK];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0xf1_a5);
    let mut file = File::create(here.join("rewritten")).map_err(io("cannot write in"))?;
    file.write_all(&vec![0u8; BLOCK * 16]).and_then(|()| file.sync_all()).map_err(io("cannot write in"))?;
    let mut rewrite = Vec::with_capacity(trials as usize);
    for i in 0..u64::from(trials) {
        rng.fill_bytes(&mut block);
        let start = Instant::now();
        file.seek(SeekFrom::Start(i % 16 * BLOCK as u64))
            .and_then(|_| file.write_all(&block))
            .and_then(|()| file.sync_data())
            .map_err(io("cannot rewrite a file in"))?;
        rewrite.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let folder = File::open(here).map_err(io("cannot open"))?;
    let mut new_file = Vec::with_capacity(trials as usize);
    for i in 0..trials {
        rng.fill_bytes(&mut block);
        let start = Instant::now();
        let mut f = File::create(here.join(format!("new-{i}"))).map_err(io("cannot write in"))?;
        f.write_all(&block)
            .and_then(|()| f.sync_all())
            .and_then(|()| folder.sync_all())
            .map_err(io("cannot write in"))?;
        new_file.push(start.elapsed().as_secs_f64() * 1e6);
    }
    tmp.close().map_err(io("cannot remove its temporary directory in"))?;
    Ok(FlushCost { trials, rewrite_fdatasync: times(rewrite), new_file_fsync_dir: times(new_file) })
}

/// The median (nearest rank) and the slowest of `us`.
fn times(mut us: Vec<f64>) -> FlushTimes {
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us.get(((q * us.len() as f64).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    FlushTimes { p50_us: at(0.5), max_us: us.last().copied().unwrap_or(0.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_flushes_are_timed_and_nothing_is_left_behind() {
        let d = tempfile::tempdir().unwrap();
        let c = measure(d.path(), 3).unwrap();
        assert_eq!(c.trials, 3);
        for t in [c.rewrite_fdatasync, c.new_file_fsync_dir] {
            assert!(t.p50_us > 0.0 && t.p50_us <= t.max_us, "{t:?}");
        }
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "its directory is gone");
        assert!(measure(&d.path().join("missing"), 1).is_err());
    }

    #[test]
    fn the_median_is_nearest_rank_the_tail_the_slowest_and_a_fast_median_is_a_cache() {
        let t = times((1..=100).map(f64::from).rev().collect());
        assert_eq!((t.p50_us, t.max_us), (50.0, 100.0));
        let forty = times((1..=TRIALS).map(f64::from).collect());
        assert_eq!((forty.p50_us, forty.max_us), (20.0, 40.0));
        let cost = |p50_us| FlushCost {
            trials: 1,
            rewrite_fdatasync: FlushTimes { p50_us, max_us: p50_us },
            new_file_fsync_dir: FlushTimes { p50_us, max_us: p50_us },
        };
        assert!(cost(9.0).from_cache() && !cost(244.0).from_cache());
    }

    /// A file from before the tail was named for what it is reads back:
    /// its "p99" of 40 trials was their slowest.
    #[test]
    fn an_older_files_p99_reads_as_the_slowest() {
        let t: FlushTimes = serde_json::from_str(r#"{"p50_us": 3.0, "p99_us": 9.0}"#).unwrap();
        assert_eq!((t.p50_us, t.max_us), (3.0, 9.0));
        assert!(serde_json::to_string(&t).unwrap().contains("max_us"));
    }
}
