//! The `aging` section of a result file: per size setting, per layout and
//! per storage age, read times, disk usage and fragmentation; the remedies;
//! and, for a wide size setting, the crossover size by age.

use serde::{Deserialize, Serialize};

use super::frag::OverflowLocality;
use super::sizes::SizeSetting;
use crate::measure::paired::PairedRatio;
use crate::measure::rounds::RoundSet;
use crate::measure::Experiment;
use crate::records::{EngineKind, LayoutId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgingSection {
    /// Storage ages measured: rewrites of every blob since it was written.
    pub ages: Vec<u32>,
    /// Share of the blobs deleted and inserted again per age step (0: off).
    pub churn_pct: f64,
    pub settings: Vec<AgingSetting>,
    /// Writes per commit of the rewrite passes (`--commit-every`); absent
    /// for one transaction per pass (and in files from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_every: Option<u32>,
}

/// One size setting, aged in every layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgingSetting {
    pub sizes: SizeSetting,
    pub count: u32,
    pub layouts: Vec<LayoutInfo>,
    /// One point per layout and age, in the order measured.
    pub points: Vec<AgePoint>,
    /// The aged datasets after each remedy.
    #[serde(default)]
    pub remedies: Vec<AgePoint>,
    /// Read time by blob size band and age (wide size settings only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crossover: Vec<Crossover>,
    /// Every comparison as interleaved rounds: the reads at each age (warm
    /// then cold, the layout ids as arms), the size bands of the crossover
    /// and the remedies (absent in older files: their reads are unpaired;
    /// files from before the bands and remedies ran in rounds hold only
    /// the reads at each age).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundSet>,
}

fn cache(cold: bool) -> &'static str {
    if cold {
        "cold"
    } else {
        "warm"
    }
}

/// The id of a setting's read rounds at `age`: "aging/article/age8/warm".
pub fn rounds_id(setting: &str, age: u32, cold: bool) -> String {
    format!("aging/{setting}/age{age}/{}", cache(cold))
}

/// The id of the rounds of size band `band` (from 1) at `age`:
/// "aging/large/age8/warm/band3".
pub fn band_rounds_id(setting: &str, age: u32, cold: bool, band: u32) -> String {
    format!("{}/band{band}", rounds_id(setting, age, cold))
}

/// The id of the remedies' rounds, after the last age `age`:
/// "aging/article/age8/warm/remedies".
pub fn remedy_rounds_id(setting: &str, age: u32, cold: bool) -> String {
    format!("{}/remedies", rounds_id(setting, age, cold))
}

/// Whether `id` is the rounds of a size band ([`band_rounds_id`]).
pub fn is_band_rounds(id: &str) -> bool {
    id.contains("/band")
}

/// Whether `id` is the rounds of the remedies ([`remedy_rounds_id`]).
pub fn is_remedy_rounds(id: &str) -> bool {
    id.ends_with("/remedies")
}

/// Whether `id` is the rounds of a size band or of the remedies (read by
/// the report, which says these are paired too).
pub fn is_band_or_remedy_rounds(id: &str) -> bool {
    is_band_rounds(id) || is_remedy_rounds(id)
}

/// The arm of a remedied copy in the remedies' rounds: "db-wal/vacuum".
/// The aged layout beside it is the arm named by its id alone.
pub fn remedy_arm(layout: LayoutId, remedy: &str) -> String {
    format!("{layout}/{remedy}")
}

impl AgingSetting {
    /// The reads at `age` as rounds (warm or cold); None in older files.
    pub fn read_rounds(&self, age: u32, cold: bool) -> Option<&RoundSet> {
        let id = rounds_id(&self.sizes.name, age, cold);
        self.rounds.iter().find(|s| s.id == id)
    }

