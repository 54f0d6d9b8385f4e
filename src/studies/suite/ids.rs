//! The suite's experiment ids, defined once: the steps run under them, the
//! rounds pair them and the report finds them by them. They are the result
//! file's contract with `report` (docs/results-schema.md): an [`ArmId`] is
//! spelled (`write/flat-inplace`) and read back here only, and a write
//! arm holds its configuration's [`ConfigId`].

use std::fmt;

use crate::records::{ConfigId, EngineKind};

/// How a read arm reads: SQLite's three paths, the files' two calls in
/// each layout, or a key-value engine's read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadPath {
    /// SQLite by a prepared `SELECT`.
    DbSql,
    /// SQLite through the blob API.
    DbBlob,
    /// The same over a memory-mapped database.
    DbBlobMmap,
    /// Files in one directory, fopen/fread.
    FlatStdio,
    /// Files in a tree, fopen/fread.
    TreeStdio,
    /// Files in one directory, open/read.
    FlatPosix,
    /// Files in a tree, open/read.
    TreePosix,
    /// A key-value engine's read.
    Engine(EngineKind),
}

impl ReadPath {
    /// What follows `read/`.
    fn spelled(self) -> &'static str {
        match self {
            ReadPath::DbSql => "db-sql",
            ReadPath::DbBlob => "db-blob",
            ReadPath::DbBlobMmap => "db-blob-mmap",
            ReadPath::FlatStdio => "flat-stdio",
            ReadPath::TreeStdio => "tree-stdio",
            ReadPath::FlatPosix => "flat-posix",
            ReadPath::TreePosix => "tree-posix",
            ReadPath::Engine(kind) => kind.name(),
        }
    }

    /// SQLite's reads (the files' rivals in the verdict).
    pub fn is_db(self) -> bool {
        matches!(self, ReadPath::DbSql | ReadPath::DbBlob | ReadPath::DbBlobMmap)
    }

    /// The files' reads, flat or tree.
    pub fn is_files(self) -> bool {
        matches!(self, ReadPath::FlatStdio | ReadPath::TreeStdio | ReadPath::FlatPosix | ReadPath::TreePosix)
    }
}

/// One arm of the suite (or of advise, which runs the suite's arms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArmId {
    /// A warm read: `read/...`.
    Read(ReadPath),
    /// The same read with the page cache evicted before each run:
    /// `cold/read/...`.
    Cold(ReadPath),
    /// A server's round trip with no work (its `round_trip_call`), the
    /// floor under its reads: `roundtrip/ENGINE`.
    RoundTrip(EngineKind),
    /// A write configuration, one transaction per run (the article's):
    /// `write/...`.
    Write(ConfigId),
    /// A write configuration committed as an application commits it,
    /// every N writes (`params.commit_every`): `commit/...`.
    Commit(ConfigId),
    /// The A/A control: `read/db-blob` measured a second time as its own
    /// arm, `control/db-blob`.
    Control,
}

pub const READ_DB_SQL: ArmId = ArmId::Read(ReadPath::DbSql);
pub const READ_DB_BLOB: ArmId = ArmId::Read(ReadPath::DbBlob);
pub const READ_DB_BLOB_MMAP: ArmId = ArmId::Read(ReadPath::DbBlobMmap);
pub const READ_FLAT_STDIO: ArmId = ArmId::Read(ReadPath::FlatStdio);
pub const READ_TREE_STDIO: ArmId = ArmId::Read(ReadPath::TreeStdio);
pub const READ_FLAT_POSIX: ArmId = ArmId::Read(ReadPath::FlatPosix);
pub const READ_TREE_POSIX: ArmId = ArmId::Read(ReadPath::TreePosix);
pub const WRITE_DB_WAL_NORMAL: ArmId = ArmId::Write(ConfigId::DbWalNormal);
pub const WRITE_DB_WAL_FULL: ArmId = ArmId::Write(ConfigId::DbWalFull);
pub const WRITE_DB_OFF: ArmId = ArmId::Write(ConfigId::DbOff);
pub const WRITE_FLAT_TRUNCATE: ArmId = ArmId::Write(ConfigId::Truncate);
pub const WRITE_FLAT_INPLACE: ArmId = ArmId::Write(ConfigId::Inplace);
pub const WRITE_FLAT_REPLACE: ArmId = ArmId::Write(ConfigId::Replace);
pub const WRITE_FLAT_TRUNCATE_FSYNC: ArmId = ArmId::Write(ConfigId::TruncateFsync);
pub const WRITE_FLAT_INPLACE_FSYNC: ArmId = ArmId::Write(ConfigId::InplaceFsync);
pub const WRITE_FLAT_REPLACE_FSYNC: ArmId = ArmId::Write(ConfigId::ReplaceFsync);

