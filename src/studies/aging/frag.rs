//! Fragmentation: extents per file from the FIEMAP ioctl, counted as
//! `filefrag` counts them (physically contiguous pieces merge into one), and
//! for SQLite the locality of each blob's overflow chain from `dbstat`.

use std::os::unix::io::AsRawFd;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::dataset::{db_error, open_kv};
use crate::{Error, Result};

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Flush the file's dirty pages first, so delayed allocation is resolved.
const FIEMAP_FLAG_SYNC: u32 = 0x1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// Extents asked for per ioctl call.
const BATCH: usize = 128;

/// `struct fiemap_extent` (linux/fiemap.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

/// `struct fiemap` followed by room for [`BATCH`] extents.
#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [FiemapExtent; BATCH],
}

/// Extents of one file as `filefrag` counts them, or None when the
/// filesystem does not answer FIEMAP (tmpfs, some network filesystems).
pub fn file_extents(path: &Path) -> Result<Option<u64>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut map = Box::new(Fiemap {
        start: 0,
        length: 0,
        flags: 0,
        mapped_extents: 0,
        extent_count: BATCH as u32,
        reserved: 0,
        extents: [FiemapExtent::default(); BATCH],
    });
    let (mut count, mut next_start, mut prev_end): (u64, u64, Option<u64>) = (0, 0, None);
    loop {
        map.start = next_start;
        map.length = u64::MAX - next_start;
        map.flags = FIEMAP_FLAG_SYNC;
        map.mapped_extents = 0;
        // SAFETY: `map` is a live, correctly laid out fiemap with room for
        // `extent_count` extents; the descriptor stays open meanwhile.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *map as *mut Fiemap) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::ENOSYS) => Ok(None),
                _ => Err(Error::io(path, "cannot map extents (FIEMAP)", err)),
            };
        }
        let got = (map.mapped_extents as usize).min(BATCH);
        let mut last = got == 0;
        for e in &map.extents[..got] {
            if prev_end != Some(e.physical) {
                count += 1;
            }
            prev_end = Some(e.physical + e.length);
            next_start = e.logical + e.length;
            last |= e.flags & FIEMAP_EXTENT_LAST != 0;
        }
        if last {
            return Ok(Some(count));
        }
    }
}

/// Extents over a set of files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtentTally {
    /// Non-empty files examined.
    pub files: u64,
    pub extents: u64,
    /// Files in more than one extent.
    pub fragmented: u64,
    pub max: u64,
    /// FIEMAP was refused on some file: the tally is not a measurement.
    pub unsupported: bool,
}

impl ExtentTally {
    /// Adds one file (empty files hold no extents and are not counted).
    pub fn add(&mut self, path: &Path, len: u64) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.files += 1;
        match file_extents(path)? {
            Some(n) => {
                self.extents += n;
                self.fragmented += u64::from(n > 1);
                self.max = self.max.max(n);
            }
            None => self.unsupported = true,
        }
        Ok(())
    }
}

/// How scattered the pages of SQLite's blobs are: over every pair of
/// consecutive overflow pages of one blob, the distance in pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OverflowLocality {
    /// Blobs with an overflow chain.
    pub chains: u64,
    /// Pairs of consecutive pages in those chains.
    pub steps: u64,
    /// Mean |next page - page| over the steps (1 = perfectly sequential).
    pub mean_distance_pages: f64,
    /// Share of steps to the very next page of the file.
    pub sequential_pct: f64,
}

/// Reads the overflow chains of table kv from the `dbstat` virtual table.
pub fn overflow_locality(db: &Path) -> Result<OverflowLocality> {
    let kv = open_kv(db, false)?;
    let err = |e| db_error(db, "cannot read dbstat (is SQLITE_ENABLE_DBSTAT_VTAB compiled in?)", e);
    let mut stmt =
        kv.conn.prepare("SELECT path, pageno FROM dbstat WHERE name = 'kv' AND pagetype = 'overflow'").map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    // A chain's pages have paths "<cell path>+<index>", index from 0.
    let mut pages: Vec<(String, u32, i64)> = Vec::new();
    while let Some(row) = rows.next().map_err(err)? {
        let path: String = row.get(0).map_err(err)?;
        let page: i64 = row.get(1).map_err(err)?;
        let (cell, index) = path.rsplit_once('+').unwrap_or((path.as_str(), "0"));
        let index = u32::from_str_radix(index, 16).unwrap_or(0);
        pages.push((cell.to_string(), index, page));
    }
    pages.sort_unstable();
    Ok(locality(&pages))
}

/// Locality of chains given as (chain, index in chain, page number), sorted.
fn locality(pages: &[(String, u32, i64)]) -> OverflowLocality {
    let (mut chains, mut steps, mut distance, mut sequential) = (0u64, 0u64, 0u64, 0u64);
    for (i, (cell, _, page)) in pages.iter().enumerate() {
        match i.checked_sub(1).map(|j| &pages[j]) {
            Some((prev_cell, _, prev_page)) if prev_cell == cell => {
                steps += 1;
                distance += page.abs_diff(*prev_page);
                sequential += u64::from(*page == prev_page + 1);
            }
            _ => chains += 1,
        }
    }
    let per = |n: u64| if steps == 0 { 0.0 } else { n as f64 / steps as f64 };
    OverflowLocality { chains, steps, mean_distance_pages: per(distance), sequential_pct: per(sequential) * 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory on the crate's own filesystem (ext4 on the machines that
    /// run these tests), where FIEMAP answers.
    fn target_dir() -> tempfile::TempDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    #[test]
    fn a_written_file_has_extents_and_an_empty_one_none() {
        let dir = target_dir();
        let f = dir.path().join("blob");
        std::fs::write(&f, vec![7u8; 300_000]).unwrap();
        let n = file_extents(&f).unwrap().expect("FIEMAP must work under target/ for this test to mean anything");
        assert!(n >= 1, "{n}");
        let e = dir.path().join("empty");
        std::fs::write(&e, b"").unwrap();
        assert_eq!(file_extents(&e).unwrap(), Some(0));
        let mut t = ExtentTally::default();
        t.add(&f, 300_000).unwrap();
        t.add(&e, 0).unwrap();
        assert_eq!((t.files, t.extents), (1, n));
    }

    #[test]
    fn chains_are_measured_page_to_page() {
        let p = |c: &str, i: u32, n: i64| (c.to_string(), i, n);
        let l = locality(&[p("/a", 0, 10), p("/a", 1, 11), p("/a", 2, 30), p("/b", 0, 5), p("/b", 1, 6)]);
        assert_eq!((l.chains, l.steps), (2, 3));
        assert!((l.mean_distance_pages - 7.0).abs() < 1e-9, "{l:?}");
        assert!((l.sequential_pct - 200.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn dbstat_is_compiled_in() {
        let dir = target_dir();
        let db = dir.path().join("t.db");
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB);").unwrap();
        for k in 1..=5 {
            conn.execute("INSERT INTO kv VALUES (?1, zeroblob(20000))", [k]).unwrap();
        }
        drop(conn);
        let l = overflow_locality(&db).unwrap();
        assert_eq!(l.chains, 5, "{l:?}");
        assert!(l.steps >= 5 && l.mean_distance_pages >= 1.0, "{l:?}");
    }
}
