//! The suite's experiments: the article's reads and writes, their fair
//! variants and the key-value engines', each with the engine and settings
//! it runs with, and where each engine's copy of the dataset lives.

use std::path::{Path, PathBuf};

use super::ids::{self, ArmId};
use super::options::Suite;
use crate::records::{
    CommitEvery, DbAccess, DbParams, EngineKind, FileParams, FileRead, FileWrite, Journal, KvParams, KvSync, SyncLevel,
};

/// One measured configuration of the suite.
#[derive(Clone)]
pub(super) struct Step {
    pub id: ArmId,
    pub label: String,
    pub layout: EngineKind,
    pub update: bool,
    pub db: DbParams,
    pub files: FileParams,
    pub kv: KvParams,
    /// Writes per commit: None for the article's one transaction per run,
    /// N for the arms committed as an application would (`commit/...`).
    pub commit_every: CommitEvery,
    /// Each op is a server round trip with no work (`SELECT 1`), not a read.
    pub round_trip: bool,
    /// A read with the page cache evicted before each run (`cold/ID`).
    pub cold: bool,
}

fn db_read(id: ArmId, label: &'static str, access: DbAccess, mmap: bool) -> Step {
    Step {
        id,
        label: label.into(),
        layout: crate::engine::sqlite::KIND,
        update: false,
        // mmap_bytes is filled in with the file size when the dataset exists.
        db: DbParams { access, mmap_bytes: if mmap { -1 } else { 0 }, ..DbParams::default() },
        files: FileParams::default(),
        kv: KvParams::default(),
        commit_every: None,
        round_trip: false,
        cold: false,
    }
}

fn file_read(id: ArmId, label: &'static str, layout: EngineKind, read: FileRead) -> Step {
    Step {
        id,
        label: label.into(),
        layout,
        update: false,
        db: DbParams::default(),
        files: FileParams { read, ..FileParams::default() },
        kv: KvParams::default(),
        commit_every: None,
        round_trip: false,
        cold: false,
    }
}

fn db_write(id: ArmId, label: &'static str, journal: Journal, sync: SyncLevel, nocheckpoint: bool) -> Step {
    Step {
        id,
        label: label.into(),
        layout: crate::engine::sqlite::KIND,
        update: true,
        db: DbParams { journal_mode: Some(journal), sync: Some(sync), nocheckpoint, ..DbParams::default() },
        files: FileParams::default(),
        kv: KvParams::default(),
        commit_every: None,
        round_trip: false,
        cold: false,
    }
}

fn file_write(id: ArmId, label: &'static str, write: FileWrite, fsync: bool) -> Step {
    Step {
        id,
        label: label.into(),
        layout: crate::engine::files::FLAT_KIND,
        update: true,
        db: DbParams::default(),
        files: FileParams { write, fsync, ..FileParams::default() },
        kv: KvParams::default(),
        commit_every: None,
        round_trip: false,
        cold: false,
    }
}

/// A key-value engine's read, fast write and durable write: ids
/// `read/ENGINE`, `write/ENGINE-fast`, `write/ENGINE-durable`.
fn engine_steps(kind: EngineKind) -> Vec<Step> {
    let step = |id: ArmId, label: String, update: bool, sync: KvSync| Step {
        id,
        label,
        layout: kind,
        update,
        db: DbParams::default(),
        files: FileParams::default(),
        kv: KvParams { sync },
        commit_every: None,
        round_trip: false,
        cold: false,
    };
    let title = kind.title();
    let mut steps = vec![
        step(ids::engine_read(kind), format!("{title}, read"), false, KvSync::Durable),
        step(ids::engine_fast_write(kind), format!("{title}, commit without sync"), true, KvSync::Fast),
        step(ids::engine_durable_write(kind), format!("{title}, durable commit"), true, KvSync::Durable),
    ];
    if !kind.has_fast_commit() {
        steps.remove(1);
    }
    if let Some(call) = kind.round_trip_call() {
        // The protocol and socket floor under each read, on the same kind
        // of session: `roundtrip/ENGINE`.
        let floor = step(ids::engine_round_trip(kind), format!("{title}, round trip ({call})"), false, KvSync::Durable);
        steps.insert(1, Step { round_trip: true, ..floor });
    }
    steps
}

/// The experiments, in the order they run, with the committed arms at
/// `commit_every` writes per commit. Ids are the schema's contract with
/// `report` (docs/results-schema.md).
pub(super) fn steps(engines: &[EngineKind], commit_every: u32) -> Vec<Step> {
    let mut steps = article_steps();
    for &kind in engines {
        steps.extend(engine_steps(kind));
    }
    steps.extend(committed_steps(engines, commit_every));
    steps
}

