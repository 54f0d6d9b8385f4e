//! What the page and the terminal both say of the advice: the ranking
//! computed from the file, the notes beside it, the evidence rows (each
//! ranked candidate against the leader, facet by facet) and the charts
//! they link to.

use super::headline::HEADLINE_CHART;
use super::words;
use crate::records::ConfigId;
use crate::report::format::doc::VerdictRow;
use crate::report::study::aging as aging_report;
use crate::results::ResultFile;
use crate::studies::advise::rank::{self, Factor, Inputs, Ranked, Ranking};
use crate::studies::advise::{AdviseSection, Store};

/// Its charts: per-op reads, per-op writes and disk space by candidate.
pub const READS_CHART: &str = "advise-reads";
pub const WRITES_CHART: &str = "advise-writes";
pub const SPACE_CHART: &str = "advise-space";

/// The ranking of the advice in `file`, when it holds one.
pub fn ranking(file: &ResultFile) -> Option<(Ranking, &AdviseSection)> {
    let section = file.advise.as_ref()?;
    let inputs = Inputs {
        section,
        experiments: &file.experiments,
        rounds: &file.rounds,
        disk: &file.disk_usage,
        matrix: file.matrix.as_ref(),
        aging: file.aging.as_ref(),
    };
    Some((rank::rank(&inputs), section))
}

/// Which server each server candidate was measured on, as its runs
/// recorded it ("S3 object store: measured on SeaweedFS 4.48, 1
/// replica"): a server's figures are that server's, not its protocol's.
pub(super) fn servers_measured(file: &ResultFile) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for e in &file.experiments {
        let Some(info) = &e.params.server_info else { continue };
        let line = format!("{}: measured on {}.", e.params.layout.title(), info.summary());
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// The candidates neither ranked nor excluded (not measured, or measured
/// at another commit granularity), a file from before `--commit-every`,
/// and the candidates without crash facts, one note each.
pub(super) fn notes(r: &Ranking, s: &AdviseSection) -> Vec<String> {
    let mut notes: Vec<String> = r
        .unmeasured
        .iter()
        .map(|st| format!("{}: not ranked, its reads or writes were not measured.", words::store_name(*st)))
        .collect();
    notes.extend(r.refused.iter().map(words::refusal));
    if s.workload.one_commit_per_run() {
        notes.push(
            "Write figures: one commit per run (older file). This file predates --commit-every: each write arm \
             committed once per run, so its write times spread one commit over many writes and are not per-write \
             figures; they are ranked only against each other."
                .into(),
        );
    }
    notes.extend(r.untested.iter().map(|&st| match st {
        Store::Engine(kind) if kind.is_server() => format!(
            "{name}: not excluded, but no power cut covers its write method ({method}): a server's data directory \
             cannot run on the power-cut layer (docs/crash-safety.md); `crashtest --method {method}` tests it by \
             killing the server.",
            name = words::store_name(st),
            method = st.crash_method(s.workload.durability).map_or("", ConfigId::name),
        ),
        _ => {
            format!("{}: not excluded, but no crash facts cover its write method (not tested).", words::store_name(st))
        }
    }));
    notes.extend(s.candidates.iter().copied().filter_map(|st| match st {
        Store::Engine(kind) if kind.is_server() => Some(format!(
            "{}: not in the size crossover or the aging pass: a server's round trip, not the blob size or the \
             file layout, sets its times (`matrix --engines {}` gives its sizes).",
            words::store_name(st),
            kind.name()
        )),
        _ => None,
    }));
    notes
}

/// The `i`th ranked candidate against the leader: "leader", "tie (1.02x)"
/// or "1.38x slower".
pub(super) fn vs_leader(i: usize, c: &Ranked) -> String {
    match (&c.mixed, i) {
        (_, 0) => "leader".to_string(),
        (Some(m), _) if c.tie => format!("tie ({:.2}x)", m.value),
        (Some(m), _) => format!("{:.2}x slower", m.value),
        (None, _) => "-".into(),
    }
}

/// The evidence rows: reads (warm and cold), writes, the mix, disk space
/// and the aging pass's reads and growth of each ranked candidate against
/// the leader.
pub(super) fn evidence(file: &ResultFile, r: &Ranking, s: &AdviseSection, label: &str, sfx: &str) -> Vec<VerdictRow> {
    let Some(leader) = r.ranked.first() else { return Vec::new() };
    let lead = words::store_name(leader.store);
    let row = |facet: Facet, c: &Ranked| facet_row(facet, (c, leader), s, (label, sfx));
    let mut rows = Vec::new();
    for c in r.ranked.iter().skip(1) {
        rows.extend([Facet::Reads, Facet::ColdReads, Facet::Writes, Facet::Mix].into_iter().filter_map(|f| row(f, c)));
        if let Some((factor, uncertainty)) = words::space(c, leader) {
            rows.push(VerdictRow {
                question: "disk space".into(),
                result: label.into(),
                outcome: format!("{} allocates {factor} of {lead}'s space", words::store_name(c.store)),
                factor,
                uncertainty,
                compared: format!("{} vs {lead}", words::store_name(c.store)),
                chart_id: format!("{SPACE_CHART}{sfx}"),
                chart_title: "Disk space by candidate".into(),
                unclear: false,
            });
        }
        rows.extend(aged_rows(file, c, leader, label, sfx));
    }
    rows
}

/// The aging pass's evidence of `c` against the leader: reads at the last
/// age (paired over the aging rounds) and disk growth since age 0.
fn aged_rows(file: &ResultFile, c: &Ranked, leader: &Ranked, label: &str, sfx: &str) -> Vec<VerdictRow> {
    let (Some(a), Some(setting)) = (c.aged, file.aging.as_ref().and_then(|x| x.settings.last())) else {
        return Vec::new();
    };
    let (name, lead) = (words::store_name(c.store), words::store_name(leader.store));
    let chart = |key: &str| format!("aging-{}-{key}", aging_report::setting_id(setting, sfx));
    let mut rows = Vec::new();
    if let Some(f) = &a.reads {
        rows.push(VerdictRow {
            question: format!("reads after {} rewrites", a.age),
            result: label.into(),
            outcome: outcome(&name, &lead, f),
            factor: format!("{:.2}x", f.oriented().value),
            uncertainty: words::interval(&f.oriented()),
            compared: format!("{name} vs {lead}"),
            chart_id: chart(aging_report::READ_WARM_CHART),
            chart_title: format!("{}: Warm reads by storage age", setting.sizes.name),
            unclear: f.paired && f.low <= 1.0 && f.high >= 1.0,
        });
    }
    if let (Some(g), Some(lg)) = (a.growth, leader.aged.and_then(|l| l.growth)) {
        rows.push(VerdictRow {
            question: format!("disk growth after {} rewrites", a.age),
            result: label.into(),
            outcome: format!("{name} grew {g:.2}x, {lead} {lg:.2}x"),
            factor: format!("{:.2}x", g / lg),
            uncertainty: "exact (allocated blocks at each age, from stat)".into(),
            compared: format!("{name} vs {lead}"),
            chart_id: chart(aging_report::DISK_CHART),
            chart_title: format!("{}: Disk allocated per byte of content", setting.sizes.name),
            unclear: false,
        });
    }
    rows
}

/// A factor of a candidate against the leader, as an evidence row shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Facet {
    Reads,
    ColdReads,
    Writes,
    /// Reads and writes at the stated mix (the headline chart's).
    Mix,
}

