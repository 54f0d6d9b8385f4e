//! The answer at a glance: one row per question the result files answer,
//! with the winner, by how much, how sure that is, and a link to the chart
//! it comes from.
//!
//! Each question is an independent function of the result files and the
//! index of the one it looks at, returning a row or None when that file
//! does not answer it. The questions belong to their studies (each
//! `StudyReport`'s `questions`); this module words their answers.

use super::format::doc::{Block, Section, Verdict, VerdictRow as Row};
use super::format::fmt::machine_labels;
use super::interval::Ratio;
use super::rounds::{describe_floor, describe_sets, noise_floor};
use crate::measure::paired::PairedRatio;
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

/// The rows of `questions` for every file, in question order.
pub fn answers(files: &[ResultFile], questions: &[Question]) -> Vec<(usize, Answer)> {
    questions.iter().flat_map(|q| (0..files.len()).filter_map(move |i| q(files, i).map(|a| (i, a)))).collect()
}

/// The verdict section: the rows of `questions` (every study's, in the
/// order the verdict lists them), the noise floor and rounds, the note.
pub fn section(files: &[ResultFile], questions: &[Question]) -> Vec<Section> {
    let found = answers(files, questions);
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
    let mut blocks = vec![Block::Verdict(Verdict::new(rows))];
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

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
