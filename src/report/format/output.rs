//! Writing the report directory as a whole: everything is built in a
//! temporary directory beside the target and renamed into place, so a
//! reader sees the old report or the complete new one, and an interrupted
//! run leaves no half-written report. A directory is only replaced when it
//! is empty or a previous blobbench report, unless the caller forces it.

use std::path::{Path, PathBuf};

use crate::util::fsutil::{check_dir, parent_dir, temp_sibling};
use crate::{Error, Result};

/// Marks a directory as a blobbench report, so it may be replaced later.
pub const MARKER: &str = ".blobbench-report";

/// Entries a previous report may contain; anything else belongs to someone.
const OURS: [&str; 4] = [MARKER, "index.html", "summary.md", "charts"];

/// True when `dir` holds only what a blobbench report writes.
fn is_previous_report(dir: &Path) -> Result<bool> {
    let list = |d: &Path| -> Result<Vec<std::fs::DirEntry>> {
        std::fs::read_dir(d).and_then(|it| it.collect()).map_err(|e| Error::io(d, "cannot list directory", e))
    };
    let entries = list(dir)?;
    if entries.is_empty() {
        return Ok(true);
    }
    if !dir.join(MARKER).is_file() {
        return Ok(false);
    }
    for e in entries {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let results_copy = name == "results.json" || (name.starts_with("results-") && name.ends_with(".json"));
        if !OURS.contains(&name.as_ref()) && !results_copy {
            return Ok(false);
        }
        if name == "charts" {
            let charts = list(&e.path())?;
            if !charts.iter().all(|c| c.path().extension().is_some_and(|x| x == "svg" || x == "png")) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Checks that `out_dir` may be written, before any work is done.
pub fn check(out_dir: &Path, force: bool) -> Result<()> {
    check_dir(parent_dir(out_dir))?;
    match std::fs::symlink_metadata(out_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(out_dir, "cannot inspect", e)),
        Ok(m) if !m.is_dir() => Err(Error::bad_input(out_dir, "exists and is not a directory")),
        Ok(_) if force || is_previous_report(out_dir)? => Ok(()),
        Ok(_) => {
            Err(Error::bad_input(out_dir, "is not empty and is not a blobbench report (use --force to replace it)"))
        }
    }
}

/// Writes `files` (paths relative to the report) as the new `out_dir`.
pub fn write(out_dir: &Path, files: &[(PathBuf, Vec<u8>)], force: bool) -> Result<()> {
    check(out_dir, force)?;
    let parent = parent_dir(out_dir);
    // Mode 0777 before the umask, like any directory the user creates.
    let tmp = tempfile::Builder::new()
        .prefix(".blobbench-report-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .tempdir_in(parent)
        .map_err(|e| Error::io(parent, "cannot create a directory here", e))?;
    std::fs::write(tmp.path().join(MARKER), format!("blobbench {}\n", env!("CARGO_PKG_VERSION")))
        .map_err(|e| Error::io(tmp.path(), "cannot write", e))?;
    for (rel, bytes) in files {
        let path = tmp.path().join(rel);
        std::fs::create_dir_all(parent_dir(&path)).map_err(|e| Error::io(&path, "cannot create directory", e))?;
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, "cannot write", e))?;
    }
    swap_in(tmp, out_dir)
}

/// Renames the finished directory over `out_dir`; the old one is moved
/// aside first and put back if the second rename fails.
fn swap_in(tmp: tempfile::TempDir, out_dir: &Path) -> Result<()> {
    let rename = |from: &Path, to: &Path| std::fs::rename(from, to).map_err(|e| Error::io(to, "cannot replace", e));
    if !out_dir.exists() {
        rename(tmp.path(), out_dir)?;
        let _ = tmp.keep();
        return Ok(());
    }
    let old: PathBuf = temp_sibling(out_dir, "old");
    rename(out_dir, &old)?;
    if let Err(e) = rename(tmp.path(), out_dir) {
        let _ = std::fs::rename(&old, out_dir);
        return Err(e);
    }
    let _ = tmp.keep();
    std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, "new report written, but cannot remove the old one", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<(PathBuf, Vec<u8>)> {
        vec![("index.html".into(), b"<p>new</p>".to_vec()), ("charts/a.svg".into(), b"<svg/>".to_vec())]
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        v.sort();
        v
    }

    #[test]
    fn writes_then_replaces_a_previous_report() {
        let base = tempfile::tempdir().unwrap();
        let out = base.path().join("report");
        write(&out, &files(), false).unwrap();
        assert_eq!(names(&out), [MARKER, "charts", "index.html"]);
        let again = vec![("index.html".into(), b"second".to_vec())];
        write(&out, &again, false).unwrap();
        assert_eq!(std::fs::read(out.join("index.html")).unwrap(), b"second");
        assert!(!out.join("charts").exists(), "nothing of the old report is left");
        assert_eq!(names(base.path()), ["report"], "no temporary or old directory left beside it");
    }

    #[test]
    fn a_foreign_directory_is_not_clobbered_without_force() {
        let base = tempfile::tempdir().unwrap();
        let out = base.path().join("mine");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("thesis.tex"), b"precious").unwrap();
        let err = write(&out, &files(), false).unwrap_err().to_string();
        assert!(err.contains("not a blobbench report") && err.contains("--force"), "{err}");
        assert_eq!(std::fs::read(out.join("thesis.tex")).unwrap(), b"precious");
        assert_eq!(names(base.path()), ["mine"], "nothing left behind by the refused write");

        // A report directory someone added a file to is theirs too.
        let report = base.path().join("report");
        write(&report, &files(), false).unwrap();
        std::fs::write(report.join("notes.txt"), b"mine").unwrap();
        assert!(write(&report, &files(), false).is_err());

        write(&out, &files(), true).unwrap();
        assert!(!out.join("thesis.tex").exists(), "--force replaces the directory");
    }

    #[test]
    fn files_and_missing_parents_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(write(&file, &files(), true).unwrap_err().to_string().contains("not a directory"));
        assert!(write(&base.path().join("no/such/dir"), &files(), false)
            .unwrap_err()
            .to_string()
            .contains("no such directory"));
        let empty = base.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        write(&empty, &files(), false).unwrap();
    }
}
