//! The ranking rules as plain data (documented in docs/advise.md): which
//! configuration of each store answers each durability need, which crash
//! facts exclude a candidate, and the crash table used when no power-cut
//! run was possible.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::section::{CrashFact, Durability};
use crate::powercut::Model;
use crate::records::{ConfigId, EngineKind, LayoutId};
use crate::studies::matrix::DbRead;
use crate::studies::suite::ids::{self, ArmId};

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

/// SQLite's candidate's read path in the size matrix: its own, the one
/// [`Store::read_id`] times (`read/db-blob-mmap`: blob API, mmap).
pub const SQLITE_READ: DbRead = DbRead::BlobApiMmap;

/// The stores every advice considers, besides the `--engines` given.
pub const ALWAYS: [Store; 3] = [Store::Sqlite, Store::FilesInPlace, Store::FilesReplace];

/// The engines considered when `--engines` is not given: every embedded
/// key-value engine in the registry (a server is considered when asked for,
/// since it needs one running or its programs installed).
pub fn default_engines() -> Vec<EngineKind> {
    EngineKind::KEY_VALUE.into_iter().filter(|k| !k.is_server()).collect()
}

/// What excludes a candidate, by durability need. Each test reads the crash
/// facts of the write method the candidate uses for that need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The method never tells its caller a write is durable.
    NoDurabilityPromise,
    /// Power cuts lost writes the method had acknowledged as durable.
    LostAcknowledged,
    /// Power cuts left torn blobs or a store failing its integrity check.
    Damaged,
}

/// The exclusion rules: (need, test). A candidate failing any test of the
/// stated need is excluded, with the facts as its reason.
pub const EXCLUSIONS: [(Durability, Test); 4] = [
    (Durability::Required, Test::NoDurabilityPromise),
    (Durability::Required, Test::LostAcknowledged),
    (Durability::Required, Test::Damaged),
    (Durability::Relaxed, Test::Damaged),
];

impl Test {
    /// Whether `fact` fails this test.
    pub fn fails(self, fact: &CrashFact) -> bool {
        match self {
            Test::NoDurabilityPromise => !fact.acknowledges_durability,
            Test::LostAcknowledged => fact.lost_after_ack > 0,
            Test::Damaged => fact.torn > 0 || fact.integrity_failures > 0,
        }
    }
}

/// The first test of `need` that `fact` fails.
pub fn excluded_by(need: Durability, fact: &CrashFact) -> Option<Test> {
    EXCLUSIONS.iter().filter(|(d, _)| *d == need).map(|(_, t)| *t).find(|t| t.fails(fact))
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

/// Rewrites of every blob in advise's short aging pass (its ages are 0
/// and this).
pub const AGING_AGE: u32 = 2;

/// The model of the documented table and of advise's own power-cut run:
/// each unsynced write dropped, whole or torn by 4 KiB sectors (NVMe and
/// 4K-native drives).
pub const CRASH_MODEL: Model = Model::Torn { sector: 4096 };

/// Power cuts per method behind each backend's recorded power-cut facts
/// (`crashtest --power-cut --model torn-4k` on the development machine,
/// docs/crash-safety.md, 100 blobs, seed 1), used when FUSE does not work
/// where advise runs.
pub const DOCUMENTED_CUTS: u32 = 50;

/// The documented table as crash facts: every write configuration whose
/// backend records what power cuts did to it.
pub fn documented() -> Vec<CrashFact> {
    ConfigId::methods()
        .into_iter()
        .filter_map(|method| {
            let cuts = method.power_cuts()?;
            Some(CrashFact {
                method: Some(method),
                acknowledges_durability: method.acknowledges_durability(),
                cuts: DOCUMENTED_CUTS,
                lost_after_ack: cuts.lost_after_ack,
                torn: cuts.torn,
                integrity_failures: cuts.integrity_failures,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in ALWAYS.into_iter().chain(default_engines().into_iter().map(Store::Engine)) {
            assert_eq!(Store::from_name(s.name()), Some(s));
        }
        assert_eq!(Store::from_name("flat"), None);
    }

    #[test]
    fn documented_methods_are_crash_test_methods() {
        let stores = ALWAYS.into_iter().chain(default_engines().into_iter().map(Store::Engine));
        for s in stores {
            for need in [Durability::Required, Durability::Relaxed] {
                let m = s.crash_method(need).expect("a crash method");
                assert!(documented().iter().any(|f| f.method == Some(m)), "{} not documented", m.name());
                assert!(
                    crate::studies::crashtest::method::parse_list(m.name()).is_ok(),
                    "{} not a crash method",
                    m.name()
                );
            }
        }
    }

    /// The twelve methods of the power-cut run in docs/crash-safety.md.
    #[test]
    fn the_documented_table_holds_the_twelve_measured_methods() {
        let names: Vec<&str> = documented().iter().filter_map(|f| f.method).map(ConfigId::name).collect();
        assert_eq!(
            names,
            [
                "db-wal-normal",
                "db-wal-full",
                "inplace",
                "inplace-fsync",
                "replace",
                "replace-fsync-dir",
                "lmdb-durable",
                "lmdb-fast",
                "redb-durable",
                "redb-fast",
                "fjall-durable",
                "fjall-fast"
            ]
        );
    }

    #[test]
    fn in_place_writes_are_excluded_when_durability_is_required() {
        let facts = documented();
        let of = |m: &str| facts.iter().find(|f| f.method.map(ConfigId::name) == Some(m)).unwrap().clone();
        assert_eq!(excluded_by(Durability::Required, &of("inplace-fsync")), Some(Test::LostAcknowledged));
        assert_eq!(excluded_by(Durability::Required, &of("db-wal-normal")), Some(Test::NoDurabilityPromise));
        assert_eq!(excluded_by(Durability::Required, &of("db-wal-full")), None);
        assert_eq!(excluded_by(Durability::Relaxed, &of("inplace")), Some(Test::Damaged));
        assert_eq!(excluded_by(Durability::Relaxed, &of("replace")), None);
    }
}
