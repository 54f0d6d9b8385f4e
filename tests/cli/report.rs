//! `blobbench report` run as a user runs it, on the committed result files
//! in tests/fixtures (a complete suite from host-a, a partial one from host-b).

use crate::common;

use common::{blobbench, fixture, one_line_error};
use predicates::prelude::*;

#[test]
fn html_report_directory_for_two_machines() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    blobbench()
        .arg("report")
        .arg(fixture("suite-host-a.json"))
        .arg(fixture("suite-host-b.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("23 charts, 2 result files"));
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("host-a") && page.contains("host-b"));
    assert!(page.contains("On host-a SQLite reads 10 KB blobs 1.9x faster than fopen/fread from one directory"));
    assert!(page.contains("read/db-blob-mmap) was not measured"), "host-b's gap is named");
    let charts: Vec<String> = std::fs::read_dir(out.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let svgs = charts.iter().filter(|c| c.ends_with(".svg")).count();
    let pngs = charts.iter().filter(|c| c.ends_with(".png")).count();
    assert_eq!(svgs, 23);
    assert!(pngs == 23 || pngs == 0, "a PNG beside every SVG, or none where no font exists");
    assert_eq!(svgs + pngs, charts.len());
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("](charts/chart1-read-sql.svg)"));

    // Running again replaces the previous report without --force.
    blobbench().arg("report").arg(fixture("suite-host-a.json")).arg("--out").arg(&out).assert().success();
    assert!(!std::fs::read_to_string(out.join("index.html")).unwrap().contains("host-b"));
}

#[test]
fn someone_elses_directory_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("photos");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("cat.jpg"), b"meow").unwrap();
    let run = blobbench().arg("report").arg(fixture("suite-host-a.json")).arg("--out").arg(&out).output().unwrap();
    assert!(one_line_error(&run).contains("not a blobbench report (use --force"));
    assert_eq!(std::fs::read(out.join("cat.jpg")).unwrap(), b"meow");

    blobbench()
        .arg("report")
        .arg(fixture("suite-host-a.json"))
        .arg("--out")
        .arg(&out)
        .arg("--force")
        .assert()
        .success();
    assert!(out.join("index.html").is_file() && !out.join("cat.jpg").exists());
}

#[test]
fn force_never_deletes_the_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.json");
    std::fs::copy(fixture("suite-host-a.json"), &input).unwrap();
    let run = blobbench().arg("report").arg(&input).arg("--out").arg(dir.path()).arg("--force").output().unwrap();
    assert!(one_line_error(&run).contains("holds the input"));
    assert!(input.is_file());
}

#[test]
fn text_and_markdown_print_to_stdout() {
    blobbench()
        .args(["report", "--format", "text"])
        .arg(fixture("suite-host-a.json"))
        .assert()
        .success()
        .stdout(predicate::str::contains("On this machine SQLite reads 10 KB blobs 1.9x faster than fopen/fread"))
        .stdout(predicate::str::contains("write/flat-replace-fsync"));
    blobbench()
        .args(["report", "--format", "markdown"])
        .arg(fixture("suite-host-a.json"))
        .arg(fixture("suite-host-b.json"))
        .assert()
        .success()
        .stdout(predicate::str::starts_with("# blobbench report: host-a, host-b"))
        .stdout(predicate::str::contains("| host-b | not measured |"));
    let run = blobbench()
        .args(["report", "--format", "text", "--out", "x"])
        .arg(fixture("suite-host-a.json"))
        .output()
        .unwrap();
    assert!(one_line_error(&run).contains("--out is for --format html"));
}

#[test]
fn unusable_files_are_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("suite-host-a.json")).unwrap();
    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, &text[..text.len() / 3]).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"schema": "something-else", "schema_version": 1}"#).unwrap();
    let cases = [
        (truncated, "not valid JSON"),
        (other, "not a blobbench result file"),
        (dir.path().join("missing.json"), "cannot read"),
    ];
    for (path, expect) in cases {
        let run = blobbench().arg("report").arg(&path).arg("--out").arg(dir.path().join("r")).output().unwrap();
        let err = one_line_error(&run);
        assert!(err.contains(expect) && err.contains(&*path.to_string_lossy()), "{err}");
    }
    assert!(!dir.path().join("r").exists(), "nothing written for bad input");
    blobbench().arg("report").assert().failure().stderr(predicate::str::contains("FILES"));
}

