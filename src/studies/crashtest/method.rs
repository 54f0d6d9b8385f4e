//! The write methods under test: each a backend's write configuration
//! (`engine::config`), held by its [`ConfigId`] and read here through its
//! row. Each maps onto the settings the benchmark itself uses
//! (`DbParams`, `FileParams`, `KvParams`), so the child process writes
//! through exactly the code paths that `run --update` times. Result files
//! hold a method's name ([`ConfigId::name`]).

use std::sync::OnceLock;

use crate::engine::backend::{PowerCuts, ServerKill, WriteConfig, WriteSettings};
use crate::records::{ConfigId, DbParams, EngineKind, EngineSettings, FileParams, KvParams};
use crate::util::units::UnitError;

/// One row of the table: the method, its engine and its row as the
/// backend declares it (promises, server).
type Row = (ConfigId, EngineKind, &'static WriteConfig);

/// Every method, from each engine's backend (its `write_configs`) in the
/// registry's order. A new write path is one more row there and its id in
/// `records/config.rs`; a new kind of write, one more variant of
/// [`WriteSettings`] and an arm in each `match` on it.
fn table() -> &'static [Row] {
    static TABLE: OnceLock<Vec<Row>> = OnceLock::new();
    TABLE.get_or_init(|| crate::engine::registry::write_configs().map(|(engine, c)| (c.id, engine, c)).collect())
}

/// The crash test's reading of a configuration: its row's promises and
/// settings, its dataset, how its server is killed.
impl ConfigId {
    /// Its row, as its backend declares it; None for an id no backend
    /// declares (a fast commit of an engine without one).
    fn table_row(self) -> Option<&'static Row> {
        table().iter().find(|t| t.0 == self)
    }

    fn mode(self) -> Option<&'static WriteConfig> {
        self.table_row().map(|t| t.2)
    }

    /// The engine's method with its durable commit (`durable`) or its fast
    /// one; None when the engine declares no such mode.
    pub fn of_engine(engine: EngineKind, durable: bool) -> Option<ConfigId> {
        let id = if durable { ConfigId::Durable(engine) } else { ConfigId::Fast(engine) };
        id.mode().map(|_| id)
    }

    /// Every method, in the registry's order.
    pub fn methods() -> Vec<ConfigId> {
        table().iter().map(|t| t.0).collect()
    }

    /// The method of that name (a result file's), if a backend declares it.
    pub fn method_named(name: &str) -> Option<ConfigId> {
        ConfigId::parse(name).filter(|c| c.mode().is_some())
    }

    /// The engine whose backend declares it.
    pub fn engine(self) -> Option<EngineKind> {
        self.table_row().map(|t| t.1)
    }

    /// What power cuts did to it on the development machine, as its
    /// backend records them.
    pub fn power_cuts(self) -> Option<PowerCuts> {
        self.mode().and_then(|m| m.power_cuts)
    }

    /// Its layout's title in `aging`, when aged.
    pub fn aging_title(self) -> Option<&'static str> {
        self.mode().and_then(|m| m.aging)
    }

    /// Every method `aging` ages, with its engine, in the registry's order.
    pub fn aged() -> Vec<(ConfigId, EngineKind)> {
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
    pub fn check_installed(self, settings: &EngineSettings) -> crate::Result<()> {
        let Some(engine) = self.engine() else { return Ok(()) };
        crate::engine::registry::backend(engine).preflight(settings, None)
    }

    pub fn has_server(self) -> bool {
        self.server_kill().is_some()
    }

    fn write_settings(self) -> Option<WriteSettings> {
        self.mode().map(|m| m.write)
    }

    pub fn is_db(self) -> bool {
        matches!(self.write_settings(), Some(WriteSettings::Db { .. }))
    }

    pub fn is_files(self) -> bool {
        matches!(self.write_settings(), Some(WriteSettings::Files { .. }))
    }

    pub fn is_engine(self) -> bool {
        matches!(self.write_settings(), Some(WriteSettings::Commit))
    }

    /// The dataset's name in the work directory (a file or a directory).
    pub fn dataset_name(self) -> &'static str {
        match self.write_settings() {
            Some(WriteSettings::Db { .. }) => "crash.db",
            Some(WriteSettings::Files { .. }) => "blobs",
            _ => "kv",
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
        self.mode().is_some_and(WriteConfig::calls_fsync)
    }

    /// The database settings of the writer: UPDATEs committed every N
    /// writes (the writer's `commit_every`; one per transaction by default,
    /// as an application saving one blob at a time would).
    pub fn db_params(self) -> Option<DbParams> {
        self.is_db().then(|| self.mode().map(|m| m.engine_settings().db)).flatten()
    }

    /// The files' settings: each file written (and fsynced) on its own;
    /// with `sync_dir` the directory is fsynced once per commit of N writes.
    pub fn file_params(self) -> Option<FileParams> {
        self.is_files().then(|| self.mode().map(|m| m.engine_settings().files)).flatten()
    }

    /// The engine and its settings: writes committed every N (the writer's
    /// `commit_every`), so "returned" means that batch's commit returned.
    pub fn kv_params(self) -> Option<(EngineKind, KvParams)> {
        let (_, engine, mode) = self.table_row()?;
        self.is_engine().then(|| (*engine, mode.engine_settings().kv))
    }
}

