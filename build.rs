//! Records the git revision blobbench is built from (`git describe --always
//! --dirty`) as BLOBBENCH_GIT_REVISION, so result files say which build
//! measured them. Without git or a checkout the variable is simply not set.
//!
//! Cargo reruns this script only when HEAD, its reflog, the branch it points
//! to, the packed refs or the crate's own sources change: a commit or
//! checkout updates the revision, an edit updates "-dirty", and an ordinary
//! rebuild costs nothing extra. Other branches (other worktrees of the same
//! repository) moving do not trigger a rebuild. Edits outside the crate's sources (docs, tests) do
//! not refresh "-dirty", as they do not change the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // Only this crate's own checkout: a packaged copy vendored inside some
    // other repository must not report that repository's revision.
    if !root.join(".git").exists() {
        return;
    }
    let Some(git_dir) = git(&root, &["rev-parse", "--absolute-git-dir"]) else { return };
    let common_dir =
        git(&root, &["rev-parse", "--git-common-dir"]).map(|d| root.join(d)).unwrap_or_else(|| PathBuf::from(&git_dir));
    let git_dir = PathBuf::from(git_dir);

    let head = git_dir.join("HEAD");
    watch(&head);
    // The reflog changes on every commit and checkout even when the branch
    // itself lives only in packed-refs.
    watch(&git_dir.join("logs").join("HEAD"));
    if let Some(reference) =
        std::fs::read_to_string(&head).ok().and_then(|h| h.strip_prefix("ref:").map(|r| r.trim().to_string()))
    {
        watch(&common_dir.join(reference));
    }
    watch(&common_dir.join("packed-refs"));
    for source in ["src", "Cargo.toml", "Cargo.lock"] {
        watch(&root.join(source));
    }

    // --no-optional-locks: describe must not rewrite the index, whose new
    // mtime would otherwise look like a change on the next build.
    if let Some(revision) = git(&root, &["--no-optional-locks", "describe", "--always", "--dirty"]) {
        println!("cargo:rustc-env=BLOBBENCH_GIT_REVISION={revision}");
    }
}

/// Watches `path` if it exists: Cargo reruns a script on every build when a
/// watched path is missing.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// The trimmed stdout of a successful git command, None on any failure.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
