//! One row of the ranking at N clients: a candidate store, and for SQLite
//! how its clients write and which access path they use. SQLite has more
//! than one configuration under clients (one writer connection for the
//! process, or one per client; each operation through the blob handle or
//! through SQL, a prepared `SELECT` or `UPDATE`), and each is measured,
//! ranked and named as a row of its own. A row's name is built and parsed here
//! only (its way of writing spelled by [`DbWriters::suffix`]); the result
//! file keeps it in each arm's id (`clients/N/NAME`), in its exclusions
//! and harness, and the store and SQLite configuration as fields of their
//! own.

use serde::{Deserialize, Serialize};

use super::super::candidate::Store;
use crate::records::{DbAccess, DbWriters};

/// How SQLite's clients write, and their access path, in one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqliteClients {
    pub writers: DbWriters,
    /// The access path of reads and writes alike: the blob handle (a read
    /// opens and closes it on the client's own connection, a write writes
    /// through it), or SQL (a prepared `SELECT` stepped and reset, an
    /// `UPDATE`). Older files call it `reads`.
    #[serde(alias = "reads")]
    pub access: DbAccess,
}

impl SqliteClients {
    /// A file from before SQLite had several rows: a connection per
    /// client, through the blob handle.
    pub const BEFORE: SqliteClients = SqliteClients { writers: DbWriters::PerClient, access: DbAccess::BlobApi };
}

/// A candidate in one configuration at N clients. In a result file it is
/// its [`Row::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Row {
    pub store: Store,
    /// SQLite's configuration; None for every other store.
    pub sqlite: Option<SqliteClients>,
}

impl Row {
    /// Every store but SQLite has one row.
    pub fn of(store: Store) -> Row {
        Row { store, sqlite: None }
    }

    /// SQLite's row written by `writers`, through `access`.
    pub fn sqlite(writers: DbWriters, access: DbAccess) -> Row {
        Row { store: Store::Sqlite, sqlite: Some(SqliteClients { writers, access }) }
    }

    /// `sqlite`, `sqlite+select`, `sqlite-one-writer`,
    /// `sqlite-one-writer+select`, or the store's name.
    pub fn name(self) -> String {
        let Some(c) = self.sqlite else { return self.store.name().to_string() };
        let writers = c.writers.suffix();
        let access = match c.access {
            DbAccess::BlobApi => "",
            DbAccess::Sql => SQL,
        };
        format!("{}{writers}{access}", self.store.name())
    }

    /// The row a name names ([`Row::name`]'s inverse).
    pub fn from_name(name: &str) -> Option<Row> {
        if let Some(store) = Store::from_name(name).filter(|s| *s != Store::Sqlite) {
            return Some(Row::of(store));
        }
        let rest = name.strip_prefix(Store::Sqlite.name())?;
        let (rest, access) = match rest.strip_suffix(SQL) {
            Some(r) => (r, DbAccess::Sql),
            None => (rest, DbAccess::BlobApi),
        };
        Some(Row::sqlite(DbWriters::parse_suffix(rest)?, access))
    }

    /// The row an arm of the result file ran: its store's name and its
    /// SQLite configuration (absent in an older file: SQLite's one row
    /// then, [`SqliteClients::BEFORE`]).
    pub fn of_record(store: Store, sqlite: Option<SqliteClients>) -> Row {
        let sqlite = (store == Store::Sqlite).then(|| sqlite.unwrap_or(SqliteClients::BEFORE));
        Row { store, sqlite }
    }
}

/// The name's suffix of SQLite's SQL access path (`SELECT` and `UPDATE`),
/// as result files spell it.
const SQL: &str = "+select";

impl From<Row> for String {
    fn from(r: Row) -> String {
        r.name()
    }
}

/// Tests name rows as files spell them.
#[cfg(test)]
impl From<&str> for Row {
    fn from(name: &str) -> Row {
        Row::from_name(name).unwrap_or_else(|| panic!("no row {name:?}"))
    }
}

impl TryFrom<String> for Row {
    type Error = String;
    fn try_from(s: String) -> Result<Row, String> {
        Row::from_name(&s).ok_or_else(|| format!("unknown advise candidate {s:?}"))
    }
}

/// The arm id of `row` at `clients`.
pub fn arm_id(row: Row, clients: u32) -> String {
    format!("clients/{clients}/{}", row.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EngineKind;

    #[test]
    fn row_names_round_trip_and_keep_older_files_names() {
        let rows = [
            Row::sqlite(DbWriters::PerClient, DbAccess::BlobApi),
            Row::sqlite(DbWriters::PerClient, DbAccess::Sql),
            Row::sqlite(DbWriters::One, DbAccess::BlobApi),
            Row::sqlite(DbWriters::One, DbAccess::Sql),
            Row::of(Store::FilesReplace),
            Row::of(Store::Engine(EngineKind::from_name("lmdb").unwrap())),
        ];
        for r in rows {
            assert_eq!(Row::from_name(&r.name()), Some(r), "{}", r.name());
        }
        assert_eq!(rows[0].name(), "sqlite", "an older file's SQLite row");
        assert_eq!(rows[3].name(), "sqlite-one-writer+select");
        assert_eq!(Row::of_record(Store::Sqlite, None), rows[0]);
        assert_eq!(Row::of_record(Store::FilesReplace, None), rows[4]);
        assert_eq!(Row::from_name("sqlite-two-writers"), None);
        assert_eq!(arm_id(rows[2], 16), "clients/16/sqlite-one-writer");
    }

    /// The access path is written as such, and an older file's `reads`
    /// still reads.
    #[test]
    fn sqlites_access_path_is_written_as_access_and_older_files_read() {
        let c = SqliteClients { writers: DbWriters::One, access: DbAccess::Sql };
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"writers":"one","access":"sql"}"#);
        let older: SqliteClients = serde_json::from_str(r#"{"writers":"one","reads":"sql"}"#).unwrap();
        assert_eq!(older, c);
    }
}
