//! Where report-producing commands put their files.

use std::path::{Path, PathBuf};

use blobbench::results::{self, ResultFile};

/// Checks, before any measuring, that the report directory can be written.
pub fn prepare_report_dir(out: &Path) -> anyhow::Result<PathBuf> {
    if out.exists() && !out.is_dir() {
        anyhow::bail!("{}: exists and is not a directory", out.display());
    }
    blobbench::fsutil::check_writable_output(&out.join("results.json"))
        .or_else(|_| blobbench::fsutil::check_writable_output(out))?;
    Ok(out.to_path_buf())
}

/// Writes results.json (and, later, the rendered report); returns the summary.
pub fn write_report(out: &Path, files: &[ResultFile]) -> anyhow::Result<String> {
    std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("{}: cannot create directory: {e}", out.display()))?;
    if let Some(first) = files.first() {
        results::write(&out.join("results.json"), first)?;
    }
    Ok(String::new())
}