/// Every experiment id of the article and its fair variants, in the order
/// the report's tables list them.
pub const ARTICLE: [ArmId; 16] = [
    READ_DB_SQL,
    READ_DB_BLOB,
    READ_DB_BLOB_MMAP,
    READ_FLAT_STDIO,
    READ_TREE_STDIO,
    READ_FLAT_POSIX,
    READ_TREE_POSIX,
    WRITE_DB_WAL_NORMAL,
    WRITE_DB_WAL_FULL,
    WRITE_DB_OFF,
    WRITE_FLAT_TRUNCATE,
    WRITE_FLAT_INPLACE,
    WRITE_FLAT_REPLACE,
    WRITE_FLAT_TRUNCATE_FSYNC,
    WRITE_FLAT_INPLACE_FSYNC,
    WRITE_FLAT_REPLACE_FSYNC,
];

/// The article's writes that the suite also measures committed as an
/// application would (`commit/...`): the durable ones, and the fast ones
/// advise weighs when durability is relaxed.
pub const COMMITTED_ARTICLE: [ArmId; 7] = [
    WRITE_DB_WAL_NORMAL,
    WRITE_DB_WAL_FULL,
    WRITE_FLAT_INPLACE,
    WRITE_FLAT_REPLACE,
    WRITE_FLAT_TRUNCATE_FSYNC,
    WRITE_FLAT_INPLACE_FSYNC,
    WRITE_FLAT_REPLACE_FSYNC,
];

/// The durable article writes committed as an application would: the
/// chart and the verdict row of durable writes compare these.
pub const COMMIT_DB_WAL_FULL: ArmId = ArmId::Commit(ConfigId::DbWalFull);
pub const COMMIT_FLAT_TRUNCATE_FSYNC: ArmId = ArmId::Commit(ConfigId::TruncateFsync);
pub const COMMIT_FLAT_INPLACE_FSYNC: ArmId = ArmId::Commit(ConfigId::InplaceFsync);
pub const COMMIT_FLAT_REPLACE_FSYNC: ArmId = ArmId::Commit(ConfigId::ReplaceFsyncDir);

/// The A/A control's arm, and the arm it repeats.
pub const CONTROL_ID: ArmId = ArmId::Control;
pub const CONTROL_OF: ArmId = READ_DB_BLOB;

/// A write arm committed as an application would: `commit/X` for the
/// arm `write/X`, its writes committed every N (`params.commit_every`)
/// instead of in one transaction per run (a rename made durable then
/// fsyncs its directory once per commit: [`ConfigId::committed`]). Any
/// other arm is itself.
pub fn committed(id: ArmId) -> ArmId {
    match id {
        ArmId::Write(c) => ArmId::Commit(c.committed()),
        other => other,
    }
}

/// A key-value engine's durable commit, committed as an application
/// would: `commit/ENGINE-durable`.
pub fn engine_committed_durable_write(kind: EngineKind) -> ArmId {
    committed(engine_durable_write(kind))
}

/// A read measured with the page cache evicted before each run, beside
/// its warm arm: `cold/read/...`. Any other arm is itself.
pub fn cold(id: ArmId) -> ArmId {
    match id {
        ArmId::Read(r) => ArmId::Cold(r),
        other => other,
    }
}

/// A key-value engine's read: `read/ENGINE`.
pub fn engine_read(kind: EngineKind) -> ArmId {
    ArmId::Read(ReadPath::Engine(kind))
}

/// A server engine's round trip with no work (its `round_trip_call`), the floor
/// under its reads: `roundtrip/ENGINE`.
pub fn engine_round_trip(kind: EngineKind) -> ArmId {
    ArmId::RoundTrip(kind)
}

/// A key-value engine's commit without sync: `write/ENGINE-fast`.
pub fn engine_fast_write(kind: EngineKind) -> ArmId {
    ArmId::Write(ConfigId::Fast(kind))
}

/// A key-value engine's durable commit: `write/ENGINE-durable`.
pub fn engine_durable_write(kind: EngineKind) -> ArmId {
    ArmId::Write(ConfigId::Durable(kind))
}

