//! The write methods under test: each a backend's write configuration
//! (`engine::config`), named and parsed here only. Each maps onto the
//! settings the benchmark itself uses (`DbParams`, `FileParams`,
//! `KvParams`), so the child process writes through exactly the code paths
//! that `run --update` times. Result files hold a method's name.

use std::sync::OnceLock;

use crate::engine::backend::{PowerCuts, ServerKill, WriteConfig, WriteSettings};
use crate::records::{
    DbAccess, DbParams, EngineKind, FileParams, FileRead, FileWrite, Journal, KvParams, KvSync, SyncLevel,
};
use crate::util::units::UnitError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One UPDATE per transaction through `DbSession`.
    Db { journal: Journal, sync: SyncLevel },
    /// One overwrite per file through `FileStore`; with `sync_dir` the
    /// writer also fsyncs the directory after each one (to make a rename
    /// durable).
    Files { write: FileWrite, fsync: bool, sync_dir: bool },
    /// One overwrite per committed transaction of an engine (LMDB, redb,
    /// fjall, PostgreSQL), through its `Session`; `durable` is the
    /// engine's durable commit, else its fast one.
    Engine { engine: EngineKind, durable: bool },
}

/// One row of the table: the method, its engine and its mode as the
/// backend declares it (name, promises, server).
type Row = (Method, EngineKind, &'static WriteConfig);

/// Every method, from each engine's backend (its `write_configs`) in the
/// registry's order. A new write path is one more row there; a new kind of
/// write, one more variant of [`WriteSettings`] and [`Method`] and an arm in
/// each `match` below.
fn table() -> &'static [Row] {
    static TABLE: OnceLock<Vec<Row>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let rows = crate::engine::registry::write_configs();
        rows.map(|(engine, m)| (Method::from_mode(engine, m), engine, m)).collect()
    })
}

impl Method {
    fn from_mode(engine: EngineKind, mode: &WriteConfig) -> Method {
        match mode.write {
            WriteSettings::Db { journal, sync } => Method::Db { journal, sync },
            WriteSettings::Files { write, fsync, sync_dir } => Method::Files { write, fsync, sync_dir },
            WriteSettings::Commit => Method::Engine { engine, durable: mode.durable },
        }
    }

