//! A write configuration: one way of writing blobs through one engine,
//! declared by its backend (`Backend::write_configs`) with everything the
//! studies derive from it: its id, its settings, what it promises under a
//! kill and a power cut, what a power-cut run measured and whether aging
//! ages it. The crash test's methods, aging's layouts and advise's
//! candidates are read from these rows by their [`ConfigId`] (spelled in
//! `records/config.rs` only), never from names matched elsewhere. SQLite's
//! ways of writing with several clients at once are rows too
//! ([`WritersConfig`]).

use std::path::Path;

use crate::records::{
    ConfigId, DbParams, DbWriters, EngineSettings, FileParams, FileRead, FileWrite, Journal, KvParams, KvSync,
    SyncLevel,
};
use crate::Result;

/// How the crash test's child writes through a backend. Each maps onto
/// the settings the benchmark itself uses, so the child writes through the
/// code paths that `run --update` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteSettings {
    /// One UPDATE per transaction, with this journal mode and synchronous.
    Db { journal: Journal, sync: SyncLevel },
    /// One overwrite per file; with `sync_dir` the directory is fsync'd
    /// after each one (to make a rename durable).
    Files { write: FileWrite, fsync: bool, sync_dir: bool },
    /// One overwrite per committed transaction: the engine's durable
    /// commit when the mode is [`WriteConfig::durable`], else its fast one.
    Commit,
}

/// SIGKILLs every process of the server holding the dataset at the given
/// path, as a server crash would end them, and waits until they are gone.
/// Nothing when no server runs there.
pub type ServerKill = fn(&Path) -> Result<()>;

/// What `crashtest --power-cut --model torn-4k` found for a configuration
/// on the development machine (docs/crash-safety.md: 50 cuts, 100 blobs,
/// seed 1), which advise uses where FUSE does not work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerCuts {
    /// Blobs older than, torn or missing after an acknowledged version.
    pub lost_after_ack: u64,
    /// Blobs left torn.
    pub torn: u64,
    /// Cuts after which the store failed its own integrity check.
    pub integrity_failures: u32,
}

/// One write configuration: its id (named in `records/config.rs`), what it
/// is, how it writes, what it promises (declared here, never derived from
/// its id), and, for an engine whose writes a server makes, how that
/// server is killed (killing only the client would leave the writes to the
/// server, untouched). What the server needs installed is the backend's
/// `preflight`. Built with [`WriteConfig::new`] and its promises.
#[derive(Debug, Clone, Copy)]
pub struct WriteConfig {
    pub id: ConfigId,
    pub description: &'static str,
    pub write: WriteSettings,
    /// A write that returned was promised durable (a COMMIT under
    /// synchronous=FULL with a journal, a file fsync'd where it lives, an
    /// engine's durable commit), so losing it in a power cut is a
    /// durability violation.
    pub durable: bool,
    /// The engine's own documentation promises that a durable write
    /// survives a power cut (`crashtest --power-cut` fails when one is
    /// lost); SQLite's rollback journal under FULL is durable but
    /// documented as possibly losing the last commit.
    pub documented_durable: bool,
    /// A killed writer leaves every value whole and the store sound (a
    /// journal, a transactional engine, fast commits included): the crash
    /// test fails otherwise.
    pub atomic: bool,
    pub server: Option<ServerKill>,
    /// What power cuts did to it on the development machine, when measured.
    pub power_cuts: Option<PowerCuts>,
    /// Its layout's title in `aging`, when aging ages it (the layout's id
    /// is its [`ConfigId::aging_name`]).
    pub aging: Option<&'static str>,
}

impl WriteConfig {
    /// A mode that promises nothing.
    pub const fn new(id: ConfigId, description: &'static str, write: WriteSettings) -> WriteConfig {
        WriteConfig {
            id,
            description,
            write,
            durable: false,
            documented_durable: false,
            atomic: false,
            server: None,
            power_cuts: None,
            aging: None,
        }
    }

    /// Durable, as its documentation promises.
    pub const fn durable(self) -> WriteConfig {
        WriteConfig { durable: true, documented_durable: true, ..self }
    }

    /// Durable by its calls, though its documentation does not promise
    /// that a power cut keeps every acknowledged write.
    pub const fn durable_undocumented(self) -> WriteConfig {
        WriteConfig { durable: true, documented_durable: false, ..self }
    }

    pub const fn atomic(self) -> WriteConfig {
        WriteConfig { atomic: true, ..self }
    }

    /// Its writes are made by a server, which `kill` ends.
    pub const fn server(self, kill: ServerKill) -> WriteConfig {
        WriteConfig { server: Some(kill), ..self }
    }

    /// What power cuts did to it on the development machine.
    pub const fn power_cuts(self, lost_after_ack: u64, torn: u64, integrity_failures: u32) -> WriteConfig {
        WriteConfig { power_cuts: Some(PowerCuts { lost_after_ack, torn, integrity_failures }), ..self }
    }

    /// Aged by `aging`, its layout titled `title`.
    pub const fn aged(self, title: &'static str) -> WriteConfig {
        WriteConfig { aging: Some(title), ..self }
    }

    /// Whether it ever calls fsync (the crash test's failed-fsync table).
    pub fn calls_fsync(&self) -> bool {
        match self.write {
            WriteSettings::Db { sync, .. } => sync != SyncLevel::Off,
            WriteSettings::Files { fsync, .. } => fsync,
            WriteSettings::Commit => self.durable,
        }
    }

    /// The settings that write this way: SQLite's pragmas (through SQL),
    /// the files' calls (read by POSIX calls), or the engine's durable or
    /// fast commit.
    pub fn engine_settings(&self) -> EngineSettings {
        match self.write {
            WriteSettings::Db { journal, sync } => EngineSettings {
                db: DbParams { journal_mode: Some(journal), sync: Some(sync), ..DbParams::default() },
                ..EngineSettings::default()
            },
            WriteSettings::Files { write, fsync, sync_dir } => EngineSettings {
                files: FileParams { read: FileRead::Posix, write, fsync, sync_dir },
                ..EngineSettings::default()
            },
            WriteSettings::Commit => {
                let sync = if self.durable { KvSync::Durable } else { KvSync::Fast };
                EngineSettings { kv: KvParams { sync }, ..EngineSettings::default() }
            }
        }
    }
}

/// One way SQLite's clients write a database at once (`DbWriters`): what
/// the pages call it, how it writes, and whether client processes can
/// share it. A row of SQLite's backend (`engine::sqlite::WRITERS`, in
/// `engine/sqlite/session/writers.rs`); a new way is one variant of
/// [`DbWriters`] (spelled in `records/config.rs`), its row there and, for a
/// writer its clients share, its slot and session module there too.
#[derive(Debug, Clone, Copy)]
pub struct WritersConfig {
    pub id: DbWriters,
    /// What the pages call it after "SQLite, ": "one writer connection".
    pub title: &'static str,
    /// How its clients write, in advise's words (after the title and "WAL; ").
    pub how: &'static str,
    /// What each writer does in the concurrency study (its points' label),
    /// where every commit is durable.
    pub concurrent: &'static str,
    /// Why client processes cannot write this way (they share no memory);
    /// None when they can.
    pub threads_only: Option<&'static str>,
    /// Whether it commits the writes of several clients together, so a
    /// run must say how many (`--commit-every N`).
    pub needs_commit_every: bool,
}
