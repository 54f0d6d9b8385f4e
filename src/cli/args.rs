//! Argument parsers and values several commands share: the commit
//! granularity, and the clients of `advise --clients` and `run --clients`
//! with the hidden command each client process runs.

use clap::ValueEnum;

use blobbench::drivers::processes::Launcher;
use blobbench::util::units;

/// clap parser for `--commit-every N`: 1 to 1,000,000.
pub fn commit_every(s: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--commit-every")?;
    blobbench::records::check_commit_every(v).map_err(units::UnitError::from)?;
    Ok(v)
}

/// `--rate R`: operations per second, above 0.
pub fn rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        Ok(_) => Err(format!("--rate {s}: must be above 0 ops/s")),
        Err(_) => Err(format!("--rate {s:?}: not a number of operations per second")),
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ClientsAreArg {
    /// Threads of one process, each with its own session.
    Threads,
    /// Child processes of this binary, as a pre-fork server's workers.
    Processes,
}

/// `--clients N`: a whole number from 1 to 1024.
pub fn clients_count(s: &str) -> Result<u32, String> {
    let max = blobbench::drivers::clients::MAX_CLIENTS;
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!("--clients {n}: must be from 1 to {max}")),
        Err(_) => Err(format!("--clients {s:?}: not a whole number (1 to {max})")),
    }
}

/// The hidden command a client process runs.
const CLIENT_WORKER: &str = "client-worker";

/// How to start a client process: this binary's hidden `client-worker`.
pub fn launcher() -> std::io::Result<Launcher> {
    std::env::current_exe().map(|exe| Launcher { exe, args: vec![CLIENT_WORKER.into()] })
}

/// A client process of `--clients-are processes`: its job and orders on
/// standard input, its answers on standard output.
pub fn client_worker() -> anyhow::Result<()> {
    blobbench::drivers::processes::serve(&mut std::io::stdin().lock(), &mut std::io::stdout().lock())?;
    Ok(())
}
