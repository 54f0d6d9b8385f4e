//! The `matrix` section of a result file: the parameters, each measured
//! cell with its three read figures, and what the study concludes from
//! them (crossovers, the best page size, the grids the report draws).

use serde::{Deserialize, Serialize};

use super::cells::sorted;
use super::crossover::{crossover, Crossover};
use super::db_read::DbRead;
use super::engines::{EngineCell, EngineCrossover};
use super::writes::{CellWrites, WriteCrossover};
use crate::measure::{Experiment, NOISY_CV_PCT};
use crate::records::keys::Order;
use crate::records::{EngineKind, FileRead, Plan, SizesFrom};
use crate::util::units::plural;

/// What the ratios divide, stated in every output.
pub const RATIO_FIGURE: &str =
    "median over the timed runs of the loop time per blob read (open, transaction and close excluded)";

/// The `matrix` section of a result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixSection {
    pub params: MatrixParams,
    /// What the ratios divide (see [`RATIO_FIGURE`]).
    pub ratio_figure: String,
    /// The measured cells, in the order measured (by blob size, then page size).
    pub cells: Vec<MatrixCell>,
    /// Per page size, where files start to beat the database.
    pub crossovers: Vec<PageCrossover>,
    /// Per blob size, the page size with the fastest database read.
    pub best_page_sizes: Vec<BestPageSize>,
    /// Per page size, where files start to beat the database at writing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_crossovers: Vec<WriteCrossover>,
    /// The "your data" cells, one per page size (see `params.sizes_from`);
    /// their `size_bytes` is the blobs' mean size. Not in the grids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yours: Vec<MatrixCell>,
    /// Per engine (`--engines`), where files start to beat it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_crossovers: Vec<EngineCrossover>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixParams {
    pub sizes_bytes: Vec<u32>,
    pub page_sizes: Vec<u32>,
    pub total_bytes: u64,
    pub cache_bytes: u64,
    pub plan: Plan,
    pub order: Order,
    /// How files are read, by the external and direct layouts alike.
    pub file_read: FileRead,
    pub seed: u64,
    pub workdir: String,
    /// Where the "your data" cells' blobs came from (absent without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes_from: Option<SizesFrom>,
    /// Engines measured beside the files (`--engines`), in the cells of
    /// `engine_page_size`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_page_size: Option<u32>,
    /// How the cells read blobs out of SQLite (older files: SQL).
    #[serde(default)]
    pub db_read: DbRead,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixCell {
    pub size_bytes: u32,
    pub page_size: u32,
    pub count: u32,
    pub content_bytes: u64,
    pub cache_pages: i64,
    /// Blobs inside the database, read as `params.db_read` says.
    pub internal: Experiment,
    /// Names in a database, blobs in files: lookup, then the file.
    pub external: Experiment,
    /// The same files opened directly by key, no database.
    pub direct: Experiment,
    /// external / internal of the ratio figure; above 1.0 the database is faster.
    pub external_ratio: f64,
    /// direct / internal of the ratio figure.
    pub direct_ratio: f64,
    /// The rounds the three reads ran in (absent in older files, whose
    /// ratios are of the medians, unpaired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<crate::measure::rounds::RoundSet>,
    /// The cell's write experiments (absent in older files and with
    /// `--reads-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<CellWrites>,
    /// The engines measured in this cell (`--engines`, at the engines' page
    /// size only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engines: Vec<EngineCell>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageCrossover {
    pub page_size: u32,
    pub external: Crossover,
    pub direct: Crossover,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BestPageSize {
    pub size_bytes: u32,
    pub page_size: u32,
    /// Its database read time (the ratio figure), microseconds per blob.
    pub internal_us: f64,
    pub external_ratio: f64,
}

/// Which figure of the cells a grid shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    ExternalRatio,
    DirectRatio,
    /// The database read time, microseconds per blob.
    InternalUs,
}

/// Values by page size (rows) and blob size (columns); None where no cell
/// was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub sizes: Vec<u32>,
    pub page_sizes: Vec<u32>,
    pub values: Vec<Vec<Option<f64>>>,
}

impl Grid {
    /// (size, value) of the measured cells of one row, ascending in size.
    pub fn row_points(&self, row: usize) -> Vec<(f64, f64)> {
        self.sizes.iter().zip(&self.values[row]).filter_map(|(&s, v)| v.map(|v| (f64::from(s), v))).collect()
    }
}

impl MatrixCell {
    /// external / internal paired by round, with its interval (None for
    /// older files, whose cells were not measured in rounds).
    pub fn external_paired(&self) -> Option<crate::measure::paired::PairedRatio> {
        self.rounds.as_ref()?;
        crate::measure::paired::paired_ratio(&self.external.loop_times(), &self.internal.loop_times())
    }

    pub fn figure(&self, f: Figure) -> f64 {
        match f {
            Figure::ExternalRatio => self.external_ratio,
            Figure::DirectRatio => self.direct_ratio,
            Figure::InternalUs => ratio_figure(&self.internal),
        }
    }
}

/// The figure ratios are taken of (see [`RATIO_FIGURE`]), in microseconds.
pub fn ratio_figure(e: &Experiment) -> f64 {
    e.summary.loop_per_op_us.median
}

impl MatrixSection {
    /// "12-20 interleaved rounds per cell, ratios paired by round", or for
    /// older files "3 timed runs per cell".
    pub fn runs_phrase(&self) -> String {
        let counts: Vec<usize> = self.cells.iter().filter_map(|c| c.rounds.as_ref().map(|r| r.rounds.len())).collect();
        match (counts.iter().min(), counts.iter().max()) {
            (Some(lo), Some(hi)) if counts.len() == self.cells.len() => {
                let n = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
                format!("{n} interleaved rounds per cell, ratios paired by round (median of per-round ratios)")
            }
            _ => {
                let r = self.params.plan.repeat;
                format!("{r} timed run{} per cell (unpaired)", plural(r))
            }
        }
    }

