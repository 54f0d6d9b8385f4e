//! The suite's charts as data: each measured configuration as the charts
//! name it, and which database method each chart sets against which file
//! methods (the article's five, the fair variants, durable writes
//! committed as an application commits them).

use crate::studies::suite::ids::{self, ArmId};

/// One measured configuration as the charts name it.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    pub id: ArmId,
    /// Legend entry.
    pub name: &'static str,
    /// How a sentence names it: "... faster than {phrase}".
    pub phrase: &'static str,
}

const fn m(id: ArmId, name: &'static str, phrase: &'static str) -> Method {
    Method { id, name, phrase }
}

const DB_SQL: Method = m(ids::READ_DB_SQL, "SQLite, SQL", "SQLite by SQL");
const DB_BLOB: Method = m(ids::READ_DB_BLOB, "SQLite, blob API", "SQLite by the blob API");
const DB_MMAP: Method = m(ids::READ_DB_BLOB_MMAP, "SQLite, blob API + mmap", "SQLite by the blob API with mmap");
const FLAT_STDIO: Method =
    m(ids::READ_FLAT_STDIO, "files, one directory (fopen/fread)", "fopen/fread from one directory");
const TREE_STDIO: Method = m(ids::READ_TREE_STDIO, "files, tree (fopen/fread)", "fopen/fread from a tree");
const FLAT_POSIX: Method = m(ids::READ_FLAT_POSIX, "files, one directory (open/read)", "open/read from one directory");
const TREE_POSIX: Method = m(ids::READ_TREE_POSIX, "files, tree (open/read)", "open/read from a tree");
pub(super) const WAL_NORMAL: Method =
    m(ids::WRITE_DB_WAL_NORMAL, "SQLite, WAL + synchronous NORMAL", "SQLite in WAL mode");
const WAL_FULL: Method =
    m(ids::WRITE_DB_WAL_FULL, "SQLite, WAL + synchronous FULL", "SQLite in WAL mode, synchronous FULL");
const DB_OFF: Method = m(ids::WRITE_DB_OFF, "SQLite, journal OFF + synchronous OFF", "SQLite without journal or sync");
const TRUNCATE: Method = m(ids::WRITE_FLAT_TRUNCATE, "files, fopen(\"wb\") + fwrite", "fopen/fwrite");
const INPLACE: Method = m(ids::WRITE_FLAT_INPLACE, "files, overwrite in place", "overwriting files in place");
const REPLACE: Method = m(ids::WRITE_FLAT_REPLACE, "files, temp file + rename", "writing a temp file and renaming it");
const TRUNCATE_SYNC: Method =
    m(ids::WRITE_FLAT_TRUNCATE_FSYNC, "files, fopen(\"wb\") + fwrite + fsync", "fopen/fwrite + fsync");
const INPLACE_SYNC: Method = m(ids::WRITE_FLAT_INPLACE_FSYNC, "files, in place + fsync", "in-place writes + fsync");
const REPLACE_SYNC: Method =
    m(ids::WRITE_FLAT_REPLACE_FSYNC, "files, temp + fsync + rename", "temp file + fsync + rename");
const C_WAL_FULL: Method =
    m(ids::COMMIT_DB_WAL_FULL, "SQLite, WAL + synchronous FULL", "SQLite in WAL mode, synchronous FULL");
const C_TRUNCATE_SYNC: Method =
    m(ids::COMMIT_FLAT_TRUNCATE_FSYNC, "files, fopen(\"wb\") + fwrite + fsync", "fopen/fwrite + fsync");
const C_INPLACE_SYNC: Method = m(ids::COMMIT_FLAT_INPLACE_FSYNC, "files, in place + fsync", "in-place writes + fsync");
const C_REPLACE_SYNC: Method = m(
    ids::COMMIT_FLAT_REPLACE_FSYNC,
    "files, temp + fsync + rename + directory fsync",
    "temp file + fsync + rename + directory fsync",
);

/// Every experiment id the suite produces, in the order tables list them.
pub const SUITE_IDS: [ArmId; 16] = ids::ARTICLE;

/// The chart of durable writes as the article times them (one
/// transaction of all a run's writes): WAL + FULL against files with fsync.
pub const DURABLE_WRITE_CHART: &str = "durable-write";
/// The chart of durable writes committed as an application commits them
/// (every N writes, N = 1 by default): what the verdict compares.
pub const COMMITTED_WRITE_CHART: &str = "durable-write-committed";
/// The chart of disk space by layout.
pub const DISK_CHART: &str = "disk-usage";