    /// The remedies' rounds (warm or cold); None in older files.
    pub fn remedy_rounds(&self, cold: bool) -> Option<&RoundSet> {
        let (prefix, suffix) = (format!("aging/{}/age", self.sizes.name), format!("/{}/remedies", cache(cold)));
        self.rounds.iter().find(|s| s.id.starts_with(&prefix) && s.id.ends_with(&suffix))
    }

    /// A remedy point's read time over its aged layout's, paired by round
    /// (below 1.0 the remedy made reads faster); None in older files or
    /// when the rounds do not pair.
    pub fn remedy_effect(&self, point: &AgePoint, cold: bool) -> Option<PairedRatio> {
        let remedy = point.remedy.as_deref()?;
        self.remedy_rounds(cold)?.ratio(&remedy_arm(point.layout, remedy), point.layout.name())
    }
}

/// How one layout stores and rewrites blobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutInfo {
    /// The write configuration it is aged with: in the file, its layout
    /// id (`db-wal`, or an engine's name for its durable commit).
    pub id: LayoutId,
    pub title: String,
    pub engine: EngineKind,
}

/// One layout at one storage age (or after a remedy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgePoint {
    pub layout: LayoutId,
    pub age: u32,
    /// "vacuum", "incremental-vacuum" or "copy-rewrite" for a remedy point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// The rewrite passes that led here from the previous age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<WriteFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_warm: Option<ReadFigures>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_cold: Option<ReadFigures>,
    pub usage: Usage,
    pub fragmentation: Fragmentation,
}

/// Timed rewrite passes (one `Put` of a new size per blob, one transaction
/// per pass or one per N writes: the section's `commit_every`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WriteFigures {
    pub passes: u32,
    /// Median over the passes of the steady-state per-op time (the loop
    /// with its commits and deferred work; kvtest's open-to-close time in
    /// files from before schema version 4).
    pub per_op_us: f64,
    pub mb_per_s: f64,
    /// Churn: per-op time of the delete and of the insert pass, when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn_delete_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn_insert_us: Option<f64>,
}

/// Reads of every blob once per run, in a shuffled order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReadFigures {
    pub runs: u32,
    /// Median over runs of the steady-state per-op time (kvtest's open to
    /// close in files from before schema version 4).
    pub per_op_us: f64,
    pub cv_pct: f64,
    pub mb_per_s: f64,
    /// Per-operation latency over all timed runs.
    pub p50_us: f64,
    pub p99_us: f64,
}

impl ReadFigures {
    pub fn of(e: &Experiment) -> Self {
        let lat = e.latency.unwrap_or_default();
        ReadFigures {
            runs: e.summary.runs,
            per_op_us: e.summary.figure().median,
            cv_pct: e.summary.figure().cv_pct,
            mb_per_s: e.summary.mb_per_s.median,
            p50_us: lat.p50_us,
            p99_us: lat.p99_us,
        }
    }
}

/// Disk usage of one layout's copy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Sum of the blob sizes.
    pub content_bytes: u64,
    /// File sizes as `ls` shows them (database, WAL and journal; blob files).
    pub apparent_bytes: u64,
    /// Blocks allocated, as `du` counts them (files and directories).
    pub allocated_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_count: Option<u64>,
    /// SQLite pages on the freelist: allocated, holding nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freelist_pages: Option<u64>,
    /// No bytes on disk were counted: the store keeps none on this machine
    /// (a server elsewhere holds them; the fragmentation's `not_measured`
    /// says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_local: bool,
}

impl Usage {
    /// The blocks allocated on this machine; None for a store that keeps
    /// its bytes elsewhere.
    pub fn allocated(&self) -> Option<u64> {
        (!self.not_local).then_some(self.allocated_bytes)
    }
}

/// Extents per file (FIEMAP) and, for SQLite, overflow chain locality.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fragmentation {
    /// Non-empty files examined (blob files, or the database and its WAL).
    pub files: u64,
    /// Extents over those files; None when FIEMAP is not supported here.
    pub extents: Option<u64>,
    /// Files in more than one extent.
    pub fragmented_files: Option<u64>,
    pub max_extents: Option<u64>,
    /// Why extents were not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measured: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<OverflowLocality>,
}

