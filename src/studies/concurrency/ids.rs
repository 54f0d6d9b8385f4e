//! The concurrency study's store and experiment ids, defined once: the
//! blob readers and the writers run under them, the rounds pair them and
//! the report finds them by them (as `studies/suite/ids.rs` does for the
//! suite). They are the result file's contract with `report`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::records::{DbWriters, EngineKind};

/// A store the study measures: one of the blob readers' own variants, or an
/// engine by its name (the writers' stores and the servers' readers). In a
/// result file it is its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum StoreId {
    /// The kvtest database, a connection per thread.
    Db,
    /// The same with a 1 GiB mmap.
    DbMmap,
    /// The flat export, read with fopen/fread.
    Files,
    /// The database in WAL, read beside one writer.
    DbWalWriter,
    /// The files, read beside one writer (new file + rename).
    FilesWriter,
    /// An engine's dataset (`--engines`), by the engine's name. SQLite's
    /// (`sqlite-wal`) is written through a connection per writer.
    Engine(EngineKind),
    /// SQLite written by one of its other ways of writing with several
    /// writers at once (`engine::sqlite::WRITERS`; never
    /// [`DbWriters::PerClient`], which is `Engine(Db)`): one writer
    /// connection the process's writers share behind a mutex, each reader
    /// on a connection of its own (`sqlite-one-writer`).
    SqliteWriters(DbWriters),
}

impl StoreId {
    /// The blob readers' stores without a writer, in the order they are
    /// charted.
    pub const READERS: [StoreId; 3] = [StoreId::Db, StoreId::DbMmap, StoreId::Files];
    /// The blob readers' database stores (the files' rivals).
    pub const DB_READERS: [StoreId; 2] = [StoreId::Db, StoreId::DbMmap];
    /// The stores read beside one writer: the database's, then the files'.
    pub const WITH_WRITER: [StoreId; 2] = [StoreId::DbWalWriter, StoreId::FilesWriter];
    /// The stores whose name is fixed (not an engine's or a way of
    /// writing's).
    const FIXED: [StoreId; 5] =
        [StoreId::Db, StoreId::DbMmap, StoreId::Files, StoreId::DbWalWriter, StoreId::FilesWriter];

    /// Every store a result file can name.
    fn all() -> impl Iterator<Item = StoreId> {
        let engines = EngineKind::ALL.into_iter().map(StoreId::Engine);
        let writers = DbWriters::ALL.into_iter().filter(|w| !w.is_per_client()).map(StoreId::SqliteWriters);
        StoreId::FIXED.into_iter().chain(engines).chain(writers)
    }

    pub fn name(self) -> String {
        match self {
            StoreId::SqliteWriters(w) => format!("sqlite{}", w.suffix()),
            other => other.fixed_name().into(),
        }
    }

    fn fixed_name(self) -> &'static str {
        match self {
            StoreId::Db => "db",
            StoreId::DbMmap => "db-mmap",
            StoreId::Files => "files",
            StoreId::DbWalWriter => "db-wal-writer",
            StoreId::FilesWriter => "files-writer",
            // The writers' SQLite is in WAL with a connection per writer;
            // "db" is the readers' database.
            StoreId::Engine(EngineKind::Db) => "sqlite-wal",
            StoreId::Engine(kind) => kind.name(),
            StoreId::SqliteWriters(_) => "sqlite",
        }
    }

    /// The engine a writers' store is written with (None: a blob readers'
    /// own store).
    pub fn engine(self) -> Option<EngineKind> {
        match self {
            StoreId::Engine(kind) => Some(kind),
            StoreId::SqliteWriters(_) => Some(crate::engine::sqlite::KIND),
            _ => None,
        }
    }

    /// SQLite's way of writing in a writers' store: a connection per
    /// writer for SQLite's own, or its row's.
    pub fn sqlite_writers(self) -> Option<DbWriters> {
        match self {
            StoreId::Engine(crate::engine::sqlite::KIND) => Some(DbWriters::PerClient),
            StoreId::SqliteWriters(w) => Some(w),
            _ => None,
        }
    }

    /// The writers' stores of `engines`, in their order: each engine's,
    /// and after SQLite's (a connection per writer) each of its other
    /// ways of writing, in the order of its rows.
    pub fn writers_of(engines: &[EngineKind]) -> Vec<StoreId> {
        let mut out = Vec::with_capacity(engines.len() + 1);
        for &kind in engines {
            out.push(StoreId::Engine(kind));
            if kind == crate::engine::sqlite::KIND {
                let others = crate::engine::sqlite::WRITERS.iter().filter(|w| !w.id.is_per_client());
                out.extend(others.map(|w| StoreId::SqliteWriters(w.id)));
            }
        }
        out
    }

    /// The store a name stands for ([`StoreId::name`] read back).
    pub fn parse(name: &str) -> Option<StoreId> {
        StoreId::all().find(|s| s.name() == name)
    }

    /// Whether this store is files (one side of the database-over-files
    /// comparisons).
    pub fn is_files(self) -> bool {
        match self {
            StoreId::Files | StoreId::FilesWriter => true,
            StoreId::Engine(kind) => kind.is_files(),
            _ => false,
        }
    }

    /// The same store without the writer beside it (None: it has none).
    pub fn alone(self) -> Option<StoreId> {
        match self {
            StoreId::DbWalWriter => Some(StoreId::Db),
            StoreId::FilesWriter => Some(StoreId::Files),
            _ => None,
        }
    }
}

