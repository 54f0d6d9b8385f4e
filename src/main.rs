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

/// First Ctrl-C: finish the current run and keep what was measured;
/// second: leave at once. Only an atomic flag is touched, which is
/// async-signal-safe.
extern "C" fn on_interrupt(_signal: libc::c_int) {
    if blobbench::measure::stop_requested() {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
    blobbench::measure::request_stop();
}

/// A plain signal handler rather than a watcher thread: once a process has a
/// second thread, glibc sends every read, open and close through its slower
/// cancellation path, which would be paid inside the timed loop (measured:
/// about 150 instructions per blob read).
fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic or calls _exit; the
    // sigaction struct is fully initialised before use.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
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
    install_interrupt_handler();
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
