//! `export`: one file per blob, byte-identical to the database value, in
//! kvtest's flat (`%06d`) or tree (`%02d/%02d/%02d`) layout, written into a
//! new directory (the caller stages it and renames it into place).

use std::io::Write;
use std::path::Path;

use crate::engine::files::names::blob_name;
use crate::engine::kvtest_db::copy_rows;
use crate::records::EngineKind;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Creates `dir` and writes every blob of the kvtest database `db` into it
/// in `layout`; returns the files and bytes written.
pub fn write_files(db: &Path, dir: &Path, layout: EngineKind, progress: &dyn Progress) -> Result<(u64, u64)> {
    let tree = layout == EngineKind::Tree;
    std::fs::create_dir(dir).map_err(|e| Error::io(dir, "cannot create directory", e))?;
    if tree {
        // kvtest's marker: a tree is a directory with a "00" subdirectory.
        let marker = dir.join("00");
        std::fs::create_dir(&marker).map_err(|e| Error::io(&marker, "cannot create directory", e))?;
    }
    let mut made_dir = u32::MAX;
    copy_rows(db, progress, &mut |key, value| {
        let name = blob_name(layout, key);
        if tree && key / 100 != made_dir {
            let sub = dir.join(&name[..name.len() - 3]);
            std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, "cannot create directory", e))?;
            made_dir = key / 100;
        }
        let path = dir.join(&name);
        let mut f = std::fs::File::create(&path).map_err(|e| Error::io(&path, "cannot create file", e))?;
        f.write_all(value).map_err(|e| Error::io(&path, "cannot write", e))
    })
}

/// Accepts `dir` as a previous export: a directory in which every name is
/// one blobbench writes, so `--force` cannot wipe unrelated files.
pub fn check_previous(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::bad_input(dir, "exists and is not a directory"));
    }
    let entries: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, "cannot list directory", e))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    if let Some(foreign) = entries.iter().find(|n| n.len() < 2 || !n.bytes().all(|b| b.is_ascii_digit())) {
        return Err(Error::bad_input(
            dir,
            format!("holds {foreign:?}, which blobbench did not write; refusing to replace it even with --force"),
        ));
    }
    Ok(())
}
