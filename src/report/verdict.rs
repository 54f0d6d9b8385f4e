//! The answer at a glance: one row per question the result files answer,
//! with the winner, by how much, how sure that is, and a link to the chart
//! it comes from.
//!
//! Each question is an independent function of the result files and the
//! index of the one it looks at, returning a row or None when that file
//! does not answer it. A new study adds one function to [`QUESTIONS`].
//! The questions of the engines, aging and power cuts are in
//! `verdict_more.rs`.

use super::format::doc::{Block, Section, VerdictRow as Row};
use super::format::fmt::{blob_size, machine_labels};
use super::interval::{time_ratio, Ratio};
use super::rounds::{describe_floor, describe_sets, noise_floor};
use super::study::suite::{suite_files, Method, ARTICLE, DISK_CHART, DURABLE_WRITE_CHART, FAIR};
use super::verdict_more::{after_aging, after_power_cut, engine_durable_writes, engine_reads};
use crate::measure::paired::PairedRatio;
use crate::measure::Experiment;
use crate::results::ResultFile;

/// One answered question for one result file.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// "10 KB reads", "durable writes", ...
    pub question: String,
    /// What won and what lost, as the charts' legends name them.
    pub winner: String,
    pub loser: String,
    /// Loser's cost over the winner's (time, or bytes): 1.9 means 1.9x.
    pub factor: Ratio,
    /// "faster" or "smaller".
    pub better: &'static str,
    /// The chart the answer comes from (figure id) and its title.
    pub chart_id: String,
    pub chart_title: String,
    /// For answers that are counts, not a ratio (power cuts): what to say
    /// instead of the winner and factor, and what it is based on.
    pub statement: Option<(String, String)>,
}

impl Answer {
    /// "SQLite, blob API + mmap: 1.90x faster", or "no clear winner".
    pub fn outcome(&self) -> String {
        self.outcome_over(None)
    }

    /// [`Answer::outcome`], saying "within noise" when a paired factor lies
    /// inside the file's A/A noise floor.
    pub fn outcome_over(&self, floor: Option<&PairedRatio>) -> String {
        if let Some((text, _)) = &self.statement {
            text.clone()
        } else if self.factor.spans_one() {
            "no clear winner (the interval spans 1.0)".to_string()
        } else if self.within_noise(floor) {
            format!("within noise ({:.2}x is inside the A/A noise floor)", self.factor.value)
        } else {
            format!("{}: {:.2}x {}", self.winner, self.factor.value, self.better)
        }
    }

    fn within_noise(&self, floor: Option<&PairedRatio>) -> bool {
        matches!((self.factor.as_paired(), floor), (Some(f), Some(floor)) if f.within(floor))
    }
}

/// A question asked of `files[index]`.
pub type Question = fn(&[ResultFile], usize) -> Option<Answer>;

/// The questions, in the order the verdict lists them.
pub const QUESTIONS: &[Question] = &[
    warm_reads,
    fast_writes,
    durable_writes,
    disk_space,
    cold_reads,
    under_threads,
    engine_reads,
    engine_durable_writes,
    after_aging,
    after_power_cut,
];

/// The rows of every question for every file, in question order.
pub fn answers(files: &[ResultFile]) -> Vec<(usize, Answer)> {
    QUESTIONS.iter().flat_map(|q| (0..files.len()).filter_map(move |i| q(files, i).map(|a| (i, a)))).collect()
}

