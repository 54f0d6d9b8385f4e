//! The aging study's verdict question: reads after the last storage age.

use super::{chart_id, READ_WARM_CHART};
use crate::report::interval::{Method as Interval, Ratio};
use crate::report::verdict::Answer;
use crate::results::ResultFile;

/// Warm reads at the last storage age: the fastest SQLite layout against
/// the fastest file layout, of the first size setting. The points keep a
/// median and a coefficient of variation, not every run, so the factor is
/// called clear only when it exceeds both sides' run-to-run spread.
pub fn after_aging(files: &[ResultFile], index: usize) -> Option<Answer> {
    let aging = files[index].aging.as_ref()?;
    let setting = aging.settings.first()?;
    let age = *aging.ages.last()?;
    let best = |files_side: bool| {
        setting
            .layouts
            .iter()
            .filter(|l| l.engine.is_files() == files_side && (files_side || l.engine == crate::engine::sqlite::KIND))
            .filter_map(|l| {
                let p = setting.points.iter().find(|p| p.layout == l.id && p.age == age && p.remedy.is_none())?;
                p.read_warm.map(|r| (l.title.clone(), r.per_op_us, r.cv_pct, r.runs))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let (db, f) = (best(false)?, best(true)?);
    let files_over_db = f.1 / db.1;
    let (winner, loser, value) =
        if files_over_db >= 1.0 { (db, f, files_over_db) } else { (f, db, 1.0 / files_over_db) };
    let spread = (winner.2 + loser.2) / 100.0;
    let runs = (loser.3 as usize, winner.3 as usize);
    let factor = Ratio {
        low: value / (1.0 + spread),
        high: value * (1.0 + spread),
        method: Interval::MinMax,
        runs,
        ..Ratio::exact(value)
    };
    let id = chart_id(files, index, setting, READ_WARM_CHART);
    Some(Answer {
        question: format!("reads after {age} rewrites of every blob ({})", setting.sizes.name),
        winner: winner.0,
        loser: loser.0,
        factor,
        better: "faster",
        chart_id: id,
        chart_title: "Warm reads by storage age".into(),
        statement: None,
    })
}
