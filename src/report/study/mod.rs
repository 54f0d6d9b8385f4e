//! One report unit per study: each folder here turns its study's part of
//! the result files into report sections, verdict questions and terminal
//! tables, and offers them through one [`StudyReport`], listed in
//! `report::STUDIES`. Its chart ids are defined once, in the folder.

pub mod advise;
pub mod aging;
pub mod concurrency;
pub mod crashtest;
pub mod engines;
pub mod matrix;
pub mod suite;

use crate::report::format::doc::Section;
use crate::report::verdict::Question;
use crate::results::ResultFile;

/// What one study adds to the report and to its command's terminal output.
pub struct StudyReport {
    /// Its sections of the report, in page order; none when the files hold
    /// nothing of it.
    pub sections: fn(&[ResultFile]) -> Vec<Section>,
    /// Its rows of the verdict, in order (`report::VERDICT_ORDER` orders
    /// the studies).
    pub questions: &'static [Question],
    /// What its command prints after a run, from the result file it wrote,
    /// so the terminal and the file cannot disagree. The flag allows ANSI
    /// colour. Empty when the file holds nothing of the study.
    pub terminal: Option<fn(&ResultFile, bool) -> String>,
    /// The published study its charts redraw, named in the report's footer.
    pub redraws: Option<Redraw>,
    /// Its sections lead the page, before the verdict (the advice).
    pub leads: bool,
}

/// A published study that a study's charts redraw.
pub struct Redraw {
    /// "SQLite's \"Internal Versus External BLOBs\"".
    pub title: &'static str,
    /// Whether a result file holds this redraw.
    pub in_file: fn(&ResultFile) -> bool,
}
