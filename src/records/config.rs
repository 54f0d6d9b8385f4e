//! Every write configuration's id, and every spelling result files know it
//! by, defined once. A configuration is one way of writing blobs through
//! one engine (its backend's row, `engine::config`); the crash test names
//! it as a method (`inplace`), aging as a layout (`files-inplace`), the
//! suite as an arm (`write/flat-inplace`). Those spellings are the result
//! files' contract and are written and read here only: everything else
//! holds a [`ConfigId`], as `studies/concurrency/ids.rs` does for its stores.
//!
//! SQLite's clients can also write one database in several ways at once
//! (one writer connection for the process, or a connection per client):
//! each such way is a [`DbWriters`] with a row of its own in SQLite's
//! backend (`engine::sqlite::WRITERS`), spelled here too.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::EngineKind;

/// One write configuration. In a result file it is its name (the crash
/// test's method), or the spelling of the study that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum ConfigId {
    /// SQLite, WAL, synchronous=NORMAL.
    DbWalNormal,
    /// SQLite, WAL, synchronous=FULL.
    DbWalFull,
    /// SQLite, rollback journal (DELETE), synchronous=FULL.
    DbDelete,
    /// SQLite, rollback journal (DELETE), synchronous=EXTRA.
    DbDeleteExtra,
    /// SQLite, journal_mode=OFF, synchronous=OFF.
    DbOff,
    /// Files, fopen("wb") + fwrite (kvtest).
    Truncate,
    /// The same + fsync.
    TruncateFsync,
    /// Files, pwrite over the old bytes.
    Inplace,
    /// The same + fsync.
    InplaceFsync,
    /// Files, a temporary file + rename.
    Replace,
    /// The same, the temporary file fsynced before the rename.
    ReplaceFsync,
    /// The same + an fsync of the directory after the rename.
    ReplaceFsyncDir,
    /// A key-value or server engine's durable commit: `ENGINE-durable`.
    Durable(EngineKind),
    /// Its fast commit (returns before the disk has it): `ENGINE-fast`.
    Fast(EngineKind),
}

/// The spellings of a configuration whose id has no engine in it.
struct Spelling {
    id: ConfigId,
    /// Its name: the crash test's method.
    name: &'static str,
    /// Its aging layout's id, when it differs from its name.
    aging: Option<&'static str>,
    /// Its suite arm's name after `write/` or `commit/`, when the suite
    /// measures it.
    suite: Option<&'static str>,
}

const fn spelled(
    id: ConfigId,
    name: &'static str,
    aging: Option<&'static str>,
    suite: Option<&'static str>,
) -> Spelling {
    Spelling { id, name, aging, suite }
}

/// SQLite's and the files' configurations. The suite's committed rename
/// with fsync (`commit/flat-replace-fsync`) fsyncs the directory once per
/// commit: it is [`ConfigId::ReplaceFsyncDir`] ([`ConfigId::committed`]).
const FIXED: [Spelling; 12] = [
    spelled(ConfigId::DbWalNormal, "db-wal-normal", Some("db-wal"), Some("db-wal-normal")),
    spelled(ConfigId::DbWalFull, "db-wal-full", None, Some("db-wal-full")),
    spelled(ConfigId::DbDelete, "db-delete", Some("db-rollback"), None),
    spelled(ConfigId::DbDeleteExtra, "db-delete-extra", None, None),
    spelled(ConfigId::DbOff, "db-off", None, Some("db-off")),
    spelled(ConfigId::Truncate, "truncate", None, Some("flat-truncate")),
    spelled(ConfigId::TruncateFsync, "truncate-fsync", None, Some("flat-truncate-fsync")),
    spelled(ConfigId::Inplace, "inplace", Some("files-inplace"), Some("flat-inplace")),
    spelled(ConfigId::InplaceFsync, "inplace-fsync", None, Some("flat-inplace-fsync")),
    spelled(ConfigId::Replace, "replace", Some("files-rename"), Some("flat-replace")),
    spelled(ConfigId::ReplaceFsync, "replace-fsync", None, Some("flat-replace-fsync")),
    spelled(ConfigId::ReplaceFsyncDir, "replace-fsync-dir", None, Some("flat-replace-fsync")),
];

/// The engines' commits' names, `ENGINE-durable` and `ENGINE-fast`, made
/// once for every engine (in [`EngineKind::ALL`]'s order).
fn engine_names() -> &'static [(String, String)] {
    static NAMES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    NAMES.get_or_init(|| {
        EngineKind::ALL.iter().map(|k| (format!("{}-durable", k.name()), format!("{}-fast", k.name()))).collect()
    })
}

