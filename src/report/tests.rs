use super::fixtures::*;
use super::*;
use crate::results::ResultFile;

fn findings(sections: &[Section], figure: &str) -> Vec<String> {
    doc::figures(sections).find(|f| f.id == figure).unwrap_or_else(|| panic!("no figure {figure}")).findings.clone()
}

fn bars<'a>(sections: &'a [Section], figure: &str) -> &'a format::svg::BarChart {
    match &doc::figures(sections).find(|f| f.id == figure).unwrap().chart {
        Chart::Bars(b) => b,
        other => panic!("{figure} is not a bar chart: {other:?}"),
    }
}

fn parse(xml: &str) -> roxmltree::Document<'_> {
    // The page starts with <!DOCTYPE html>, a DTD in XML's eyes.
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..roxmltree::ParsingOptions::default() };
    roxmltree::Document::parse_with_options(xml, options).unwrap_or_else(|e| panic!("not well-formed: {e}"))
}

/// Every ratio chart followed by its latency percentiles, then disk usage.
const ALL_FIGURES: [&str; 23] = [
    "chart1-read-sql",
    "chart1-read-sql-latency",
    "chart2-read-blob-api",
    "chart2-read-blob-api-latency",
    "chart3-read-blob-mmap",
    "chart3-read-blob-mmap-latency",
    "chart4-write-wal",
    "chart4-write-wal-latency",
    "chart5-write-unsafe",
    "chart5-write-unsafe-latency",
    "fair-read-sql",
    "fair-read-sql-latency",
    "fair-read-blob-api",
    "fair-read-blob-api-latency",
    "fair-read-blob-mmap",
    "fair-read-blob-mmap-latency",
    "fair-write-wal",
    "fair-write-wal-latency",
    "fair-write-unsafe",
    "fair-write-unsafe-latency",
    "durable-write",
    "durable-write-latency",
    "disk-usage",
];

#[test]
fn every_chart_is_drawn_with_ratios_to_the_database() {
    let sections = document(&[full_suite("host-a")]);
    let ids: Vec<&str> = doc::figures(&sections).map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ALL_FIGURES);
    let c1 = bars(&sections, "chart1-read-sql");
    assert_eq!(c1.series, ["SQLite, SQL", "files, one directory (fopen/fread)", "files, tree (fopen/fread)"]);
    assert_eq!(c1.values, [[Some(1.0), Some(1.9), Some(2.0)]]);
    assert_eq!(c1.reference, Some(1.0));
    assert_eq!(c1.note, "3 timed runs per bar; whiskers: min-max over the runs");
    let whiskers: Vec<Option<(f64, f64)>> = c1.errors[0].clone();
    assert_eq!(whiskers[0], None, "SQLite's own bar is the reference, no whisker");
    let (lo, hi) = whiskers[1].unwrap();
    assert!((lo - 1.9).abs() < 1e-9 && (hi - 1.9).abs() < 1e-9, "no spread in the fixture's runs");
    assert_eq!(bars(&sections, "chart3-read-blob-mmap").values, [[Some(1.0), Some(3.8), Some(4.0)]]);
    assert_eq!(bars(&sections, "chart5-write-unsafe").values, [[Some(1.0), Some(2.8)]]);
    assert_eq!(bars(&sections, "durable-write").values, [[Some(1.0), Some(10.0), Some(8.0), Some(20.0)]]);
    let disk = &bars(&sections, "disk-usage").values[0];
    assert_eq!(disk[0], Some(1.0));
    assert!((disk[1].unwrap() - 12_288_000.0 / 10_245_120.0).abs() < 1e-12);
}

#[test]
fn sentences_are_computed_from_the_ratios() {
    let mut file = full_suite("host-a");
    file.experiments.retain(|e| e.id != "read/tree-posix");
    exp_mut(&mut file, "write/db-off").summary.per_op_us.median = 280.0;
    let sections = document(&[file]);
    assert_eq!(
        findings(&sections, "chart1-read-sql"),
        ["On this machine SQLite reads 10 KB blobs 1.9x faster than fopen/fread from one directory; 2.0x faster than fopen/fread from a tree."]
    );
    assert_eq!(
        findings(&sections, "fair-read-sql"),
        ["On this machine SQLite reads 10 KB blobs 1.3x faster than open/read from one directory (open/read from a tree not measured)."]
    );
    assert_eq!(
        findings(&sections, "chart5-write-unsafe"),
        ["On this machine SQLite writes 10 KB blobs 2.0x slower than fopen/fwrite."]
    );
    assert_eq!(
        findings(&sections, "disk-usage"),
        ["On this machine the database takes 10,245,120 bytes; files in one directory take 12,288,000 bytes, 20% more; files in a tree take 12,400,000 bytes, 21% more."]
    );
}

