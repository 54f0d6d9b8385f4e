//! Source scans that keep the engine room's rules: it imports nothing from
//! the layers above it, and SQLite's C API is called only in
//! `engine/sqlite/raw.rs`.

use std::path::Path;

/// Every `.rs` file under `dir`, as (path relative to `src/`, text).
fn sources(src: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(src, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

fn all_sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    assert!(files.len() > 100, "the source tree was found");
    files
}

/// SQLite's C API is called in one file, `engine/sqlite/raw.rs`, so there
/// is one hand-written FFI layer to keep sound, and no `unsafe` elsewhere
/// in `engine/sqlite/` or in the external-blob store built on it.
#[test]
fn sqlite_c_calls_stay_in_raw_rs() {
    let files = all_sources();
    let call = ["ffi::", "sqlite3_"].concat();
    let callers: Vec<&str> = files
        .iter()
        .filter(|(rel, text)| rel != "engine/sqlite/raw.rs" && text.contains(&call))
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(callers.is_empty(), "files calling SQLite's C API outside engine/sqlite/raw.rs: {callers:?}");
    let word = ["un", "safe"].concat();
    let with_unsafe: Vec<&str> = files
        .iter()
        .filter(|(rel, _)| rel.starts_with("engine/sqlite/") || rel.starts_with("engine/external/"))
        .filter(|(rel, text)| rel != "engine/sqlite/raw.rs" && text.contains(&word))
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(with_unsafe.is_empty(), "unsafe code beside raw.rs: {with_unsafe:?}");
}

/// `engine/` sits on `util/` and `records/` only (docs/architecture.md).
#[test]
fn the_engine_imports_no_layer_above_it() {
    let above = ["measure", "drivers", "studies", "results", "report", "cli"];
    for (rel, text) in all_sources().iter().filter(|(rel, _)| rel.starts_with("engine/")) {
        for layer in above {
            assert!(!text.contains(&format!("crate::{layer}::")), "{rel} uses crate::{layer}");
        }
    }
}