/// Parses one name, or "all", "db", "files", "kv", "server" for a group.
fn parse_group(text: &str) -> Result<Vec<ConfigId>, UnitError> {
    let t = text.trim().to_ascii_lowercase();
    let all = ConfigId::methods();
    match t.as_str() {
        "all" => Ok(all),
        "db" => Ok(all.into_iter().filter(|m| m.is_db()).collect()),
        "files" => Ok(all.into_iter().filter(|m| m.is_files()).collect()),
        "kv" => Ok(all.into_iter().filter(|m| m.is_engine() && !m.has_server()).collect()),
        "server" => Ok(all.into_iter().filter(|m| m.has_server()).collect()),
        _ => ConfigId::method_named(&t).map(|m| vec![m]).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|m| m.name()).collect();
            UnitError::from(format!(
                "unknown write method {text:?} (one of: all, db, files, kv, server, {})",
                names.join(", ")
            ))
        }),
    }
}

/// A comma-separated list of names and groups, without repeats, in the
/// table's order.
pub fn parse_list(text: &str) -> Result<Vec<ConfigId>, UnitError> {
    let groups = crate::util::units::parse_list(text, parse_group)?;
    let chosen: Vec<ConfigId> = groups.into_iter().flatten().collect();
    Ok(ConfigId::methods().into_iter().filter(|m| chosen.contains(m)).collect())
}

/// A method held as its name, none as `""` (advise's crash facts about an
/// engine with no method for a need): `#[serde(with = ...)]`.
pub mod name_or_empty {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::records::ConfigId;

    pub fn serialize<S: Serializer>(m: &Option<ConfigId>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.map_or("", ConfigId::name))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ConfigId>, D::Error> {
        let name = String::deserialize(d)?;
        if name.is_empty() {
            return Ok(None);
        }
        ConfigId::method_named(&name)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown crash-test method {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_groups() {
        for m in ConfigId::methods() {
            assert_eq!(parse_list(m.name()).unwrap(), vec![m]);
        }
        assert_eq!(parse_list("db").unwrap().len(), 5);
        assert_eq!(parse_list("files, db-off").unwrap().len(), 8);
        assert_eq!(parse_list("kv").unwrap().len(), 6);
        let servers: Vec<&str> = parse_list("server").unwrap().iter().map(|m| m.name()).collect();
        assert_eq!(
            servers,
            ["postgres-durable", "postgres-fast", "postgres-lo-durable", "postgres-lo-fast", "s3-durable"]
        );
        assert_eq!(parse_list("replace,replace,db-wal-full").unwrap().len(), 2, "no repeats");
        assert!(parse_list("wal").unwrap_err().to_string().contains("db-wal-normal"));
        assert!(parse_list("db,").is_err());
        let promised: Vec<&str> =
            ConfigId::methods().into_iter().filter(|m| m.promises_atomic()).map(|m| m.name()).collect();
        assert_eq!(promised[..4], ["db-wal-normal", "db-wal-full", "db-delete", "db-delete-extra"]);
        assert_eq!(promised.len(), 15, "and the eleven engine methods");
        let durable: Vec<&str> =
            ConfigId::methods().into_iter().filter(|m| m.acknowledges_durability()).map(|m| m.name()).collect();
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
        assert!(!parse_list("db-delete").unwrap()[0].promises_durability());
    }
}
