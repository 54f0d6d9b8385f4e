//! The blobbench command line: parse, call the library, print.

mod cli;

use clap::Parser;

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
    let args = cli::Cli::parse();
    if let Err(err) = cli::run(args) {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
