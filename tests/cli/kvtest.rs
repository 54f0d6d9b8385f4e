//! The kvtest commands end to end through the real binary, on small real
//! datasets in temporary directories.

use crate::common;

use std::path::Path;

use common::{blobbench, blobs, disk_tempdir, small_db, stdout_of};
use predicates::prelude::*;
use rusqlite::Connection;

#[test]
fn init_makes_kvtest_layout_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let rows = blobs(&db);
    assert_eq!(rows.len(), 300);
    assert_eq!(rows.first().unwrap().0, 1);
    assert_eq!(rows.last().unwrap().0, 300);
    assert!(rows.iter().all(|(_, v)| (1500..=2500).contains(&v.len())), "sizes within size +/- variance");
    let conn = Connection::open(&db).unwrap();
    let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    assert_eq!(page, 1024);
    // Incompressible: no two blobs share a 64-byte prefix.
    let mut prefixes: Vec<&[u8]> = rows.iter().map(|(_, v)| &v[..64]).collect();
    prefixes.sort();
    prefixes.dedup();
    assert_eq!(prefixes.len(), 300);

    blobbench().arg("init").arg(&db).assert().failure().stderr(predicate::str::contains("already exists"));
    blobbench().args(["init", "--count", "5", "--force"]).arg(&db).assert().success();
    assert_eq!(blobs(&db).len(), 5);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
}

#[test]
fn same_seed_same_data() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.db", "b.db"] {
        blobbench()
            .args(["init", "--count", "20", "--size", "1000", "--variance", "100", "--seed", "7"])
            .arg(dir.path().join(name))
            .assert()
            .success();
    }
    assert_eq!(blobs(&dir.path().join("a.db")), blobs(&dir.path().join("b.db")));
}

#[test]
fn stat_reports_kvtest_fields_and_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let out = stdout_of(blobbench().arg("stat").arg(&db));
    for field in [
        "Number of entries:       300",
        "Page-size:",
        "Page-count:",
        "Freelist-count:",
        "Integrity-check:    ok",
        "Allocated bytes:",
    ] {
        assert!(out.contains(field), "missing {field:?} in\n{out}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(blobbench().args(["stat", "--json"]).arg(&db))).unwrap();
    assert_eq!(json["kind"], "db");
    let content = json["content_bytes"].as_u64().unwrap();
    let expected: usize = blobs(&db).iter().map(|(_, v)| v.len()).sum();
    assert_eq!(content, expected as u64);
    assert!(json["allocated_bytes"].as_u64().unwrap() >= json["file_bytes"].as_u64().unwrap() / 2);
}

#[test]
fn export_flat_and_tree_are_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let rows = blobs(&db);
    let flat = dir.path().join("flat");
    let tree = dir.path().join("tree");
    blobbench().arg("export").arg(&db).arg(&flat).assert().success();
    blobbench().arg("export").arg(&db).arg(&tree).arg("--tree").assert().success();
    for (k, v) in &rows {
        assert_eq!(&std::fs::read(flat.join(format!("{k:06}"))).unwrap(), v);
        let t = tree.join(format!("{:02}/{:02}/{:02}", k / 10000, (k / 100) % 100, k % 100));
        assert_eq!(&std::fs::read(t).unwrap(), v);
    }
    assert_eq!(std::fs::read_dir(&flat).unwrap().count(), 300);
    // stat sees the layouts and counts the same content.
    let out = stdout_of(blobbench().arg("stat").arg(&tree));
    assert!(out.contains("tree") && out.contains("Number of entries:       300"), "{out}");
    // A non-empty directory needs --force, and --force replaces a previous export.
    blobbench().arg("export").arg(&db).arg(&flat).assert().failure().stderr(predicate::str::contains("not empty"));
    blobbench().arg("export").arg(&db).arg(&flat).arg("--tree").arg("--force").assert().success();
    assert!(flat.join("00/00/01").is_file() && !flat.join("000001").exists());
    // ...but never a directory holding files it did not write.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), b"keep me").unwrap();
    blobbench().arg("export").arg(&db).arg(&mine).arg("--force").assert().failure();
    assert_eq!(std::fs::read(mine.join("notes.txt")).unwrap(), b"keep me");
}

