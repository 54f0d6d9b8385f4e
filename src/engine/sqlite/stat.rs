//! `stat` of a kvtest database: kvtest's description of it, plus what the
//! file and its WAL really occupy on disk, so "about 20% less disk space"
//! can be checked.

use std::path::Path;

use crate::engine::kvtest_db::open_kv;
use crate::engine::report::DbStat;
use crate::engine::sqlite::error::db_error;
use crate::util::fsutil::allocated_bytes;
use crate::{Error, Result};

pub(super) fn db_stat(path: &Path, vacuum: bool) -> Result<DbStat> {
    let kv = open_kv(path, vacuum)?;
    let err = |e| db_error(path, "cannot read the database", e);
    if vacuum {
        kv.conn.execute_batch("VACUUM").map_err(err)?;
    }
    let a = kv
        .conn
        .query_row(
            "SELECT count(*), min(length(v)), max(length(v)), avg(length(v)), sum(length(v)), sum(typeof(v)<>'blob') FROM kv",
            [],
            |r| {
                Ok(Aggregate {
                    entries: r.get(0)?,
                    min: r.get(1)?,
                    max: r.get(2)?,
                    avg: r.get(3)?,
                    content: r.get(4)?,
                    non_blob: r.get(5)?,
                })
            },
        )
        .map_err(err)?;
    let Aggregate { entries, min, max, avg, content, non_blob } = a;
    if let Some(n @ 1..) = non_blob {
        return Err(Error::bad_input(path, format!("table kv holds {n} values that are not BLOBs")));
    }
    let pragma = |name: &str| -> Result<u64> {
        kv.conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0)).map(|v| v.max(0) as u64).map_err(err)
    };
    let journal_mode: String = kv.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(err)?;
    let integrity = {
        let mut s = kv.conn.prepare("PRAGMA integrity_check(10)").map_err(err)?;
        let lines = s.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
        lines.collect::<std::result::Result<Vec<_>, _>>().map_err(err)?
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "cannot stat", e))?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal_meta = std::fs::metadata(&wal).ok();
    Ok(DbStat {
        entries: entries as u64,
        avg_size: avg.unwrap_or(0.0),
        min_size: min.unwrap_or(0) as u64,
        max_size: max.unwrap_or(0) as u64,
        content_bytes: content.unwrap_or(0) as u64,
        page_size: pragma("page_size")?,
        page_count: pragma("page_count")?,
        freelist_count: pragma("freelist_count")?,
        journal_mode,
        integrity,
        file_bytes: meta.len(),
        allocated_bytes: allocated_bytes(&meta) + wal_meta.as_ref().map_or(0, allocated_bytes),
        wal_bytes: wal_meta.map_or(0, |m| m.len()),
    })
}

/// One scan of kv: sizes and how many values are not BLOBs.
struct Aggregate {
    entries: i64,
    min: Option<i64>,
    max: Option<i64>,
    avg: Option<f64>,
    content: Option<i64>,
    non_blob: Option<i64>,
}
