//! How a matrix reads blobs out of SQLite: the 2011 study's SQL query, or
//! the blob API over a memory-mapped database, the read `advise` measures
//! SQLite's candidate by, so that its size crossover compares the files
//! with the same SQLite the ranking does.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::records::{DbAccess, DbParams};
use crate::{Error, Result};

/// SQLite's read path in the cells (`params.db_read`; older files: SQL).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DbRead {
    /// `SELECT v FROM kv WHERE k=?1`, prepared once (the 2011 study's read).
    #[default]
    Sql,
    /// `sqlite3_blob_reopen` per key, with the whole database file
    /// memory-mapped (`PRAGMA mmap_size` = its size): the suite's
    /// `read/db-blob-mmap`.
    BlobApiMmap,
}

impl DbRead {
    /// The path in a few words, as the page names it: "SQL reads".
    pub fn short(self) -> &'static str {
        match self {
            DbRead::Sql => "SQL reads",
            DbRead::BlobApiMmap => "blob API + mmap reads",
        }
    }

    /// The label of the cells' database read.
    pub fn label(self) -> &'static str {
        match self {
            DbRead::Sql => "blob inside SQLite (SELECT v FROM kv WHERE k=?1)",
            DbRead::BlobApiMmap => "blob inside SQLite (blob API, the database memory-mapped)",
        }
    }

    /// The database settings of this path for the database at `db`, with
    /// `cache_size` pages of page cache.
    pub(super) fn params(self, db: &Path, cache_size: i64) -> Result<DbParams> {
        let (access, mmap_bytes) = match self {
            DbRead::Sql => (DbAccess::Sql, 0),
            DbRead::BlobApiMmap => {
                let len = std::fs::metadata(db).map_err(|e| Error::io(db, "cannot stat the database", e))?.len();
                (DbAccess::BlobApi, i64::try_from(len).unwrap_or(i64::MAX))
            }
        };
        Ok(DbParams { access, mmap_bytes, cache_size, ..DbParams::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blob_path_maps_the_whole_database() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("x.db");
        std::fs::write(&db, vec![0u8; 12_288]).unwrap();
        let p = DbRead::BlobApiMmap.params(&db, 500).unwrap();
        assert_eq!((p.access, p.mmap_bytes, p.cache_size), (DbAccess::BlobApi, 12_288, 500));
        let p = DbRead::Sql.params(&db, 500).unwrap();
        assert_eq!((p.access, p.mmap_bytes), (DbAccess::Sql, 0));
        assert!(DbRead::BlobApiMmap.params(&d.path().join("absent.db"), 1).is_err());
        let old: DbRead = serde_json::from_str("\"sql\"").unwrap();
        assert_eq!(old, DbRead::default(), "older files read with SQL");
    }
}
