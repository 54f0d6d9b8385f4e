//! The blobbench command line: parse, call the library, print.

mod cli;

fn main() {
    // A closed pipe (`blobbench ... | head`) ends the program quietly
    // instead of panicking inside println!.
    // A file size limit (ulimit -f) makes write() fail with EFBIG, which
    // becomes a one-line error naming the file, instead of a core dump.
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
    let args = cli::parse();
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
