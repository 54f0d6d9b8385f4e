//! What the report says about a file's rounds: the A/A noise floor under
//! the verdict, how many rounds each comparison ran and why it stopped,
//! and which rounds ran on a busy machine. The figures come from
//! `measure::rounds`; this module only words them.

use super::interval::Ratio;
use crate::measure::busy::BusySummary;
use crate::measure::paired::PairedRatio;
use crate::measure::rounds::{RoundSet, StopReason};
use crate::results::ResultFile;
use crate::studies::aging::{is_band_rounds, is_remedy_rounds, AgingSetting};
use crate::studies::suite::{CONTROL_ID, CONTROL_OF};

/// The file's A/A noise floor: the control arm against the arm it repeats,
/// paired by round. None for files without rounds (older files).
pub fn noise_floor(file: &ResultFile) -> Option<PairedRatio> {
    file.rounds_of(CONTROL_OF, CONTROL_ID)?.ratio(&CONTROL_OF.to_string(), &CONTROL_ID.to_string())
}

/// "noise floor (A/A: ...): 0.98-1.03 (95% paired, 20 rounds)".
pub fn describe_floor(floor: &PairedRatio) -> String {
    format!(
        "noise floor (A/A: SQLite's blob API read measured twice, as two identical arms): {}",
        Ratio::paired(floor).describe()
    )
}

/// One line per round set of the file's comparisons (rounds, stop reason,
/// busy rounds, warnings), and one summing up the aging study's sets.
pub fn describe_sets(file: &ResultFile) -> Vec<String> {
    let mut lines: Vec<String> = file.rounds.iter().map(describe_set).collect();
    lines.extend(file.aging.iter().flat_map(|a| &a.settings).filter_map(describe_aging));
    lines
}

fn describe_set(set: &RoundSet) -> String {
    if !set.consistent() {
        return format!(
            "{}: rounds inconsistent (an arm missing or rounds of different lengths); its ratios are shown unpaired",
            set.id
        );
    }
    let mut line = format!(
        "{}: {} arms, {} rounds in a shuffled order (seed {}), stopped because {}; {}",
        set.id,
        set.arms.len(),
        set.rounds.len(),
        set.seed,
        set.stop.describe(),
        describe_busy(&set.busy())
    );
    for w in &set.warnings {
        line.push_str("; ");
        line.push_str(w);
    }
    line
}

/// One aging setting's round sets (the reads at every age, the size bands
/// and the remedies, each warm and cold) in one line.
fn describe_aging(setting: &AgingSetting) -> Option<String> {
    let sets = &setting.rounds;
    let counts: Vec<usize> = sets.iter().map(|s| s.rounds.len()).collect();
    let (lo, hi) = (counts.iter().min()?, counts.iter().max()?);
    let n = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
    let stops: Vec<String> = [StopReason::Precise, StopReason::MaxRounds, StopReason::Budget, StopReason::Interrupted]
        .into_iter()
        .filter_map(|r| {
            let k = sets.iter().filter(|s| s.stop == r).count();
            (k > 0).then(|| format!("{k} because {}", r.describe()))
        })
        .collect();
    let loads: Vec<_> = sets.iter().flat_map(|s| s.rounds.iter().map(|r| r.load)).collect();
    let unpaired = sets.iter().filter(|s| !s.consistent()).count();
    let bands = sets.iter().filter(|s| is_band_rounds(&s.id)).count();
    let remedies = sets.iter().filter(|s| is_remedy_rounds(&s.id)).count();
    let kinds: Vec<String> = [
        (sets.len() - bands - remedies, "of the layouts' reads at each age"),
        (bands, "of the size bands at each age"),
        (remedies, "of the remedies beside the aged layouts"),
    ]
    .into_iter()
    .filter(|(k, _)| *k > 0)
    .map(|(k, what)| format!("{k} {what}"))
    .collect();
    Some(format!(
        "aging/{}: {} round sets ({}; warm and cold), {n} rounds each, stopped: {}; {}{}",
        setting.sizes.name,
        sets.len(),
        kinds.join(", "),
        stops.join(", "),
        describe_busy(&BusySummary::of(&loads)),
        if unpaired > 0 { format!("; {unpaired} inconsistent (shown unpaired)") } else { String::new() }
    ))
}

/// "no round ran on a busy machine", or how many did and how busy.
fn describe_busy(busy: &BusySummary) -> String {
    if busy.busy == 0 {
        return "no round ran on a busy machine".to_string();
    }
    format!(
        "{} of {} rounds ran on a busy machine (other processes up to {:.0}% of the CPUs, steal up to {:.0}%, CPU pressure up to {:.0}%, I/O pressure up to {:.0}%, load average up to {:.1})",
        busy.busy,
        busy.rounds,
        busy.max_other_cpu_pct,
        busy.max_steal_pct,
        busy.max_cpu_pressure_pct,
        busy.max_io_pressure_pct,
        busy.max_loadavg
    )
}