pub fn section(files: &[ResultFile]) -> Vec<Section> {
    let found = answers(files);
    if found.is_empty() {
        return Vec::new();
    }
    let labels = machine_labels(files);
    let floors: Vec<Option<PairedRatio>> = files.iter().map(noise_floor).collect();
    let rows: Vec<Row> = found
        .into_iter()
        .map(|(i, a)| Row {
            result: labels[i].clone(),
            outcome: a.outcome_over(floors[i].as_ref()),
            factor: if a.statement.is_some() { "-".to_string() } else { format!("{:.2}x", a.factor.value) },
            uncertainty: a.statement.as_ref().map_or_else(|| a.factor.describe(), |(_, basis)| basis.clone()),
            compared: if a.statement.is_some() {
                "methods that acknowledge durable writes".to_string()
            } else {
                format!("{} vs {}", a.winner, a.loser)
            },
            unclear: a.statement.is_none() && (a.factor.spans_one() || a.within_noise(floors[i].as_ref())),
            question: a.question,
            chart_id: a.chart_id,
            chart_title: a.chart_title,
        })
        .collect();
    let note = Block::Note(
        "Factor: the loser's cost over the winner's. With rounds (paired), the median over rounds of the \
         per-round ratio of the two per-op times, each round running every arm once in a shuffled order; \
         uncertainty: the distribution-free 95% interval of that median (min-max, with its lower coverage, \
         below 6 rounds). \"Within noise\" when the factor lies inside the A/A noise floor. Files without \
         rounds (unpaired): the ratio of the two medians over the timed runs, with a 95% bootstrap interval \
         (fixed seed), or the min-max range when either side has fewer than 5 runs. Disk space: allocated \
         bytes. \"No clear winner\" when the interval spans 1.0."
            .to_string(),
    );
    let mut blocks = vec![Block::Verdict(rows)];
    let several = files.len() > 1;
    let lines: Vec<String> = files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| {
            let who = if several { format!("{}: ", labels[i]) } else { String::new() };
            let floor = floors[i].as_ref().map(|fl| format!("{who}{}", describe_floor(fl)));
            floor.into_iter().chain(describe_sets(f).into_iter().map(move |l| format!("{who}{l}")).collect::<Vec<_>>())
        })
        .collect();
    if !lines.is_empty() {
        blocks.push(Block::List(lines));
    }
    blocks.push(note);
    vec![Section { id: "verdict".into(), title: "Verdict".into(), in_summary: true, blocks }]
}

fn median_time(e: &Experiment) -> Option<f64> {
    Some(e.summary.per_op_us.median).filter(|v| v.is_finite() && *v > 0.0 && e.summary.runs > 0)
}

/// The fastest of `methods` measured in `file`, by median per-op time.
fn fastest<'a>(file: &'a ResultFile, methods: &[Method]) -> Option<(Method, &'a Experiment)> {
    methods
        .iter()
        .filter_map(|m| file.experiment(m.id).filter(|e| median_time(e).is_some()).map(|e| (*m, e)))
        .min_by(|a, b| median_time(a.1).unwrap_or(f64::MAX).total_cmp(&median_time(b.1).unwrap_or(f64::MAX)))
}

/// SQLite's best against the files' best among the methods of `charts`;
/// the chart linked is the one drawing the two winners side by side.
fn duel(file: &ResultFile, question: String, charts: &[&super::study::suite::Spec]) -> Option<Answer> {
    let dbs: Vec<Method> = charts.iter().map(|s| s.db).collect();
    let fs: Vec<Method> = charts.iter().flat_map(|s| s.files.iter().copied()).collect();
    let (db, db_e) = fastest(file, &dbs)?;
    let (f, f_e) = fastest(file, &fs)?;
    let spec = charts.iter().find(|s| s.db.id == db.id && s.files.iter().any(|m| m.id == f.id)).or(charts.first())?;
    let files_over_db = time_ratio(file, &f_e.id, &db_e.id)?;
    let (db_name, f_name) = (db.name.to_string(), f.name.to_string());
    let (winner, loser, factor) = if files_over_db.value >= 1.0 {
        (db_name, f_name, files_over_db)
    } else {
        (f_name, db_name, files_over_db.inverse())
    };
    Some(Answer {
        question,
        winner,
        loser,
        factor,
        better: "faster",
        chart_id: spec.id.to_string(),
        chart_title: spec.title.to_string(),

        statement: None,
    })
}

fn is_suite(files: &[ResultFile], index: usize) -> bool {
    suite_files(files).iter().any(|(_, f)| std::ptr::eq(*f, &files[index]))
}

