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
        // The article's 16 experiments and the A/A control.
        assert_eq!(v["experiments"].as_array().unwrap().len(), 17);
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
    assert_eq!(verdict.matches("<td data-label=\"question\">durable writes (fsync)</td>").count(), 2);
    assert!(verdict.contains("min-max, 50% paired, 2 rounds"), "two rounds: the min-max range, paired");
    assert!(page.contains(&labels[0]));
    // Nothing is left in the work directories.
    for d in [&a, &b] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{} is empty again", d.display());
    }
}
