//! The blobbench command line: parse, call the library, print.

mod cli;

use clap::error::ErrorKind;
use clap::Parser;

/// Help and version print as clap renders them; a usage error becomes the one
/// line that names the problem, like every other error.
fn exit_on_usage_error(err: clap::Error) -> ! {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    eprintln!("{} (see --help)", one_line(&err.render().to_string()));
    std::process::exit(2);
}

/// clap's message up to its usage and help hints, joined on one line: the
/// continuation lines name what is missing or suggest the right spelling.
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
    if out.is_empty() {
        out.push_str("error: invalid arguments");
    }
    out
}

fn main() {
    // A closed pipe (`blobbench ... | head`) ends the program quietly
    // instead of panicking inside println!. A file size limit (ulimit -f)
    // makes write() fail with EFBIG, which becomes a one-line error naming
    // the file, instead of a core dump.
    // SAFETY: setting a signal disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // First Ctrl-C: finish the current run and keep what was measured;
    // second: leave at once.
    let _ = ctrlc::set_handler(|| {
        if blobbench::measure::stop_requested() {
            std::process::exit(130);
        }
        blobbench::measure::request_stop();
    });
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(err) => exit_on_usage_error(err),
    };
    if let Err(err) = cli::run(args) {
        // The library's errors already end with their cause; anyhow's chain
        // would repeat it.
        match err.downcast_ref::<blobbench::Error>() {
            Some(e) => eprintln!("error: {e}"),
            None => eprintln!("error: {err:#}"),
        }
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_fit_on_one_line() {
        let missing = "error: the following required arguments were not provided:\n  <DB>\n\nUsage: blobbench init <DB>\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(missing), "error: the following required arguments were not provided: <DB>");
        let tip =
            "error: unexpected argument '--forse' found\n\n  tip: a similar argument exists: '--force'\n\nUsage: x\n";
        assert_eq!(
            one_line(tip),
            "error: unexpected argument '--forse' found; tip: a similar argument exists: '--force'"
        );
    }
}
