//! The published 2011 matrix of SQLite's "Internal Versus External BLOBs"
//! page (SQLite 3.7.8, ext4 on a SATA disk), shown beside a new one.

use super::options::{STUDY_PAGE_SIZES, STUDY_SIZES};
use super::section::Grid;

/// Time to read from separate files / time to read from the database, rows
/// by page size and columns by blob size as above.
pub const STUDY_RATIOS: [[f64; 7]; 7] = [
    [1.535, 1.020, 0.608, 0.456, 0.330, 0.247, 0.233],
    [2.004, 1.437, 0.870, 0.636, 0.483, 0.372, 0.340],
    [2.261, 1.886, 1.173, 0.890, 0.701, 0.526, 0.487],
    [2.240, 1.866, 1.334, 1.035, 0.830, 0.625, 0.720],
    [2.439, 1.757, 1.292, 1.023, 0.829, 0.820, 0.598],
    [1.878, 1.843, 1.296, 0.981, 0.976, 0.675, 0.613],
    [1.256, 1.255, 1.339, 0.983, 0.769, 0.687, 0.609],
];

/// The study's matrix as a grid.
pub fn study_grid() -> Grid {
    Grid {
        sizes: STUDY_SIZES.to_vec(),
        page_sizes: STUDY_PAGE_SIZES.to_vec(),
        values: STUDY_RATIOS.iter().map(|row| row.iter().map(|&v| Some(v)).collect()).collect(),
    }
}

/// The study's ratio for one cell, when the study measured it.
pub fn study_ratio(size: u32, page_size: u32) -> Option<f64> {
    let c = STUDY_SIZES.iter().position(|&s| s == size)?;
    let r = STUDY_PAGE_SIZES.iter().position(|&p| p == page_size)?;
    Some(STUDY_RATIOS[r][c])
}
