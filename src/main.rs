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
    let rendered = err.render().to_string();
    let mut lines = rendered.lines().skip_while(|l| !l.starts_with("error:"));
    let mut line = lines.next().unwrap_or("error: invalid arguments").to_string();
    // clap lists missing arguments on indented lines below the error; keep them.
    for more in lines.take_while(|l| l.starts_with("  ")) {
        line.push(' ');
        line.push_str(more.trim());
    }
    eprintln!("{line} (see --help)");
    std::process::exit(2);
}

fn main() {
    // A closed pipe (`blobbench ... | head`) ends the program quietly
    // instead of panicking inside println!.
    // SAFETY: restoring the default signal disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
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
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
