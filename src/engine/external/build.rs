//! The "external blobs" layout of SQLite's internal-vs-external study: the
//! blobs in files (an `export` of a kvtest database) and a database that
//! holds only each blob's file name, `ext(k INTEGER PRIMARY KEY, name TEXT)`.
//! Names are relative to the blob directory, as an application that keeps a
//! base directory in its settings would store them.

use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;

use super::layout::{is_dataset, BLOBS_DIR, KIND, NAMES_DB};
use crate::engine::files::export::write_files;
use crate::engine::files::names::blob_name;
use crate::engine::kvtest_db::open_kv;
use crate::engine::report::ExportReport;
use crate::engine::sqlite::error::db_error;
use crate::engine::staging::{not_mine, Staging, SQLITE_SIDECARS};
use crate::records::EngineKind;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// The layout of the blob files.
const FLAT: EngineKind = crate::engine::files::FLAT_KIND;

/// The name table an external store looks names up in.
const EXTERNAL_SCHEMA: &str = "CREATE TABLE ext(k INTEGER PRIMARY KEY, name TEXT NOT NULL)";

/// Writes `names_db` with one row per key of the kvtest database `blobs_db`,
/// naming its file in kvtest's flat layout (`%06d`), with `page_size`.
/// Staged under a temporary name and renamed, as every build is. Returns
/// the number of names.
pub fn init_names(blobs_db: &Path, names_db: &Path, page_size: u32) -> Result<u64> {
    if names_db.exists() {
        return Err(Error::Exists(names_db.to_path_buf()));
    }
    let staging = Staging::begin(names_db, false, "names", &|_| Ok(()))?.with_sidecars(SQLITE_SIDECARS);
    let n = write_names(blobs_db, &staging.path, page_size)?;
    staging.finish()?;
    Ok(n)
}

/// Writes the name database at `path` (which must not exist).
fn write_names(blobs_db: &Path, path: &Path, page_size: u32) -> Result<u64> {
    crate::util::units::check_page_size(page_size).map_err(Error::invalid)?;
    let kv = open_kv(blobs_db, false)?;
    let read_err = |e| db_error(blobs_db, "cannot read keys", e);
    let mut keys_stmt = kv.conn.prepare("SELECT k FROM kv ORDER BY k").map_err(read_err)?;
    let keys = keys_stmt.query_map([], |r| r.get::<_, i64>(0)).map_err(read_err)?;
    let write_err = |e| db_error(path, "cannot build the name database", e);
    let conn = Connection::open(path).map_err(write_err)?;
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
            insert.execute(rusqlite::params![key, blob_name(FLAT, k)]).map_err(write_err)?;
            n += 1;
        }
    }
    conn.execute_batch("COMMIT; PRAGMA journal_mode=DELETE;").map_err(write_err)?;
    conn.close().map_err(|(_, e)| write_err(e))?;
    Ok(n)
}

/// An external dataset directory: the blobs as flat files in `blobs/` and
/// their names in `names.db` (page size of the kvtest database), staged and
/// renamed into place as a whole.
pub fn build(db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    let started = Instant::now();
    let page_size = {
        let kv = open_kv(db, false)?;
        kv.conn
            .query_row("PRAGMA page_size", [], |r| r.get::<_, u32>(0))
            .map_err(|e| db_error(db, "cannot read the page size", e))?
    };
    let what = KIND.name();
    let mine = |p: &Path| if is_dataset(p) { Ok(()) } else { Err(not_mine(p, what)) };
    let staging = Staging::begin(target, force, what, &mine)?;
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create directory", e))?;
    let (files, bytes) = write_files(db, &staging.path.join(BLOBS_DIR), FLAT, progress)?;
    write_names(db, &staging.path.join(NAMES_DB), page_size)?;
    staging.finish()?;
    Ok(ExportReport {
        layout: KIND,
        files,
        bytes,
        elapsed_ns: started.elapsed().as_nanos() as u64,
        busy_retries: 0,
        multipart_blobs: 0,
        location: None,
    })
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
        crate::engine::sqlite::init::init(&db, &spec, false, &Silent).unwrap();
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