    /// The section for `cells`, with crossovers and best page sizes derived.
    pub fn new(params: MatrixParams, cells: Vec<MatrixCell>) -> Self {
        let mut section = MatrixSection {
            params,
            ratio_figure: RATIO_FIGURE.to_string(),
            cells,
            crossovers: Vec::new(),
            best_page_sizes: Vec::new(),
            write_crossovers: Vec::new(),
            yours: Vec::new(),
            engine_crossovers: Vec::new(),
        };
        let (ext, direct) = (section.grid(Figure::ExternalRatio), section.grid(Figure::DirectRatio));
        for (row, &page_size) in ext.page_sizes.iter().enumerate() {
            if let (Some(external), Some(direct)) =
                (crossover(&ext.row_points(row)), crossover(&direct.row_points(row)))
            {
                section.crossovers.push(PageCrossover { page_size, external, direct });
            }
        }
        for &size in &ext.sizes {
            let best = section
                .cells
                .iter()
                .filter(|c| c.size_bytes == size)
                .min_by(|a, b| ratio_figure(&a.internal).total_cmp(&ratio_figure(&b.internal)));
            if let Some(c) = best {
                section.best_page_sizes.push(BestPageSize {
                    size_bytes: size,
                    page_size: c.page_size,
                    internal_us: ratio_figure(&c.internal),
                    external_ratio: c.external_ratio,
                });
            }
        }
        section.write_crossovers = section.write_crossovers();
        section.engine_crossovers = section.engine_crossovers();
        section
    }

    /// Cells where one of the three measurements varied between runs by
    /// more than [`NOISY_CV_PCT`] (coefficient of variation of the ratio
    /// figure), and the largest such variation in percent.
    pub fn noisy_cells(&self) -> (usize, f64) {
        let cv = |c: &MatrixCell| {
            [&c.internal, &c.external, &c.direct].iter().map(|e| e.summary.loop_per_op_us.cv_pct).fold(0.0, f64::max)
        };
        let noisy: Vec<f64> = self.cells.iter().map(cv).filter(|&v| v > NOISY_CV_PCT).collect();
        (noisy.len(), noisy.iter().copied().fold(0.0, f64::max))
    }

    /// One figure of every cell, laid out as the study's table.
    pub fn grid(&self, f: Figure) -> Grid {
        let (sizes, page_sizes) = (sorted(&self.params.sizes_bytes), sorted(&self.params.page_sizes));
        let values = page_sizes
            .iter()
            .map(|&p| {
                sizes
                    .iter()
                    .map(|&s| self.cells.iter().find(|c| c.page_size == p && c.size_bytes == s).map(|c| c.figure(f)))
                    .collect()
            })
            .collect();
        Grid { sizes, page_sizes, values }
    }
}

impl MatrixSection {
    /// Per engine, the read crossover (and the writes' when measured) over
    /// the fixed-size cells of the engines' page size.
    pub fn engine_crossovers(&self) -> Vec<EngineCrossover> {
        let Some(page_size) = self.params.engine_page_size else { return Vec::new() };
        let mut out = Vec::new();
        for &engine in &self.params.engines {
            let points = |f: &dyn Fn(&EngineCell) -> Option<f64>| -> Vec<(f64, f64)> {
                let mut p: Vec<(f64, f64)> = self
                    .cells
                    .iter()
                    .filter(|c| c.page_size == page_size)
                    .filter_map(|c| c.engines.iter().find(|e| e.engine == engine).map(|e| (c.size_bytes, e)))
                    .filter_map(|(size, e)| f(e).map(|v| (f64::from(size), v)))
                    .collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                p
            };
            let Some(read) = crossover(&points(&|e| Some(e.files_ratio.value))) else { continue };
            let fast = crossover(&points(&|e| e.writes.as_ref().map(|w| w.fast_ratio.value)));
            let durable = crossover(&points(&|e| e.writes.as_ref().map(|w| w.durable_ratio.value)));
            out.push(EngineCrossover { engine, page_size, read, fast, durable });
        }
        out
    }

    /// The engines' cells of one engine, ascending in blob size.
    pub fn engine_cells(&self, engine: EngineKind) -> Vec<(u32, &EngineCell)> {
        let mut v: Vec<(u32, &EngineCell)> = self
            .cells
            .iter()
            .filter_map(|c| c.engines.iter().find(|e| e.engine == engine).map(|e| (c.size_bytes, e)))
            .collect();
        v.sort_by_key(|(size, _)| *size);
        v
    }
}

impl MatrixSection {
    /// Per page size, the write crossovers (fast and durable).
    pub fn write_crossovers(&self) -> Vec<WriteCrossover> {
        let mut out = Vec::new();
        for &page_size in &sorted(&self.params.page_sizes) {
            let points = |f: fn(&CellWrites) -> f64| -> Vec<(f64, f64)> {
                let mut p: Vec<(f64, f64)> = self
                    .cells
                    .iter()
                    .filter(|c| c.page_size == page_size)
                    .filter_map(|c| c.writes.as_ref().map(|w| (f64::from(c.size_bytes), f(w))))
                    .collect();
                p.sort_by(|a, b| a.0.total_cmp(&b.0));
                p
            };
            if let (Some(fast), Some(durable)) =
                (crossover(&points(|w| w.fast_ratio)), crossover(&points(|w| w.durable_ratio)))
            {
                out.push(WriteCrossover { page_size, fast, durable });
            }
        }
        out
    }
}
