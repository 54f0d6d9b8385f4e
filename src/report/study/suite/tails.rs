//! Latency distributions beside each ratio chart: percentile curves of
//! every path the chart compares, from the merged HDR histograms in the
//! result file, and one computed sentence on how the tails differ. A file
//! without histograms (schema version 1) still gets its five stored
//! percentiles, drawn dashed and said to be so.

use super::{Method, Spec};
use crate::measure::Experiment;
use crate::measure::{Latency, LatencySummary};
use crate::report::format::doc::{Chart, Figure};
use crate::report::format::fmt::micros;
use crate::report::format::svg::{PercentileChart, PercentileSeries, PERCENTILES};
use crate::results::ResultFile;

/// Where the stored summary's percentiles fall among [`PERCENTILES`] + max.
const SUMMARY_POINTS: [usize; 5] = [0, 2, 4, 6, PERCENTILES.len()];

/// The curve of one experiment: the full histogram when recorded, else the
/// summary's five percentiles (sparse); None when latency was not timed.
fn curve(e: &Experiment) -> Option<(Vec<Option<f64>>, bool)> {
    if let Some(lat) = e.latency_histogram.as_deref().and_then(|t| Latency::from_base64(t).ok()) {
        if lat.count() > 0 {
            let mut v: Vec<Option<f64>> = lat.quantiles_us(&PERCENTILES).into_iter().map(Some).collect();
            v.push(Some(lat.summary().max_us));
            return Some((v, false));
        }
    }
    let s = e.latency?;
    let mut v = vec![None; PERCENTILES.len() + 1];
    for (i, x) in SUMMARY_POINTS.iter().zip([s.p50_us, s.p90_us, s.p99_us, s.p999_us, s.max_us]) {
        v[*i] = Some(x);
    }
    Some((v, true))
}

fn methods<'a>(spec: &Spec<'a>) -> impl Iterator<Item = Method> + 'a {
    std::iter::once(spec.db).chain(spec.files.iter().copied())
}

/// The percentile figure for `spec`, placed after its ratio chart.
pub fn figure(spec: &Spec, machines: &[(String, &ResultFile)]) -> Option<Figure> {
    let several = machines.len() > 1;
    let mut series = Vec::new();
    let mut sparse_names = Vec::new();
    let mut ops = Vec::new();
    for (k, (label, f)) in machines.iter().enumerate() {
        for (j, m) in methods(spec).enumerate() {
            let Some(e) = f.experiment(m.id) else { continue };
            let Some((values_us, sparse)) = curve(e) else { continue };
            let name = if several { format!("{label}: {}", m.name) } else { m.name.to_string() };
            if sparse {
                sparse_names.push(name.clone());
            }
            ops.push((e.latency.map_or(0, |l| l.count), e.summary.runs));
            series.push(PercentileSeries { name, values_us, sparse, colour: j, dash: k });
        }
    }
    if series.is_empty() {
        return None;
    }
    let (min_ops, max_ops) = (ops.iter().map(|o| o.0).min().unwrap_or(0), ops.iter().map(|o| o.0).max().unwrap_or(0));
    let runs: std::collections::BTreeSet<u32> = ops.iter().map(|o| o.1).collect();
    let runs: Vec<String> = runs.iter().map(u32::to_string).collect();
    let count = if min_ops == max_ops { format!("{min_ops}") } else { format!("{min_ops}-{max_ops}") };
    let note = format!("{count} operations per curve, each timed alone, merged over {} timed runs", runs.join("/"));
    let mut caption =
        vec!["Each operation's latency (not the per-op mean): the tail shows the slow operations a mean hides."
            .to_string()];
    if !sparse_names.is_empty() {
        caption.push(format!(
            "Histogram not recorded (older result file) for {}: dotted, through its five stored percentiles only.",
            sparse_names.join(", ")
        ));
    }
    let findings = machines.iter().filter_map(|(label, f)| tail_sentence(spec, label, f, several)).collect();
    Some(Figure {
        id: format!("{}-latency", spec.id),
        chart: Chart::Percentiles(PercentileChart {
            title: format!("{}: latency percentiles", spec.title),
            series,
            note,
        }),
        caption,
        findings,
    })
}

/// "On this machine, at p99.9 fopen/fread from one directory takes 4.0x the
/// time of SQLite by SQL (54 µs vs 13 µs), against 1.9x at the median."
pub fn tail_sentence(spec: &Spec, label: &str, f: &ResultFile, several: bool) -> Option<String> {
    let db: LatencySummary = f.experiment(spec.db.id)?.latency.filter(|l| l.p999_us > 0.0 && l.p50_us > 0.0)?;
    let parts: Vec<String> = spec
        .files
        .iter()
        .filter_map(|m| {
            let l = f.experiment(m.id)?.latency?;
            let (tail, mid) = (l.p999_us / db.p999_us, l.p50_us / db.p50_us);
            Some(format!(
                "{} takes {:.1}x the time of {} ({} µs vs {} µs), against {:.1}x at the median",
                m.phrase,
                tail,
                spec.db.phrase,
                micros(l.p999_us),
                micros(db.p999_us),
                mid
            ))
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let on = if several { format!("On {label}") } else { "On this machine".to_string() };
    Some(format!("{on}, at p99.9 {}.", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::full_suite;
    use crate::report::study::suite::ARTICLE;

    #[test]
    fn curves_come_from_the_histogram_and_the_sentence_from_the_tails() {
        let f = full_suite("host-a");
        let machines = vec![("host-a".to_string(), &f)];
        let fig = figure(&ARTICLE[0], &machines).unwrap();
        assert_eq!(fig.id, "chart1-read-sql-latency");
        let Chart::Percentiles(c) = &fig.chart else { panic!() };
        assert_eq!(c.series.len(), 3);
        assert!(c.series.iter().all(|s| !s.sparse && s.values_us.iter().all(Option::is_some)));
        // The fixture's shape: p99.9 is about 6x the median for every path,
        // so the tail ratio equals the median ratio (19 µs vs 10 µs per op).
        assert_eq!(
            fig.findings,
            ["On this machine, at p99.9 fopen/fread from one directory takes 1.9x the time of SQLite by SQL \
              (101.3 µs vs 53.31 µs), against 1.9x at the median; fopen/fread from a tree takes 2.0x the time of \
              SQLite by SQL (106.6 µs vs 53.31 µs), against 2.0x at the median."]
        );
    }

    #[test]
    fn a_file_without_histograms_is_drawn_sparse_and_said_so() {
        let mut f = full_suite("host-a");
        for e in &mut f.experiments {
            e.latency_histogram = None;
        }
        let machines = vec![("host-a".to_string(), &f)];
        let fig = figure(&ARTICLE[0], &machines).unwrap();
        let Chart::Percentiles(c) = &fig.chart else { panic!() };
        assert!(c.series.iter().all(|s| s.sparse && s.values_us.iter().filter(|v| v.is_some()).count() == 5));
        assert!(
            fig.caption[1].starts_with("Histogram not recorded (older result file) for SQLite, SQL"),
            "{:?}",
            fig.caption
        );
        for e in &mut f.experiments {
            e.latency = None;
        }
        assert_eq!(figure(&ARTICLE[0], &[("host-a".to_string(), &f)]), None);
    }
}