fn reads(files: &[ResultFile], index: usize, cold: bool) -> Option<Answer> {
    let file = &files[index];
    if !is_suite(files, index) {
        return None;
    }
    let was_cold = file.experiments.iter().any(|e| e.id.starts_with("read/") && e.params.plan.cold);
    if was_cold != cold {
        return None;
    }
    let size = file.dataset.as_ref().map_or_else(|| "blob".to_string(), |d| blob_size(d.size));
    let question = if cold { format!("{size} reads, cold cache") } else { format!("{size} reads") };
    let charts: Vec<&super::study::suite::Spec> = ARTICLE.iter().chain(FAIR.iter()).filter(|s| !s.write).collect();
    duel(file, question, &charts)
}

/// Reads with the page cache warm (kvtest's default).
pub fn warm_reads(files: &[ResultFile], index: usize) -> Option<Answer> {
    reads(files, index, false)
}

/// Reads after the page cache was dropped before each run (`--cold`).
pub fn cold_reads(files: &[ResultFile], index: usize) -> Option<Answer> {
    reads(files, index, true)
}

/// Writes without waiting for the disk: SQLite's WAL/NORMAL or journal OFF
/// against plain file writes.
pub fn fast_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    if !is_suite(files, index) {
        return None;
    }
    let charts: Vec<&super::study::suite::Spec> =
        FAIR.iter().filter(|s| s.write && s.id != DURABLE_WRITE_CHART).collect();
    duel(&files[index], "fast writes (no fsync)".into(), &charts)
}

/// Writes that survive a power cut: WAL/FULL against files with fsync.
pub fn durable_writes(files: &[ResultFile], index: usize) -> Option<Answer> {
    if !is_suite(files, index) {
        return None;
    }
    let charts: Vec<&super::study::suite::Spec> = FAIR.iter().filter(|s| s.id == DURABLE_WRITE_CHART).collect();
    duel(&files[index], "durable writes (fsync)".into(), &charts)
}

/// Allocated bytes of the database against the smaller file layout.
pub fn disk_space(files: &[ResultFile], index: usize) -> Option<Answer> {
    let file = &files[index];
    let allocated = |layout: &str| {
        file.disk_usage.iter().find(|d| d.layout == layout).map(|d| d.allocated_bytes).filter(|b| *b > 0)
    };
    let db = allocated("db")? as f64;
    let (layout, fs) = ["flat", "tree"]
        .into_iter()
        .filter_map(|l| allocated(l).map(|b| (l, b as f64)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let fs_name = if layout == "flat" { "files, one directory" } else { "files, tree" };
    let (winner, loser, factor) =
        if fs >= db { ("SQLite database", fs_name, fs / db) } else { (fs_name, "SQLite database", db / fs) };
    Some(Answer {
        question: "disk space".into(),
        winner: winner.into(),
        loser: loser.into(),
        factor: Ratio::exact(factor),
        better: "smaller",
        chart_id: DISK_CHART.into(),
        chart_title: "Disk space relative to the database".into(),

        statement: None,
    })
}

/// The blob readers of `concurrency`: at the most threads measured, the
/// faster database variant against files, by per-read wall time.
pub fn under_threads(files: &[ResultFile], index: usize) -> Option<Answer> {
    let readers = files[index].concurrency.as_ref()?.blob_readers.as_ref()?;
    let threads = readers.points.iter().map(|p| p.threads).max()?;
    let times = |store: &str| {
        let p = readers.points.iter().find(|p| p.store == store && p.threads == threads)?;
        let e = files[index].experiment(&p.experiment_id)?;
        median_time(e).map(|m| (m, e.id.clone(), p.label.clone()))
    };
    let (_, db_id, db_label) = ["db", "db-mmap"].into_iter().filter_map(times).min_by(|a, b| a.0.total_cmp(&b.0))?;
    let (_, f_id, f_label) = times("files")?;
    let files_over_db = time_ratio(&files[index], &f_id, &db_id)?;
    let (winner, loser, factor) = if files_over_db.value >= 1.0 {
        (db_label, f_label, files_over_db)
    } else {
        (f_label, db_label, files_over_db.inverse())
    };
    Some(Answer {
        question: format!("{} reads, {threads} threads", blob_size(readers.blob_size)),
        winner,
        loser,
        factor,
        better: "faster",
        chart_id: super::study::concurrency::blobs_chart_id(files, index),
        chart_title: "Blob readers".into(),

        statement: None,
    })
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
