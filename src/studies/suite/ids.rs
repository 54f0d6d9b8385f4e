//! The suite's experiment ids, defined once: the steps run under them, the
//! rounds pair them and the report finds them by them. They are the result
//! file's contract with `report` (docs/results-schema.md).

use crate::records::EngineKind;

pub const READ_DB_SQL: &str = "read/db-sql";
pub const READ_DB_BLOB: &str = "read/db-blob";
pub const READ_DB_BLOB_MMAP: &str = "read/db-blob-mmap";
pub const READ_FLAT_STDIO: &str = "read/flat-stdio";
pub const READ_TREE_STDIO: &str = "read/tree-stdio";
pub const READ_FLAT_POSIX: &str = "read/flat-posix";
pub const READ_TREE_POSIX: &str = "read/tree-posix";
pub const WRITE_DB_WAL_NORMAL: &str = "write/db-wal-normal";
pub const WRITE_DB_WAL_FULL: &str = "write/db-wal-full";
pub const WRITE_DB_OFF: &str = "write/db-off";
pub const WRITE_FLAT_TRUNCATE: &str = "write/flat-truncate";
pub const WRITE_FLAT_INPLACE: &str = "write/flat-inplace";
pub const WRITE_FLAT_REPLACE: &str = "write/flat-replace";
pub const WRITE_FLAT_TRUNCATE_FSYNC: &str = "write/flat-truncate-fsync";
pub const WRITE_FLAT_INPLACE_FSYNC: &str = "write/flat-inplace-fsync";
pub const WRITE_FLAT_REPLACE_FSYNC: &str = "write/flat-replace-fsync";

/// Every experiment id of the article and its fair variants, in the order
/// the report's tables list them.
pub const ARTICLE: [&str; 16] = [
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
pub const COMMITTED_ARTICLE: [&str; 7] = [
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
pub const COMMIT_DB_WAL_FULL: &str = "commit/db-wal-full";
pub const COMMIT_FLAT_TRUNCATE_FSYNC: &str = "commit/flat-truncate-fsync";
pub const COMMIT_FLAT_INPLACE_FSYNC: &str = "commit/flat-inplace-fsync";
pub const COMMIT_FLAT_REPLACE_FSYNC: &str = "commit/flat-replace-fsync";

/// A write arm committed as an application would: `commit/X` for the
/// arm `write/X`, its writes committed every N (`params.commit_every`)
/// instead of in one transaction per run.
pub fn committed(write_id: &str) -> String {
    format!("{COMMITTED_PREFIX}{}", write_id.strip_prefix("write/").unwrap_or(write_id))
}

/// A key-value engine's durable commit, committed as an application
/// would: `commit/ENGINE-durable`.
pub fn engine_committed_durable_write(kind: EngineKind) -> String {
    committed(&engine_durable_write(kind))
}

/// What [`committed`] puts before an arm's name.
pub const COMMITTED_PREFIX: &str = "commit/";

/// A read measured with the page cache evicted before each run, beside
/// its warm arm: `cold/read/...`.
pub fn cold(read_id: &str) -> String {
    format!("{COLD_PREFIX}{read_id}")
}

/// What [`cold`] puts before a read's id.
pub const COLD_PREFIX: &str = "cold/";

/// A key-value engine's read: `read/ENGINE`.
pub fn engine_read(kind: EngineKind) -> String {
    format!("read/{}", kind.name())
}

/// A server engine's round trip with no work (its `round_trip_call`), the floor
/// under its reads: `roundtrip/ENGINE`.
pub fn engine_round_trip(kind: EngineKind) -> String {
    format!("roundtrip/{}", kind.name())
}

/// A key-value engine's commit without sync: `write/ENGINE-fast`.
pub fn engine_fast_write(kind: EngineKind) -> String {
    format!("write/{}-fast", kind.name())
}

/// A key-value engine's durable commit: `write/ENGINE-durable`.
pub fn engine_durable_write(kind: EngineKind) -> String {
    format!("write/{}-durable", kind.name())
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
        assert_eq!(committed(&engine_durable_write(EngineKind::Lmdb)), "commit/lmdb-durable");
    }
}