    /// The mode this method is, as its backend declares it.
    fn mode(self) -> Option<&'static WriteConfig> {
        table().iter().find(|t| t.0 == self).map(|t| t.2)
    }

    /// The engine's method with its durable commit (`durable`) or its fast
    /// one; None when the engine declares no such mode.
    pub fn of_engine(engine: EngineKind, durable: bool) -> Option<Method> {
        let method = Method::Engine { engine, durable };
        method.mode().map(|_| method)
    }

    pub fn all() -> Vec<Method> {
        table().iter().map(|t| t.0).collect()
    }

    pub fn name(self) -> &'static str {
        self.mode().map_or("?", |m| m.name)
    }

    /// The method of that name (a result file's), if any.
    pub fn named(name: &str) -> Option<Method> {
        table().iter().find(|t| t.2.name == name).map(|t| t.0)
    }

    /// What power cuts did to it on the development machine, as its
    /// backend records them.
    pub fn power_cuts(self) -> Option<PowerCuts> {
        self.mode().and_then(|m| m.power_cuts)
    }

    /// Its layout in `aging` (id, title), when aged.
    pub fn aging(self) -> Option<(&'static str, &'static str)> {
        self.mode().and_then(|m| m.aging)
    }

    /// The name of advise's candidate whose relaxed write it is.
    pub fn candidate(self) -> Option<&'static str> {
        self.mode().and_then(|m| m.candidate)
    }

    /// Every method `aging` ages, with its engine, in the registry's order.
    pub fn aged() -> Vec<(Method, EngineKind)> {
        table().iter().filter(|t| t.2.aging.is_some()).map(|t| (t.0, t.1)).collect()
    }

    pub fn description(self) -> &'static str {
        self.mode().map_or("?", |m| m.description)
    }

    /// How the crash test kills the server that makes this method's
    /// writes, besides the client (None: the writer is the whole engine).
    pub fn server_kill(self) -> Option<ServerKill> {
        self.mode().and_then(|m| m.server)
    }

    /// Whether what the method's engine needs is installed for datasets
    /// built with `settings` (a server's programs: its backend's
    /// preflight), with an error saying what to install when not.
    pub fn check_installed(self, settings: &crate::records::EngineSettings) -> crate::Result<()> {
        let Some(row) = table().iter().find(|t| t.0 == self) else { return Ok(()) };
        crate::engine::registry::backend(row.1).preflight(settings, None)
    }

    pub fn has_server(self) -> bool {
        self.server_kill().is_some()
    }

    /// Parses one name, or "all", "db", "files", "kv", "server" for a group.
    fn parse_group(text: &str) -> Result<Vec<Method>, UnitError> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "all" => Ok(Method::all()),
            "db" => Ok(Method::all().into_iter().filter(|m| m.is_db()).collect()),
            "files" => Ok(Method::all().into_iter().filter(|m| matches!(m, Method::Files { .. })).collect()),
            "kv" => Ok(Method::all().into_iter().filter(|m| m.is_engine() && !m.has_server()).collect()),
            "server" => Ok(Method::all().into_iter().filter(|m| m.has_server()).collect()),
            _ => table().iter().find(|e| e.2.name == t).map(|e| vec![e.0]).ok_or_else(|| {
                let names: Vec<&str> = table().iter().map(|e| e.2.name).collect();
                UnitError::from(format!(
                    "unknown write method {text:?} (one of: all, db, files, kv, server, {})",
                    names.join(", ")
                ))
            }),
        }
    }

    /// A comma-separated list of names and groups, without repeats, in the
    /// table's order.
    pub fn parse_list(text: &str) -> Result<Vec<Method>, UnitError> {
        let groups = crate::util::units::parse_list(text, Method::parse_group)?;
        let chosen: Vec<Method> = groups.into_iter().flatten().collect();
        Ok(Method::all().into_iter().filter(|m| chosen.contains(m)).collect())
    }

    pub fn is_db(self) -> bool {
        matches!(self, Method::Db { .. })
    }

    pub fn is_engine(self) -> bool {
        matches!(self, Method::Engine { .. })
    }

    /// The dataset's name in the work directory (a file or a directory).
    pub fn dataset_name(self) -> &'static str {
        match self {
            Method::Db { .. } => "crash.db",
            Method::Files { .. } => "blobs",
            Method::Engine { .. } => "kv",
        }
    }

    /// Whether the method promises that a killed writer leaves every value
    /// whole and the database sound (its mode's `atomic`: SQLite with a
    /// journal, and the key-value engines, transactional in both modes; the
    /// fast ones give up durability, not atomicity). Nothing else is
    /// asserted; the other methods are only reported.
    pub fn promises_atomic(self) -> bool {
        self.mode().is_some_and(|m| m.atomic)
    }

    /// Whether a write that returned was promised durable, so that losing it
    /// in a power cut is a durability violation (its mode's `durable`).
    pub fn acknowledges_durability(self) -> bool {
        self.mode().is_some_and(|m| m.durable)
    }

    /// Whether the method's own documentation promises that an acknowledged
    /// write survives a power cut; `crashtest --power-cut` fails when one
    /// of these loses one (its mode's `documented_durable`).
    pub fn promises_durability(self) -> bool {
        self.mode().is_some_and(|m| m.documented_durable)
    }

    /// Whether the method ever calls fsync (the failed-fsync table).
    pub fn calls_fsync(self) -> bool {
        match self {
            Method::Db { sync, .. } => sync != SyncLevel::Off,
            Method::Files { fsync, .. } => fsync,
            Method::Engine { durable, .. } => durable,
        }
    }

    /// The database settings of the writer: UPDATEs committed every N
    /// writes (the writer's `commit_every`; one per transaction by default,
    /// as an application saving one blob at a time would).
    pub fn db_params(self) -> Option<DbParams> {
        match self {
            Method::Db { journal, sync } => Some(DbParams {
                access: DbAccess::Sql,
                journal_mode: Some(journal),
                sync: Some(sync),
                ..DbParams::default()
            }),
            _ => None,
        }
    }

    /// The files' settings: each file written (and fsynced) on its own;
    /// with `sync_dir` the directory is fsynced once per commit of N writes.
    pub fn file_params(self) -> Option<FileParams> {
        match self {
            Method::Files { write, fsync, sync_dir } => {
                Some(FileParams { read: FileRead::Posix, write, fsync, sync_dir })
            }
            _ => None,
        }
    }

    /// The engine and its settings: writes committed every N (the writer's
    /// `commit_every`), so "returned" means that batch's commit returned.
    pub fn kv_params(self) -> Option<(EngineKind, KvParams)> {
        match self {
            Method::Engine { engine, durable } => {
                let sync = if durable { KvSync::Durable } else { KvSync::Fast };
                Some((engine, KvParams { sync }))
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A method held as its name, none as `""` (advise's crash facts about an
/// engine with no method for a need): `#[serde(with = ...)]`.
pub mod name_or_empty {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Method;

    pub fn serialize<S: Serializer>(m: &Option<Method>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.map_or("", Method::name))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Method>, D::Error> {
        let name = String::deserialize(d)?;
        if name.is_empty() {
            return Ok(None);
        }
        Method::named(&name)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown crash-test method {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_groups() {
        for m in Method::all() {
            assert_eq!(Method::parse_list(m.name()).unwrap(), vec![m]);
        }
        assert_eq!(Method::parse_list("db").unwrap().len(), 5);
        assert_eq!(Method::parse_list("files, db-off").unwrap().len(), 8);
        assert_eq!(Method::parse_list("kv").unwrap().len(), 6);
        let servers: Vec<&str> = Method::parse_list("server").unwrap().iter().map(|m| m.name()).collect();
        assert_eq!(
            servers,
            ["postgres-durable", "postgres-fast", "postgres-lo-durable", "postgres-lo-fast", "s3-durable"]
        );
        assert_eq!(Method::parse_list("replace,replace,db-wal-full").unwrap().len(), 2, "no repeats");
        assert!(Method::parse_list("wal").unwrap_err().to_string().contains("db-wal-normal"));
        assert!(Method::parse_list("db,").is_err());
        let promised: Vec<&str> = Method::all().into_iter().filter(|m| m.promises_atomic()).map(|m| m.name()).collect();
        assert_eq!(promised[..4], ["db-wal-normal", "db-wal-full", "db-delete", "db-delete-extra"]);
        assert_eq!(promised.len(), 15, "and the eleven engine methods");
        let durable: Vec<&str> =
            Method::all().into_iter().filter(|m| m.acknowledges_durability()).map(|m| m.name()).collect();
        assert_eq!(
            durable,
            [
                "db-wal-full",
                "db-delete",
                "db-delete-extra",
                "truncate-fsync",
                "inplace-fsync",
                "replace-fsync-dir",
                "lmdb-durable",
                "redb-durable",
                "fjall-durable",
                "postgres-durable",
                "postgres-lo-durable",
                "s3-durable"
            ]
        );
        assert!(!Method::parse_list("db-delete").unwrap()[0].promises_durability());
    }
}