fn engine_name(kind: EngineKind, durable: bool) -> &'static str {
    let i = EngineKind::ALL.iter().position(|k| *k == kind).expect("every kind is in ALL");
    let (d, f) = &engine_names()[i];
    if durable {
        d
    } else {
        f
    }
}

impl ConfigId {
    /// Every id a result file can hold: SQLite's and the files', and the
    /// durable and fast commit of every key-value engine.
    pub fn all() -> impl Iterator<Item = ConfigId> {
        let engines = EngineKind::KEY_VALUE.into_iter().flat_map(|k| [ConfigId::Durable(k), ConfigId::Fast(k)]);
        FIXED.iter().map(|s| s.id).chain(engines)
    }

    fn fixed(self) -> Option<&'static Spelling> {
        FIXED.iter().find(|s| s.id == self)
    }

    /// Its name: the crash test's method, and in result files.
    pub fn name(self) -> &'static str {
        match self {
            ConfigId::Durable(kind) => engine_name(kind, true),
            ConfigId::Fast(kind) => engine_name(kind, false),
            fixed => fixed.fixed().expect("every fixed id is spelled").name,
        }
    }

    /// The id a name stands for ([`ConfigId::name`] read back).
    pub fn parse(name: &str) -> Option<ConfigId> {
        ConfigId::all().find(|c| c.name() == name)
    }

    /// Its layout's id in `aging` (`db-wal`, `files-inplace`, an engine's
    /// durable commit by the engine's name).
    pub fn aging_name(self) -> &'static str {
        match self {
            ConfigId::Durable(kind) => kind.name(),
            other => other.fixed().and_then(|s| s.aging).unwrap_or_else(|| other.name()),
        }
    }

    /// The configuration an aging layout's id stands for.
    pub fn parse_aging(name: &str) -> Option<ConfigId> {
        ConfigId::all().find(|c| c.aging_name() == name)
    }

    /// Its suite arm's name after `write/` or `commit/` (`flat-inplace`,
    /// `lmdb-durable`); None when the suite does not measure it.
    pub fn suite_name(self) -> Option<&'static str> {
        match self {
            ConfigId::Durable(_) | ConfigId::Fast(_) => Some(self.name()),
            other => other.fixed().and_then(|s| s.suite),
        }
    }

    /// The configuration a write becomes when committed as an application
    /// commits it: a rename made durable has its directory fsynced once
    /// per commit.
    pub fn committed(self) -> ConfigId {
        match self {
            ConfigId::ReplaceFsync => ConfigId::ReplaceFsyncDir,
            other => other,
        }
    }
}

impl fmt::Display for ConfigId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ConfigId> for &'static str {
    fn from(c: ConfigId) -> &'static str {
        c.name()
    }
}

impl TryFrom<String> for ConfigId {
    type Error = String;
    fn try_from(s: String) -> Result<ConfigId, String> {
        ConfigId::parse(&s).ok_or_else(|| format!("unknown write configuration {s:?}"))
    }
}

/// A configuration aged by `aging`, as its layout: in a result file its
/// [`ConfigId::aging_name`] (`db-wal`, `files-inplace`, `lmdb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub struct LayoutId(pub ConfigId);

impl LayoutId {
    pub fn name(self) -> &'static str {
        self.0.aging_name()
    }

    /// The layout an id names (a result file's, or a round set's arm).
    pub fn parse(name: &str) -> Option<LayoutId> {
        ConfigId::parse_aging(name).map(LayoutId)
    }
}

impl fmt::Display for LayoutId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<LayoutId> for &'static str {
    fn from(l: LayoutId) -> &'static str {
        l.name()
    }
}

/// Tests name layouts as files spell them.
#[cfg(test)]
impl From<&str> for LayoutId {
    fn from(name: &str) -> LayoutId {
        LayoutId::parse(name).unwrap_or_else(|| panic!("no aging layout {name:?}"))
    }
}

impl TryFrom<String> for LayoutId {
    type Error = String;
    fn try_from(s: String) -> Result<LayoutId, String> {
        LayoutId::parse(&s).ok_or_else(|| format!("unknown aging layout {s:?}"))
    }
}