/// The experiments `opts` asks for, in the order they run: those of
/// `only`, or all but the committed writes that wait for no disk (advise
/// asks for those when durability is relaxed).
pub(super) fn selected(s: &Suite) -> Vec<Step> {
    let mut all = steps(&s.ctx.engines, s.commit_every);
    match &s.opts.only {
        Some(only) => all.retain(|s| only.contains(&s.id)),
        None => all.retain(|s| s.commit_every.is_none() || waits_for_disk(s)),
    }
    all
}

/// Whether each write of `step` waits for the disk (an fsync or a durable
/// commit).
pub(super) fn waits_for_disk(step: &Step) -> bool {
    let db = step.db.sync.is_some_and(|s| matches!(s, SyncLevel::Full | SyncLevel::Extra));
    step.update
        && match step.layout {
            crate::engine::sqlite::KIND => db,
            kind if kind.is_files() => step.files.fsync,
            _ => step.kv.sync == KvSync::Durable,
        }
}

/// Every write committed as an application would, `n` writes per commit:
/// `commit/ID` for the article's and the engines' write arms, durable and
/// not (SQLite's checkpoints run as they come and the closing one counts
/// with the writes; a rename's directory is fsynced once per commit).
fn committed_steps(engines: &[EngineKind], n: u32) -> Vec<Step> {
    let per = if n == 1 { "a commit per write".to_string() } else { format!("a commit every {n} writes") };
    let commit = |s: Step| -> Step {
        let mut s = Step { id: ids::committed(s.id), label: format!("{}, {per}", s.label), commit_every: Some(n), ..s };
        s.db.nocheckpoint = false;
        s.files.sync_dir = s.files.fsync && s.files.write == FileWrite::Replace;
        s
    };
    let article = article_steps().into_iter().filter(|s| ids::COMMITTED_ARTICLE.contains(&s.id));
    let engines = engines.iter().flat_map(|&k| engine_steps(k)).filter(|s| s.update);
    article.chain(engines).map(commit).collect()
}

/// The reads `opts` also measures cold (`cold_also`), as their own arms
/// `cold/ID`, in the order they run.
pub(super) fn cold_steps(suite: &Suite) -> Vec<Step> {
    steps(&suite.ctx.engines, suite.commit_every)
        .into_iter()
        .filter(|s| !s.update && !s.round_trip && suite.opts.cold_also.contains(&s.id))
        .map(|s| Step { id: ids::cold(s.id), label: format!("{}, cold cache", s.label), cold: true, ..s })
        .collect()
}

/// The article's experiments and their fair variants.
fn article_steps() -> Vec<Step> {
    vec![
        db_read(ids::READ_DB_SQL, "SQLite, SQL", DbAccess::Sql, false),
        db_read(ids::READ_DB_BLOB, "SQLite, blob API", DbAccess::BlobApi, false),
        db_read(ids::READ_DB_BLOB_MMAP, "SQLite, blob API + mmap", DbAccess::BlobApi, true),
        file_read(ids::READ_FLAT_STDIO, "Files (flat), fopen/fread", crate::engine::files::FLAT_KIND, FileRead::Stdio),
        file_read(ids::READ_FLAT_POSIX, "Files (flat), open/read", crate::engine::files::FLAT_KIND, FileRead::Posix),
        file_read(ids::READ_TREE_STDIO, "Files (tree), fopen/fread", crate::engine::files::TREE_KIND, FileRead::Stdio),
        file_read(ids::READ_TREE_POSIX, "Files (tree), open/read", crate::engine::files::TREE_KIND, FileRead::Posix),
        db_write(ids::WRITE_DB_WAL_NORMAL, "SQLite, WAL, synchronous NORMAL", Journal::Wal, SyncLevel::Normal, true),
        db_write(ids::WRITE_DB_WAL_FULL, "SQLite, WAL, synchronous FULL", Journal::Wal, SyncLevel::Full, true),
        db_write(ids::WRITE_DB_OFF, "SQLite, journal OFF, synchronous OFF", Journal::Off, SyncLevel::Off, false),
        file_write(ids::WRITE_FLAT_TRUNCATE, "Files, fopen(\"wb\")/fwrite", FileWrite::Truncate, false),
        file_write(ids::WRITE_FLAT_INPLACE, "Files, overwrite in place", FileWrite::Inplace, false),
        file_write(ids::WRITE_FLAT_REPLACE, "Files, write temp + rename", FileWrite::Replace, false),
        file_write(ids::WRITE_FLAT_TRUNCATE_FSYNC, "Files, fopen(\"wb\")/fwrite + fsync", FileWrite::Truncate, true),
        file_write(ids::WRITE_FLAT_INPLACE_FSYNC, "Files, overwrite in place + fsync", FileWrite::Inplace, true),
        file_write(ids::WRITE_FLAT_REPLACE_FSYNC, "Files, temp + fsync + rename", FileWrite::Replace, true),
    ]
}

/// Where each engine's copy of the dataset lives in the work directory.
pub(super) fn dataset_path(work: &Path, kind: EngineKind) -> PathBuf {
    crate::engine::dataset::copy_path(work, "test1", kind)
}
