//! One cell of the matrix (a blob size and a page size), what its
//! datasets take on disk and how many writes a run of it makes: what the
//! matrix's parts share.

use std::path::Path;

use crate::records::DatasetSpec;
use crate::util::fsutil;
use crate::{Error, Result};

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellSpec {
    pub size: u32,
    pub page_size: u32,
    /// Blobs in the cell (total / size), keys 1..=count.
    pub count: u32,
    /// PRAGMA cache_size of both databases, in pages.
    pub cache_pages: i64,
    /// The user's blobs ("your data"); `size` is then their mean size.
    pub yours: bool,
}

impl CellSpec {
    /// The cell's blob size in ids and directory names: "10k", or "yours".
    pub fn label(&self) -> String {
        if self.yours {
            "yours".to_string()
        } else {
            crate::util::units::short_size(u64::from(self.size))
        }
    }

    pub fn dataset(&self, seed: u64) -> DatasetSpec {
        DatasetSpec { count: self.count, size: self.size, page_size: self.page_size, seed, ..DatasetSpec::default() }
    }

    /// Rough bytes the cell's datasets take: the database, the name
    /// database, unless they already exist the files (each rounded up to a
    /// 4 KiB block), and `engines` datasets of about twice the database
    /// each (a server's cluster and WAL, an engine's rewrites) plus 64 MB.
    pub fn disk_bytes(&self, with_files: bool, engines: usize) -> u64 {
        let files = u64::from(self.count) * u64::from(self.size).div_ceil(4096) * 4096;
        let names = u64::from(self.count) * 64 + 4 * u64::from(self.page_size);
        let db = crate::engine::dataset::estimated_db_bytes(&self.dataset(1));
        let engines = engines as u64 * (2 * db + (64 << 20));
        db + names + if with_files { files } else { 0 } + engines + (4 << 20)
    }
}

/// Overwrites per timed run: a tenth of the cell's blobs (the article's
/// share), at least 20 and at most 500 (durable writes cost milliseconds).
pub(super) fn writes_per_run(spec: &CellSpec) -> u64 {
    (u64::from(spec.count) / 10).clamp(20, 500).min(u64::from(spec.count))
}

/// The values in ascending order, each once.
pub(super) fn sorted(v: &[u32]) -> Vec<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// Fails when `dir`'s filesystem has less than `need` bytes free; checked
/// up front for the largest cell and again before each cell is built.
pub(super) fn check_space(dir: &Path, need: u64, what: &str) -> Result<()> {
    let free = fsutil::free_bytes(dir)?;
    if free < need {
        return Err(Error::bad_input(
            dir,
            format!(
                "not enough free space for {what}: needs about {} MB, {} MB free (use --workdir or a smaller --total)",
                need.div_ceil(1_000_000),
                free / 1_000_000
            ),
        ));
    }
    Ok(())
}
