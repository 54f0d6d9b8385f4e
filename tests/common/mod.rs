//! Helpers shared by the CLI tests.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::Path;

use assert_cmd::Command;

/// The real binary.
pub fn blobbench() -> Command {
    Command::cargo_bin("blobbench").unwrap()
}

/// A temporary directory under the crate's target directory: a real disk
/// filesystem (FIEMAP, page-cache eviction), unlike a tmpfs /tmp may be.
pub fn target_tempdir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// Parses a result file and checks it against docs/results.schema.json.
pub fn valid_results(path: &Path) -> serde_json::Value {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/results.schema.json")).expect("schema is JSON");
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    if let Err(e) = jsonschema::validate(&schema, &raw) {
        panic!("results do not match the schema: {e}");
    }
    raw
}
