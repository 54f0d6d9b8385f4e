//! The engines blobbench knows, and every fact about each in one row of
//! [`FACTS`]: its name in result files, its title, whether it is a
//! key-value engine, the call a server answers, whether it has a fast
//! commit and whether one process only may open it. A new engine is one
//! variant and one row; what it can do is its backend's
//! (`engine/registry.rs`).

use serde::{Deserialize, Serialize};

/// Where a dataset's blobs live: the engine (and, for files, the layout).
/// The serialised names are the result schema's (`layout` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// An SQLite database with table kv(k INTEGER PRIMARY KEY, v BLOB).
    Db,
    /// One file per blob in one directory, named %06d.
    Flat,
    /// One file per blob in a tree, named %02d/%02d/%02d.
    Tree,
    /// Names in SQLite (table ext(k, name)), content in flat files beside it.
    External,
    /// LMDB (through heed): one B+tree in a memory map.
    Lmdb,
    /// redb: a copy-on-write B-tree in one file.
    Redb,
    /// fjall: an LSM tree whose large values live apart in blob files.
    Fjall,
    /// PostgreSQL: table kv(k bigint primary key, v bytea).
    Postgres,
    /// PostgreSQL large objects: an oid per key, content through the
    /// large-object functions.
    #[serde(rename = "postgres-lo")]
    PostgresLo,
    /// An S3 object store: an object per key, in one bucket under one
    /// prefix (a throwaway server blobbench starts, or the user's store).
    S3,
}

/// One engine's facts.
struct Facts {
    kind: EngineKind,
    /// Its name in result files and on the command line (the serde name).
    name: &'static str,
    /// What a person calls it.
    title: &'static str,
    /// A key-value engine, which `--engines` can add.
    key_value: bool,
    /// The cheapest call its server answers; None when no server runs it.
    round_trip_call: Option<&'static str>,
    /// A write can return before it is stored.
    fast_commit: bool,
    /// Why only one process at a time may open its store, if so.
    one_process_only: Option<&'static str>,
    /// What each of several writers of one process does, each write
    /// committed durably (the concurrency study's writers, whose label it
    /// is); None for SQLite, whose ways of writing with several writers
    /// are its backend's rows (`engine::sqlite::WRITERS`).
    concurrent_writes: Option<&'static str>,
}

/// Every engine, in the order of the enum (a const check below holds it).
/// Each row states every fact, so a new engine says which it is.
const FACTS: [Facts; 10] = [
    Facts {
        kind: EngineKind::Db,
        name: "db",
        title: "SQLite",
        key_value: false,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: None,
    },
    Facts {
        kind: EngineKind::Flat,
        name: "flat",
        title: "Files (flat)",
        key_value: false,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some(
            "files, a temporary file per writer (own keys) + fsync + rename + fsync of the directory",
        ),
    },
    Facts {
        kind: EngineKind::Tree,
        name: "tree",
        title: "Files (tree)",
        key_value: false,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some(
            "files, a temporary file per writer (own keys) + fsync + rename + fsync of the directory",
        ),
    },
    Facts {
        kind: EngineKind::External,
        name: "external",
        title: "External (name in SQLite, blob in a file)",
        key_value: false,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some("External (name in SQLite, blob in a file), one database, a durable commit per write"),
    },
    Facts {
        kind: EngineKind::Lmdb,
        name: "lmdb",
        title: "LMDB",
        key_value: true,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some("LMDB, one environment, a write transaction per write (writers queue on its lock)"),
    },
    Facts {
        kind: EngineKind::Redb,
        name: "redb",
        title: "redb",
        key_value: true,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: Some("redb locks its database file for one process (another's open fails)"),
        concurrent_writes: Some("redb, one database, a durable commit per write"),
    },
    Facts {
        kind: EngineKind::Fjall,
        name: "fjall",
        title: "fjall",
        key_value: true,
        round_trip_call: None,
        fast_commit: true,
        one_process_only: Some("fjall locks its keyspace for one process (another's open fails)"),
        concurrent_writes: Some("fjall, one database, a durable commit per write"),
    },
    Facts {
        kind: EngineKind::Postgres,
        name: "postgres",
        title: "PostgreSQL (bytea)",
        key_value: true,
        round_trip_call: Some("SELECT 1"),
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some("PostgreSQL (bytea), a connection per client, a durable commit per write"),
    },
    Facts {
        kind: EngineKind::PostgresLo,
        name: "postgres-lo",
        title: "PostgreSQL (large objects)",
        key_value: true,
        round_trip_call: Some("SELECT 1"),
        fast_commit: true,
        one_process_only: None,
        concurrent_writes: Some("PostgreSQL (large objects), a connection per client, a durable commit per write"),
    },
    Facts {
        kind: EngineKind::S3,
        name: "s3",
        title: "S3 object store",
        key_value: true,
        round_trip_call: Some("GET of a small object"),
        fast_commit: false,
        one_process_only: None,
        concurrent_writes: Some("S3 object store, a connection per client, a durable commit per write"),
    },
];