const KVTEST_LINES: [&str; 4] = ["--count ", "Total elapsed time: ", "Microseconds per BLOB ", "Content "];

#[test]
fn run_reads_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let flat = dir.path().join("flat");
    let tree = dir.path().join("tree");
    blobbench().arg("export").arg(&db).arg(&flat).assert().success();
    blobbench().arg("export").arg(&db).arg(&tree).arg("--tree").assert().success();
    let cases: Vec<(&Path, Vec<&str>)> = vec![
        (&db, vec![]),
        (&db, vec!["--blob-api"]),
        (&db, vec!["--blob-api", "--mmap", "1G"]),
        (&flat, vec!["--file-read", "stdio"]),
        (&flat, vec!["--file-read", "posix"]),
        (&tree, vec!["--file-read", "stdio"]),
        (&tree, vec!["--file-read", "posix"]),
    ];
    for (path, extra) in cases {
        let out = stdout_of(
            blobbench().arg("run").arg(path).args(["--count", "500", "--random", "--repeat", "2"]).args(&extra),
        );
        for line in KVTEST_LINES {
            assert!(out.contains(line), "{path:?} {extra:?}: no {line:?} in\n{out}");
        }
        assert!(out.contains("--count 500 --max-id 300 --random"), "{path:?} {extra:?}:\n{out}");
        assert!(out.contains("Microseconds per BLOB read:"));
        assert!(out.contains("p99"), "latency percentiles shown");
        if path == db.as_path() {
            assert!(out.contains("SQLite version: 3."));
            assert!(out.contains("Database page size: 1024"));
        }
    }
}

#[test]
fn run_writes_every_method_and_keeps_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let flat = dir.path().join("flat");
    blobbench().arg("export").arg(&db).arg(&flat).assert().success();
    let before = blobs(&db);
    for extra in [
        vec![],
        vec!["--blob-api"],
        vec!["--jmode", "wal", "--sync", "normal", "--nocheckpoint"],
        vec!["--jmode", "off", "--nosync"],
        vec!["--multitrans"],
    ] {
        let out = stdout_of(
            blobbench()
                .arg("run")
                .arg(&db)
                .args(["--update", "--count", "50", "--random", "--repeat", "1", "--warmup", "0", "--integrity-check"])
                .args(&extra),
        );
        assert!(out.contains("Microseconds per BLOB write:"), "{extra:?}\n{out}");
        assert!(out.contains("integrity-check: ok"), "{extra:?}\n{out}");
    }
    let after = blobs(&db);
    assert_eq!(before.len(), after.len());
    let changed = before.iter().zip(&after).filter(|(b, a)| b.1 != a.1).count();
    assert!(changed >= 40, "writes changed {changed} blobs");
    assert!(before.iter().zip(&after).all(|(b, a)| b.1.len() == a.1.len()), "sizes never change");

    let sizes: Vec<u64> = (1..=300).map(|k| std::fs::metadata(flat.join(format!("{k:06}"))).unwrap().len()).collect();
    let mut seed = 10;
    for method in ["truncate", "inplace", "replace"] {
        for fsync in [false, true] {
            seed += 1;
            let snapshot: Vec<Vec<u8>> =
                (1..=300).map(|k| std::fs::read(flat.join(format!("{k:06}"))).unwrap()).collect();
            let mut cmd = blobbench();
            cmd.arg("run")
                .arg(&flat)
                .args([
                    "--update",
                    "--count",
                    "30",
                    "--random",
                    "--repeat",
                    "1",
                    "--warmup",
                    "0",
                    "--file-write",
                    method,
                ])
                .args(["--seed", &seed.to_string()]);
            if fsync {
                cmd.arg("--fsync");
            }
            assert!(stdout_of(&mut cmd).contains("Microseconds per BLOB write:"));
            let now: Vec<Vec<u8>> = (1..=300).map(|k| std::fs::read(flat.join(format!("{k:06}"))).unwrap()).collect();
            assert!(snapshot.iter().zip(&now).filter(|(a, b)| a != b).count() >= 25, "{method} fsync={fsync} wrote");
            assert!(now.iter().zip(&sizes).all(|(v, &s)| v.len() as u64 == s), "{method}: sizes kept");
        }
    }
    assert_eq!(std::fs::read_dir(&flat).unwrap().count(), 300, "no temporary files left");
}

