//! One row of the ranking at N clients: a candidate store, and for SQLite
//! how its clients write and read. SQLite has more than one configuration
//! under clients (one writer connection for the process, or one per
//! client; reads through the blob handle or a prepared `SELECT`), and
//! each is measured and named. A row's name is built and parsed here
//! only; the result file keeps it in each arm's id (`clients/N/NAME`) and
//! the store and SQLite configuration as fields of their own.

use super::super::rules::Store;
use super::section::{ClientsArmRecord, SqliteClients};
use crate::records::{DbAccess, DbWriters};

/// A candidate in one configuration at N clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// SQLite's row written by `writers`, read by `reads`.
    pub fn sqlite(writers: DbWriters, reads: DbAccess) -> Row {
        Row { store: Store::Sqlite, sqlite: Some(SqliteClients { writers, reads }) }
    }

    /// `sqlite`, `sqlite+select`, `sqlite-one-writer`,
    /// `sqlite-one-writer+select`, or the store's name.
    pub fn name(self) -> String {
        let Some(c) = self.sqlite else { return self.store.name().to_string() };
        let writers = match c.writers {
            DbWriters::PerClient => "",
            DbWriters::One => ONE_WRITER,
        };
        let reads = match c.reads {
            DbAccess::BlobApi => "",
            DbAccess::Sql => SELECT,
        };
        format!("{}{writers}{reads}", self.store.name())
    }

    /// The row a name names ([`Row::name`]'s inverse).
    pub fn from_name(name: &str) -> Option<Row> {
        if let Some(store) = Store::from_name(name).filter(|s| *s != Store::Sqlite) {
            return Some(Row::of(store));
        }
        let rest = name.strip_prefix(Store::Sqlite.name())?;
        let (rest, reads) = match rest.strip_suffix(SELECT) {
            Some(r) => (r, DbAccess::Sql),
            None => (rest, DbAccess::BlobApi),
        };
        let writers = match rest {
            "" => DbWriters::PerClient,
            ONE_WRITER => DbWriters::One,
            _ => return None,
        };
        Some(Row::sqlite(writers, reads))
    }

    /// The row an arm of the result file ran: its store's name and its
    /// SQLite configuration (absent in an older file: SQLite's one row
    /// then, [`SqliteClients::BEFORE`]).
    pub fn of_record(candidate: &str, sqlite: Option<SqliteClients>) -> Option<Row> {
        let store = Store::from_name(candidate)?;
        let sqlite = (store == Store::Sqlite).then(|| sqlite.unwrap_or(SqliteClients::BEFORE));
        Some(Row { store, sqlite })
    }

    /// The same row read the other way (SQLite's two read paths); None
    /// for the other stores.
    pub fn other_read(self) -> Option<Row> {
        let c = self.sqlite?;
        let reads = match c.reads {
            DbAccess::BlobApi => DbAccess::Sql,
            DbAccess::Sql => DbAccess::BlobApi,
        };
        Some(Row::sqlite(c.writers, reads))
    }

    /// The row with its read path set aside: what the ranking and the
    /// chart show once per candidate (SQLite once per way of writing).
    pub fn line(self) -> Row {
        match self.sqlite {
            Some(c) => Row::sqlite(c.writers, DbAccess::BlobApi),
            None => self,
        }
    }
}

impl ClientsArmRecord {
    /// The row it ran.
    pub fn row(&self) -> Option<Row> {
        Row::of_record(&self.candidate, self.sqlite)
    }
}

const ONE_WRITER: &str = "-one-writer";
const SELECT: &str = "+select";

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
        assert_eq!(Row::of_record("sqlite", None), Some(rows[0]));
        assert_eq!(Row::of_record("files-replace", None), Some(rows[4]));
        assert_eq!(Row::from_name("sqlite-two-writers"), None);
        assert_eq!(rows[3].other_read(), Some(rows[2]));
        assert_eq!(rows[3].line(), rows[2]);
        assert_eq!(rows[4].other_read(), None);
        assert_eq!(arm_id(rows[2], 16), "clients/16/sqlite-one-writer");
    }
}
