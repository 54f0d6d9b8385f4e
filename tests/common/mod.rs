//! Helpers shared by the CLI tests: the real binary, small real datasets,
//! and directories on a real disk for tests that need one.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

/// The blobbench binary this crate builds.
pub fn blobbench() -> Command {
    Command::cargo_bin("blobbench").unwrap()
}

/// stdout of a command that must succeed.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// The one stderr line of a command that must fail without panicking.
pub fn one_line_error(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "should fail");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A 300-blob database of 2 KB +/- 500 bytes, with 1 KiB pages.
pub fn small_db(dir: &Path) -> PathBuf {
    let db = dir.join("t.db");
    blobbench()
        .args(["init", "--count", "300", "--size", "2k", "--variance", "500", "--pagesize", "1KiB"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("300 blobs"));
    db
}

/// Every (key, value) of a kvtest database, by key.
pub fn blobs(db: &Path) -> Vec<(i64, Vec<u8>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// A committed result file of tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A temporary directory on a disk whose page cache can be evicted: under
/// the build's target directory (beside the checkout), never tmpfs. A test
/// that measures a cold cache must not pass by skipping itself, so a
/// checkout on tmpfs fails here, loudly, naming the reason.
pub fn disk_tempdir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    let dir = tempfile::tempdir_in(base).unwrap();
    // SAFETY: statfs fills a zeroed struct from a NUL-terminated path.
    let fs_type = unsafe {
        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let mut st: libc::statfs = std::mem::zeroed();
        assert_eq!(libc::statfs(path.as_ptr(), &mut st), 0, "statfs {}", dir.path().display());
        st.f_type
    };
    const TMPFS_MAGIC: libc::c_long = 0x0102_1994;
    assert_ne!(
        fs_type as libc::c_long,
        TMPFS_MAGIC,
        "{} is on tmpfs, whose pages cannot be evicted: run the tests from a checkout on a real disk",
        dir.path().display()
    );
    dir
}
