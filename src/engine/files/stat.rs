//! `stat` of a directory of blob files: kvtest's figures plus what the
//! files and directories really occupy on disk.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::engine::files::names::{blob_name, list_keys};
use crate::engine::report::DirStat;
use crate::records::EngineKind;
use crate::util::fsutil::allocated_bytes;
use crate::{Error, Result};

pub(super) fn dir_stat(dir: &Path, layout: EngineKind) -> Result<DirStat> {
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