#[test]
fn random_order_is_kvtests_sequence() {
    // kvtest's first random keys with --max-id 1000 are 1, 893, 547, 745...
    // With only keys 1 and 547 present, two hits take three cycles.
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let conn = Connection::open(&db).unwrap();
    conn.execute("DELETE FROM kv", []).unwrap();
    conn.execute("INSERT INTO kv VALUES (1, randomblob(100)), (547, randomblob(100))", []).unwrap();
    drop(conn);
    let out = stdout_of(
        blobbench()
            .arg("run")
            .arg(&db)
            .args(["--random", "--max-id", "1000", "--count", "2", "--repeat", "1", "--warmup", "0"]),
    );
    assert!(out.contains("3 cycles due to 1 misses"), "{out}");
    assert!(out.contains("--count 2 --max-id 1000 --random"), "{out}");
}

#[test]
fn json_matches_the_schema_and_counts_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let json_path = dir.path().join("r.json");
    let csv_path = dir.path().join("r.csv");
    blobbench()
        .arg("run")
        .arg(&db)
        .args(["--count", "200", "--repeat", "3", "--warmup", "2", "--label", "bench box", "--json"])
        .arg(&json_path)
        .arg("--csv")
        .arg(&csv_path)
        .assert()
        .success();
    let value = common::valid_results(&json_path);
    let text = std::fs::read_to_string(&json_path).unwrap();

    let e = &value["experiments"][0];
    assert_eq!(e["runs"].as_array().unwrap().len(), 3);
    assert_eq!(e["warmup_runs"], 2);
    assert_eq!(e["latency"]["count"], 600, "one latency per op of every timed run");
    let l = &e["latency"];
    let p = |k: &str| l[k].as_f64().unwrap();
    assert!(p("min_us") <= p("p50_us") && p("p50_us") <= p("p99_us") && p("p99_us") <= p("max_us"));
    assert!(value["environment"]["sqlite_version"].as_str().unwrap().starts_with("3."));
    assert_eq!(value["label"], "bench box");
    assert_eq!(value["schema_version"], 4);

    // The full histogram travels with the summary and decodes to the same count.
    let hist = blobbench::measure::Latency::from_base64(e["latency_histogram"].as_str().unwrap()).unwrap();
    assert_eq!(hist.count(), 600);
    assert_eq!(hist.summary().p99_us, p("p99_us"));

    // Round trip through the library's reader and writer.
    let parsed = blobbench::results::parse("r.json", &text).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), value);

    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(csv.lines().count(), 4, "header and one row per timed run");
    assert!(csv.starts_with("experiment,run,ops"));
}

#[test]
fn kvtest_compatible_single_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let json_path = dir.path().join("r.json");
    blobbench()
        .arg("run")
        .arg(&db)
        .args(["--repeat", "1", "--warmup", "0", "--count", "100", "--json"])
        .arg(&json_path)
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let e = &v["experiments"][0];
    assert_eq!(e["runs"].as_array().unwrap().len(), 1);
    assert_eq!(e["warmup_runs"], 0);
    let ph = &e["runs"][0]["phases"];
    let parts = ["setup_ns", "loop_ns", "commit_ns", "close_ns"].iter().map(|k| ph[k].as_u64().unwrap()).sum::<u64>();
    let total = ph["kvtest_total_ns"].as_u64().unwrap();
    assert!(parts <= total && total - parts < 5_000_000, "phases add up to kvtest's total: {parts} vs {total}");
}

#[test]
fn cold_runs_evict_first() {
    let dir = disk_tempdir();
    let db = small_db(dir.path());
    let json_path = dir.path().join("r.json");
    let out = blobbench()
        .arg("run")
        .arg(&db)
        .args(["--cold", "--repeat", "2", "--count", "100", "--json"])
        .arg(&json_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "cold run on a real disk: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    for run in v["experiments"][0]["runs"].as_array().unwrap() {
        let resident = run["cold"]["resident_pct"].as_f64().unwrap();
        assert!(resident <= 10.0, "resident after eviction: {resident}%");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("cold: page cache evicted"));
}

