//! The headline chart the advice opens with: each ranked candidate's time
//! per operation at the stated mix, fastest first, with the paired interval
//! of its factor against the leader as a whisker, so who won, and by how
//! clearly, shows at a glance.

use super::words;
use crate::report::format::doc::{Chart, Figure};
use crate::report::format::svg::BarChart;
use crate::studies::advise::rank::{Factor, Ranked, Ranking};
use crate::studies::advise::AdviseSection;

/// Its chart id.
pub const HEADLINE_CHART: &str = "advise-headline";

/// The whisker of a candidate's bar: its factor's paired interval against
/// the leader, scaled onto its own bar (`mixed_us * low / value` to
/// `mixed_us * high / value`). None for the leader, and for a factor
/// without an interval (one round, or unpaired).
fn whisker(c: &Ranked) -> Option<(f64, f64)> {
    let f: &Factor = c.mixed.as_ref()?;
    let has_interval = f.paired && f.rounds >= 2 && f.value > 0.0 && f.low < f.high;
    has_interval.then(|| (c.mixed_us * f.low / f.value, c.mixed_us * f.high / f.value))
}

/// The headline figure, or None when no candidate was ranked.
pub fn figure(r: &Ranking, s: &AdviseSection, sfx: &str) -> Option<Figure> {
    let leader = r.ranked.first()?;
    let mix = format!("{}:{}", s.workload.mix_reads, s.workload.mix_writes);
    let title = format!("Time per operation at {mix} reads:writes");
    let groups: Vec<String> = r.ranked.iter().map(|c| words::store_name(c.store)).collect();
    let values = r.ranked.iter().map(|c| vec![Some(c.mixed_us)]).collect();
    let errors = r.ranked.iter().map(|c| vec![whisker(c)]).collect();
    let note = "Fastest first; dashed line: the leader; whiskers: 95% paired interval against it.".to_string();
    let mut caption = vec![format!(
        "Each bar is the {mix} blend of the candidate's median read and write times (the figures the ranking \
         uses), durability {}; each whisker is the paired interval of its factor against the leader (reads and \
         writes blended by the leader's share of time), drawn on its own bar. A bar without a whisker is the \
         leader, or a factor with no interval (one round, or unpaired).",
        s.workload.durability.name()
    )];
    if !r.excluded.is_empty() {
        let names: Vec<String> = r.excluded.iter().map(|e| words::store_name(e.store)).collect();
        caption.push(format!("Not shown, excluded by the crash facts: {}.", names.join(", ")));
    }
    let findings = match r.ranked.get(1) {
        Some(next) => vec![format!(
            "{} leads at {mix}; the next, {}, is {}.",
            words::store_name(leader.store),
            words::store_name(next.store),
            next.mixed.map_or_else(|| "not compared".to_string(), |m| words::factor_text(&m) + " slower")
        )],
        None => vec![format!("{} is the only candidate ranked.", words::store_name(leader.store))],
    };
    Some(Figure {
        id: format!("{HEADLINE_CHART}{sfx}"),
        chart: Chart::Bars(BarChart {
            title,
            y_label: "µs per operation".into(),
            groups,
            series: vec![format!("µs per operation at {mix}")],
            values,
            reference: Some(leader.mixed_us),
            errors,
            note,
        }),
        caption,
        findings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::advise::Store;

    fn ranked(store: Store, mixed_us: f64, mixed: Option<Factor>) -> Ranked {
        Ranked {
            store,
            read_us: 1.0,
            write_us: 1.0,
            mixed_us,
            reads: None,
            writes: None,
            mixed,
            tie: false,
            allocated_bytes: None,
            crash: None,
            cold_read_us: None,
            cold_reads: None,
            aged: None,
        }
    }

    #[test]
    fn whiskers_are_the_paired_interval_on_the_candidates_own_bar() {
        let paired = Factor { value: 2.0, low: 1.5, high: 3.0, paired: true, rounds: 8, same: false };
        let (lo, hi) = whisker(&ranked(Store::FilesReplace, 100.0, Some(paired))).unwrap();
        assert!((lo - 75.0).abs() < 1e-9 && (hi - 150.0).abs() < 1e-9, "{lo} {hi}");
        assert_eq!(whisker(&ranked(Store::Sqlite, 50.0, None)), None, "the leader has none");
        let one_round = Factor { rounds: 1, low: 2.0, high: 2.0, ..paired };
        assert_eq!(whisker(&ranked(Store::FilesReplace, 100.0, Some(one_round))), None);
        let unpaired = Factor { paired: false, ..paired };
        assert_eq!(whisker(&ranked(Store::FilesReplace, 100.0, Some(unpaired))), None);
    }
}
