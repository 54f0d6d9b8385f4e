//! `stat`: kvtest's description of a database, plus what each copy of the
//! data really occupies on disk, so "about 20% less disk space" can be checked.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::dataset::layout::{blob_name, db_error, detect, list_keys, open_kv};
use crate::records::DiskUsage;
use crate::records::EngineKind;
use crate::util::fsutil::allocated_bytes;
use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbStat {
    pub entries: u64,
    pub avg_size: f64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    pub page_size: u64,
    pub page_count: u64,
    pub freelist_count: u64,
    pub journal_mode: String,
    /// `PRAGMA integrity_check(10)` lines ("ok" when sound).
    pub integrity: Vec<String>,
    pub file_bytes: u64,
    pub allocated_bytes: u64,
    /// A WAL beside the database, if any.
    pub wal_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirStat {
    pub layout: EngineKind,
    pub entries: u64,
    pub avg_size: f64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    pub directories: u64,
    /// File and directory sizes as `ls` shows them.
    pub apparent_bytes: u64,
    /// Blocks allocated to files and directories, as `du` counts them.
    pub allocated_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StatReport {
    Db(DbStat),
    Dir(DirStat),
    /// A key-value engine's dataset (LMDB, redb, fjall).
    Kv(crate::engine::KvStat),
}

impl StatReport {
    pub fn disk_usage(&self, path: &Path) -> DiskUsage {
        let path = path.display().to_string();
        match self {
            StatReport::Db(s) => DiskUsage {
                layout: "db".into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes + s.wal_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Dir(s) => DiskUsage {
                layout: if s.layout == EngineKind::Tree { "tree" } else { "flat" }.into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.apparent_bytes,
                allocated_bytes: s.allocated_bytes,
            },
            StatReport::Kv(s) => DiskUsage {
                layout: s.engine.name().into(),
                path,
                entries: s.entries,
                content_bytes: s.content_bytes,
                apparent_bytes: s.file_bytes,
                allocated_bytes: s.allocated_bytes,
            },
        }
    }
}

/// Describes the dataset at `path`. `vacuum` rebuilds a database first (as
/// kvtest's --vacuum), which rewrites the file: only on request.
pub fn stat(path: &Path, vacuum: bool) -> Result<StatReport> {
    match detect(path)? {
        EngineKind::Db => db_stat(path, vacuum).map(StatReport::Db),
        kind if kind.is_key_value() => {
            if vacuum {
                return Err(Error::invalid("--vacuum applies to databases only"));
            }
            crate::engine::kv_stat(kind, path).map(StatReport::Kv)
        }
        layout => {
            if vacuum {
                return Err(Error::invalid("--vacuum applies to databases, not directories"));
            }
            dir_stat(path, layout).map(StatReport::Dir)
        }
    }
}

fn db_stat(path: &Path, vacuum: bool) -> Result<DbStat> {
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

fn dir_stat(dir: &Path, layout: EngineKind) -> Result<DirStat> {
    let keys = list_keys(dir, layout)?;
    let (mut min, mut max, mut content, mut allocated) = (u64::MAX, 0u64, 0u64, 0u64);
    for &key in &keys {
        let p = dir.join(blob_name(layout, key));
        let m = std::fs::metadata(&p).map_err(|e| Error::io(&p, "cannot stat", e))?;
        min = min.min(m.len());
        max = max.max(m.len());
        content += m.len();
        allocated += allocated_bytes(&m);
    }
    let mut directories = 0u64;
    let mut dir_apparent = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let m = std::fs::metadata(&d).map_err(|e| Error::io(&d, "cannot stat", e))?;
        directories += 1;
        dir_apparent += m.size();
        allocated += allocated_bytes(&m);
        if layout == EngineKind::Tree {
            for e in std::fs::read_dir(&d).map_err(|e| Error::io(&d, "cannot list directory", e))?.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    stack.push(e.path());
                }
            }
        }
    }
    let entries = keys.len() as u64;
    Ok(DirStat {
        layout,
        entries,
        avg_size: if entries > 0 { content as f64 / entries as f64 } else { 0.0 },
        min_size: if entries > 0 { min } else { 0 },
        max_size: max,
        content_bytes: content,
        directories,
        apparent_bytes: content + dir_apparent,
        allocated_bytes: allocated,
    })
}
