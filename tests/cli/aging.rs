//! `blobbench aging` through the real binary, on tiny datasets under the
//! crate's target directory (a disk filesystem, where FIEMAP answers).

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::Path;

use predicates::prelude::*;
use serde_json::Value;

use common::{blobbench, disk_tempdir, valid_results};

const LAYOUTS: [&str; 4] = ["db-wal", "db-rollback", "files-inplace", "files-rename"];

fn aging(work: &Path, out: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = blobbench();
    cmd.arg("aging").arg("--quick").arg("--workdir").arg(work).arg("--out").arg(out).args(extra);
    cmd
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Every layout at every age has disk usage and measured fragmentation, and
/// the figures agree with each other.
fn check_points(setting: &Value, ages: &[u64]) {
    let points = setting["points"].as_array().unwrap();
    for layout in LAYOUTS {
        for &age in ages {
            let p = points
                .iter()
                .find(|p| p["layout"] == layout && u(&p["age"]) == age)
                .unwrap_or_else(|| panic!("no point for {layout} at age {age}"));
            let usage = &p["usage"];
            assert!(u(&usage["allocated_bytes"]) >= u(&usage["content_bytes"]), "{layout} age {age}: {usage}");
            assert!(u(&usage["content_bytes"]) > 0, "{layout} age {age}");
            let f = &p["fragmentation"];
            let extents = f["extents"].as_u64().unwrap_or_else(|| panic!("FIEMAP must work under target/: {f}"));
            assert!(u(&f["files"]) >= 1 && extents >= u(&f["files"]), "{layout} age {age}: {f}");
            assert!(p["read_warm"]["per_op_us"].as_f64().unwrap() > 0.0);
            assert!(p["read_cold"]["per_op_us"].as_f64().unwrap() > 0.0);
            if layout.starts_with("db") {
                let o = &f["overflow"];
                assert!(o["mean_distance_pages"].as_f64().unwrap() >= 1.0, "{o}");
                assert!(usage["freelist_pages"].is_u64());
            }
            if age > 0 {
                assert!(p["rewrite"]["per_op_us"].as_f64().unwrap() > 0.0, "{layout} age {age}");
            }
        }
    }
}

/// The reads at each age ran as rounds, warm and cold, every layout an arm
/// of every round, and the points' figures are those rounds' medians.
fn check_rounds(setting: &Value, ages: &[u64]) {
    let name = setting["sizes"]["name"].as_str().unwrap();
    let sets = setting["rounds"].as_array().unwrap();
    let reads = sets.iter().filter(|s| s["id"].as_str().unwrap().split('/').count() == 4).count();
    assert_eq!(reads, 2 * ages.len(), "the layouts' reads warm and cold at each age");
    for &age in ages {
        for cache in ["warm", "cold"] {
            let id = format!("aging/{name}/age{age}/{cache}");
            let set = sets.iter().find(|r| r["id"] == id.as_str()).unwrap_or_else(|| panic!("no rounds {id}"));
            assert_eq!(set["arms"], serde_json::json!(LAYOUTS), "{id}");
            let rounds = set["rounds"].as_array().unwrap();
            assert!(!rounds.is_empty() && rounds.len() <= 4, "{id}: at most --quick's 4 rounds");
            for r in rounds {
                assert_eq!(r["per_op_us"].as_array().unwrap().len(), LAYOUTS.len(), "{id}: {r}");
                let mut order: Vec<u64> = r["order"].as_array().unwrap().iter().map(u).collect();
                order.sort_unstable();
                assert_eq!(order, [0, 1, 2, 3], "{id}: each arm once per round");
            }
            let runs = setting["points"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["layout"] == "db-wal" && u(&p["age"]) == age)
                .map(|p| u(&p[format!("read_{cache}")]["runs"]))
                .unwrap();
            assert_eq!(runs, rounds.len() as u64, "{id}: a point's runs are its rounds");
        }
    }
}

/// Every round of `set` ran each of its `arms` once; its rounds.
fn rounds_of<'a>(set: &'a Value, arms: &[&str]) -> &'a Vec<Value> {
    let id = &set["id"];
    let got: Vec<&str> = set["arms"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(got, arms, "{id}");
    let rounds = set["rounds"].as_array().unwrap();
    assert!(!rounds.is_empty() && rounds.len() <= 4, "{id}: at most --quick's 4 rounds");
    for r in rounds {
        let mut order: Vec<u64> = r["order"].as_array().unwrap().iter().map(u).collect();
        order.sort_unstable();
        assert_eq!(order, (0..arms.len() as u64).collect::<Vec<_>>(), "{id}: each arm once per round, order recorded");
    }
    rounds
}

