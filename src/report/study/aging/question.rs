//! The aging study's verdict question: reads after the last storage age.

use super::{chart_id, READ_WARM_CHART};
use crate::measure::rounds::fastest;
use crate::records::LayoutId;
use crate::report::interval::Ratio;
use crate::report::verdict::Answer;
use crate::results::ResultFile;
use crate::studies::aging::{AgingSetting, LayoutInfo};

/// Warm reads at the last storage age: the fastest SQLite layout against
/// the fastest file layout, of the first size setting. With rounds, the
/// factor is paired by round (median of the per-round ratios, with its
/// interval); older files, or rounds that do not pair, fall back to the
/// per-layout medians, marked unpaired.
pub fn after_aging(files: &[ResultFile], index: usize) -> Option<Answer> {
    let aging = files[index].aging.as_ref()?;
    let setting = aging.settings.first()?;
    let age = *aging.ages.last()?;
    let (db, f, files_over_db) = paired(setting, age).or_else(|| unpaired(setting, age))?;
    let (winner, loser, factor) =
        if files_over_db.value >= 1.0 { (db, f, files_over_db) } else { (f, db, files_over_db.inverse()) };
    Some(Answer {
        question: format!("reads after {age} rewrites of every blob ({})", setting.sizes.name),
        winner: winner.title.clone(),
        loser: loser.title.clone(),
        factor,
        better: "faster",
        chart_id: chart_id(files, index, setting, READ_WARM_CHART),
        chart_title: "Warm reads by storage age".into(),
        statement: None,
    })
}

/// Is `l` on the files side (true) or SQLite's (false)? Key-value engines are on neither.
fn on_side(l: &LayoutInfo, files_side: bool) -> bool {
    if files_side {
        l.engine.is_files()
    } else {
        l.engine == crate::engine::sqlite::KIND
    }
}

/// (SQLite's fastest, the files' fastest, files over SQLite paired by
/// round) from the warm rounds at `age`; None without consistent rounds
/// holding both sides.
fn paired(setting: &AgingSetting, age: u32) -> Option<(&LayoutInfo, &LayoutInfo, Ratio)> {
    let set = setting.read_rounds(age, false).filter(|s| s.consistent())?;
    let table = set.table();
    let layout = |arm: usize| setting.layouts.iter().find(|l| LayoutId::parse(&set.arms[arm]) == Some(l.id));
    let side = |files_side: bool| -> Vec<usize> {
        (0..set.arms.len()).filter(|&i| layout(i).is_some_and(|l| on_side(l, files_side))).collect()
    };
    let (d, f) = (fastest(&table, &side(false))?, fastest(&table, &side(true))?);
    let ratio = set.ratio(&set.arms[f], &set.arms[d])?;
    Some((layout(d)?, layout(f)?, Ratio::paired(&ratio)))
}

/// The earlier method, for files without rounds: the ratio of the two
/// layouts' medians, marked unpaired ([`super::paired::unpaired`]).
fn unpaired(setting: &AgingSetting, age: u32) -> Option<(&LayoutInfo, &LayoutInfo, Ratio)> {
    let best = |files_side: bool| {
        setting
            .layouts
            .iter()
            .filter(|l| on_side(l, files_side))
            .filter_map(|l| {
                let p = setting.points.iter().find(|p| p.layout == l.id && p.age == age && p.remedy.is_none())?;
                p.read_warm.map(|r| (l, r))
            })
            .min_by(|a, b| a.1.per_op_us.total_cmp(&b.1.per_op_us))
    };
    let ((db, d), (f, fr)) = (best(false)?, best(true)?);
    Some((db, f, super::paired::unpaired(&fr, &d)))
}

#[cfg(test)]
#[path = "question_tests.rs"]
mod tests;
