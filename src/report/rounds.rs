//! What the report says about a file's rounds: the A/A noise floor under
//! the verdict, how many rounds each comparison ran and why it stopped,
//! and which rounds ran on a busy machine. The figures come from
//! `measure::rounds`; this module only words them.

use super::interval::Ratio;
use crate::measure::paired::PairedRatio;
use crate::results::ResultFile;
use crate::studies::suite::{CONTROL_ID, CONTROL_OF};

/// The file's A/A noise floor: the control arm against the arm it repeats,
/// paired by round. None for files without rounds (older files).
pub fn noise_floor(file: &ResultFile) -> Option<PairedRatio> {
    file.rounds_of(CONTROL_OF, CONTROL_ID)?.ratio(CONTROL_OF, CONTROL_ID)
}

/// "noise floor (A/A: ...): 0.98-1.03 (95% paired, 20 rounds)".
pub fn describe_floor(floor: &PairedRatio) -> String {
    format!(
        "noise floor (A/A: SQLite's blob API read measured twice, as two identical arms): {}",
        Ratio::paired(floor).describe()
    )
}

/// One line per round set: rounds, stop reason, busy rounds, warnings.
pub fn describe_sets(file: &ResultFile) -> Vec<String> {
    file.rounds
        .iter()
        .map(|set| {
            if !set.consistent() {
                return format!("{}: rounds inconsistent (an arm missing or rounds of different lengths); its ratios are shown unpaired", set.id);
            }
            let busy = set.busy();
            let load = if busy.busy == 0 {
                "no round ran on a busy machine".to_string()
            } else {
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
            };
            let mut line = format!(
                "{}: {} arms, {} rounds in a shuffled order (seed {}), stopped because {}; {load}",
                set.id,
                set.arms.len(),
                set.rounds.len(),
                set.seed,
                set.stop.describe()
            );
            for w in &set.warnings {
                line.push_str("; ");
                line.push_str(w);
            }
            line
        })
        .collect()
}