/// [`FACTS`]' kinds, checked to follow the enum's order.
const fn all_kinds() -> [EngineKind; FACTS.len()] {
    let mut out = [EngineKind::Db; FACTS.len()];
    let mut i = 0;
    while i < FACTS.len() {
        assert!(FACTS[i].kind as usize == i, "FACTS follows the order of EngineKind");
        out[i] = FACTS[i].kind;
        i += 1;
    }
    out
}

const fn key_value_count() -> usize {
    let (mut n, mut i) = (0, 0);
    while i < FACTS.len() {
        n += FACTS[i].key_value as usize;
        i += 1;
    }
    n
}

const fn key_value_kinds() -> [EngineKind; key_value_count()] {
    let mut out = [EngineKind::Db; key_value_count()];
    let (mut n, mut i) = (0, 0);
    while i < FACTS.len() {
        if FACTS[i].key_value {
            out[n] = FACTS[i].kind;
            n += 1;
        }
        i += 1;
    }
    out
}

impl EngineKind {
    pub const ALL: [EngineKind; FACTS.len()] = all_kinds();

    /// The key-value engines, which `suite --engines` can add (PostgreSQL
    /// too: a key-value table on a server).
    pub const KEY_VALUE: [EngineKind; key_value_count()] = key_value_kinds();

    fn facts(self) -> &'static Facts {
        &FACTS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// What a person calls it.
    pub fn title(self) -> &'static str {
        self.facts().title
    }

    pub fn from_name(name: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// One file per blob (flat or tree).
    pub fn is_files(self) -> bool {
        matches!(self, EngineKind::Flat | EngineKind::Tree)
    }

    pub fn is_key_value(self) -> bool {
        self.facts().key_value
    }

    /// The cheapest call its server answers, which `run --round-trip` and
    /// the suite's `roundtrip/ENGINE` time per op as the floor under each
    /// read (PostgreSQL's `SELECT 1`); None for an engine no server runs.
    pub fn round_trip_call(self) -> Option<&'static str> {
        self.facts().round_trip_call
    }

    /// Whether a write can return before it is stored (LMDB's
    /// `MDB_NOSYNC`, PostgreSQL's `synchronous_commit=off`), so studies
    /// measure a fast commit beside the durable one; an object store's PUT
    /// is stored when it returns, and there is nothing faster to ask for.
    pub fn has_fast_commit(self) -> bool {
        self.facts().fast_commit
    }

    /// Why only one process at a time may open its store, if so: several
    /// client processes (`advise --clients-are processes`) cannot use it.
    pub fn one_process_only(self) -> Option<&'static str> {
        self.facts().one_process_only
    }

    /// What each of several writers of one process does, each write
    /// committed durably.
    pub fn concurrent_writes(self) -> Option<&'static str> {
        self.facts().concurrent_writes
    }

    /// A server makes the writes and answers the reads (a round trip per
    /// operation, whose floor is its [`EngineKind::round_trip_call`]).
    pub fn is_server(self) -> bool {
        self.round_trip_call().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_the_serialized_name_and_parses_back() {
        for kind in EngineKind::ALL {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{}\"", kind.name()));
            assert_eq!(EngineKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(EngineKind::KEY_VALUE.len(), 6);
    }
}
