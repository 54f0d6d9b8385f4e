//! `crashtest --power-cut --quick` on the real binary and a real FUSE
//! mount: SQLite with synchronous=FULL must neither corrupt nor lose an
//! acknowledged commit (WAL; DELETE loses none it promised), and the layer
//! must really drop unsynced data: files written by `truncate` without
//! fsync come back older or torn after a strict power cut.

use assert_cmd::Command;

#[test]
fn quick_power_cut_keeps_full_sync_commits_and_drops_unsynced_files() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("power.json");
    let out = Command::cargo_bin("blobbench")
        .unwrap()
        .args(["crashtest", "--power-cut", "--model", "strict", "--quick", "--workdir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    let section = blobbench::results::read(&json).unwrap().power_cut.expect("a power_cut section");
    assert_eq!(section.model, "strict");
    assert_eq!(section.methods.len(), blobbench::crashtest::Method::all().len(), "every method ran");
    let row = |name: &str| section.methods.iter().find(|m| m.method == name).unwrap_or_else(|| panic!("{name}"));
    for m in &section.methods {
        assert_eq!(m.cuts, blobbench::crashtest::QUICK_KILLS, "{}", m.method);
        let classified = m.intact_old + m.intact_new + m.torn + m.missing + m.unexpected_version;
        assert_eq!(classified, m.blobs_checked, "{}: every blob is classified once", m.method);
        assert!(stdout.contains(&m.method), "{} is in the table", m.method);
    }
    for name in ["db-wal-full", "db-delete", "db-delete-extra"] {
        assert_eq!(row(name).integrity_failures, 0, "{name}");
        assert_eq!((row(name).torn, row(name).missing), (0, 0), "{name}");
    }
    for name in ["db-wal-full", "db-delete-extra", "truncate-fsync", "inplace-fsync", "replace-fsync-dir"] {
        assert_eq!(row(name).lost_after_ack, 0, "{name}: an acknowledged write was lost");
        assert!(row(name).writes_acknowledged > 0, "{name}: the writer got as far as an acknowledged write");
    }
    let wal = row("db-wal-full");
    assert!(wal.intact_new > 0, "acknowledged WAL commits reached the disk");
    let truncate = row("truncate");
    assert!(
        truncate.lost_before_ack + truncate.torn + truncate.missing > 0,
        "the strict model must drop unsynced file writes: {truncate:?}"
    );
    assert!(truncate.pending_writes > 0);
    let cost = section.layer_cost.expect("the layer's cost was measured");
    assert!(cost.write_10k_layer_ns > 0 && cost.fsync_layer_ns > 0);
    assert!(!section.fsync_failure.is_empty(), "the failed-fsync table is there");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(dir.path().to_str().unwrap()), "no mount left behind");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the JSON is left in the workdir");
}