impl Fragmentation {
    pub fn extents_per_file(&self) -> Option<f64> {
        self.extents.filter(|_| self.files > 0).map(|e| e as f64 / self.files as f64)
    }
}

/// Read time by blob size band at one age: where files start to win.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    pub age: u32,
    /// "warm" or "cold".
    pub cache: String,
    pub bands: Vec<Band>,
    /// Lower edge of the first band from which the fastest file layout beats
    /// the fastest database layout in every larger band; None when files
    /// never win at the largest band.
    pub files_faster_from_bytes: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub min_bytes: u32,
    pub max_bytes: u32,
    pub blobs: u32,
    /// Per layout id, median per-op read time in microseconds.
    pub per_op_us: Vec<(LayoutId, f64)>,
    /// The fastest file layout's read time over the fastest SQLite
    /// layout's, paired by round (the band's rounds); absent in older
    /// files, whose bands ran one layout after another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_over_db: Option<PairedRatio>,
}

impl Band {
    /// The fastest layout of one kind (database or files) in this band.
    pub fn best(&self, layouts: &[LayoutInfo], files: bool) -> Option<f64> {
        self.per_op_us
            .iter()
            .filter(|(id, _)| layouts.iter().any(|l| l.id == *id && l.engine.is_files() == files))
            .map(|(_, us)| *us)
            .filter(|us| us.is_finite())
            .reduce(f64::min)
    }
}

impl Band {
    /// Files read faster than SQLite in this band: by the paired estimate
    /// when the band ran in rounds, else (older files) by the medians.
    fn files_faster(&self, layouts: &[LayoutInfo]) -> bool {
        match (&self.files_over_db, self.best(layouts, false), self.best(layouts, true)) {
            (Some(paired), ..) => paired.value < 1.0,
            (None, Some(db), Some(files)) => files < db,
            _ => false,
        }
    }
}

