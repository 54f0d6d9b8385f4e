//! `export`: one file per blob, byte-identical to the database value, in
//! kvtest's flat (`%06d`) or tree (`%02d/%02d/%02d`) layout. Built in a
//! sibling directory and renamed into place, so an interrupted export never
//! looks like a complete one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::dataset::layout::{blob_name, db_error, open_kv};
use crate::records::EngineKind;
use crate::util::fsutil;
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct ExportReport {
    pub layout: EngineKind,
    pub files: u64,
    pub bytes: u64,
    pub elapsed_ns: u64,
}

/// Removes the partial export unless it was renamed into place.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

pub fn export(db: &Path, dir: &Path, tree: bool, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    let layout = if tree { EngineKind::Tree } else { EngineKind::Flat };
    let kv = open_kv(db, false)?;
    fsutil::check_dir(fsutil::parent_dir(dir))?;
    let replacing = check_target(dir, force)?;
    let started = Instant::now();
    let tmp = TempDir { path: fsutil::temp_sibling(dir, "export"), keep: false };
    std::fs::create_dir(&tmp.path).map_err(|e| Error::io(&tmp.path, "cannot create directory", e))?;
    if tree {
        // kvtest's marker: a tree is a directory with a "00" subdirectory.
        let marker = tmp.path.join("00");
        std::fs::create_dir(&marker).map_err(|e| Error::io(&marker, "cannot create directory", e))?;
    }
    let sql_err = |e| db_error(db, "cannot read blobs", e);
    let total: i64 = kv.conn.query_row("SELECT count(*) FROM kv", [], |r| r.get(0)).map_err(sql_err)?;
    progress.start("export", total.max(0) as u64);
    let mut stmt = kv.conn.prepare("SELECT k, v FROM kv ORDER BY k").map_err(sql_err)?;
    let mut rows = stmt.query([]).map_err(sql_err)?;
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut made_dir = u32::MAX;
    while let Some(row) = rows.next().map_err(sql_err)? {
        let key: i64 = row.get(0).map_err(sql_err)?;
        let Ok(key) = u32::try_from(key) else {
            return Err(Error::bad_input(
                db,
                format!("key {key} is outside 0..{} and has no kvtest file name", u32::MAX),
            ));
        };
        let value = match row.get_ref(1).map_err(sql_err)? {
            rusqlite::types::ValueRef::Blob(b) => b,
            other => {
                return Err(Error::bad_input(
                    db,
                    format!("value of key {key} is {}, not a BLOB", other.data_type().to_string().to_lowercase()),
                ))
            }
        };
        let name = blob_name(layout, key);
        if tree && key / 100 != made_dir {
            let sub = tmp.path.join(&name[..name.len() - 3]);
            std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, "cannot create directory", e))?;
            made_dir = key / 100;
        }
        let path = tmp.path.join(&name);
        let mut f = std::fs::File::create(&path).map_err(|e| Error::io(&path, "cannot create file", e))?;
        f.write_all(value).map_err(|e| Error::io(&path, "cannot write", e))?;
        files += 1;
        bytes += value.len() as u64;
        if files % 1024 == 0 {
            progress.advance(1024);
            if stop_requested() {
                return Err(Error::Interrupted);
            }
        }
    }
    progress.advance(files % 1024);
    progress.finish();
    if replacing {
        let trash = fsutil::temp_sibling(dir, "old");
        std::fs::rename(dir, &trash).map_err(|e| Error::io(dir, "cannot move the old export aside", e))?;
        if let Err(e) = std::fs::rename(&tmp.path, dir) {
            let _ = std::fs::rename(&trash, dir);
            return Err(Error::io(dir, "cannot rename the new export into place", e));
        }
        let _ = std::fs::remove_dir_all(&trash);
    } else {
        std::fs::rename(&tmp.path, dir).map_err(|e| Error::io(dir, "cannot rename the new export into place", e))?;
    }
    let mut tmp = tmp;
    tmp.keep = true;
    Ok(ExportReport { layout, files, bytes, elapsed_ns: started.elapsed().as_nanos() as u64 })
}

/// Whether `dir` exists and will be replaced. An empty directory is taken
/// as it is; a non-empty one only with `force`, and only when everything in
/// it looks like a previous export, so `--force` cannot wipe unrelated files.
fn check_target(dir: &Path, force: bool) -> Result<bool> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(dir, "cannot access", e)),
    };
    if !meta.is_dir() {
        return Err(Error::bad_input(dir, "exists and is not a directory"));
    }
    let entries: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "cannot list directory", e))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    if entries.is_empty() {
        return Ok(true);
    }
    if !force {
        return Err(Error::bad_input(dir, "is not empty (use --force to replace a previous export)"));
    }
    if let Some(foreign) = entries.iter().find(|n| n.len() < 2 || !n.bytes().all(|b| b.is_ascii_digit())) {
        return Err(Error::bad_input(
            dir,
            format!("holds {foreign:?}, which blobbench did not write; refusing to replace it even with --force"),
        ));
    }
    Ok(true)
}
