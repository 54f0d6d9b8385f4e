//! Argument definitions and dispatch. Each command's arguments and printing
//! live in their own file; the library does the work.

mod dataset;
mod matrix;
mod progress;
mod run;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "blobbench", version, about = "Small blobs: SQLite or files? Measured on this machine.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a database of random blobs (kvtest init).
    Init(dataset::InitArgs),
    /// Copy every blob into its own file (kvtest export).
    Export(dataset::ExportArgs),
    /// Describe a database or a directory of blobs (kvtest stat).
    Stat(dataset::StatArgs),
    /// Read or overwrite blobs and time it (kvtest run).
    Run(run::RunArgs),
    /// Internal vs external blobs by blob size and page size (SQLite's 2011 study).
    Matrix(matrix::MatrixArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Init(a) => dataset::init(a),
        Command::Export(a) => dataset::export(a),
        Command::Stat(a) => dataset::stat(a),
        Command::Run(a) => run::run(a),
        Command::Matrix(a) => matrix::run(a),
    }
}