/// The stores of a section's points, each once, in the order they ran.
pub fn stores_in_order(stores: impl IntoIterator<Item = StoreId>) -> Vec<StoreId> {
    let mut out: Vec<StoreId> = Vec::new();
    for s in stores {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl From<EngineKind> for StoreId {
    fn from(kind: EngineKind) -> StoreId {
        StoreId::Engine(kind)
    }
}

impl fmt::Display for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl From<StoreId> for String {
    fn from(s: StoreId) -> String {
        s.name()
    }
}

impl TryFrom<String> for StoreId {
    type Error = String;
    fn try_from(s: String) -> Result<StoreId, String> {
        StoreId::parse(&s).ok_or_else(|| format!("unknown concurrency store {s:?}"))
    }
}

/// The experiment of `store` read by `threads` readers (or clients):
/// `blobs/STORE/tN`.
pub fn reader_experiment(store: StoreId, threads: u32) -> String {
    format!("blobs/{store}/t{threads}")
}

/// The experiment of `store` written by `writers` writers (with as many
/// readers beside them): `writers/STORE/wN`.
pub fn writer_experiment(store: StoreId, writers: u32) -> String {
    format!("writers/{store}/w{writers}")
}

/// A writers' experiment id back into its store and writer count.
pub fn parse_writer_experiment(id: &str) -> Option<(StoreId, u32)> {
    let rest = id.strip_prefix("writers/")?;
    let (store, n) = rest.rsplit_once("/w")?;
    Some((StoreId::parse(store)?, n.parse().ok()?))
}

/// The rounds of the blob readers at `threads` threads.
pub fn readers_rounds(threads: u32) -> String {
    format!("concurrency/blobs/t{threads}")
}

/// The rounds of the stores read beside one writer at `threads` threads.
pub fn writer_beside_rounds(threads: u32) -> String {
    format!("concurrency/blobs-writer/t{threads}")
}

/// The rounds of the servers read by `clients` clients.
pub fn servers_rounds(clients: u32) -> String {
    format!("concurrency/servers/c{clients}")
}

/// The one set of rounds of every engine at every writer count.
pub const WRITERS_ROUNDS: &str = "concurrency/writers";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_parses_back_from_its_name() {
        for s in StoreId::all() {
            assert_eq!(StoreId::parse(&s.name()), Some(s), "{s}");
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<StoreId>(&json).unwrap(), s);
        }
        assert_eq!(StoreId::parse("db"), Some(StoreId::Db), "the readers' database, not the engine");
        assert_eq!(StoreId::Engine(EngineKind::Db).name(), "sqlite-wal");
        assert_eq!(StoreId::parse("sqlite-one-writer"), Some(StoreId::SqliteWriters(DbWriters::One)));
        assert!(serde_json::from_str::<StoreId>("\"nosuch\"").is_err());
    }

    #[test]
    fn experiment_ids_round_trip() {
        for s in [StoreId::Db, StoreId::Engine(EngineKind::Lmdb), StoreId::Engine(EngineKind::PostgresLo)] {
            for n in [1, 16] {
                assert_eq!(parse_writer_experiment(&writer_experiment(s, n)), Some((s, n)));
            }
        }
        assert_eq!(reader_experiment(StoreId::FilesWriter, 2), "blobs/files-writer/t2");
        assert_eq!(parse_writer_experiment("blobs/db/t1"), None);
        assert!(StoreId::FilesWriter.is_files() && !StoreId::DbMmap.is_files());
        assert_eq!(StoreId::DbWalWriter.alone(), Some(StoreId::Db));
    }

    #[test]
    fn sqlite_writes_in_two_rows_and_the_others_in_one() {
        use EngineKind::{Db, Flat, Lmdb};
        let sqlite = StoreId::Engine(Db);
        assert_eq!(
            StoreId::writers_of(&[Flat, Db, Lmdb]),
            [StoreId::Engine(Flat), sqlite, StoreId::SqliteWriters(DbWriters::One), StoreId::Engine(Lmdb)]
        );
        assert_eq!(StoreId::SqliteWriters(DbWriters::One).engine(), Some(Db));
        assert_eq!(StoreId::Files.engine(), None, "the blob readers' own stores have no engine");
    }
}