#[test]
fn bad_numbers_and_options_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    for args in [
        vec!["init", "x.db", "--count", "0"],
        vec!["init", "x.db", "--count", "-5"],
        vec!["init", "x.db", "--count", "10q"],
        vec!["init", "x.db", "--size", "99999999999999999999"],
        vec!["init", "x.db", "--pagesize", "4000"],
        vec!["init", "x.db", "--size", "100", "--variance", "100"],
        vec!["run", "t.db", "--count", "1.5"],
        vec!["run", "t.db", "--repeat", "0"],
        vec!["run", "t.db", "--mmap", "-1"],
        vec!["run", "t.db", "--jmode", "sideways"],
    ] {
        let out = blobbench().current_dir(dir.path()).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.trim_end().lines().count() <= 3, "{args:?}: short error, got\n{err}");
    }
    assert!(!dir.path().join("x.db").exists());
    let _ = db;
}

#[test]
fn read_only_database_refuses_update() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let before = std::fs::read(&db).unwrap();
    let mut perms = std::fs::metadata(&db).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&db, perms).unwrap();
    blobbench()
        .arg("run")
        .arg(&db)
        .args(["--update", "--repeat", "1", "--warmup", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("read-only"));
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

#[test]
fn each_update_invocation_writes_new_content() {
    // SQLite does not write pages whose bytes are unchanged, so a run that
    // rewrote what the previous one wrote would measure a near-free write.
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let update = || {
        blobbench()
            .arg("run")
            .arg(&db)
            .args(["--update", "--count", "20", "--repeat", "1", "--warmup", "0"])
            .assert()
            .success();
        blobs(&db)
    };
    let first = update();
    let second = update();
    let changed = first.iter().zip(&second).take(20).filter(|(a, b)| a.1 != b.1).count();
    assert_eq!(changed, 20, "the second run rewrote every blob with new bytes");
    // An explicit seed repeats the content exactly.
    let with_seed = |seed: &str| {
        blobbench()
            .arg("run")
            .arg(&db)
            .args(["--update", "--count", "5", "--repeat", "1", "--warmup", "0", "--seed", seed])
            .assert()
            .success();
        blobs(&db)
    };
    assert_eq!(with_seed("42")[..5], with_seed("42")[..5]);
}

/// A database whose keys are 1, 3, 5, ... 199: every other key is a gap.
fn db_with_gaps(dir: &Path) -> std::path::PathBuf {
    let db = small_db(dir);
    Connection::open(&db).unwrap().execute("DELETE FROM kv WHERE k % 2 = 0", []).unwrap();
    db
}

#[test]
fn blob_api_on_keys_with_gaps_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_gaps(dir.path());
    for order in ["--asc", "--random"] {
        let out = stdout_of(
            blobbench()
                .arg("run")
                .arg(&db)
                .args(["--blob-api", order, "--count", "500", "--repeat", "1", "--warmup", "0"])
                .timeout(common::HANG),
        );
        assert!(out.contains("Microseconds per BLOB read"), "{order}: {out}");
    }
}

#[test]
fn a_range_without_blobs_stops_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_gaps(dir.path());
    Connection::open(&db).unwrap().execute("DELETE FROM kv WHERE k < 100", []).unwrap();
    for access in [&[][..], &["--blob-api"][..]] {
        let out = blobbench()
            .arg("run")
            .arg(&db)
            .args(["--max-id", "50", "--count", "10", "--repeat", "1"])
            .args(access)
            .timeout(common::HANG)
            .output()
            .unwrap();
        let err = common::one_line_error(&out);
        assert!(err.contains("no blob found among keys 1..=50"), "{err}");
    }
}

/// Result files are checked against the schema by tests/common's helpers,
/// not by a copy of them in each test file.
#[test]
fn the_schema_check_is_written_once() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    let needle = concat!("json", "schema::");
    let copies: Vec<String> = std::fs::read_dir(&tests)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter(|p| std::fs::read_to_string(p).unwrap().contains(needle))
        .map(|p| p.display().to_string())
        .collect();
    assert!(copies.is_empty(), "use common::valid_results or common::schema_violations in {copies:?}");
}
