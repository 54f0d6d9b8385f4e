//! Helpers shared by the CLI tests: the real binary and small datasets.

#![allow(dead_code)] // each test crate uses its own subset

use std::path::Path;

use assert_cmd::Command;

/// The blobbench binary, with backtraces off so errors stay one line.
pub fn blobbench() -> Command {
    let mut c = Command::cargo_bin("blobbench").unwrap();
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs blobbench with `args`; asserts success and returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = blobbench().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A kvtest database of `count` blobs of `size` bytes.
pub fn small_db(path: &Path, count: u32, size: u32) {
    ok(&["init", path.to_str().unwrap(), "--count", &count.to_string(), "--size", &size.to_string()]);
}
