//! `crashtest --quick` on the real binary: killed writers must never damage
//! a journaled SQLite database nor a key-value engine's store, in its
//! durable or its fast mode. Methods that may legitimately tear (files
//! without a rename, journal_mode=OFF) are reported, not judged.

use crate::common;

use assert_cmd::Command;

#[test]
fn quick_crashtest_keeps_journaled_databases_whole() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("crash.json");
    let out = Command::cargo_bin("blobbench")
        .unwrap()
        .args(["crashtest", "--quick", "--workdir"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("not a power cut"), "the limits are printed:\n{stdout}");
    common::valid_results(&json);
    let file = blobbench::results::read(&json).unwrap();
    let section = file.crashtest.expect("a crashtest section");
    let embedded = blobbench::records::ConfigId::methods().into_iter().filter(|m| !m.has_server()).count();
    assert_eq!(
        section.methods.len(),
        embedded,
        "the default: every method without a server (PostgreSQL's: tests/cli/postgres.rs)"
    );
    let mut journaled_new = 0;
    for m in &section.methods {
        assert_eq!(m.kills, blobbench::studies::crashtest::QUICK_KILLS, "{}", m.method);
        assert_eq!(m.checks.blobs_checked, u64::from(m.kills) * u64::from(section.run.blobs));
        let classified =
            m.checks.intact_old + m.checks.intact_new + m.checks.torn + m.checks.missing + m.checks.unexpected_version;
        assert_eq!(classified, m.checks.blobs_checked, "{}: every blob is classified once", m.method);
        assert!(stdout.contains(&m.method), "{} is in the table", m.method);
        if m.promises_atomic {
            assert_eq!(m.checks.integrity_failures, 0, "{}", m.method);
            assert_eq!((m.checks.torn, m.checks.missing, m.checks.unexpected_version), (0, 0, 0), "{}", m.method);
            journaled_new += m.checks.intact_new;
        }
    }
    assert!(journaled_new > 0, "the writers were killed while writing, not before they wrote anything");
    for name in ["lmdb-durable", "lmdb-fast", "redb-durable", "redb-fast", "fjall-durable", "fjall-fast"] {
        let m = section.methods.iter().find(|m| m.method == name).unwrap_or_else(|| panic!("{name} ran"));
        assert!(m.promises_atomic, "{name}: a transactional engine's damage fails the run");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the JSON is left in the workdir");
}