/// The remedies ran on copies, read beside the aged layouts in one set of
/// rounds per cache state; each remedy point's reads are those rounds.
fn check_remedy_rounds(setting: &Value, last: u64) {
    let name = setting["sizes"]["name"].as_str().unwrap();
    let mut arms: Vec<String> = LAYOUTS.iter().map(|l| l.to_string()).collect();
    for l in LAYOUTS {
        let remedies: &[&str] = if l.starts_with("db") { &["vacuum", "incremental-vacuum"] } else { &["copy-rewrite"] };
        arms.extend(remedies.iter().map(|r| format!("{l}/{r}")));
    }
    let arms: Vec<&str> = arms.iter().map(String::as_str).collect();
    let remedies = setting["remedies"].as_array().unwrap();
    assert_eq!(remedies.len(), 6, "two remedies per database layout, one per file layout");
    for cache in ["warm", "cold"] {
        let id = format!("aging/{name}/age{last}/{cache}/remedies");
        let set = setting["rounds"].as_array().unwrap().iter().find(|r| r["id"] == id.as_str());
        let rounds = rounds_of(set.unwrap_or_else(|| panic!("no rounds {id}")), &arms);
        for p in remedies {
            assert_eq!(u(&p[format!("read_{cache}")]["runs"]), rounds.len() as u64, "{id}: {}", p["remedy"]);
        }
    }
}

/// Each size band of the crossover ran as rounds of the database and file
/// layouts, and states files over SQLite paired by round.
fn check_band_rounds(setting: &Value) {
    let name = setting["sizes"]["name"].as_str().unwrap();
    for c in setting["crossover"].as_array().unwrap() {
        let (age, cache) = (u(&c["age"]), c["cache"].as_str().unwrap());
        let bands = c["bands"].as_array().unwrap();
        assert!(!bands.is_empty(), "age {age} {cache}");
        for (k, band) in bands.iter().enumerate() {
            let ratio = &band["files_over_db"];
            assert!(ratio["low"].as_f64().unwrap() <= ratio["value"].as_f64().unwrap(), "{band}");
            let id = format!("aging/{name}/age{age}/{cache}/band");
            let sets: Vec<&Value> = setting["rounds"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["id"].as_str().unwrap().starts_with(&id))
                .collect();
            assert_eq!(sets.len(), bands.len(), "{id}*: one set per band");
            let rounds = rounds_of(sets[k], &LAYOUTS);
            assert_eq!(u(&ratio["rounds"]), rounds.len() as u64, "{id}: the band's ratio is over its rounds");
        }
    }
}