/// One ratio chart: a database method against file methods.
pub struct Spec<'a> {
    pub id: &'static str,
    pub title: &'static str,
    /// What the article's caption adds after the dataset: "using SQL".
    pub how: &'static str,
    pub write: bool,
    pub db: Method,
    pub files: &'a [Method],
}

const STDIO: &[Method] = &[FLAT_STDIO, TREE_STDIO];
const POSIX: &[Method] = &[FLAT_POSIX, TREE_POSIX];
const WRITES: &[Method] = &[TRUNCATE, INPLACE, REPLACE];

/// The article's five charts, in its order.
pub const ARTICLE: [Spec<'static>; 5] = [
    Spec {
        id: "chart1-read-sql",
        title: "Chart 1: reads by SQL",
        how: "using SQL",
        write: false,
        db: DB_SQL,
        files: STDIO,
    },
    Spec {
        id: "chart2-read-blob-api",
        title: "Chart 2: reads by the blob API",
        how: "using sqlite3_blob_read()",
        write: false,
        db: DB_BLOB,
        files: STDIO,
    },
    Spec {
        id: "chart3-read-blob-mmap",
        title: "Chart 3: reads by the blob API + mmap",
        how: "using sqlite3_blob_read() from a memory-mapped database",
        write: false,
        db: DB_MMAP,
        files: STDIO,
    },
    Spec {
        id: "chart4-write-wal",
        title: "Chart 4: writes, WAL + synchronous NORMAL",
        how: "WAL mode with synchronous NORMAL, exclusive of checkpoint time",
        write: true,
        db: WAL_NORMAL,
        files: &[TRUNCATE],
    },
    Spec {
        id: "chart5-write-unsafe",
        title: "Chart 5: writes, journal OFF + synchronous OFF",
        how: "journaling disabled, synchronous OFF",
        write: true,
        db: DB_OFF,
        files: &[TRUNCATE],
    },
];

/// Fairer comparisons the article does not draw.
pub const FAIR: [Spec<'static>; 6] = [
    Spec {
        id: "fair-read-sql",
        title: "Reads by SQL vs open/read",
        how: "using SQL",
        write: false,
        db: DB_SQL,
        files: POSIX,
    },
    Spec {
        id: "fair-read-blob-api",
        title: "Reads by the blob API vs open/read",
        how: "using sqlite3_blob_read()",
        write: false,
        db: DB_BLOB,
        files: POSIX,
    },
    Spec {
        id: "fair-read-blob-mmap",
        title: "Reads by the blob API + mmap vs open/read",
        how: "using sqlite3_blob_read() from a memory-mapped database",
        write: false,
        db: DB_MMAP,
        files: POSIX,
    },
    Spec {
        id: "fair-write-wal",
        title: "Writes, WAL + synchronous NORMAL vs three file methods",
        how: "WAL mode with synchronous NORMAL, exclusive of checkpoint time",
        write: true,
        db: WAL_NORMAL,
        files: WRITES,
    },
    Spec {
        id: "fair-write-unsafe",
        title: "Writes, journal OFF + synchronous OFF vs three file methods",
        how: "journaling disabled, synchronous OFF",
        write: true,
        db: DB_OFF,
        files: WRITES,
    },
    Spec {
        id: DURABLE_WRITE_CHART,
        title: "Durable writes in one transaction per run: WAL + synchronous FULL vs files with fsync",
        how: "WAL mode with synchronous FULL, all of a run's writes in one transaction (the article's way); \
              every file written is fsync'd",
        write: true,
        db: WAL_FULL,
        files: &[TRUNCATE_SYNC, INPLACE_SYNC, REPLACE_SYNC],
    },
];

/// Durable writes committed as an application commits them: the
/// verdict's comparison of equals.
pub const COMMITTED: [Spec<'static>; 1] = [Spec {
    id: COMMITTED_WRITE_CHART,
    title: "Durable writes, each committed: WAL + synchronous FULL vs files with fsync",
    how: "WAL mode with synchronous FULL, its checkpoints counted; every file fsync'd, a rename's directory \
          fsync'd once per commit",
    write: true,
    db: C_WAL_FULL,
    files: &[C_TRUNCATE_SYNC, C_INPLACE_SYNC, C_REPLACE_SYNC],
}];
