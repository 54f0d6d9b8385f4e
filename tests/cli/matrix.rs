//! `blobbench matrix` through the real binary, on a tiny matrix.

use crate::common;

use std::path::Path;

use assert_cmd::Command;
use blobbench::records::{SizeDist, SizesFrom};
use predicates::prelude::*;

fn matrix(work: &Path, out: &Path) -> Command {
    let mut cmd = common::blobbench();
    cmd.arg("matrix").arg("--workdir").arg(work).arg("--out").arg(out);
    cmd
}

const TINY: [&str; 10] =
    ["--sizes", "1k,4k", "--pagesizes", "1024,4096", "--total", "200k", "--cache", "64KiB", "--repeat", "1"];

#[test]
fn tiny_matrix_prints_the_table_and_writes_results() {
    let dir = tempfile::tempdir().unwrap();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    matrix(&work, &out)
        .args(TINY)
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^  page size +1k +4k$").unwrap())
        .stdout(predicate::str::is_match(r"(?m)^       1024 +\d+\.\d{3} +\d+\.\d{3}$").unwrap())
        .stdout(predicate::str::contains("Crossover"))
        .stdout(predicate::str::contains("The study in 2011"))
        .stdout(predicate::str::contains("median over the timed runs of the loop time per blob read"))
        .stdout(predicate::str::contains("\x1b[").not());
    for chart in ["matrix-heatmap", "matrix-ratio-by-size", "matrix-heatmap-2011"] {
        let svg = std::fs::read_to_string(out.join("charts").join(format!("{chart}.svg"))).unwrap();
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{chart}: not well-formed: {e}"));
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Internal vs external blobs"));
    let raw = common::valid_results(&out.join("results.json"));
    let mut broken = raw.clone();
    broken["matrix"]["cells"][0]["external_ratio"] = serde_json::json!(-1.0);
    assert!(!common::schema_violations(&broken).is_empty(), "the schema checks the matrix section");
    let results = blobbench::results::read(&out.join("results.json")).unwrap();
    assert_eq!(results.command, "matrix");
    assert!(results.complete);
    let m = results.matrix.expect("matrix section");
    assert_eq!(m.cells.len(), 4);
    assert_eq!(m.params.cache_bytes, 65536);
    assert!(m.cells.iter().all(|c| c.external_ratio > 0.0 && c.internal.runs.len() == 1));
    assert_eq!(m.crossovers.len(), 2);
    for c in &m.cells {
        let w = c.writes.as_ref().expect("writes measured");
        let set = w.rounds.as_ref().expect("the writes ran in rounds");
        assert_eq!(set.arms, [&*w.fast_db.id, &w.fast_files.id, &w.durable_db.id, &w.durable_files.id]);
        assert!(set.consistent() && set.rounds.len() == 1, "--repeat 1: one round of the four writes");
        let paired = set.ratio(&w.fast_files.id, &w.fast_db.id).unwrap();
        assert_eq!(w.fast_ratio, paired.value, "the fast ratio is paired by round");
        let churn = w.churn_rounds.as_ref().expect("grow and shrink ran in rounds");
        assert_eq!(churn.arms, [&*w.churn_db.id, &w.churn_files.id]);
        assert!(churn.consistent() && churn.rounds.len() == 1, "--repeat 1: one round of the two");
        let paired = churn.ratio(&w.churn_files.id, &w.churn_db.id).unwrap();
        assert_eq!(w.churn_ratio, paired.value, "the grow/shrink ratio is paired by round");
    }
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "every dataset removed");
}

#[test]
fn bad_input_fails_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["--sizes", "10k,abc"], "invalid number \"abc\""),
        (&["--sizes", "10k,,20k"], "empty element"),
        (&["--pagesizes", "1024,x"], "invalid number"),
        (&["--pagesizes", "1000"], "power of two from 512 to 65536"),
        (&["--pagesizes", "131072"], "power of two from 512 to 65536"),
        (&["--sizes", "4k", "--total", "3k"], "--total 3000 is smaller than one blob of 4000 bytes"),
        (&["--pagesizes", "4096", "--cache", "4000"], "--cache 4000 is smaller than one page of 4096 bytes"),
        (&["--repeat", "0"], "--rounds must be at least 1"),
    ];
    for (args, message) in cases {
        matrix(&work, &out)
            .args(args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(message))
            .stderr(predicate::str::contains("panicked").not());
        assert!(!out.exists(), "{args:?}: no output made");
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "{args:?}: no dataset built");
    }
    matrix(&dir.path().join("missing"), &out)
        .args(TINY)
        .assert()
        .failure()
        .stderr(predicate::str::contains("missing: work directory does not exist"));
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    matrix(&work, &file).args(TINY).assert().failure().stderr(predicate::str::contains("not a directory"));
}

