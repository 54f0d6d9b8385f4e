//! Where report-producing commands (suite, matrix, concurrency) put their files.

use std::path::Path;

use blobbench::report;
use blobbench::results::ResultFile;

/// Checks, before any measuring, that the report directory can be written.
pub fn prepare_report_dir(out: &Path, force: bool) -> anyhow::Result<()> {
    report::check_out_dir(out, &report::Options { force, baseline: None })?;
    Ok(())
}

/// Writes the report directory; returns the terminal summary.
pub fn write_report(out: &Path, files: &[ResultFile], force: bool) -> anyhow::Result<String> {
    let written = report::render(files, out, &report::Options { force, baseline: None })?;
    if let Some(note) = written.png_note {
        eprintln!("note: {note}");
    }
    Ok(report::text_summary(files, None))
}

/// `--label`, shared by every command that writes a result file.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LabelArg {
    /// What reports call this result, e.g. "laptop, ext4" [default: the hostname].
    #[arg(long, value_name = "NAME", value_parser = parse_label)]
    pub label: Option<String>,
}

impl LabelArg {
    /// Puts the label on `file` (which already carries the hostname).
    pub fn apply(&self, file: &mut ResultFile) {
        if let Some(l) = &self.label {
            file.label = l.clone();
        }
    }
}

fn parse_label(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("a label needs at least one visible character".into());
    }
    if t.chars().any(char::is_control) {
        return Err("a label cannot hold control characters".into());
    }
    if t.chars().count() > 80 {
        return Err("a label is at most 80 characters".into());
    }
    Ok(t.to_string())
}
