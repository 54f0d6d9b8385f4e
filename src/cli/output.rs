//! Where report-producing commands (suite, matrix, concurrency) put their files.

use std::path::Path;

use blobbench::report;
use blobbench::results::ResultFile;

/// Checks, before any measuring, that the report directory can be written.
pub fn prepare_report_dir(out: &Path, force: bool) -> anyhow::Result<()> {
    report::check_out_dir(out, &report::Options { force })?;
    Ok(())
}

/// Writes the report directory; returns the terminal summary.
pub fn write_report(out: &Path, files: &[ResultFile], force: bool) -> anyhow::Result<String> {
    report::render(files, out, &report::Options { force })?;
    Ok(report::text_summary(files))
}