#[test]
fn cold_cells_evict_all_three_layouts() {
    let dir = common::disk_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    let run = matrix(&work, &out)
        .args(["--sizes", "4k", "--pagesizes", "1024", "--total", "100k", "--cache", "64k", "--repeat", "1", "--cold"])
        .output()
        .unwrap();
    assert!(run.status.success(), "cold cells on a real disk: {}", String::from_utf8_lossy(&run.stderr));
    let m = blobbench::results::read(&out.join("results.json")).unwrap().matrix.unwrap();
    let cell = &m.cells[0];
    // 25 blobs: the database alone; the names database and the files; the files.
    for (e, files) in [(&cell.internal, 1), (&cell.external, 26), (&cell.direct, 25)] {
        assert_eq!(e.warmup_runs, 0, "{}: no warm-up before cold runs", e.id);
        let cold = e.runs[0].cold.as_ref().unwrap_or_else(|| panic!("{}: not evicted", e.id));
        assert!(cold.effective && cold.resident_pct <= 10.0, "{}: {cold:?}", e.id);
        assert_eq!(cold.files, files, "{}: files evicted", e.id);
    }
}

#[test]
fn your_files_are_one_more_cell_per_page_size_and_are_only_read() {
    let dir = tempfile::tempdir().unwrap();
    let (work, out, mine) = (dir.path().join("work"), dir.path().join("out"), dir.path().join("mine"));
    std::fs::create_dir(&work).unwrap();
    let sizes = common::file_tree(&mine, 30);
    let before = common::snapshot(&mine);
    // 100 KB of the files' 323 KB: 9 of them, every 30 / 9th in path order.
    let used: Vec<u64> = (0..9).map(|k| sizes[k * 30 / 9]).collect();
    matrix(&work, &out)
        .args(["--sizes", "4k", "--pagesizes", "1024,4096", "--total", "100k", "--cache", "64KiB", "--repeat", "1"])
        .args(["--reads-only", "--from"])
        .arg(&mine)
        .assert()
        .success()
        .stdout(predicate::str::contains("your data: your files in"))
        .stdout(predicate::str::contains("(9 of 30 files, evenly spaced"))
        .stdout(predicate::str::contains("skipped 1 symbolic links (not followed), 1 empty files"))
        .stdout(predicate::str::is_match(r"(?m)^ +4096 +9 +").unwrap());
    assert_eq!(common::snapshot(&mine), before, "your directory is never written");
    let raw = common::valid_results(&out.join("results.json"));
    assert_eq!(raw["matrix"]["params"]["sizes_from"]["kind"], "files");
    let m = blobbench::results::read(&out.join("results.json")).unwrap().matrix.unwrap();
    assert_eq!(m.cells.len(), 2, "the fixed 4k column is still measured");
    let Some(SizesFrom::Files { files_found, files_used, content_bytes, .. }) = m.params.sizes_from else {
        panic!("{:?}", m.params.sizes_from)
    };
    assert_eq!((files_found, files_used), (30, 9));
    assert_eq!(content_bytes, used.iter().sum::<u64>());
    assert_eq!(m.yours.iter().map(|c| c.page_size).collect::<Vec<_>>(), [1024, 4096]);
    for c in &m.yours {
        assert_eq!((c.count, c.content_bytes, u64::from(c.size_bytes)), (9, content_bytes, content_bytes / 9));
        assert!(c.internal.id.starts_with(&format!("matrix/p{}/yours/", c.page_size)), "{}", c.internal.id);
        assert!(c.external_ratio > 0.0 && c.writes.is_none());
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Your data") && html.contains("your files in"), "the page says where the sizes came from");
}

#[test]
fn a_size_distribution_sets_your_cells_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let (work, out) = (dir.path().join("work"), dir.path().join("out"));
    std::fs::create_dir(&work).unwrap();
    matrix(&work, &out)
        .args(["--sizes", "2k", "--pagesizes", "4096", "--total", "100k", "--cache", "64KiB", "--repeat", "1"])
        .args(["--reads-only", "--size-dist", "list:1k,3k"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Your data: sizes drawn from list:1000,3000 (random content)."));
    let m = blobbench::results::read(&out.join("results.json")).unwrap().matrix.unwrap();
    assert_eq!(m.params.sizes_from, Some(SizesFrom::Distribution { dist: SizeDist::List { sizes: vec![1000, 3000] } }));
    let y = &m.yours[0];
    assert_eq!((y.size_bytes, y.count), (2000, 50), "mean size; --total / mean blobs");
    // Blobs of 1000 and 3000 bytes only: the 3000-byte ones are a whole number.
    let threes = (y.content_bytes - 50 * 1000) / 2000;
    assert_eq!(y.content_bytes, 50 * 1000 + threes * 2000, "{}", y.content_bytes);
}