/// How the clients of one process write one SQLite database at once
/// (`advise --clients`, `run --clients`, the concurrency study's writers):
/// each a row of SQLite's backend (`engine::sqlite::WRITERS`), which says
/// what it is and where it can run. In a result file and on the command
/// line it is its [`DbWriters::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum DbWriters {
    /// Each client writes through its own connection: `BEGIN IMMEDIATE`,
    /// sleeping on SQLite's busy schedule while another client holds the
    /// write lock (its waits counted). The only way across processes.
    #[default]
    PerClient,
    /// One writer connection for the process, shared by its clients
    /// behind a mutex (a waiting writer sleeps until the one before it is
    /// done, and is woken then); each client reads on a connection of its
    /// own. What SQLite's documentation and the concurrency study advise
    /// for writing from threads.
    One,
}

impl DbWriters {
    /// Every way, a connection per client first.
    pub const ALL: [DbWriters; 2] = [DbWriters::PerClient, DbWriters::One];

    /// Its name in result files' settings and on the command line
    /// (`--sqlite-writers`).
    pub fn name(self) -> &'static str {
        match self {
            DbWriters::PerClient => "per-client",
            DbWriters::One => "one",
        }
    }

    pub fn parse(name: &str) -> Option<DbWriters> {
        DbWriters::ALL.into_iter().find(|w| w.name() == name)
    }

    /// What it adds to the name of SQLite's row or store (`sqlite` with a
    /// connection per client, `sqlite-one-writer`).
    pub fn suffix(self) -> &'static str {
        match self {
            DbWriters::PerClient => "",
            DbWriters::One => "-one-writer",
        }
    }

    /// What the pages call its row in a few words (`one-writer`).
    pub fn row_word(self) -> &'static str {
        match self {
            DbWriters::PerClient => "per-client",
            DbWriters::One => "one-writer",
        }
    }

    /// The way of writing a row's suffix stands for ([`DbWriters::suffix`]
    /// read back).
    pub fn parse_suffix(suffix: &str) -> Option<DbWriters> {
        DbWriters::ALL.into_iter().find(|w| w.suffix() == suffix)
    }

    pub fn is_per_client(&self) -> bool {
        *self == DbWriters::PerClient
    }
}

impl From<DbWriters> for &'static str {
    fn from(w: DbWriters) -> &'static str {
        w.name()
    }
}

impl TryFrom<String> for DbWriters {
    type Error = String;
    fn try_from(s: String) -> Result<DbWriters, String> {
        DbWriters::parse(&s).ok_or_else(|| format!("unknown SQLite writers {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_parses_back_from_each_spelling() {
        for c in ConfigId::all() {
            assert_eq!(ConfigId::parse(c.name()), Some(c), "{c}");
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<ConfigId>(&json).unwrap(), c);
        }
        let aged = [ConfigId::DbWalNormal, ConfigId::DbDelete, ConfigId::Inplace, ConfigId::Replace];
        for c in aged.into_iter().chain([ConfigId::Durable(EngineKind::Lmdb)]) {
            assert_eq!(ConfigId::parse_aging(c.aging_name()), Some(c), "{c}");
        }
        assert_eq!(ConfigId::Durable(EngineKind::Lmdb).name(), "lmdb-durable");
        assert_eq!(ConfigId::Fast(EngineKind::PostgresLo).name(), "postgres-lo-fast");
        assert_eq!(ConfigId::DbWalNormal.aging_name(), "db-wal");
        assert_eq!(ConfigId::Replace.aging_name(), "files-rename");
        assert_eq!(ConfigId::Durable(EngineKind::Redb).aging_name(), "redb");
        assert_eq!(ConfigId::Inplace.suite_name(), Some("flat-inplace"));
        assert_eq!(ConfigId::DbDelete.suite_name(), None);
        assert_eq!(ConfigId::ReplaceFsync.committed(), ConfigId::ReplaceFsyncDir);
        assert!(serde_json::from_str::<ConfigId>("\"nosuch\"").is_err());
    }

    #[test]
    fn sqlite_writers_keep_their_spellings() {
        for w in DbWriters::ALL {
            assert_eq!(DbWriters::parse(w.name()), Some(w));
            assert_eq!(DbWriters::parse_suffix(w.suffix()), Some(w));
            assert_eq!(serde_json::to_string(&w).unwrap(), format!("\"{}\"", w.name()));
        }
        assert_eq!(serde_json::from_str::<DbWriters>("\"one\"").unwrap(), DbWriters::One);
        assert_eq!(DbWriters::One.suffix(), "-one-writer");
    }
}
