//! The concurrency study's verdict question: blob reads under threads.

use super::blobs_chart_id;
use crate::report::format::fmt::blob_size;
use crate::report::interval::time_ratio;
use crate::report::verdict::Answer;
use crate::results::ResultFile;
use crate::studies::concurrency::StoreId;

/// The blob readers of `concurrency`: at the most threads measured, the
/// faster database variant against files, by per-read wall time.
pub fn under_threads(files: &[ResultFile], index: usize) -> Option<Answer> {
    let readers = files[index].concurrency.as_ref()?.blob_readers.as_ref()?;
    let threads = readers.points.iter().map(|p| p.threads).max()?;
    let times = |store: StoreId| {
        let p = readers.points.iter().find(|p| p.store == store && p.threads == threads)?;
        let e = files[index].experiment(&p.experiment_id)?;
        e.figure_us().map(|m| (m, e.id.clone(), p.label.clone()))
    };
    let (_, db_id, db_label) = StoreId::DB_READERS.into_iter().filter_map(times).min_by(|a, b| a.0.total_cmp(&b.0))?;
    let (_, f_id, f_label) = times(StoreId::Files)?;
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
        chart_id: blobs_chart_id(files, index),
        chart_title: "Blob readers".into(),

        statement: None,
    })
}
