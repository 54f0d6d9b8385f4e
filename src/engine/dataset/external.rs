//! The "external blobs" layout of SQLite's internal-vs-external study: the
//! blobs in files (an `export` of a kvtest database) and a database that
//! holds only each blob's file name, `ext(k INTEGER PRIMARY KEY, name TEXT)`.
//! Names are relative to the blob directory, as an application that keeps a
//! base directory in its settings would store them.

use std::path::Path;

use rusqlite::Connection;

use crate::engine::dataset::layout::{blob_name, db_error, open_kv};
use crate::records::EngineKind;
use crate::util::fsutil;
use crate::{Error, Result};

/// The name table an external store looks names up in.
const EXTERNAL_SCHEMA: &str = "CREATE TABLE ext(k INTEGER PRIMARY KEY, name TEXT NOT NULL)";

/// Writes `names_db` with one row per key of the kvtest database `blobs_db`,
/// naming its file in kvtest's flat layout (`%06d`), with `page_size`.
/// Built under a temporary name and renamed, as `init` does. Returns the
/// number of names.
pub fn init_names(blobs_db: &Path, names_db: &Path, page_size: u32) -> Result<u64> {
    crate::util::units::check_page_size(page_size).map_err(Error::invalid)?;
    if names_db.exists() {
        return Err(Error::Exists(names_db.to_path_buf()));
    }
    let kv = open_kv(blobs_db, false)?;
    let read_err = |e| db_error(blobs_db, "cannot read keys", e);
    let mut keys_stmt = kv.conn.prepare("SELECT k FROM kv ORDER BY k").map_err(read_err)?;
    let keys = keys_stmt.query_map([], |r| r.get::<_, i64>(0)).map_err(read_err)?;
    let tmp = fsutil::temp_sibling(names_db, "names");
    let _ = std::fs::remove_file(&tmp);
    let write_err = |e| db_error(&tmp, "cannot build the name database", e);
    let result = (|| {
        let conn = Connection::open(&tmp).map_err(write_err)?;
        conn.execute_batch(&format!(
            "PRAGMA page_size={page_size}; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; {EXTERNAL_SCHEMA}; BEGIN;"
        ))
        .map_err(write_err)?;
        let mut n = 0u64;
        {
            let mut insert = conn.prepare("INSERT INTO ext(k, name) VALUES(?1, ?2)").map_err(write_err)?;
            for key in keys {
                let key = key.map_err(read_err)?;
                let Ok(k) = u32::try_from(key) else {
                    return Err(Error::bad_input(blobs_db, format!("key {key} has no kvtest file name")));
                };
                insert.execute(rusqlite::params![key, blob_name(EngineKind::Flat, k)]).map_err(write_err)?;
                n += 1;
            }
        }
        conn.execute_batch("COMMIT; PRAGMA journal_mode=DELETE;").map_err(write_err)?;
        conn.close().map_err(|(_, e)| write_err(e))?;
        std::fs::rename(&tmp, names_db).map_err(|e| Error::io(names_db, "cannot rename into place", e))?;
        Ok(n)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An external dataset directory: the blobs as flat files in `blobs/` and
/// their names in `names.db` (page size of the kvtest database), renamed
/// into place as a whole.
pub fn build(
    db: &Path,
    target: &Path,
    force: bool,
    progress: &dyn crate::util::progress::Progress,
) -> Result<super::ExportReport> {
    use crate::engine::external::{BLOBS_DIR, NAMES_DB};
    if target.exists() {
        // --force replaces only what an earlier build made.
        if !force || super::detect(target).ok() != Some(EngineKind::External) {
            return Err(Error::Exists(target.to_path_buf()));
        }
    }
    let page_size = {
        let kv = open_kv(db, false)?;
        kv.conn
            .query_row("PRAGMA page_size", [], |r| r.get::<_, u32>(0))
            .map_err(|e| db_error(db, "cannot read the page size", e))?
    };
    fsutil::check_dir(fsutil::parent_dir(target))?;
    let tmp = fsutil::temp_sibling(target, "external");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| Error::io(&tmp, "cannot create directory", e))?;
    let result = (|| {
        let mut report = super::export(db, &tmp.join(BLOBS_DIR), false, false, progress)?;
        init_names(db, &tmp.join(NAMES_DB), page_size)?;
        if target.exists() {
            std::fs::remove_dir_all(target).map_err(|e| Error::io(target, "cannot replace", e))?;
        }
        std::fs::rename(&tmp, target).map_err(|e| Error::io(target, "cannot rename into place", e))?;
        report.layout = EngineKind::External;
        Ok(report)
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::DatasetSpec;
    use crate::util::progress::Silent;

    #[test]
    fn one_name_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("kv.db");
        let spec = DatasetSpec { count: 12, size: 100, ..DatasetSpec::default() };
        crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
        let names = dir.path().join("names.db");
        assert_eq!(init_names(&db, &names, 1024).unwrap(), 12);
        let conn = Connection::open(&names).unwrap();
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        assert_eq!(page, 1024);
        let name: String = conn.query_row("SELECT name FROM ext WHERE k=12", [], |r| r.get(0)).unwrap();
        assert_eq!(name, "000012");
        assert!(matches!(init_names(&db, &names, 1024), Err(Error::Exists(_))), "never overwritten");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary left behind");
    }
}
