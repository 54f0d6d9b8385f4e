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
