//! `blobbench report FILES...`: render saved result files as an HTML report
//! directory, or print them as Markdown or a terminal summary.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::{Args, ValueEnum};

use blobbench::report;
use blobbench::util::units::plural;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (JSON) written by blobbench; several files are shown side by side.
    #[arg(required = true, value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// Directory to write index.html, summary.md and charts/ into (html only)
    /// [default: blobbench-report]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// html writes a directory; markdown and text print to standard output;
    /// json prints the merged result, for scripts (--merge only)
    /// [default: html; text with --merge].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// An earlier result file: mark every figure that changed beyond noise since it.
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<PathBuf>,
    /// The files are `run` results of clients that ran at once on one store
    /// (several processes or hosts, `run --start-at`): print them as one,
    /// throughputs summed, percentiles from the merged histograms, each
    /// client beside (docs/several-hosts.md).
    #[arg(long, conflicts_with_all = ["baseline", "out", "force"])]
    pub merge: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Html,
    Markdown,
    Text,
    Json,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    if args.merge {
        return merge(&args);
    }
    let format = args.format.unwrap_or(Format::Html);
    if format == Format::Json {
        bail!("--format json prints merged runs (--merge); a result file is already JSON");
    }
    if format != Format::Html && args.out.is_some() {
        bail!("--out is for --format html; markdown and text are printed to standard output");
    }
    let files = report::load(&args.files)?;
    let baseline = match &args.baseline {
        Some(p) => Some(report::load(std::slice::from_ref(p))?.remove(0)),
        None => None,
    };
    let baseline = baseline.as_ref();
    match format {
        Format::Text => print!("{}", report::text_summary(&files, baseline)),
        Format::Json => unreachable!("refused above"),
        Format::Markdown => print!("{}", report::markdown(&files, baseline)),
        Format::Html => {
            let out = args.out.unwrap_or_else(|| PathBuf::from("blobbench-report"));
            let inputs: Vec<PathBuf> = args.files.iter().chain(&args.baseline).cloned().collect();
            refuse_to_replace_inputs(&out, &inputs)?;
            let written = report::render(&files, &out, &report::Options { force: args.force, baseline })?;
            if let Some(note) = written.png_note {
                eprintln!("note: {note}");
            }
            println!(
                "wrote {} ({} charts, {} result file{}); open {}",
                written.dir.display(),
                written.charts,
                files.len(),
                plural(files.len()),
                written.dir.join("index.html").display()
            );
        }
    }
    Ok(())
}

/// `--merge`: the files as one result, on standard output.
fn merge(args: &ReportArgs) -> anyhow::Result<()> {
    let merged = report::merge_files(&args.files)?;
    match args.format.unwrap_or(Format::Text) {
        Format::Text => print!("{}", report::merged_text(&merged)),
        Format::Markdown => print!("{}", report::merged_markdown(&merged)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&merged)?),
        Format::Html => bail!("--merge prints text, markdown or json (--format text|markdown|json)"),
    }
    Ok(())
}

/// Replacing the output directory must never delete the files being read.
fn refuse_to_replace_inputs(out: &Path, inputs: &[PathBuf]) -> anyhow::Result<()> {
    let Ok(out_abs) = out.canonicalize() else {
        return Ok(());
    };
    for input in inputs {
        if input.canonicalize().is_ok_and(|p| p.starts_with(&out_abs)) {
            bail!("{}: holds the input {}; choose another --out", out.display(), input.display());
        }
    }
    Ok(())
}