/// `c`'s row of `facet` against `leader`, when it has that factor;
/// `(label, sfx)` name the result file and suffix its chart ids.
pub(super) fn facet_row(
    facet: Facet,
    (c, leader): (&Ranked, &Ranked),
    s: &AdviseSection,
    (label, sfx): (&str, &str),
) -> Option<VerdictRow> {
    let (f, question, chart, title) = match facet {
        Facet::Reads => (c.reads?, "reads (warm)".to_string(), READS_CHART, "Reads by candidate".to_string()),
        Facet::ColdReads => (c.cold_reads?, "reads (cold)".into(), READS_CHART, "Reads by candidate".into()),
        Facet::Writes => (
            c.writes?,
            format!("writes (durability {})", s.workload.durability.name()),
            WRITES_CHART,
            "Writes by candidate".into(),
        ),
        Facet::Mix => {
            let mix = format!("{}:{}", s.workload.mix_reads, s.workload.mix_writes);
            (c.mixed?, format!("at {mix}"), HEADLINE_CHART, format!("Time per operation at {mix} reads:writes"))
        }
    };
    let (name, lead) = (words::store_name(c.store), words::store_name(leader.store));
    let mut outcome = outcome(&name, &lead, &f);
    if facet == Facet::Mix && c.tie {
        outcome = format!("tie: {outcome}");
    }
    Some(VerdictRow {
        question,
        result: label.into(),
        outcome,
        factor: format!("{:.2}x", f.oriented().value),
        uncertainty: words::interval(&f.oriented()),
        compared: format!("{name} vs {lead}"),
        chart_id: format!("{chart}{sfx}"),
        chart_title: title,
        unclear: f.paired && f.low <= 1.0 && f.high >= 1.0,
    })
}

/// "redb 1.52x slower than SQLite", or faster when the factor is below 1.
fn outcome(name: &str, lead: &str, f: &Factor) -> String {
    let o = f.oriented();
    if f.value >= 1.0 {
        format!("{name} {:.2}x slower than {lead}", o.value)
    } else {
        format!("{name} {:.2}x faster than {lead}", o.value)
    }
}
