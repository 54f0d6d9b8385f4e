//! `init`: a database of random, incompressible blobs in kvtest's layout.
//! Built under a temporary name beside the target and renamed at the end, so
//! an interrupted init never leaves a half-made database under the real name.
//! [`create`] is shared with `init --from`, which fills it from a directory.

use std::path::Path;
use std::time::Instant;

use rand::{RngCore, SeedableRng};
use rusqlite::Connection;

use crate::records::sizes::{power_of_two_histogram, MAX_BLOB};
use crate::records::{DatasetSpec, SizeBucket};
use crate::util::fsutil;
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::util::units::check_page_size;
use crate::{Error, Result};

#[derive(Debug, Clone)]
pub struct InitReport {
    pub count: u64,
    pub content_bytes: u64,
    pub file_bytes: u64,
    pub elapsed_ns: u64,
    /// The sizes stored, in power-of-two bins.
    pub size_histogram: Vec<SizeBucket>,
}

pub fn check_spec(spec: &DatasetSpec) -> Result<()> {
    if spec.count == 0 || spec.count > i32::MAX as u32 {
        return Err(Error::invalid(format!("--count must be from 1 to {}", i32::MAX)));
    }
    match &spec.sizes {
        None => {
            if spec.size == 0 || spec.size > MAX_BLOB {
                return Err(Error::invalid(format!("--size must be from 1 to {MAX_BLOB}")));
            }
            if spec.variance >= spec.size {
                return Err(Error::invalid("--variance must be smaller than --size (blobs would be empty)"));
            }
            if spec.size.saturating_add(spec.variance) > MAX_BLOB {
                return Err(Error::invalid(format!("--size plus --variance must be at most {MAX_BLOB}")));
            }
        }
        Some(dist) => dist.validate().map_err(|e| Error::invalid(format!("--sizes: {e}")))?,
    }
    check_page_size(spec.page_size).map_err(Error::invalid)
}

/// Rough bytes the database will take, for the free-space check.
pub fn estimated_bytes(spec: &DatasetSpec) -> u64 {
    u64::from(spec.count) * (spec.size_dist().mean() as u64 + 64) / 100 * 103
}

/// Removes the half-built database unless it was renamed into place.
struct TempDb<'a> {
    path: &'a Path,
    keep: bool,
}

