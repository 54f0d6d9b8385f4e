//! Argument definitions and dispatch. Each command's arguments and printing
//! live in their own file; the library does the work.

mod advise;
mod aging;
mod args;
mod concurrency;
mod crashtest;
mod dataset;
mod drop;
mod engines;
mod matrix;
mod output;
mod powercut;
mod progress;
mod report;
mod rounds;
mod run;
mod run_clients;
mod run_text;
mod servers;
mod start_at;
mod suite;

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
    /// Remove an S3 dataset with its objects in the store (or, with --prefix, what an export left behind).
    Drop(drop::DropArgs),
    /// Where should these blobs live, and why: one command, one page with a recommendation.
    Advise(advise::AdviseArgs),
    /// Read or overwrite blobs and time it (kvtest run).
    Run(run::RunArgs),
    /// The whole "35% faster than the filesystem" article on this machine, with a report.
    Suite(suite::SuiteArgs),
    /// Internal vs external blobs by blob size and page size (SQLite's 2011 study).
    Matrix(matrix::MatrixArgs),
    /// Render result files as HTML, Markdown or text, one machine or several side by side.
    Report(report::ReportArgs),
    /// SQLite under many threads: shared connection or one per thread, WAL, shared cache, read-only.
    Concurrency(concurrency::ConcurrencyArgs),
    /// Kill writers (SIGKILL) or cut their power (--power-cut) and check what each write method leaves behind.
    Crashtest(crashtest::CrashtestArgs),
    /// What years of rewrites do to files and to the database: read time, disk usage, fragmentation by age.
    Aging(aging::AgingArgs),
    /// The process crashtest kills (internal).
    #[command(hide = true)]
    CrashWriter(crashtest::CrashWriterArgs),
    /// Times writes and fsyncs on one new file for crashtest --power-cut (internal).
    #[command(hide = true)]
    LayerCostProbe(powercut::ProbeArgs),
    /// One client process of advise --clients-are processes: its job and orders on stdin (internal).
    #[command(hide = true)]
    ClientWorker,
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Init(a) => dataset::init(a),
        Command::Export(a) => dataset::export(a),
        Command::Stat(a) => dataset::stat(a),
        Command::Drop(a) => drop::drop(a),
        Command::Run(a) => run::run(a),
        Command::Advise(a) => advise::run(a),
        Command::Suite(a) => suite::run(a),
        Command::Matrix(a) => matrix::run(a),
        Command::Report(a) => report::run(a),
        Command::Concurrency(a) => concurrency::run(a),
        Command::Crashtest(a) => crashtest::crashtest(a),
        Command::Aging(a) => aging::run(a),
        Command::CrashWriter(a) => crashtest::crash_writer(a),
        Command::LayerCostProbe(a) => powercut::probe(a),
        Command::ClientWorker => args::client_worker(),
    }
}
