//! `blobbench concurrency` and `blobbench run --threads` as a user runs
//! them, with tiny settings, on real databases in temporary directories.

use crate::common;

use std::path::Path;

use common::{blobbench, schema_violations, valid_results};
use predicates::prelude::*;

/// Fails with one line that names the problem, and does not panic.
fn refused(args: &[&str], dir: &Path, says: &str) {
    let out = blobbench().args(args).arg("--workdir").arg(dir).arg("--out").arg(dir.join("out")).output().unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(says), "{args:?}: expected {says:?} in {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!dir.join("out").exists(), "nothing written for bad input");
}

#[test]
fn a_tiny_study_writes_results_charts_and_conclusions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let assert = blobbench()
        .args(["concurrency", "--quick", "--threads", "1,2", "--duration", "0.1", "--rows", "1000"])
        .args([
            "--modes",
            "wal,delete,per-thread,shared,private-cache,rw,sync-off",
            "--rounds",
            "3",
            "--writers",
            "1,2",
        ])
        .arg("--workdir")
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("WAL drastically improves write performance"))
        .stdout(predicate::str::contains("best database / files"))
        .stdout(predicate::str::contains("durable writers, as many readers beside them"))
        .stdout(predicate::str::contains("SQLite, writing blobs: one writer connection or a connection per writer?"));
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(stdout.contains("read: rows read/s") && stdout.contains("per-thread WAL"), "{stdout}");
    assert!(stdout.contains("Each ratio is paired by round: the points ran in 3 rounds"), "{stdout}");
    // --rounds 3: each writer count's answer says it rests on too few rounds.
    assert_eq!(stdout.matches("only 3 paired rounds, fewer than the 6").count(), 2, "{stdout}");

    let v = valid_results(&out.join("results.json"));
    let mut broken = v.clone();
    broken["concurrency"]["points"][0]["config"]["sharing"] = serde_json::json!("sideways");
    assert!(!schema_violations(&broken).is_empty(), "the schema checks the concurrency section");
    assert_eq!(v["command"], "concurrency");
    assert_eq!(v["complete"], true);
    let c = &v["concurrency"];
    every_point_is_consistent_and_concluded(c);
    writers_and_blob_readers_each_measured(c);
    assert_eq!(v["experiments"].as_array().unwrap().len(), 23, "each blob reader and writer point is an experiment");
    rounds_are_recorded_and_paired(&v, &stdout);
    the_page_answers_with_its_charts(&out);
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        !name.starts_with(".blobbench-concurrency")
    }));
}

/// One parameter varied at a time, each point's writes found again, and
/// every conclusion measured with its interval over the 3 rounds.
fn every_point_is_consistent_and_concluded(c: &serde_json::Value) {
    // One parameter varied at a time: read and mixed have the baseline plus
    // shared and DELETE (3 each), write too; times 2 thread counts.
    let points = c["points"].as_array().unwrap();
    assert_eq!(points.len(), 3 * 3 * 2);
    for p in points {
        assert_eq!(p["consistent"], true, "{}", p["id"]);
        for run in p["runs"].as_array().unwrap() {
            if let Some(w) = run.get("writes") {
                let inserted = w["ops"].as_u64().unwrap();
                assert_eq!(run["rows_found"].as_u64().unwrap(), run["rows_before"].as_u64().unwrap() + inserted);
                assert_eq!(run["integrity"], "ok");
            }
        }
    }
    assert_eq!(c["conclusions"].as_array().unwrap().len(), 18, "13 of the study's, the blob and 4 writer extensions");
    for k in c["conclusions"].as_array().unwrap().iter().filter(|k| k["verdict"] != "not_measured") {
        assert_eq!(k["interval"]["rounds"], 3, "every conclusion measured has its interval: {k}");
    }
}

/// The writer extension's stores at 1 and 2 writers, and the blob readers
/// alone and beside a writer.
fn writers_and_blob_readers_each_measured(c: &serde_json::Value) {
    // SQLite (a connection per writer, and one writer connection), files
    // and LMDB at 1 and 2 writers, readers beside them.
    let writers = c["writers"]["points"].as_array().unwrap();
    assert_eq!(writers.len(), 8);
    for p in writers {
        assert!(p["writes_per_s"].as_f64().unwrap() > 0.0, "{}: wrote", p["experiment_id"]);
        assert!(p["reads_per_s"].as_f64().unwrap() > 0.0, "{}: read beside", p["experiment_id"]);
        assert!(p["write_latency"]["count"].as_u64().unwrap() > 0, "{}", p["experiment_id"]);
        assert!(p["writes_per_s_low"].as_f64() <= p["writes_per_s"].as_f64());
    }
    let stores: Vec<&str> = writers.iter().map(|p| p["store"].as_str().unwrap()).collect();
    let each = ["sqlite-wal", "sqlite-one-writer", "flat", "lmdb"];
    assert_eq!(stores, [each, each].concat());
    let one = writers.iter().find(|p| p["store"] == "sqlite-one-writer").unwrap();
    assert!(one["label"].as_str().unwrap().contains("one writer connection"), "{one}");
    assert_eq!(one["busy_waits"], 0, "its writers queue on a mutex, not on SQLite's busy schedule");
    // 3 stores alone and 2 with one writer, at 1, 2 and 4 readers.
    let points = c["blob_readers"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 15);
    for p in points.iter().filter(|p| p["store"].as_str().unwrap().ends_with("-writer")) {
        assert!(p["writes_per_s"].as_f64().unwrap() > 0.0, "{}: the writer wrote", p["store"]);
        assert!(p["latency"]["count"].as_u64().unwrap() > 0, "{}: readers' latency measured", p["store"]);
    }
    assert_eq!(points[0]["store"], "db");
}

