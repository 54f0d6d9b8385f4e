//! `blobbench suite` with several work directories, as a user compares
//! filesystems: one result per directory, labelled by its filesystem, in
//! one report.

use assert_cmd::Command;

#[test]
fn several_workdirs_make_one_report_labelled_by_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let out = dir.path().join("report");
    Command::cargo_bin("blobbench")
        .unwrap()
        .args(["suite", "--count", "200", "--repeat", "2", "--label", "box"])
        .arg("--workdir")
        .arg(&a)
        .arg("--workdir")
        .arg(&b)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let mut labels = Vec::new();
    for n in 1..=2 {
        let text = std::fs::read_to_string(out.join(format!("results-{n}.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let fs = v["environment"]["storage"]["fs_type"].as_str().unwrap().to_string();
        assert!(!fs.is_empty());
        assert_eq!(v["label"], format!("box, {fs}"));
        // The article's 16 experiments, the A/A control and the 4 durable
        // writes each committed (commit/...).
        let experiments = v["experiments"].as_array().unwrap();
        assert_eq!(experiments.len(), 21);
        per_op_figures_lie_among_the_latencies(experiments);
        // Reads and writes ran as rounds: 2 each (--repeat is --rounds; given without
        // --budget, no budget cuts it short), every arm in every round.
        let sets = v["rounds"].as_array().unwrap();
        assert_eq!(sets.len(), 2);
        for set in sets {
            let arms = set["arms"].as_array().unwrap().len();
            let rounds = set["rounds"].as_array().unwrap();
            assert_eq!(rounds.len(), 2);
            assert!(rounds.iter().all(|r| r["per_op_us"].as_array().unwrap().len() == arms));
        }
        labels.push(v["label"].as_str().unwrap().to_string());
    }
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let verdict =
        &page[page.find("<section id=\"verdict\">").unwrap()..page.find("<section id=\"overview\">").unwrap()];
    // The same filesystem twice: the labels collide and are told apart.
    assert_eq!(verdict.matches("<td data-label=\"question\">durable writes (fsync, each committed)</td>").count(), 2);
    assert!(verdict.contains("min-max, 50% paired, 2 rounds"), "two rounds: the min-max range, paired");
    assert!(page.contains(&labels[0]));
    // Nothing is left in the work directories.
    for d in [&a, &b] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{} is empty again", d.display());
    }
}

/// On a real run, for every read and every write committed on its own: the
/// latency of each operation holds its commit, p50 <= p99 <= max and the
/// mean lies between the smallest and the largest. The latencies are
/// chained from the loop's start to its end, so what they add up to is the
/// runs' loop time, exactly, whatever the machine's load: the check
/// compares the pooled sums, not per-op figures (a miss is timed but not
/// an op). The steady-state figure is each run's loop, commit and deferred
/// work over its ops, averaged over the runs. What holds at any speed: on
/// a busy disk p50 can exceed the mean (fsync times bunch high), so p50 <=
/// figure is not asserted. The article's writes, one transaction per run,
/// are left out: their commit lies outside every operation's latency.
fn per_op_figures_lie_among_the_latencies(experiments: &[serde_json::Value]) {
    let mut checked = 0;
    for e in experiments {
        let id = e["id"].as_str().unwrap();
        if id.starts_with("write/") {
            continue;
        }
        let f = |v: &serde_json::Value| v.as_f64().unwrap();
        let l = &e["latency"];
        let (min, p50, p99, max, mean) =
            (f(&l["min_us"]), f(&l["p50_us"]), f(&l["p99_us"]), f(&l["max_us"]), f(&l["mean_us"]));
        assert!(p50 <= p99 && p99 <= max, "{id}: p50 {p50} <= p99 {p99} <= max {max}");
        // HDR histograms keep 3 significant digits: 0.5% of slack.
        let close = |a: f64, b: f64| a <= b * 1.005;
        assert!(close(min, mean) && close(mean, max), "{id}: min {min} <= mean {mean} <= max {max}");
        let runs = e["runs"].as_array().unwrap();
        let sum = |g: &dyn Fn(&serde_json::Value) -> f64| runs.iter().map(g).sum::<f64>();
        let timed = sum(&|r| f(&r["ops"]) + f(&r["misses"]));
        assert_eq!(f(&l["count"]), timed, "{id}: every op and every miss of the timed runs, timed once");
        // The histogram's mean takes the middle of each value's bucket, at
        // most 1/2048 of the value away (3 significant digits: 2048
        // sub-buckets); a 0 ns latency is recorded as 1 ns.
        let loop_us = sum(&|r| f(&r["phases"]["loop_ns"])) / 1000.0;
        let latencies_us = mean * timed;
        assert!(
            (latencies_us - loop_us).abs() <= loop_us / 2048.0 + timed * 0.001,
            "{id}: the latencies add up to the runs' loops: {latencies_us} us against {loop_us} us"
        );
        let per_run = |r: &serde_json::Value| {
            let p = &r["phases"];
            (f(&p["loop_ns"]) + f(&p["commit_ns"]) + f(&p["deferred_ns"])) / 1000.0 / f(&r["ops"])
        };
        let steady = f(&e["summary"]["steady_per_op_us"]["mean"]);
        let figure = sum(&per_run) / runs.len() as f64;
        assert!(
            (steady - figure).abs() <= 1e-9 * figure,
            "{id}: the figure is the loop, the final commit and the deferred work per op: {steady} against {figure}"
        );
        checked += 1;
    }
    assert_eq!(checked, 12, "7 reads, the control and 4 committed writes");
}
