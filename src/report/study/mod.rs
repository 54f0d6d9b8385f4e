//! One report unit per study: each folder here turns its study's part of
//! the result files into report sections and terminal tables, and offers
//! them through one [`StudyReport`], listed in `report::STUDIES`.

pub mod aging;
pub mod concurrency;
pub mod crashtest;
pub mod engines;
pub mod matrix;
pub mod suite;

use crate::report::format::doc::Section;
use crate::results::ResultFile;

/// What one study adds to the report and to its command's terminal output.
pub struct StudyReport {
    /// The study's name, as its folder here is named (`suite`, `engines`, ...).
    pub name: &'static str,
    /// Its sections of the report, in page order; none when the files hold
    /// nothing of it.
    pub sections: fn(&[ResultFile]) -> Vec<Section>,
    /// What its command prints after a run, from the result file it wrote,
    /// so the terminal and the file cannot disagree. The flag allows ANSI
    /// colour. Empty when the file holds nothing of the study.
    pub terminal: Option<fn(&ResultFile, bool) -> String>,
    /// The published study its charts redraw, named in the report's footer.
    pub redraws: Option<Redraw>,
}

/// A published study that a study's charts redraw.
pub struct Redraw {
    /// "SQLite's \"Internal Versus External BLOBs\"".
    pub title: &'static str,
    /// Whether a result file holds this redraw.
    pub in_file: fn(&ResultFile) -> bool,
}
