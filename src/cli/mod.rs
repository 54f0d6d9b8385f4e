//! Argument definitions and dispatch. Each command's arguments and printing
//! live in their own file; the library does the work.

mod crashtest;
mod dataset;
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
    /// Kill writers with SIGKILL and check what each write method leaves behind.
    Crashtest(crashtest::CrashtestArgs),
    /// The process crashtest kills (internal).
    #[command(hide = true)]
    CrashWriter(crashtest::CrashWriterArgs),
}

/// Parses the command line. Usage errors become one line on stderr, like
/// every other error; help and version print as clap formats them.
pub fn parse() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("{}", one_line(&e.to_string()));
            std::process::exit(e.exit_code());
        }
    }
}

/// clap's message without its usage and help hints, on one line.
fn one_line(message: &str) -> String {
    let mut out = String::new();
    for line in message.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') || line.starts_with('[') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Init(a) => dataset::init(a),
        Command::Export(a) => dataset::export(a),
        Command::Stat(a) => dataset::stat(a),
        Command::Run(a) => run::run(a),
        Command::Crashtest(a) => crashtest::crashtest(a),
        Command::CrashWriter(a) => crashtest::crash_writer(a),
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_fit_on_one_line() {
        let clap = "error: the following required arguments were not provided:\n  <DB>\n\nUsage: blobbench init <DB>\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(clap), "error: the following required arguments were not provided: <DB>");
        let tip =
            "error: unexpected argument '--forse' found\n\n  tip: a similar argument exists: '--force'\n\nUsage: x\n";
        assert_eq!(
            one_line(tip),
            "error: unexpected argument '--forse' found; tip: a similar argument exists: '--force'"
        );
    }
}
