//! The layouts `aging` ages, each a copy of the dataset with its write
//! method, and what each occupies on disk and how fragmented it is.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::frag::{overflow_locality, ExtentTally};
use super::section::{Fragmentation, LayoutInfo, Usage};
use crate::engine::backend::WriteSettings;
use crate::engine::dataset::{blob_files, db_error, open_kv};
use crate::engine::db_files as sqlite_files;
use crate::engine::LocalBytes;
use crate::records::{
    CommitEvery, ConfigId, DbAccess, DbParams, EngineKind, EngineSettings, KvParams, KvSync, LayoutId,
};
use crate::{Error, Result};

/// One aged copy: where it lives and how it is written and read.
#[derive(Debug, Clone)]
pub struct AgingLayout {
    pub info: LayoutInfo,
    /// How it is read (and written, but for the commits).
    pub settings: EngineSettings,
    /// Writes per commit of its rewrite passes (None: one transaction per pass).
    pub commit_every: CommitEvery,
    pub path: PathBuf,
}

impl AgingLayout {
    /// The settings its rewrites are written with: its own, committed
    /// every `commit_every` writes.
    pub fn write_settings(&self) -> EngineSettings {
        EngineSettings { commit_every: self.commit_every, ..self.settings.clone() }
    }

    pub fn kind(&self) -> EngineKind {
        self.info.engine
    }
    pub fn id(&self) -> LayoutId {
        self.info.id
    }
}

/// The write configurations the backends have `aging` age (SQLite's WAL
/// and rollback journal, files in place and by rename), read through the
/// blob API, and the key-value engines asked for, with their copies under
/// `work`, their rewrites committed every `commit_every` writes, each
/// layout's settings `base` with the part it varies.
pub fn layouts(
    work: &Path,
    engines: &[EngineKind],
    commit_every: CommitEvery,
    base: &EngineSettings,
) -> Vec<AgingLayout> {
    let mut out: Vec<AgingLayout> = crate::engine::registry::write_configs()
        .filter_map(|(kind, config)| {
            let title = config.aging?;
            let own = config.engine_settings();
            let settings = match config.write {
                WriteSettings::Db { .. } => {
                    EngineSettings { db: DbParams { access: DbAccess::BlobApi, ..own.db }, ..base.clone() }
                }
                WriteSettings::Files { .. } => EngineSettings { files: own.files, ..base.clone() },
                WriteSettings::Commit => EngineSettings { kv: own.kv, ..base.clone() },
            };
            Some(make(work, LayoutId(config.id), title, kind, settings))
        })
        .collect();
    for &kind in engines {
        let kv = KvParams { sync: KvSync::Durable };
        let settings = EngineSettings { kv, ..base.clone() };
        out.push(make(work, LayoutId(ConfigId::Durable(kind)), kind.title(), kind, settings));
    }
    for l in &mut out {
        l.commit_every = commit_every;
    }
    out
}

fn make(work: &Path, id: LayoutId, title: &str, engine: EngineKind, settings: EngineSettings) -> AgingLayout {
    AgingLayout {
        info: LayoutInfo { id, title: title.into(), engine },
        settings,
        commit_every: None,
        path: crate::engine::dataset::copy_path(work, id.name(), engine),
    }
}

/// Disk usage and fragmentation of one layout's copy. `content` is the sum
/// of the blob sizes, used where the engine cannot be asked (key-value
/// stores). A store with no bytes on this machine says why in both.
pub fn survey_disk(layout: &AgingLayout, content: u64) -> Result<(Usage, Fragmentation)> {
    let path = &layout.path;
    let mut tally = ExtentTally::default();
    let mut usage = Usage::default();
    let mut overflow = None;
    match layout.kind() {
        crate::engine::sqlite::KIND => {
            let kv = open_kv(path, false)?;
            let err = |e| db_error(path, "cannot read page counts", e);
            let q = |sql: &str| kv.conn.query_row(sql, [], |r| r.get::<_, i64>(0)).map_err(err);
            usage.content_bytes = q("SELECT coalesce(sum(length(v)), 0) FROM kv")? as u64;
            usage.page_size = Some(q("PRAGMA page_size")? as u64);
            usage.page_count = Some(q("PRAGMA page_count")? as u64);
            usage.freelist_pages = Some(q("PRAGMA freelist_count")? as u64);
            drop(kv);
            for f in sqlite_files(path) {
                add_file(&f, &mut usage, &mut tally)?;
            }
            overflow = Some(overflow_locality(path)?);
        }
        crate::engine::files::FLAT_KIND | crate::engine::files::TREE_KIND => {
            for f in blob_files(path, layout.kind())? {
                let len = add_file(&f, &mut usage, &mut tally)?;
                usage.content_bytes += len;
            }
            usage.allocated_bytes += dir_blocks(path)?;
        }
        // Any other engine says where its bytes are: a remote store has
        // none here, and nothing is walked in its place.
        kind => {
            usage.content_bytes = content;
            match crate::engine::backend(kind).local_bytes(path, &layout.settings)? {
                LocalBytes::In(paths) => {
                    for p in &paths {
                        walk(p, &mut usage, &mut tally)?;
                    }
                }
                LocalBytes::Remote(why) => {
                    usage.not_local = true;
                    return Ok((usage, Fragmentation { not_measured: Some(why), ..Fragmentation::default() }));
                }
            }
        }
    }
    let measured = !tally.unsupported;
    let fragmentation = Fragmentation {
        files: tally.files,
        extents: measured.then_some(tally.extents),
        fragmented_files: measured.then_some(tally.fragmented),
        max_extents: measured.then_some(tally.max),
        not_measured: (!measured).then(|| "the filesystem does not answer FIEMAP".to_string()),
        overflow,
    };
    Ok((usage, fragmentation))
}

/// Adds one file's sizes and extents; returns its length (0 when absent).
fn add_file(f: &Path, usage: &mut Usage, tally: &mut ExtentTally) -> Result<u64> {
    let meta = match std::fs::metadata(f) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(f, "cannot stat", e)),
    };
    usage.apparent_bytes += meta.len();
    usage.allocated_bytes += meta.blocks() * 512;
    tally.add(f, meta.len())?;
    Ok(meta.len())
}

/// Blocks held by a directory itself (its entries, not its files).
fn dir_blocks(dir: &Path) -> Result<u64> {
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(dir, "cannot stat", e))?;
    Ok(meta.blocks() * 512)
}

/// Every file under `path` (a key-value store's file or directory).
fn walk(path: &Path, usage: &mut Usage, tally: &mut ExtentTally) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "cannot stat", e))?;
    if !meta.is_dir() {
        add_file(path, usage, tally)?;
        return Ok(());
    }
    usage.allocated_bytes += meta.blocks() * 512;
    let entries = std::fs::read_dir(path).map_err(|e| Error::io(path, "cannot list directory", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(path, "cannot list directory", e))?;
        walk(&entry.path(), usage, tally)?;
    }
    Ok(())
}
