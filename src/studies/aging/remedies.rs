//! What can be done about an aged dataset: VACUUM and incremental
//! auto-vacuum for SQLite, a copy-rewrite of every file for files. The
//! study applies each to a copy of the aged dataset ([`super::remedy_step`]).

use std::path::Path;

use crate::engine::dataset::{blob_files, db_error, open_kv};
use crate::records::EngineKind;
use crate::{Error, Result};

/// Rebuilds the database into a fresh, compact file.
pub fn vacuum(db: &Path) -> Result<()> {
    let kv = open_kv(db, true)?;
    kv.conn.execute_batch("VACUUM").map_err(|e| db_error(db, "VACUUM failed", e))
}

/// Switches the database to `auto_vacuum=INCREMENTAL`, which an existing
/// database only takes through one VACUUM.
pub fn make_incremental(db: &Path) -> Result<()> {
    let kv = open_kv(db, true)?;
    kv.conn
        .execute_batch("PRAGMA auto_vacuum=INCREMENTAL; VACUUM;")
        .map_err(|e| db_error(db, "cannot switch to auto_vacuum=INCREMENTAL", e))
}

/// Returns every free page to the filesystem (`PRAGMA incremental_vacuum`).
pub fn incremental_vacuum(db: &Path) -> Result<()> {
    let kv = open_kv(db, true)?;
    let err = |e| db_error(db, "incremental_vacuum failed", e);
    // The pragma frees pages as its rows are stepped; run it to the end.
    let mut stmt = kv.conn.prepare("PRAGMA incremental_vacuum").map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    while rows.next().map_err(err)?.is_some() {}
    Ok(())
}

/// Rewrites every blob file of `dir` as a fresh file under `into`, as `cp`
/// would: the filesystem allocates each anew. The aged `dir` is left as it
/// is, so it can be read beside the rewritten copy.
pub fn copy_rewrite(dir: &Path, into: &Path, layout: EngineKind) -> Result<()> {
    std::fs::create_dir(into).map_err(|e| Error::io(into, "cannot create directory", e))?;
    for f in blob_files(dir, layout)? {
        let to = into.join(f.strip_prefix(dir).unwrap_or(&f));
        if let Some(parent) = to.parent().filter(|p| !p.exists()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, "cannot create directory", e))?;
        }
        std::fs::copy(&f, &to).map_err(|e| Error::io(&to, "cannot copy", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incremental_vacuum_returns_free_pages() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB);").unwrap();
        for k in 1..=50 {
            conn.execute("INSERT INTO kv VALUES (?1, randomblob(20000))", [k]).unwrap();
        }
        drop(conn);
        make_incremental(&db).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute("DELETE FROM kv WHERE k > 10", []).unwrap();
        let free = |c: &rusqlite::Connection| c.query_row("PRAGMA freelist_count", [], |r| r.get::<_, i64>(0)).unwrap();
        assert!(free(&conn) > 100);
        drop(conn);
        incremental_vacuum(&db).unwrap();
        assert_eq!(free(&rusqlite::Connection::open(&db).unwrap()), 0);
    }
}
