//! The user's own blobs in the matrix (`--from DIR`, `--size-dist DIST`):
//! one more cell per page size, "your data", holding up to the matrix's
//! content per cell of them, so it compares with the fixed-size cells
//! at the same cache-to-data ratio.

use crate::engine::dataset::from_dir::{self, Scan};
use crate::records::{DatasetSpec, SizeDist, SizeSource, SizesFrom};
use crate::{Error, Result};

/// What a cell's blobs are made of.
#[derive(Debug, Clone)]
pub(super) enum Content {
    /// Random content, every blob the cell's size (the fixed-size cells).
    Fixed,
    /// Random content, sizes drawn from a distribution.
    Dist(SizeDist),
    /// The files a scan found (only read).
    Files(Scan),
}

impl Content {
    /// The kvtest dataset of a cell with this content (for `Files`, what
    /// its estimates assume: `count` blobs of the cell's mean size).
    pub(super) fn dataset(&self, base: DatasetSpec) -> DatasetSpec {
        match self {
            Content::Dist(d) => DatasetSpec { sizes: Some(d.clone()), ..base },
            Content::Fixed | Content::Files(_) => base,
        }
    }
}

/// The user's blobs, resolved before anything is built.
#[derive(Debug, Clone)]
pub(super) struct Yours {
    pub content: Content,
    /// Blobs per cell.
    pub count: u32,
    /// Their mean size in bytes (the cell's `size_bytes`).
    pub mean: u32,
    pub from: SizesFrom,
}

/// Checks the user's blobs and picks those a cell of `total` bytes holds:
/// `total / mean` drawn blobs, or an evenly spaced sample of the files.
pub(super) fn resolve(source: &SizeSource, total: u64) -> Result<Yours> {
    match source {
        SizeSource::Dist(dist) => {
            dist.validate().map_err(|e| Error::invalid(format!("--size-dist: {e}")))?;
            let mean = dist.mean().round().max(1.0);
            let count = (total as f64 / mean).floor();
            if count < 1.0 {
                return Err(Error::invalid(format!(
                    "--total {total} holds no blob of {}'s mean size ({mean} bytes)",
                    dist.describe()
                )));
            }
            if count > f64::from(i32::MAX) {
                return Err(Error::invalid(format!(
                    "--total {total} makes {count} blobs of {}, more than the {} keys a cell can hold",
                    dist.describe(),
                    i32::MAX
                )));
            }
            let from = SizesFrom::Distribution { dist: dist.clone() };
            Ok(Yours { content: Content::Dist(dist.clone()), count: count as u32, mean: mean as u32, from })
        }
        SizeSource::Files(dir) => {
            let found = from_dir::scan(dir)?;
            let used = found.within_bytes(total);
            let count = used.files.len() as u32;
            let mean = (used.content_bytes() / u64::from(count.max(1))).max(1) as u32;
            let from = used.sizes_from(&found);
            Ok(Yours { content: Content::Files(used), count, mean, from })
        }
    }
}