#[test]
fn the_verdict_comes_first_in_every_format() {
    let text = blobbench()
        .args(["report", "--format", "text"])
        .arg(fixture("suite-host-a.json"))
        .arg(fixture("suite-host-b.json"))
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let first = text.lines().find(|l| l.starts_with("== ")).unwrap();
    assert_eq!(first, "== Verdict ==");
    let row = text.lines().find(|l| l.trim_start().starts_with("10 KB reads") && l.contains("host-a")).unwrap();
    // One run per experiment in these files: the factor without an interval.
    assert!(
        row.contains("SQLite, blob API + mmap: 2.60x faster") && row.contains("1 runs each: spread unknown"),
        "{row}"
    );
    let md = String::from_utf8(
        blobbench().args(["report", "--format", "markdown"]).arg(fixture("suite-host-a.json")).output().unwrap().stdout,
    )
    .unwrap();
    // One result file: no column names it.
    assert!(md.contains("## Verdict\n\n| question | answer | factor |"), "verdict table in Markdown");
    // A version 1 file still renders; what it did not record says so.
    assert!(md.contains("Histogram not recorded (older result file) for SQLite, SQL"), "dotted curves are named");
    assert!(md.contains("| label | not recorded (hostname used) |") && md.contains("| disk | not recorded |"));
}

#[test]
fn a_baseline_from_schema_version_1_is_compared_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("suite-host-a.json")).unwrap();
    let mut newer: serde_json::Value = serde_json::from_str(&text).unwrap();
    newer["schema_version"] = 2.into();
    newer["label"] = "host-a after upgrade".into();
    for e in newer["experiments"].as_array_mut().unwrap() {
        if e["id"] == "read/db-sql" {
            e["runs"][0]["per_op_us"] = 13.0.into();
            e["summary"]["per_op_us"]["median"] = 13.0.into();
        }
    }
    let new_path = dir.path().join("new.json");
    std::fs::write(&new_path, newer.to_string()).unwrap();
    let out = blobbench()
        .args(["report", "--format", "markdown", "--baseline"])
        .arg(fixture("suite-host-a.json"))
        .arg(&new_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("## Against the baseline"));
    assert!(md.contains("The baseline is schema version 1, the results version 2"));
    assert!(md.contains("| read/db-sql | 10.00 | 13.00 | 30% slower, noise unknown (one run) |"), "{md}");

    // A baseline this blobbench cannot read is refused in one line.
    let future = dir.path().join("future.json");
    std::fs::write(&future, text.replacen("\"schema_version\": 1", "\"schema_version\": 9", 1)).unwrap();
    let run =
        blobbench().args(["report", "--format", "text", "--baseline"]).arg(&future).arg(&new_path).output().unwrap();
    assert!(one_line_error(&run).contains("schema version 9 is not supported"));
}

#[test]
fn html_report_with_a_baseline_keeps_it_beside_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    blobbench()
        .arg("report")
        .arg("--baseline")
        .arg(fixture("suite-host-b.json"))
        .arg(fixture("suite-host-a.json"))
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("<section id=\"baseline\">") && page.contains("href=\"#fig-fair-read-blob-mmap\""));
    assert!(out.join("baseline.json").is_file());
}

/// Files written before the server info was engine-neutral hold
/// PostgreSQL's own fields as `params.server`; `report` still reads them,
/// as the generic `server_info`.
#[test]
fn postgresql_server_fields_of_older_files_are_still_read() {
    let file = fixture("suite-postgres-server.json");
    let raw: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let old = raw["experiments"].as_array().unwrap().iter().find(|e| e["id"] == "read/postgres").unwrap();
    assert_eq!(old["params"]["server"]["version_num"], 150014, "the fixture holds the old fields");
    let results = blobbench::results::read(&file).unwrap();
    let info = results.experiment("read/postgres").and_then(|e| e.params.server_info.as_ref()).expect("read");
    assert_eq!((info.product.as_str(), info.place), ("PostgreSQL", blobbench::records::ServerPlace::Local));
    assert_eq!((info.blobs_in.as_str(), info.setting("synchronous_commit")), ("table kv", Some("on")));

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    blobbench().arg("report").arg(&file).arg("--out").arg(&out).assert().success();
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("PostgreSQL (bytea)"), "the engine's figures are drawn");
}