#[test]
fn noisy_runs_are_flagged_in_the_sentence() {
    let mut file = full_suite("host-a");
    let noisy = experiment_runs("read/flat-stdio", &[15.0, 19.0, 25.0]);
    assert!(noisy.summary.noisy);
    *exp_mut(&mut file, "read/flat-stdio") = noisy;
    let s = &findings(&document(&[file]), "chart1-read-sql")[0];
    assert!(s.contains("Runs varied by up to 26%"), "{s}");
}

#[test]
fn checkpoint_time_is_shown_beside_the_wal_chart() {
    let sections = document(&[full_suite("host-a")]);
    let fig = doc::figures(&sections).find(|f| f.id == "chart4-write-wal").unwrap();
    assert_eq!(fig.caption[0], "100 of 1,000 blobs rewritten, avg 10 KB (± 2,000 bytes) each, random order, WAL mode with synchronous NORMAL, exclusive of checkpoint time, one transaction of 100 writes per run");
    assert!(fig.caption[1].contains("2.50 µs per blob written on host-a"), "{:?}", fig.caption);
}

#[test]
fn missing_experiments_are_not_measured_not_zero() {
    let partial = suite("host-a", &[("read/db-sql", 10.0), ("read/flat-stdio", 15.0), ("write/flat-truncate", 100.0)]);
    let sections = document(std::slice::from_ref(&partial));
    let ratio_charts = doc::figures(&sections).filter(|f| !f.id.ends_with("-latency")).count();
    assert_eq!(ratio_charts, 12, "charts still drawn, with gaps");
    assert_eq!(bars(&sections, "chart1-read-sql").values, [[Some(1.0), Some(1.5), None]]);
    assert_eq!(bars(&sections, "chart2-read-blob-api").values, [[None, None, None]], "no database figure, no ratio");
    assert_eq!(
        findings(&sections, "chart2-read-blob-api"),
        ["On this machine SQLite by the blob API (read/db-blob) was not measured, so there is no ratio."]
    );
    assert_eq!(
        findings(&sections, "fair-read-sql"),
        ["On this machine the file methods were not measured, so there is no ratio."]
    );

    let page = html(std::slice::from_ref(&partial), None);
    parse(&page);
    assert!(page.contains("not measured"));
    let summary = text_summary(&[partial], None);
    let mmap_row = summary.lines().find(|l| l.contains("read/db-blob-mmap")).expect("every suite id is listed");
    assert!(mmap_row.contains("not measured"), "{mmap_row}");
}

#[test]
fn two_machines_give_two_groups_and_two_sentences() {
    let a = full_suite("host-a");
    let mut b = full_suite("host-b");
    exp_mut(&mut b, "read/db-sql").summary.per_op_us.median = 20.0;
    let sections = document(&[a, b]);
    let c1 = bars(&sections, "chart1-read-sql");
    assert_eq!(c1.groups, ["host-a", "host-b"]);
    assert_eq!(c1.values[1], [Some(1.0), Some(0.95), Some(1.0)]);
    let f = findings(&sections, "chart1-read-sql");
    assert!(f[0].starts_with("On host-a SQLite reads 10 KB blobs 1.9x faster"), "{}", f[0]);
    assert_eq!(f[1], "On host-b SQLite reads 10 KB blobs 1.1x slower than fopen/fread from one directory; about as fast as fopen/fread from a tree.");
    let svg = doc::figures(&sections).next().unwrap().chart.to_svg();
    let doc = parse(&svg);
    let groups: std::collections::BTreeSet<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("bar"))
        .filter_map(|n| n.attribute("data-group"))
        .collect();
    assert_eq!(groups.into_iter().collect::<Vec<_>>(), ["0", "1"]);
}

#[test]
fn the_same_host_twice_is_told_apart_by_filesystem_and_date() {
    let a = full_suite("box");
    let mut b = full_suite("box");
    b.created_unix += 2 * 86_400;
    let sections = document(&[a, b]);
    assert_eq!(bars(&sections, "chart1-read-sql").groups, ["box (ext4, 2017-06-05)", "box (ext4, 2017-06-07)"]);
}

