//! `blobbench report` run as a user runs it, on the committed result files
//! in tests/fixtures (a complete suite from host-a, a partial one from host-b).

mod common;

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
        .stdout(predicate::str::contains("12 charts, 2 result files"));
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
    assert_eq!(svgs, 12);
    assert!(pngs == 12 || pngs == 0, "a PNG beside every SVG, or none where no font exists");
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
