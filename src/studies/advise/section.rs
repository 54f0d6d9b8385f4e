//! The result file's `advise` section: the workload as stated, the
//! candidates considered and the crash facts the exclusions rest on. The
//! timings and disk usage are the file's `experiments`, `rounds` and
//! `disk_usage`, as a suite writes them; the recommendation is computed
//! from all of them ([`super::rank`]), never stored.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::candidate::{Durability, Store};
use crate::records::ConfigId;

/// The workload the advice is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub count: u32,
    /// Mean blob size of the dataset measured.
    pub mean_bytes: u64,
    /// The directory the blobs came from (`--from`), when they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_dir: Option<String>,
    /// The read/write mix (`--mix R:W`), in operations.
    pub mix_reads: u32,
    pub mix_writes: u32,
    pub durability: Durability,
    /// Writes per commit (`--commit-every N`): a write returns once N
    /// writes have been committed; every candidate's writes were measured
    /// so. Absent in files from before it, whose writes were timed as one
    /// transaction per run (kvtest's way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_every: Option<u32>,
}

impl Workload {
    /// The file predates `--commit-every`: its write arms committed once
    /// per run, and are not comparable with per-commit figures.
    pub fn one_commit_per_run(&self) -> bool {
        self.commit_every.is_none()
    }
}

/// Where the crash facts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrashSource {
    /// A quick power-cut run on this machine (the file's `power_cut`).
    Measured,
    /// The table in docs/crash-safety.md (FUSE did not work here).
    Documented,
}

/// What power cuts did to one write method (totals over its cuts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashFact {
    /// The crash test's method (`db-wal-full`, `inplace`, ... in the
    /// file); none for a server's facts about an engine with no method for
    /// the need (`""` in the file).
    #[serde(with = "crate::studies::crashtest::method::name_or_empty")]
    pub method: Option<ConfigId>,
    /// The method tells its caller a write is durable when it returns.
    pub acknowledges_durability: bool,
    pub cuts: u32,
    /// Blobs older than, torn or missing after an acknowledged version.
    pub lost_after_ack: u64,
    /// Blobs left torn (two versions mixed, cut short).
    pub torn: u64,
    /// Cuts after which the store failed its own integrity check.
    pub integrity_failures: u32,
}

impl CrashFact {
    /// Its method's name as the file holds it (`""` for none).
    pub fn method_name(&self) -> &'static str {
        self.method.map_or("", ConfigId::name)
    }
}

/// Crash facts and where they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashFacts {
    pub source: CrashSource,
    /// The power-cut model: `torn-4k`, ...
    pub model: String,
    /// Why the documented table was used (the FUSE error), when it was.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    pub methods: Vec<CrashFact>,
}

impl CrashFacts {
    /// The facts of `method`, none when it is None (an engine with no crash
    /// method) or was not tested.
    pub fn of(&self, method: Option<ConfigId>) -> Option<&CrashFact> {
        self.methods.iter().find(|m| m.method == method)
    }
}

/// The result file's `advise` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdviseSection {
    pub workload: Workload,
    /// The candidates considered (by [`Store::name`] in the
    /// file).
    pub candidates: Vec<Store>,
    pub crash: CrashFacts,
    /// The time budget of the whole command, and what it took.
    pub budget_s: f64,
    pub elapsed_s: f64,
    pub quick: bool,
    /// Present when the work before the rounds used the budget, so one
    /// round of each arm was run: the set-up, the power cuts, the size
    /// matrix, the aging pass and the datasets, and the time kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_budget: Option<StageTimes>,
    /// The candidates with several clients at once (`--clients N`, N > 1,
    /// or `--rate R`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<super::clients::section::ClientsSection>,
    /// What the budget covered, part by part (absent in older files): the
    /// power cuts, the size matrix, the aging pass, the datasets, the
    /// rounds and the rounds with clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageTimes>,
    /// What one flush costs on the datasets' disk, measured before the
    /// rounds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<crate::measure::flush::FlushCost>,
}

/// One part of the command's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// From the start of the command to the first round (over budget).
    Setup,
    PowerCuts,
    SizeMatrix,
    Aging,
    /// Building the suite's datasets and their copies, throwaway servers
    /// started.
    Datasets,
    /// The suite's rounds: warm reads, cold reads, writes.
    Rounds,
    /// The rounds with several clients (`--clients N`).
    Clients,
    /// Kept from the budget for the summaries and the page (over budget).
    Kept,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Setup,
        Stage::PowerCuts,
        Stage::SizeMatrix,
        Stage::Aging,
        Stage::Datasets,
        Stage::Rounds,
        Stage::Clients,
        Stage::Kept,
    ];

    /// Its field in the result file.
    fn key(self) -> &'static str {
        match self {
            Stage::Setup => "setup_s",
            Stage::PowerCuts => "power_cuts_s",
            Stage::SizeMatrix => "size_matrix_s",
            Stage::Aging => "aging_s",
            Stage::Datasets => "datasets_s",
            Stage::Rounds => "rounds_s",
            Stage::Clients => "clients_s",
            Stage::Kept => "kept_s",
        }
    }
}

/// Seconds by stage: where the command's time went (`stages`: the budget
/// is the whole command's, as a user times it, every part counted, the
/// one-off ones too, a throwaway server's start within its dataset's
/// build; only writing the page after the measurements is not), or, when
/// the set-up before the rounds took the whole budget (`over_budget`),
/// what it took part by part and the time kept for the page. In the file,
/// one field per stage (`power_cuts_s`); a stage not timed reads as 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageTimes(BTreeMap<Stage, f64>);

impl StageTimes {
    pub fn of(times: impl IntoIterator<Item = (Stage, f64)>) -> StageTimes {
        StageTimes(times.into_iter().collect())
    }

    /// `stages` of `times`, each in seconds.
    pub fn of_durations(times: impl IntoIterator<Item = (Stage, Duration)>) -> StageTimes {
        StageTimes::of(times.into_iter().map(|(s, d)| (s, d.as_secs_f64())))
    }

    pub fn set(&mut self, stage: Stage, secs: f64) {
        self.0.insert(stage, secs);
    }
}

impl std::ops::Index<Stage> for StageTimes {
    type Output = f64;
    fn index(&self, stage: Stage) -> &f64 {
        self.0.get(&stage).unwrap_or(&0.0)
    }
}

impl Serialize for StageTimes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (stage, secs) in &self.0 {
            map.serialize_entry(stage.key(), secs)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StageTimes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StageTimes, D::Error> {
        let fields = BTreeMap::<String, f64>::deserialize(d)?;
        let mut out = StageTimes::default();
        for (key, secs) in fields {
            let stage = Stage::ALL.into_iter().find(|s| s.key() == key);
            let stage = stage.ok_or_else(|| serde::de::Error::custom(format!("unknown stage {key:?}")))?;
            out.set(stage, secs);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_times_keep_their_fields_in_the_file() {
        let t = StageTimes::of([(Stage::Setup, 47.0), (Stage::PowerCuts, 20.0), (Stage::Kept, 5.0)]);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#"{"setup_s":47.0,"power_cuts_s":20.0,"kept_s":5.0}"#);
        assert_eq!(serde_json::from_str::<StageTimes>(&json).unwrap(), t);
        assert_eq!((t[Stage::Setup], t[Stage::Rounds]), (47.0, 0.0), "a stage not timed reads as 0");
        assert!(serde_json::from_str::<StageTimes>(r#"{"lunch_s": 1.0}"#).is_err());
    }
}