impl ArmId {
    /// Every arm a result file can hold: the article's and its committed
    /// and cold variants, every key-value engine's, and the control.
    fn all() -> impl Iterator<Item = ArmId> {
        let engines = EngineKind::KEY_VALUE
            .into_iter()
            .flat_map(|k| [engine_read(k), engine_round_trip(k), engine_fast_write(k), engine_durable_write(k)]);
        let plain: Vec<ArmId> = ARTICLE.into_iter().chain(engines).collect();
        let variants: Vec<ArmId> =
            plain.iter().map(|&a| if a.read().is_some() { cold(a) } else { committed(a) }).collect();
        plain
            .into_iter()
            .chain(variants.into_iter().filter(|a| !matches!(a, ArmId::RoundTrip(_))))
            .chain([ArmId::Control])
    }

    /// The arm a result file's experiment id names ([`ArmId`]'s spelling
    /// read back); None for an experiment of another study.
    pub fn parse(id: &str) -> Option<ArmId> {
        ArmId::all().find(|a| a.to_string() == id)
    }

    /// Whether experiment `id` is this arm's.
    pub fn is(self, id: &str) -> bool {
        self.to_string() == id
    }

    /// The same arm warm (a cold read's warm twin); any other arm is itself.
    pub fn warm(self) -> ArmId {
        match self {
            ArmId::Cold(r) => ArmId::Read(r),
            other => other,
        }
    }

    /// Its read path, when it reads warm.
    pub fn read(self) -> Option<ReadPath> {
        match self {
            ArmId::Read(r) => Some(r),
            _ => None,
        }
    }

    /// Its write configuration, one transaction per run or committed.
    pub fn config(self) -> Option<ConfigId> {
        match self {
            ArmId::Write(c) | ArmId::Commit(c) => Some(c),
            _ => None,
        }
    }

    pub fn is_commit(self) -> bool {
        matches!(self, ArmId::Commit(_))
    }
}

impl fmt::Display for ArmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suite = |c: ConfigId| c.suite_name().unwrap_or_else(|| c.name());
        match *self {
            ArmId::Read(r) => write!(f, "read/{}", r.spelled()),
            ArmId::Cold(r) => write!(f, "cold/read/{}", r.spelled()),
            ArmId::RoundTrip(kind) => write!(f, "roundtrip/{}", kind.name()),
            ArmId::Write(c) => write!(f, "write/{}", suite(c)),
            ArmId::Commit(c) => write!(f, "commit/{}", suite(c)),
            ArmId::Control => f.write_str("control/db-blob"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_ids_are_the_article_ids_committed() {
        let pairs = [
            (WRITE_DB_WAL_FULL, COMMIT_DB_WAL_FULL),
            (WRITE_FLAT_TRUNCATE_FSYNC, COMMIT_FLAT_TRUNCATE_FSYNC),
            (WRITE_FLAT_INPLACE_FSYNC, COMMIT_FLAT_INPLACE_FSYNC),
            (WRITE_FLAT_REPLACE_FSYNC, COMMIT_FLAT_REPLACE_FSYNC),
        ];
        for (write, commit) in pairs {
            assert_eq!(committed(write), commit);
            assert!(COMMITTED_ARTICLE.contains(&write), "{write} is measured committed");
        }
        assert_eq!(committed(engine_durable_write(EngineKind::Lmdb)).to_string(), "commit/lmdb-durable");
    }

    #[test]
    fn every_arm_is_spelled_as_result_files_hold_it_and_read_back() {
        let spelled = [
            (READ_DB_BLOB_MMAP, "read/db-blob-mmap"),
            (cold(READ_FLAT_POSIX), "cold/read/flat-posix"),
            (WRITE_FLAT_REPLACE_FSYNC, "write/flat-replace-fsync"),
            (COMMIT_FLAT_REPLACE_FSYNC, "commit/flat-replace-fsync"),
            (committed(WRITE_DB_WAL_NORMAL), "commit/db-wal-normal"),
            (engine_fast_write(EngineKind::Redb), "write/redb-fast"),
            (engine_round_trip(EngineKind::Postgres), "roundtrip/postgres"),
            (engine_read(EngineKind::PostgresLo), "read/postgres-lo"),
            (CONTROL_ID, "control/db-blob"),
        ];
        for (arm, text) in spelled {
            assert_eq!(arm.to_string(), text);
            assert_eq!(ArmId::parse(text), Some(arm), "{text}");
        }
        let all: Vec<String> = ArmId::all().map(|a| a.to_string()).collect();
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "no two arms spelled alike");
        assert_eq!(ArmId::parse("aging/write/db-wal"), None);
        assert_eq!(ArmId::parse("cold/read/db-blob-mmap").map(ArmId::warm), Some(READ_DB_BLOB_MMAP));
    }
}
