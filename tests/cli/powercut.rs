//! `crashtest --power-cut --quick` on the real binary and a real FUSE
//! mount: SQLite with synchronous=FULL must neither corrupt nor lose an
//! acknowledged commit (WAL; DELETE loses none it promised), nor may the
//! key-value engines' durable commits (LMDB, redb), and the layer must
//! really drop unsynced data: files written by `truncate` without fsync come
//! back older or torn after a strict power cut. fjall's durable commit can
//! lose its store after a cut that follows a flush (lsm-tree does not fsync
//! `blobs/`; `tests/cli/fjall_powercut.rs` shows it without timing): it may fail
//! here, but only with that reason.

use crate::common;

use assert_cmd::Command;

const FJALL_DURABLE: &str = "fjall-durable";

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
        .args(["--label", "power box"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    common::valid_results(&json);
    let file = blobbench::results::read(&json).unwrap();
    let fjall = file.power_cut.as_ref().and_then(|s| s.methods.iter().find(|m| m.method == FJALL_DURABLE));
    let fjall_lost = fjall.is_some_and(|m| m.lost_after_ack > 0 || m.checks.integrity_failures > 0);
    if fjall_lost {
        // The known gap, and nothing else: the store would not open.
        let reason =
            fjall.and_then(|m| m.checks.integrity_reason.as_ref()).map(|r| r.first.clone()).unwrap_or_default();
        assert!(reason.contains("Unrecoverable"), "fjall-durable failed for another reason: {reason}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let only_fjall = stderr.contains(&format!(": {FJALL_DURABLE} (")) && !stderr.contains("; ");
        assert!(stderr.lines().count() == 1 && only_fjall, "{stderr}");
    } else {
        assert!(out.status.success(), "stderr: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(file.label, "power box", "--label names the result");
    let section = file.power_cut.expect("a power_cut section");
    assert_eq!(section.model, "strict");
    let embedded = blobbench::records::ConfigId::methods().into_iter().filter(|m| !m.has_server()).count();
    assert_eq!(section.methods.len(), embedded, "every method of the default ran");
    let row = |name: &str| section.methods.iter().find(|m| m.method == name).unwrap_or_else(|| panic!("{name}"));
    for m in &section.methods {
        assert_eq!(m.cuts, blobbench::studies::crashtest::QUICK_KILLS, "{}", m.method);
        let classified =
            m.checks.intact_old + m.checks.intact_new + m.checks.torn + m.checks.missing + m.checks.unexpected_version;
        assert_eq!(classified, m.checks.blobs_checked, "{}: every blob is classified once", m.method);
        assert!(stdout.contains(&m.method), "{} is in the table", m.method);
    }
    let engines = ["lmdb-durable", "lmdb-fast", "redb-durable", "redb-fast", "fjall-fast"];
    for name in ["db-wal-full", "db-delete", "db-delete-extra"].into_iter().chain(engines) {
        assert_eq!(row(name).checks.integrity_failures, 0, "{name}");
        assert_eq!((row(name).checks.torn, row(name).checks.missing), (0, 0), "{name}");
    }
    let durable = ["lmdb-durable", "redb-durable"];
    for name in ["db-wal-full", "db-delete-extra", "truncate-fsync", "inplace-fsync", "replace-fsync-dir"]
        .into_iter()
        .chain(durable)
    {
        assert_eq!(row(name).lost_after_ack, 0, "{name}: an acknowledged write was lost");
        assert!(row(name).writes_acknowledged > 0, "{name}: the writer got as far as an acknowledged write");
    }
    for name in ["db-wal-full"].into_iter().chain(durable) {
        assert!(row(name).checks.intact_new > 0, "{name}: acknowledged commits reached the disk");
        assert!(row(name).promises_durability, "{name}: its losses are judged");
    }
    let truncate = row("truncate");
    assert!(
        truncate.lost_before_ack + truncate.checks.torn + truncate.checks.missing > 0,
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

fn layer_mounts_under(dir: &std::path::Path) -> usize {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table.lines().filter(|l| l.contains("blobbench-powercut") && l.contains(dir.to_str().unwrap())).count()
}

/// blobbench killed in the middle of a power-cut test leaves no mount that
/// outlives the next run, and the next run neither hangs nor fails on it.
#[test]
fn a_killed_run_leaves_no_mount_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_blobbench"))
        .args(["crashtest", "--power-cut", "--method", "truncate", "--kills", "100000", "--count", "5", "--workdir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while layer_mounts_under(dir.path()) == 0 {
        assert!(started.elapsed() < common::HANG, "the layer was never mounted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = Command::cargo_bin("blobbench")
        .unwrap()
        .args(["crashtest", "--power-cut", "--method", "truncate", "--kills", "1", "--count", "5", "--workdir"])
        .arg(dir.path())
        .timeout(common::HANG)
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(layer_mounts_under(dir.path()), 0, "no mount is left under the work directory");
}