impl Drop for TempDb<'_> {
    fn drop(&mut self) {
        if !self.keep {
            for suffix in ["", "-journal", "-wal", "-shm"] {
                let mut p = self.path.as_os_str().to_owned();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

pub fn init(path: &Path, spec: &DatasetSpec, force: bool, progress: &dyn Progress) -> Result<InitReport> {
    check_spec(spec)?;
    let (report, sizes) = create(path, spec.page_size, force, estimated_bytes(spec), progress, |insert, progress| {
        fill(insert, spec, progress)
    })?;
    Ok(InitReport { size_histogram: power_of_two_histogram(sizes), ..report })
}

/// Makes the database at `path` (under a temporary name, renamed at the
/// end) and lets `fill` insert the blobs; `fill` returns each blob's size
/// in key order. `need` is the free space to check for.
pub(super) fn create<F>(
    path: &Path,
    page_size: u32,
    force: bool,
    need: u64,
    progress: &dyn Progress,
    fill: F,
) -> Result<(InitReport, Vec<u64>)>
where
    F: FnOnce(&mut Inserter<'_>, &dyn Progress) -> Result<Vec<u64>>,
{
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return Err(Error::bad_input(path, "is a directory")),
        Ok(_) if !force => return Err(Error::Exists(path.to_path_buf())),
        _ => {}
    }
    let dir = fsutil::parent_dir(path);
    // SQLite's "unable to open database file" would not say why.
    fsutil::check_writable_output(path)?;
    let free = fsutil::free_bytes(dir)?;
    if free < need {
        return Err(Error::bad_input(
            dir,
            format!(
                "not enough free space: the database needs about {} MB, {} MB free",
                need / 1_000_000,
                free / 1_000_000
            ),
        ));
    }
    let started = Instant::now();
    let tmp_path = fsutil::temp_sibling(path, "init");
    let mut guard = TempDb { path: &tmp_path, keep: false };
    let sizes = build(&tmp_path, path, page_size, progress, fill)?;
    // The file being replaced may have a WAL or journal of its own, which
    // must not be applied to the new database.
    if force {
        for suffix in ["-journal", "-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
    std::fs::rename(&tmp_path, path).map_err(|e| Error::io(path, "cannot rename the new database into place", e))?;
    guard.keep = true;
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let report = InitReport {
        count: sizes.len() as u64,
        content_bytes: sizes.iter().sum(),
        file_bytes,
        elapsed_ns: started.elapsed().as_nanos() as u64,
        size_histogram: Vec::new(),
    };
    Ok((report, sizes))
}

/// Inserts blobs into the database being built.
pub(super) struct Inserter<'a> {
    stmt: rusqlite::Statement<'a>,
    conn: &'a Connection,
    target: &'a Path,
}

impl Inserter<'_> {
    pub(super) fn insert(&mut self, key: u32, blob: &[u8]) -> Result<()> {
        self.stmt
            .execute(rusqlite::params![key, blob])
            .map(drop)
            .map_err(|e| crate::engine::dataset::conn_error(self.conn, self.target, "cannot build the database", e))
    }
}

/// Opens the temporary database with journaling off (the file is private
/// until the rename, so there is nothing a journal would protect), runs
/// `fill` in one transaction, and flushes the file. Errors name `target`,
/// the file the user asked for, not the temporary.
fn build<F>(tmp: &Path, target: &Path, page_size: u32, progress: &dyn Progress, fill: F) -> Result<Vec<u64>>
where
    F: FnOnce(&mut Inserter<'_>, &dyn Progress) -> Result<Vec<u64>>,
{
    let what = "cannot build the database";
    let conn = Connection::open(tmp).map_err(|e| crate::engine::dataset::db_error(target, what, e))?;
    let sql_err = |e| crate::engine::dataset::conn_error(&conn, target, what, e);
    conn.execute_batch(&format!(
        "PRAGMA page_size={page_size}; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;
         CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB); BEGIN;"
    ))
    .map_err(sql_err)?;
    let sizes = {
        let stmt = conn.prepare("INSERT INTO kv(k, v) VALUES(?1, ?2)").map_err(sql_err)?;
        let mut inserter = Inserter { stmt, conn: &conn, target };
        fill(&mut inserter, progress)?
    };
    conn.execute_batch("COMMIT; PRAGMA journal_mode=DELETE;").map_err(sql_err)?;
    conn.close().map_err(|(c, e)| crate::engine::dataset::conn_error(&c, target, what, e))?;
    progress.finish();
    let f = std::fs::File::open(tmp).map_err(|e| Error::io(target, "cannot reopen", e))?;
    f.sync_all().map_err(|e| Error::io(target, "cannot flush to disk", e))?;
    Ok(sizes)
}

/// Random, incompressible blobs with sizes drawn from the spec's
/// distribution.
fn fill(insert: &mut Inserter<'_>, spec: &DatasetSpec, progress: &dyn Progress) -> Result<Vec<u64>> {
    let dist = spec.size_dist();
    let sampler = dist.sampler();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(spec.seed);
    let mut buf = vec![0u8; dist.max() as usize];
    let mut sizes = Vec::with_capacity(spec.count as usize);
    progress.start("init", u64::from(spec.count));
    for key in 1..=spec.count {
        let size = sampler.sample(&mut rng) as usize;
        rng.fill_bytes(&mut buf[..size]);
        insert.insert(key, &buf[..size])?;
        sizes.push(size as u64);
        if key % 1024 == 0 {
            progress.advance(1024);
            if stop_requested() {
                return Err(Error::Interrupted);
            }
        }
    }
    progress.advance(u64::from(spec.count % 1024));
    Ok(sizes)
}