#[test]
fn other_commands_files_stay_out_of_the_article_charts() {
    let mut matrix = ResultFile::new("matrix", full_suite("lab").environment);
    matrix.experiments.push(experiment("matrix/10k-4096", 7.0));
    let sections = document(&[full_suite("host-a"), matrix]);
    assert_eq!(bars(&sections, "chart1-read-sql").groups, ["host-a"]);
    let latency = sections.iter().find(|s| s.id == "latency").unwrap();
    let Block::Table(t) = &latency.blocks[1] else { panic!("latency table expected") };
    assert!(t.rows.iter().any(|r| r[0] == "lab" && r[1] == "matrix/10k-4096"));
    assert!(
        !t.rows.iter().any(|r| r[0] == "lab" && r[1] == "read/db-sql"),
        "suite ids are not listed as missing for a matrix file"
    );
    assert!(sections.iter().any(|s| s.id == "environment"));

    let only_matrix = document(&[ResultFile::new("matrix", full_suite("lab").environment)]);
    assert!(doc::figures(&only_matrix).next().is_none(), "no empty article charts");
}

#[test]
fn latency_table_has_percentiles_and_spread() {
    let summary = text_summary(&[full_suite("host-a")], None);
    let row = summary.lines().find(|l| l.trim_start().starts_with("read/db-sql")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    // id, runs, median, steady median, one-off ms, commits (- for reads),
    // CV, spread, p50, p90, p99, p99.9, max, count
    assert_eq!(cells[..8], ["read/db-sql", "3", "10.00", "10.00", "0.000", "-", "0.0%", "0.0%"]);
    // Percentiles of the fixture's histogram (three significant digits).
    assert_eq!(cells[8..], ["9.00", "13.50", "26.98", "53.31", "147.3", "3,000"]);
    let write = summary.lines().find(|l| l.trim_start().starts_with("write/db-wal-full")).unwrap();
    assert!(write.contains("1 per run of 100"), "the commits of kvtest's way: {write}");
}

fn hostile() -> ResultFile {
    let mut f = full_suite("<script>alert(1)</script>");
    f.notes.push(r#"a&b"c"#.into());
    f.environment.sqlite_compile_options.push("<img src=x onerror=alert(1)>".into());
    f.experiments[0].warnings.push("</td></tr></table><h1>".into());
    f
}

#[test]
fn text_from_result_files_is_escaped_everywhere() {
    let page = html(&[hostile()], None);
    let doc = parse(&page);
    for tag in ["script", "img", "h1"] {
        let n = doc.descendants().filter(|n| n.tag_name().name() == tag).count();
        assert_eq!(n, usize::from(tag == "h1"), "{tag} elements: only the page's own h1 may exist");
    }
    let texts: String = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains("<script>alert(1)</script>"));
    assert!(texts.contains(r#"a&b"c"#));
    assert!(texts.contains("<img src=x onerror=alert(1)>"));
    for figure in doc::figures(&document(&[hostile()])) {
        parse(&figure.chart.to_svg());
    }
    let md = markdown(&[hostile()], None);
    assert!(!md.contains("<script>") && md.contains("&lt;script&gt;"));
}

#[test]
fn the_page_is_self_contained() {
    let page = html(&[full_suite("host-a"), full_suite("host-b")], None);
    let doc = parse(&page);
    assert_eq!(doc.descendants().filter(|n| n.tag_name().name() == "svg").count(), ALL_FIGURES.len());
    for n in doc.descendants().filter(|n| n.is_element()) {
        assert!(
            !matches!(n.tag_name().name(), "script" | "link" | "img" | "iframe" | "object"),
            "external or active element {:?}",
            n.tag_name()
        );
        for a in n.attributes() {
            assert!(!a.name().starts_with("on"), "event handler {}", a.name());
            if matches!(a.name(), "href" | "src") {
                assert!(a.value().starts_with('#'), "link to outside the page: {}", a.value());
            }
        }
    }
    assert!(!page.contains("@import") && !page.contains("url("));
}

#[test]
fn render_writes_page_markdown_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let written = render(&[full_suite("host-a")], &out, &Options::default()).unwrap();
    assert_eq!(written.charts, ALL_FIGURES.len());
    for f in &written.files {
        assert!(out.join(f).is_file(), "{} listed but not written", f.display());
    }
    for id in ALL_FIGURES {
        let svg = std::fs::read_to_string(out.join("charts").join(format!("{id}.svg"))).unwrap();
        parse(&svg);
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("![Chart 1: reads by SQL](charts/chart1-read-sql.svg)"));
    assert!(!markdown(&[full_suite("host-a")], None).contains("](charts/"), "printed Markdown has no dangling images");
    assert!(render(&[], &out, &Options::default()).is_err());
}

fn write_temp(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn unusable_result_files_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = serde_json::to_string_pretty(&full_suite("host-a")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&good).unwrap();
    value["schema_version"] = 99.into();
    let newer = write_temp(dir.path(), "newer.json", &value.to_string());
    let truncated = write_temp(dir.path(), "truncated.json", &good[..good.len() / 2]);
    value["schema_version"] = crate::results::SCHEMA_VERSION.into();
    value["environment"].as_object_mut().unwrap().remove("cores");
    let edited = write_temp(dir.path(), "edited.json", &value.to_string());
    let cases = [
        (newer, "schema version 99 is not supported"),
        (truncated, "not valid JSON"),
        (edited, "missing field `cores`"),
        (dir.path().join("absent.json"), "cannot read"),
    ];
    for (path, expect) in cases {
        let err = load(std::slice::from_ref(&path)).unwrap_err().to_string();
        assert!(err.contains(expect) && err.contains(&path.display().to_string()), "{err}");
        assert!(!err.contains('\n'), "one line: {err:?}");
    }
    let ok = write_temp(dir.path(), "ok.json", &good);
    assert_eq!(load(&[ok]).unwrap().len(), 1);
}

#[test]
fn unlike_blob_sizes_side_by_side_are_labelled() {
    let a = full_suite("host-a");
    let mut b = full_suite("host-b");
    b.dataset.as_mut().unwrap().size = 100_000;
    let sections = document(&[a, b]);
    assert_eq!(bars(&sections, "chart1-read-sql").groups, ["host-a [10 KB blobs]", "host-b [100 KB blobs]"]);
    let verdict = &sections[0];
    let Block::Verdict(Verdict { rows, .. }) = &verdict.blocks[0] else { panic!("verdict first") };
    assert_eq!(rows[0].question, "10 KB reads");
    assert_eq!(rows[1].question, "100 KB reads", "each result answers for its own blob size");
}

#[test]
fn a_shared_label_is_named_and_told_apart() {
    let a = full_suite("box");
    let mut b = full_suite("box");
    b.environment.storage.as_mut().unwrap().fs_type = "xfs".into();
    let sections = document(&[a, b]);
    assert_eq!(bars(&sections, "chart1-read-sql").groups, ["box (ext4)", "box (xfs)"]);
    let overview = sections.iter().find(|s| s.id == "overview").unwrap();
    assert!(overview.blocks.contains(&Block::Note(
        "Several result files carry the label \"box\"; they are told apart by filesystem, then date (use --label to name them).".into()
    )));
}

#[test]
fn every_study_says_nothing_of_files_without_it_and_every_question_is_asked_once() {
    let other = ResultFile::new("run", full_suite("lab").environment);
    for (i, study) in STUDIES.iter().enumerate() {
        assert!((study.sections)(std::slice::from_ref(&other)).is_empty(), "study {i}: no sections");
        assert_eq!(study.terminal.map(|t| t(&other, false)), study.terminal.map(|_| String::new()), "study {i}");
        assert!(!study.redraws.as_ref().is_some_and(|r| (r.in_file)(&other)), "study {i}");
        assert!(study.questions.iter().all(|q| q(std::slice::from_ref(&other), 0).is_none()), "study {i}");
    }
    assert_eq!(terminal(&other, false), "");
    let asked: usize = STUDIES.iter().map(|s| s.questions.len()).sum();
    assert_eq!(questions().len(), asked, "VERDICT_ORDER lists every study that has questions, once");
    assert_eq!(VERDICT_ORDER.len(), STUDIES.iter().filter(|s| !s.questions.is_empty()).count());
}

/// From one result file no table names it; from two, the verdict, the
/// overview, the disk table and the latency table tell them apart.
#[test]
fn the_result_column_is_left_out_for_one_result() {
    let headers = |sections: &[Section]| -> Vec<Vec<String>> {
        let tables = sections.iter().flat_map(|s| &s.blocks).filter_map(|b| match b {
            Block::Table(t) => Some(t.headers.clone()),
            Block::Verdict(v) => Some(v.table().headers),
            _ => None,
        });
        tables.filter(|h| h.iter().any(|h| h == "result" || h == "machine")).collect()
    };
    assert_eq!(headers(&document(&[full_suite("host-a")])), Vec::<Vec<String>>::new());
    let two = headers(&document(&[full_suite("host-a"), full_suite("host-b")]));
    assert_eq!(two.len(), 4, "{two:?}");
}
