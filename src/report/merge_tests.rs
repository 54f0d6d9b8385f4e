//! `report --merge` on fixed files: exact sums, pooled percentiles, and
//! the refusals that name the field.

use super::*;
use crate::report::fixtures;
use crate::results::merge::{merge, MergeError};
use crate::results::RunSection;

/// A `run` file from `host`: 3 timed runs of 1000 reads at `per_op_us`,
/// its timed runs from `start_s` to `end_s` (seconds after 1.8e9).
fn run_file(host: &str, per_op_us: f64, start_s: u64, end_s: u64) -> ResultFile {
    let mut f = fixtures::suite(host, &[]);
    f.command = "run".into();
    f.dataset = None;
    f.disk_usage.clear();
    f.experiments = vec![fixtures::experiment_runs("run", &[per_op_us; 3])];
    let ns = |s: u64| (1_800_000_000 + s) * 1_000_000_000;
    f.run = Some(RunSection {
        timed_start_unix_ns: ns(start_s),
        timed_end_unix_ns: ns(end_s),
        start_at_unix_ns: Some(ns(start_s)),
        endpoint: "postgresql://db.example/blobs".into(),
    });
    f
}

fn named(files: Vec<ResultFile>) -> Vec<(String, ResultFile)> {
    files.into_iter().enumerate().map(|(i, f)| (format!("client{i}.json"), f)).collect()
}

/// The histogram of a file, decoded by the hdrhistogram crate itself.
fn decoded(f: &ResultFile) -> hdrhistogram::Histogram<u64> {
    use base64::Engine;
    let text = f.experiments[0].latency_histogram.as_deref().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
    hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
}

pub(super) fn fixture_merged() -> Merged {
    merge(&named(vec![run_file("a", 10.0, 0, 10), run_file("b", 20.0, 1, 10)])).unwrap()
}

#[test]
fn throughputs_sum_and_percentiles_come_from_every_sample_pooled() {
    let files = vec![run_file("a", 10.0, 0, 10), run_file("b", 20.0, 1, 10), run_file("c", 40.0, 0, 9)];
    let mut pooled = decoded(&files[0]);
    for f in &files[1..] {
        pooled.add(decoded(f)).unwrap();
    }
    let m = merge(&named(files)).unwrap();
    // 1000 ops in 10, 20 and 40 ms per run: 100,000 + 50,000 + 25,000 ops/s.
    assert!((m.ops_per_s - 175_000.0).abs() < 1e-6, "{}", m.ops_per_s);
    assert_eq!(m.ops, 9000);
    assert_eq!(m.clients.iter().map(|c| c.ops_per_s.round() as u64).collect::<Vec<_>>(), [100_000, 50_000, 25_000]);
    let us = |q: f64| pooled.value_at_quantile(q) as f64 / 1000.0;
    assert_eq!((m.latency.p50_us, m.latency.p99_us, m.latency.count), (us(0.5), us(0.99), pooled.len()));
    assert_ne!(m.latency.p50_us, m.clients[0].latency.p50_us, "not one client's figure");
    // Common window: from 1 s to 9 s of the longest, 10 s.
    assert_eq!(m.common_end_unix_ns - m.common_start_unix_ns, 8_000_000_000);
    assert!((m.overlap_pct - 80.0).abs() < 1e-9);
    // Spread: (100,000 - 25,000) / 50,000.
    assert!((m.spread_pct - 150.0).abs() < 1e-9, "{}", m.spread_pct);
    assert!(merged_text(&m).contains("warning: the clients ran at once for only 80%"));
}

#[test]
fn the_merged_page_gives_the_sum_the_pooled_percentiles_and_each_client() {
    let m = fixture_merged();
    let text = merged_text(&m);
    assert!(text.contains(&format!("{:.0} ops/s", m.ops_per_s)), "{text}");
    assert!(text.contains(&format!("{:.2}", m.latency.p99_us)), "{text}");
    for c in &m.clients {
        assert!(text.contains(&c.file) && text.contains(&format!("{:.0}", c.ops_per_s)), "{text}");
    }
    assert!(!text.contains("warning"), "they ran at once for 90% of the longest: {text}");
    assert!(merged_markdown(&m).contains("all 2 clients"));
}

/// A change to a result file.
type Change = fn(&mut ResultFile);

#[test]
fn files_of_other_datasets_workloads_or_endpoints_are_refused_naming_the_field() {
    let base = || run_file("a", 10.0, 0, 10);
    let cases: [(&str, Change); 5] = [
        ("dataset.max_id", |f| f.experiments[0].params.max_id = 5),
        ("dataset.engine", |f| f.experiments[0].params.layout = crate::engine::sqlite::KIND),
        ("workload.update", |f| f.experiments[0].params.update = true),
        ("workload.count", |f| f.experiments[0].params.count = 7),
        ("endpoint", |f| f.run.as_mut().unwrap().endpoint = "postgresql://other/blobs".into()),
    ];
    for (field, change) in cases {
        let mut other = base();
        change(&mut other);
        let e = merge(&named(vec![base(), other])).unwrap_err();
        assert!(matches!(&e, MergeError::Differ { field: f, .. } if f == field), "{field}: {e}");
        let text = e.to_string();
        assert!(text.contains(field) && text.contains("client0.json") && !text.contains('\n'), "{text}");
    }
    // Where each host keeps its descriptor and its seed may differ.
    let mut other = base();
    other.experiments[0].params.path = "/elsewhere/pg".into();
    other.experiments[0].params.seed = Some(9);
    assert!(merge(&named(vec![base(), other])).is_ok());
}

#[test]
fn files_that_cannot_merge_are_refused_in_one_line() {
    let mut suite = base_with(|f| f.command = "suite".into());
    suite.experiments.push(suite.experiments[0].clone());
    let cases = [
        (vec![run_file("a", 10.0, 0, 10)], "at least two"),
        (vec![run_file("a", 10.0, 0, 10), suite], "not a `run` result file"),
        (vec![run_file("a", 10.0, 0, 10), base_with(|f| f.experiments[0].latency_histogram = None)], "no latency"),
        (vec![run_file("a", 10.0, 0, 10), base_with(|f| f.run = None)], "older blobbench"),
        (
            vec![run_file("a", 10.0, 0, 10), base_with(|f| f.experiments[0].latency_histogram = Some("eA==".into()))],
            "does not decode",
        ),
    ];
    for (files, why) in cases {
        let e = merge(&named(files)).unwrap_err().to_string();
        assert!(e.contains(why) && !e.contains('\n'), "{why}: {e}");
    }
}

fn base_with(change: impl Fn(&mut ResultFile)) -> ResultFile {
    let mut f = run_file("b", 10.0, 0, 10);
    change(&mut f);
    f
}

#[test]
fn the_run_section_round_trips_through_the_file() {
    let f = run_file("a", 10.0, 0, 10);
    let text = serde_json::to_string(&f).unwrap();
    let back = crate::results::parse("f.json", &text).unwrap();
    assert_eq!(back.run, f.run);
}
