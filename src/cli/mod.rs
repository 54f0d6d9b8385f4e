//! Argument definitions and dispatch. Each command's arguments and printing
//! live in their own file; the library does the work.

mod report;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "blobbench",
    version,
    about = "Small blobs: SQLite or files? Measured on this machine."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render result files as an offline HTML report (charts as in SQLite's
    /// "35% Faster Than The Filesystem"), Markdown or a terminal summary.
    Report(report::ReportArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Report(args) => report::run(args),
    }
}
