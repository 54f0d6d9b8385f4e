//! What advise weighs: its candidates ([`Store`], each spelled in result
//! files here only) and the durability need they are weighed for; each
//! candidate's writes are its write configurations, one per need.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::records::{ConfigId, EngineKind, LayoutId};
use crate::studies::suite::ids::{self, ArmId};

/// The stores every advice considers, besides the `--engines` given.
pub const ALWAYS: [Store; 3] = [Store::Sqlite, Store::FilesInPlace, Store::FilesReplace];

/// How much a write must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// A write that returned must survive a power cut.
    Required,
    /// The last writes may be lost in a power cut, but stored blobs must
    /// not be damaged.
    Relaxed,
}

impl Durability {
    pub fn name(self) -> &'static str {
        match self {
            Durability::Required => "required",
            Durability::Relaxed => "relaxed",
        }
    }

    pub fn other(self) -> Durability {
        match self {
            Durability::Required => Durability::Relaxed,
            Durability::Relaxed => Durability::Required,
        }
    }
}

/// A place blobs can live, in the configuration advise gives it: advise's
/// candidate, in a result file its [`Store::name`]. Its writes are its
/// write configurations ([`Store::crash_method`]), one per need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Store {
    /// SQLite: blob API + mmap reads; WAL + NORMAL (relaxed) or WAL + FULL
    /// (required) writes.
    Sqlite,
    /// One file per blob, overwritten in place (+ fsync when required).
    FilesInPlace,
    /// One file per blob, written to a temporary file and renamed over
    /// (+ fsync when required).
    FilesReplace,
    /// A key-value engine (LMDB, redb, fjall, PostgreSQL): its fast commit
    /// (relaxed) or its durable one (required).
    Engine(EngineKind),
}

impl Store {
    /// The name in result files: `sqlite`, `files-inplace`,
    /// `files-replace` or the engine's name. Spelled and read back here
    /// only (a candidate in a result file is a [`Store`]).
    pub fn name(self) -> &'static str {
        match self {
            Store::Sqlite => "sqlite",
            Store::FilesInPlace => "files-inplace",
            Store::FilesReplace => "files-replace",
            Store::Engine(kind) => kind.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<Store> {
        ALWAYS
            .into_iter()
            .find(|s| s.name() == name)
            .or_else(|| EngineKind::from_name(name).filter(|k| k.is_key_value()).map(Store::Engine))
    }

    /// The suite experiment its reads are timed by.
    pub fn read_id(self) -> ArmId {
        match self {
            Store::Sqlite => ids::READ_DB_BLOB_MMAP,
            Store::FilesInPlace | Store::FilesReplace => ids::READ_FLAT_POSIX,
            Store::Engine(kind) => ids::engine_read(kind),
        }
    }

    /// The suite experiment its cold reads are timed by (the page cache
    /// evicted before each run).
    pub fn cold_read_id(self) -> ArmId {
        ids::cold(self.read_id())
    }

    /// The layout `aging` ages it as: its relaxed write's (SQLite in WAL
    /// mode, files in place or by temp + rename), or the engine's durable
    /// commit. None for a server engine (no short aging pass for it).
    pub fn aging_layout(self) -> Option<LayoutId> {
        match self {
            Store::Engine(kind) if kind.is_server() => None,
            Store::Engine(kind) => Some(LayoutId(ConfigId::Durable(kind))),
            _ => self.relaxed_write().filter(|c| c.aging_title().is_some()).map(LayoutId),
        }
    }

    /// The suite experiment its writes at `need` are timed by: committed
    /// as the workload states (`commit/...`), or, for a file from before
    /// `--commit-every` (`one_per_run`), the article's one transaction per
    /// run.
    pub fn write_id(self, need: Durability, one_per_run: bool) -> ArmId {
        let id = self.run_write_id(need);
        if one_per_run {
            id
        } else {
            ids::committed(id)
        }
    }

    /// The article-style arm of its writes at `need` (one transaction per
    /// run): its write configuration's, a durable rename's without the
    /// directory fsync the committed arm adds.
    fn run_write_id(self, need: Durability) -> ArmId {
        match (self, need) {
            (Store::FilesReplace, Durability::Required) => ids::WRITE_FLAT_REPLACE_FSYNC,
            (Store::Engine(kind), Durability::Required) => ids::engine_durable_write(kind),
            (Store::Engine(kind), Durability::Relaxed) => ids::engine_fast_write(kind),
            _ => ArmId::Write(self.crash_method(need).expect("SQLite and the files write at every need")),
        }
    }

    /// The crash test's method for its writes at `need` (None: its engine
    /// declares none). SQLite writes in WAL, NORMAL or FULL; files written
    /// by temp + rename are durable only with the directory fsynced too, as
    /// the timed committed write does (once per commit).
    pub fn crash_method(self, need: Durability) -> Option<ConfigId> {
        let required = need == Durability::Required;
        match self {
            Store::Sqlite if required => Some(ConfigId::DbWalFull),
            Store::Sqlite => Some(ConfigId::DbWalNormal),
            Store::FilesInPlace if required => Some(ConfigId::InplaceFsync),
            Store::FilesInPlace => Some(ConfigId::Inplace),
            Store::FilesReplace if required => Some(ConfigId::ReplaceFsyncDir),
            Store::FilesReplace => Some(ConfigId::Replace),
            Store::Engine(kind) => ConfigId::of_engine(kind, required),
        }
    }

    /// Its write when durability is relaxed.
    fn relaxed_write(self) -> Option<ConfigId> {
        self.crash_method(Durability::Relaxed)
    }

    /// The layout its disk usage is recorded under.
    pub fn layout(self) -> EngineKind {
        match self {
            Store::Sqlite => crate::engine::sqlite::KIND,
            Store::FilesInPlace | Store::FilesReplace => crate::engine::files::FLAT_KIND,
            Store::Engine(kind) => kind,
        }
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Store> for &'static str {
    fn from(s: Store) -> &'static str {
        s.name()
    }
}

/// Tests name candidates as files spell them.
#[cfg(test)]
impl From<&str> for Store {
    fn from(name: &str) -> Store {
        Store::from_name(name).unwrap_or_else(|| panic!("no candidate {name:?}"))
    }
}

impl TryFrom<String> for Store {
    type Error = String;
    fn try_from(s: String) -> Result<Store, String> {
        Store::from_name(&s).ok_or_else(|| format!("unknown advise candidate {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let engines = crate::studies::advise::rules::default_engines().into_iter().map(Store::Engine);
        for s in ALWAYS.into_iter().chain(engines) {
            assert_eq!(Store::from_name(s.name()), Some(s));
        }
        assert_eq!(Store::from_name("flat"), None);
    }
}