/// Each set of rounds: its arms, its 3 rounds and their recorded order;
/// the ratios paired by round.
fn rounds_are_recorded_and_paired(v: &serde_json::Value, stdout: &str) {
    let c = &v["concurrency"];
    // Per thread count, the stores without a writer are the arms of one set
    // of rounds, and the two stores beside a writer the arms of another.
    let sets = v["rounds"].as_array().unwrap();
    let ids: Vec<&str> = sets.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "concurrency/blobs/t1",
            "concurrency/blobs/t2",
            "concurrency/blobs/t4",
            "concurrency/blobs-writer/t1",
            "concurrency/blobs-writer/t2",
            "concurrency/blobs-writer/t4",
            "concurrency/writers"
        ]
    );
    let (writer_set, sets) = sets.split_last().unwrap();
    assert_eq!(writer_set["arms"].as_array().unwrap().len(), 8, "every store at every writer count");
    assert_eq!(writer_set["rounds"].as_array().unwrap().len(), 3);
    for s in sets {
        let writer = s["id"].as_str().unwrap().contains("writer");
        let arms: Vec<&str> = s["arms"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(arms.len(), if writer { 2 } else { 3 }, "db, db-mmap and files; or db and files with a writer");
        assert!(arms.iter().all(|a| a.contains("-writer/") == writer), "{arms:?}");
        let rounds = s["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 3, "--rounds 3 without --budget: three rounds whatever they take");
        for r in rounds {
            let mut order: Vec<u64> = r["order"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect();
            order.sort_unstable();
            assert_eq!(order, (0..arms.len() as u64).collect::<Vec<_>>(), "the order is recorded: {r}");
        }
    }
    let writer_line = stdout.lines().find(|l| l.contains("database / files, both beside a writer, 4 thr:"));
    assert!(
        writer_line.is_some_and(|l| l.contains("paired, 3 rounds") && !l.contains("unpaired")),
        "the stores beside a writer compare paired by round: {stdout}"
    );
    let orders = c["rounds_order"].as_array().unwrap();
    assert_eq!(orders.len(), 3, "one order per round of the database points");
    let mut seen: Vec<u64> = orders[1].as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..18).collect::<Vec<u64>>(), "each round runs every point once");
    let paired = c["conclusions"].as_array().unwrap().iter().flat_map(|k| k["comparisons"].as_array().unwrap().iter());
    assert!(paired.clone().count() > 0 && paired.clone().all(|x| x["paired"]["rounds"] == 3), "ratios paired by round");
}

/// The page's verdict, linked to its chart, and well-formed charts.
fn the_page_answers_with_its_charts(out: &Path) {
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let verdict = &page[page.find("<section id=\"verdict\">").expect("a verdict")..];
    assert!(
        verdict.contains("10 KB reads, 4 threads") && verdict.contains("href=\"#fig-concurrency-blobs\""),
        "the blob readers answer the threads question, linked to their chart"
    );
    assert!(verdict.contains("paired, 3 rounds"), "the factor is paired by round: {verdict}");
    for chart in ["read", "write", "mixed-reads", "mixed-writes", "blobs"] {
        let svg = std::fs::read_to_string(out.join(format!("charts/concurrency-{chart}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("per-thread WAL") == (chart != "blobs"), "{chart}");
    }
    for chart in std::fs::read_dir(out.join("charts")).unwrap() {
        let path = chart.unwrap().path();
        if path.extension().is_none_or(|x| x != "svg") {
            continue;
        }
        let svg = std::fs::read_to_string(path).unwrap();
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("not well-formed SVG: {e}"));
    }
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("The study&#39;s conclusions on this machine") || page.contains("The study's conclusions"));
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    refused(&["concurrency", "--threads", "1,,2"], d, "--threads");
    refused(&["concurrency", "--threads", "two"], d, "--threads");
    refused(&["concurrency", "--threads", "0"], d, "--threads");
    refused(&["concurrency", "--duration", "0"], d, "--duration");
    refused(&["concurrency", "--duration=-1"], d, "--duration");
    refused(&["concurrency", "--modes", "wal,turbo"], d, "unknown mode \"turbo\"");
    refused(&["concurrency", "--workload", "sideways"], d, "--workload");
    refused(&["concurrency", "--batch", "0"], d, "--batch");
    refused(&["concurrency", "--writers", "0"], d, "--writers");
    refused(&["concurrency", "--writers", "2000"], d, "--writers");
    let out = blobbench()
        .args(["concurrency", "--quick", "--workdir", "/nonexistent/dir", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/dir: no such directory") && !err.contains("panicked"), "{err}");
}

#[test]
fn run_threads_reads_a_dataset_with_several_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    let flat = dir.path().join("flat");
    blobbench().arg("init").arg(&db).args(["--count", "300", "--size", "2000"]).assert().success();
    blobbench().arg("export").arg(&db).arg(&flat).assert().success();
    for path in [&db, &flat] {
        let json = dir.path().join("r.json");
        blobbench()
            .arg("run")
            .arg(path)
            .args(["--threads", "2", "--random", "--count", "500", "--repeat", "2", "--json"])
            .arg(&json)
            .assert()
            .success()
            .stdout(predicate::str::contains("2 threads, each with its own"));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let e = &v["experiments"][0];
        assert_eq!(e["params"]["threads"], 2);
        for run in e["runs"].as_array().unwrap() {
            assert_eq!(run["ops"], 500);
            assert_eq!(run["bytes"], 500 * 2000);
        }
        assert_eq!(e["latency"]["count"], 1000);
    }
    blobbench()
        .arg("run")
        .arg(&db)
        .args(["--threads", "2", "--update"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--threads reads only"));
}
