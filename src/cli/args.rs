//! Argument parsers and values several commands share: the commit
//! granularity, and the clients of `advise --clients` and `run --clients`
//! with the hidden command each client process runs.

use std::sync::OnceLock;

use clap::builder::PossibleValue;
use clap::ValueEnum;

use blobbench::drivers::processes::Launcher;
use blobbench::engine::sqlite;
use blobbench::records::DbWriters;
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

/// `--sqlite-writers` of `run` and `advise`: one of SQLite's ways of
/// writing with several clients at once, each a row of its backend
/// (`engine::sqlite::WRITERS`, named by [`DbWriters::name`]), or `both`
/// (every way, each its own row: advise only). The values are the rows'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteWritersArg(pub Option<DbWriters>);

/// What `--sqlite-writers` calls every way at once.
const EVERY_WAY: &str = "both";

impl ValueEnum for SqliteWritersArg {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: OnceLock<Vec<SqliteWritersArg>> = OnceLock::new();
        VARIANTS.get_or_init(|| {
            sqlite::WRITERS.iter().map(|w| SqliteWritersArg(Some(w.id))).chain([SqliteWritersArg(None)]).collect()
        })
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            Some(w) => {
                let row = sqlite::writers(w);
                let where_ = if row.threads_only.is_some() { " (threads only)" } else { "" };
                PossibleValue::new(w.name()).help(format!("{}{where_}", row.title))
            }
            None => PossibleValue::new(EVERY_WAY).help("every way, each its own row (advise; threads only)"),
        })
    }
}

impl SqliteWritersArg {
    /// The one way of writing `run` measures; `both` is refused.
    pub fn one_way(self) -> anyhow::Result<DbWriters> {
        let names: Vec<&str> = sqlite::WRITERS.iter().map(|w| w.id.name()).collect();
        self.0.ok_or_else(|| {
            anyhow::anyhow!(
                "--sqlite-writers {EVERY_WAY}: run measures one way of writing (give {})",
                names.join(" or ")
            )
        })
    }
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