#[test]
fn quick_aging_reports_every_layout_and_age_consistently() {
    let dir = disk_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    aging(&work, &out, &["--count", "40", "--ages", "0,1,2", "--size-dist", "article,large"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Storage aging"))
        .stdout(predicate::str::contains("extents/file"));
    let raw = valid_results(&out.join("results.json"));
    assert_eq!(raw["complete"], true);
    let settings = raw["aging"]["settings"].as_array().unwrap();
    assert_eq!(settings.len(), 2);
    for s in settings {
        check_points(s, &[0, 1, 2]);
        check_rounds(s, &[0, 1, 2]);
        let remedies: Vec<&str> =
            s["remedies"].as_array().unwrap().iter().map(|r| r["remedy"].as_str().unwrap()).collect();
        for r in ["vacuum", "incremental-vacuum", "copy-rewrite"] {
            assert!(remedies.contains(&r), "{remedies:?}");
        }
        check_remedy_rounds(s, 2);
    }
    let large = &settings[1];
    assert_eq!(large["sizes"]["name"], "large");
    assert_eq!(large["crossover"].as_array().unwrap().len(), 6, "warm and cold at each of 3 ages");
    check_band_rounds(large);
    for chart in ["aging-article-read-warm", "aging-article-extents", "aging-large-crossover", "aging-large-disk"] {
        let svg = std::fs::read_to_string(out.join("charts").join(format!("{chart}.svg"))).unwrap();
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{chart}: not well-formed: {e}"));
    }
    assert!(std::fs::read_dir(&work).unwrap().next().is_none(), "datasets removed without --keep");
}

#[test]
fn churn_deletes_and_inserts_and_keep_keeps_the_datasets() {
    let dir = disk_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    aging(&work, &out, &["--count", "60", "--ages", "0,1", "--size-dist", "article", "--churn", "20", "--keep"])
        .assert()
        .success();
    let raw = valid_results(&out.join("results.json"));
    let s = &raw["aging"]["settings"][0];
    check_points(s, &[0, 1]);
    let p = s["points"].as_array().unwrap().iter().find(|p| p["age"] == 1).unwrap();
    assert!(p["rewrite"]["churn_delete_us"].as_f64().unwrap() > 0.0);
    assert!(p["rewrite"]["churn_insert_us"].as_f64().unwrap() > 0.0);
    assert!(std::fs::read_dir(&work).unwrap().next().is_some(), "--keep keeps the datasets");
}

#[test]
fn a_disk_that_fills_mid_step_keeps_what_was_measured() {
    let dir = disk_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    // Five large blobs make a ~3 MB database; a rewrite pass with new sizes
    // grows it past the 4 MB file size limit (the WAL checkpoint fails).
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"));
    cmd.args(["aging", "--quick", "--count", "5", "--ages", "0,1", "--size-dist", "large"]);
    cmd.arg("--workdir").arg(&work).arg("--out").arg(&out);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 4_000_000, rlim_max: 4_000_000 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("incomplete"), "{stdout}");
    let raw = valid_results(&out.join("results.json"));
    assert_eq!(raw["complete"], false);
    assert!(raw["notes"].to_string().contains("disk filled up"), "{}", raw["notes"]);
    let points = raw["aging"]["settings"][0]["points"].as_array().unwrap();
    assert!(points.iter().any(|p| p["age"] == 0), "age 0 was measured and kept");
    assert!(std::fs::read_dir(&work).unwrap().next().is_none(), "datasets removed");
}

#[test]
fn your_files_are_aged_and_only_read() {
    let dir = disk_tempdir();
    let (work, out, mine) = (dir.path().join("work"), dir.path().join("out"), dir.path().join("mine"));
    std::fs::create_dir(&work).unwrap();
    let sizes = common::file_tree(&mine, 30);
    let before = common::snapshot(&mine);
    aging(&work, &out, &["--count", "20", "--ages", "0,1", "--from", mine.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("yours: your files in"))
        .stdout(predicate::str::contains("(20 of 30 files, evenly spaced"));
    assert_eq!(common::snapshot(&mine), before, "your directory is never written");
    let raw = valid_results(&out.join("results.json"));
    let settings = raw["aging"]["settings"].as_array().unwrap();
    assert_eq!(settings.len(), 1, "your files replace the article and large settings");
    let s = &settings[0];
    assert_eq!((s["sizes"]["name"].as_str(), u(&s["count"])), (Some("yours"), 20));
    let from = &s["sizes"]["from"];
    assert_eq!((from["kind"].as_str(), u(&from["files_found"]), u(&from["files_used"])), (Some("files"), 30, 20));
    // Files k * 30 / 20 in path order: the content at age 0.
    let content: u64 = (0..20).map(|k| sizes[k * 30 / 20]).sum();
    assert_eq!(u(&from["content_bytes"]), content);
    check_points(s, &[0, 1]);
    let age0 = s["points"].as_array().unwrap().iter().find(|p| p["age"] == 0).unwrap();
    assert_eq!(u(&age0["usage"]["content_bytes"]), content, "your files' content was stored");
    let (lo, hi) = (u(&s["sizes"]["min_bytes"]), u(&s["sizes"]["max_bytes"]));
    assert!(lo >= 5000 && hi <= 5000 + 397 * 29 && lo < hi, "the 5th to 95th percentile of your sizes: {lo}..{hi}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Where the sizes came from: your files in"), "the page says where the sizes came from");
}

#[test]
fn a_named_distribution_is_a_size_setting() {
    let dir = disk_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    aging(&work, &out, &["--count", "30", "--ages", "0,1", "--sizes", "lognormal:8k:0.5"]).assert().success();
    let raw = valid_results(&out.join("results.json"));
    let s = &raw["aging"]["settings"][0];
    assert_eq!(s["sizes"]["name"], "lognormal:8k:0.5");
    assert_eq!(s["sizes"]["from"]["dist"], serde_json::json!({"kind": "lognormal", "median": 8000, "sigma": 0.5}));
    check_points(s, &[0, 1]);
    let age0 = s["points"].as_array().unwrap().iter().find(|p| p["age"] == 0).unwrap();
    let mean = u(&age0["usage"]["content_bytes"]) / 30;
    assert!((6_000..13_000).contains(&mean), "lognormal blobs around 9 KB: mean {mean}");
}