/// Where files become faster than the database, from bands in size order.
pub fn files_faster_from(bands: &[Band], layouts: &[LayoutInfo]) -> Option<u32> {
    let mut from = None;
    for band in bands.iter().rev() {
        if !band.files_faster(layouts) {
            break;
        }
        from = Some(band.min_bytes);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rounds::synthetic;

    fn band(min: u32, db: f64, files: f64) -> Band {
        Band {
            min_bytes: min,
            max_bytes: min + 100,
            blobs: 10,
            per_op_us: vec![("db-wal".into(), db), ("files-inplace".into(), files)],
            files_over_db: None,
        }
    }

    fn layouts() -> Vec<LayoutInfo> {
        vec![
            LayoutInfo { id: "db-wal".into(), title: "".into(), engine: crate::engine::sqlite::KIND },
            LayoutInfo { id: "files-inplace".into(), title: "".into(), engine: crate::engine::files::FLAT_KIND },
        ]
    }

    fn point(layout: &str, age: u32, remedy: Option<&str>) -> AgePoint {
        AgePoint {
            layout: layout.into(),
            age,
            remedy: remedy.map(str::to_string),
            rewrite: None,
            read_warm: None,
            read_cold: None,
            usage: Usage::default(),
            fragmentation: Fragmentation::default(),
        }
    }

    #[test]
    fn a_band_in_rounds_is_decided_by_its_paired_ratio() {
        // By the medians files lose (2.0 vs 1.9), but round by round files
        // took 0.8x SQLite's time: a burst of load hit SQLite's median rounds.
        let mut b = band(100, 1.9, 2.0);
        let rounds: Vec<Vec<f64>> = [1.0, 1.5, 2.5, 2.5, 2.5, 1.0].iter().map(|&db| vec![db, db * 0.8]).collect();
        b.files_over_db =
            crate::measure::rounds::compare(&rounds, &crate::measure::rounds::Comparison { a: vec![1], b: vec![0] });
        let r = b.files_over_db.clone().unwrap();
        assert!((r.value - 0.8).abs() < 1e-9 && (r.high - 0.8).abs() < 1e-9 && r.rounds == 6, "{r:?}");
        assert_eq!(files_faster_from(&[band(0, 1.0, 2.0), b.clone()], &layouts()), Some(100), "paired: files win");
        b.files_over_db = None;
        assert_eq!(files_faster_from(&[b], &layouts()), None, "unpaired (older files): the medians say SQLite");
        let old: Band =
            serde_json::from_str(r#"{"min_bytes": 1, "max_bytes": 2, "blobs": 3, "per_op_us": []}"#).unwrap();
        assert!(old.files_over_db.is_none(), "older files' bands read without a paired ratio");
    }

    #[test]
    fn a_remedy_is_paired_with_its_aged_layout_in_the_remedy_rounds() {
        let mut setting: AgingSetting = serde_json::from_str(
            r#"{"sizes": {"name": "article", "min_bytes": 8000, "max_bytes": 12000}, "count": 10,
            "layouts": [], "points": [], "remedies": []}"#,
        )
        .unwrap();
        let vacuumed = point("db-wal", 2, Some("vacuum"));
        assert_eq!(setting.remedy_effect(&vacuumed, false), None, "older files: no remedy rounds");
        // VACUUM halves the read time in every round; the incremental copy
        // is 10% slower than aged; the rounds' load varies threefold.
        let load = [1.0, 3.0, 1.0, 2.0, 1.0, 1.0, 1.5];
        let rows: Vec<Vec<f64>> = load.iter().map(|l| vec![10.0 * l, 5.0 * l, 11.0 * l]).collect();
        let arms = ["db-wal", "db-wal/vacuum", "db-wal/incremental-vacuum"];
        setting.rounds.push(synthetic(&rounds_id("article", 2, false), &arms[..1], &rows[..1]));
        setting.rounds.push(synthetic(&remedy_rounds_id("article", 2, false), &arms, &rows));
        assert_eq!(remedy_arm("db-wal".into(), "vacuum"), "db-wal/vacuum");
        let v = setting.remedy_effect(&vacuumed, false).expect("paired");
        assert!((v.value - 0.5).abs() < 1e-9 && (v.low - 0.5).abs() < 1e-9 && v.rounds == 7, "{v:?}");
        let incr = setting.remedy_effect(&point("db-wal", 3, Some("incremental-vacuum")), false).unwrap();
        assert!((incr.value - 1.1).abs() < 1e-9, "{incr:?}");
        assert_eq!(setting.remedy_effect(&vacuumed, true), None, "no cold remedy rounds in this file");
        setting.rounds[1].rounds[3].per_op_us.pop();
        assert_eq!(setting.remedy_effect(&vacuumed, false), None, "an arm missing from a round: not paired");
    }

    #[test]
    fn a_setting_written_before_rounds_reads_with_none() {
        let old = r#"{"sizes": {"name": "article", "min_bytes": 8000, "max_bytes": 12000}, "count": 10,
            "layouts": [], "points": [], "remedies": []}"#;
        let setting: AgingSetting = serde_json::from_str(old).unwrap();
        assert!(setting.rounds.is_empty(), "older files have no rounds: their reads are unpaired");
        let back = serde_json::to_value(&setting).unwrap();
        assert!(back.get("rounds").is_none(), "no empty rounds written");
    }

    #[test]
    fn crossover_is_the_first_band_of_the_winning_tail() {
        let layouts = layouts();
        let bands = [band(100, 1.0, 2.0), band(200, 3.0, 2.0), band(300, 1.0, 2.0), band(400, 5.0, 4.0)];
        assert_eq!(files_faster_from(&bands, &layouts), Some(400));
        assert_eq!(files_faster_from(&bands[..3], &layouts), None);
        assert_eq!(files_faster_from(&bands[1..2], &layouts), Some(200));
    }
}
