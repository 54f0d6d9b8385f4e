//! Cold-cache runs without root: flush dirty pages (`syncfs`), drop the
//! dataset's pages with `posix_fadvise(POSIX_FADV_DONTNEED)`, then check
//! with `mmap` + `mincore` how much of a sample is still resident.
//!
//! What this is not: directory entries and inodes stay cached (only root can
//! drop those, through /proc/sys/vm/drop_caches), so opening a file after
//! eviction still skips the directory lookup on disk; the storage device's
//! own cache is untouched; and it is not a power cut (nothing is lost, the
//! data was flushed first). Pages another process has mapped or locked stay
//! resident, and tmpfs pages are the data itself; the residency check is
//! there to catch those cases instead of reporting a warm run as cold.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Files whose pages `evict` checks afterwards, spread over the list.
pub const SAMPLE_FILES: usize = 2000;
/// Files up to this many pages are checked whole; bigger ones in windows.
const MAX_PAGES_PER_FILE: u64 = 1 << 16;
const WINDOW_PAGES: u64 = 64;
/// Residency at or below which the next run counts as cold.
pub const EFFECTIVE_MAX_PCT: f64 = 10.0;

const TMPFS_MAGIC: u32 = 0x0102_1994;
const RAMFS_MAGIC: u32 = 0x8584_58f6;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvictionReport {
    /// Regular files found and advised (missing ones are skipped).
    pub files: u64,
    pub bytes: u64,
    pub sampled_pages: u64,
    pub resident_pages: u64,
    /// Share of the sampled pages still in the page cache after eviction.
    pub resident_pct: f64,
    /// True when the residency is low enough to call the next run cold.
    pub effective: bool,
    /// The whole eviction: flush, advice and residency check.
    pub elapsed_ns: u64,
    /// Why eviction did not work or could not be checked, when it matters.
    pub note: Option<String>,
}

/// Evicts `files` from the page cache and reports how well that worked.
/// Missing files are skipped; a file that exists but cannot be opened,
/// flushed or advised is an error.
pub fn evict(files: &[PathBuf]) -> Result<EvictionReport> {
    let start = Instant::now();
    let mut report = EvictionReport::default();
    let mut flushed: Vec<u64> = Vec::new();
    for path in files {
        let Some((file, meta)) = open_existing(path)? else { continue };
        if !meta.is_file() {
            continue;
        }
        // DONTNEED leaves dirty pages alone, so each filesystem is flushed
        // once, before the first of its files is advised.
        if !flushed.contains(&meta.dev()) {
            // SAFETY: syncfs only reads the descriptor, which `file` keeps open.
            if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
                return Err(Error::io(path, "cannot flush dirty pages", std::io::Error::last_os_error()));
            }
            flushed.push(meta.dev());
        }
        // SAFETY: plain syscall on a descriptor we own; offset 0, len 0 = whole file.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(Error::io(path, "cannot drop cached pages", std::io::Error::from_raw_os_error(rc)));
        }
        report.files += 1;
        report.bytes += meta.len();
    }
    let sample = sample_residency(files, SAMPLE_FILES, MAX_PAGES_PER_FILE)?;
    report.sampled_pages = sample.sampled;
    report.resident_pages = sample.resident;
    report.resident_pct =
        if sample.sampled == 0 { 0.0 } else { sample.resident as f64 * 100.0 / sample.sampled as f64 };
    report.effective = sample.sampled > 0 && report.resident_pct <= EFFECTIVE_MAX_PCT;
    report.note = note(files, &report, &sample);
    report.elapsed_ns = start.elapsed().as_nanos() as u64;
    Ok(report)
}

/// Pages (sampled, still resident) over up to `max_sample_files` of `files`
/// spread evenly over the list, all pages of each (big files in evenly
/// spaced windows). Missing, empty and uncheckable files are left out.
pub fn residency(files: &[PathBuf], max_sample_files: usize) -> Result<(u64, u64)> {
    let s = sample_residency(files, max_sample_files, MAX_PAGES_PER_FILE)?;
    Ok((s.sampled, s.resident))
}

#[derive(Debug, Default)]
struct Sample {
    sampled: u64,
    resident: u64,
    /// Files left out because mincore would not tell the truth about them.
    hidden_files: u64,
    checked_files: u64,
}

fn sample_residency(files: &[PathBuf], max_files: usize, max_pages_per_file: u64) -> Result<Sample> {
    let mut sample = Sample::default();
    let n = files.len();
    let k = n.min(max_files);
    for i in 0..k {
        let path = &files[i * n / k];
        let Some((file, meta)) = open_existing(path)? else { continue };
        if !meta.is_file() || meta.len() == 0 {
            continue;
        }
        if !page_cache_visible(path, &meta) {
            sample.hidden_files += 1;
            continue;
        }
        let (sampled, resident) = file_residency(path, &file, meta.len(), max_pages_per_file)?;
        sample.sampled += sampled;
        sample.resident += resident;
        sample.checked_files += 1;
    }
    Ok(sample)
}

/// Since Linux 5.2 mincore reports the page cache of a file only to a
/// process that owns it or may write it; for other files it claims every
/// page is resident, which would be a false alarm.
fn page_cache_visible(path: &Path, meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid has no failure mode.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 || meta.uid() == euid {
        return true;
    }
    let Ok(c) = crate::util::fsutil::cstring(path) else { return false };
    // SAFETY: the path is NUL-terminated; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// (sampled, resident) pages of one file, through a read-only mapping
/// (mapping does not read anything in).
fn file_residency(path: &Path, file: &File, len: u64, max_pages: u64) -> Result<(u64, u64)> {
    let page = page_size();
    let pages = len.div_ceil(page);
    let Some(map) = Mapping::new(file, len) else {
        return Err(Error::io(path, "cannot map to check page residency", std::io::Error::last_os_error()));
    };
    let (windows, window) =
        if pages <= max_pages { (1, pages) } else { ((max_pages / WINDOW_PAGES).max(2), WINDOW_PAGES) };
    let mut vec = vec![0u8; window as usize];
    let (mut sampled, mut resident) = (0u64, 0u64);
    for w in 0..windows {
        // Evenly spaced, the first at the start and the last at the end.
        let first = if windows == 1 { 0 } else { w * (pages - window) / (windows - 1) };
        // SAFETY: the range lies inside the mapping (rounded up to whole
        // pages) and `vec` holds one byte per page of it.
        let rc = unsafe {
            libc::mincore(map.addr.add((first * page) as usize).cast(), (window * page) as usize, vec.as_mut_ptr())
        };
        if rc != 0 {
            return Err(Error::io(path, "cannot check page residency", std::io::Error::last_os_error()));
        }
        sampled += window;
        resident += vec.iter().filter(|&&b| b & 1 != 0).count() as u64;
    }
    Ok((sampled, resident))
}

/// A read-only shared mapping of a whole file, unmapped on drop.
struct Mapping {
    addr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(file: &File, len: u64) -> Option<Self> {
        let len = usize::try_from(len).ok()?;
        // SAFETY: a fresh read-only mapping of a file we hold open; it is
        // only handed to mincore, never read through.
        let addr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        (addr != libc::MAP_FAILED).then_some(Mapping { addr: addr.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no side effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

/// The file and its metadata, None when it does not exist.
fn open_existing(path: &Path) -> Result<Option<(File, std::fs::Metadata)>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Ok(None)
        }
        Err(e) => return Err(Error::io(path, "cannot open to evict it from the page cache", e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, "cannot read file metadata", e))?;
    Ok(Some((file, meta)))
}

/// A short phrase for the report when eviction failed or is partly unchecked.
fn note(files: &[PathBuf], report: &EvictionReport, sample: &Sample) -> Option<String> {
    if report.files == 0 {
        return Some("none of the files exist".into());
    }
    if report.sampled_pages == 0 {
        return Some(if sample.hidden_files > 0 {
            "cannot check: the kernel hides the page cache of files this user neither owns nor may write".into()
        } else {
            "nothing to check: the files are empty".into()
        });
    }
    if !report.effective {
        let first = files.iter().find(|p| p.is_file())?;
        let fs = crate::measure::envinfo::storage_info(first).map(|s| s.fs_type).filter(|t| !t.is_empty());
        if matches!(statfs_magic(first), Some(TMPFS_MAGIC | RAMFS_MAGIC)) {
            let fs = fs.as_deref().unwrap_or("tmpfs");
            return Some(format!("the files are on {fs}, where the cached pages are the data and cannot be dropped"));
        }
        let on = fs.map(|t| format!(" ({t})")).unwrap_or_default();
        return Some(format!(
            "the filesystem{on} ignored POSIX_FADV_DONTNEED, or another process has the files mapped or locked"
        ));
    }
    (sample.hidden_files > 0).then(|| {
        format!(
            "{} of {} sampled files not checked: not owned and not writable by this user",
            sample.hidden_files,
            sample.hidden_files + sample.checked_files
        )
    })
}

/// The filesystem's magic number (statfs f_type), which fits in 32 bits.
fn statfs_magic(path: &Path) -> Option<u32> {
    let c = crate::util::fsutil::cstring(path).ok()?;
    // SAFETY: statfs writes into the struct we own; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0).then_some(st.f_type as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A temporary directory whose pages can be evicted (tmpfs and ramfs
    /// pages cannot be): the system's temporary directory, or else beside
    /// this test binary, in the build's target directory. A test of
    /// eviction must not pass by skipping, so with neither it fails,
    /// saying why.
    fn real_disk_dir() -> tempfile::TempDir {
        let evictable = |d: &Path| !matches!(statfs_magic(d), Some(TMPFS_MAGIC | RAMFS_MAGIC) | None);
        let tmp = std::env::temp_dir();
        let exe = std::env::current_exe().expect("the test binary's path");
        let build = exe.parent().and_then(Path::parent).expect("the test binary sits in the target directory");
        for base in [tmp.as_path(), build] {
            if base.is_dir() && evictable(base) {
                if let Ok(dir) = tempfile::tempdir_in(base) {
                    return dir;
                }
            }
        }
        panic!(
            "neither {} nor {} is a writable directory on a filesystem whose pages can be evicted: \
             set TMPDIR to a directory on a real disk",
            tmp.display(),
            build.display()
        );
    }

    fn make_files(dir: &Path, count: usize, size: usize) -> Vec<PathBuf> {
        (0..count)
            .map(|i| {
                let path = dir.join(format!("blob{i:03}"));
                let data: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
                std::fs::write(&path, data).unwrap();
                path
            })
            .collect()
    }

    fn read_all(files: &[PathBuf]) {
        for path in files {
            let mut buf = Vec::new();
            File::open(path).unwrap().read_to_end(&mut buf).unwrap();
        }
    }

    #[test]
    fn evict_drops_written_and_read_pages_and_skips_missing_files() {
        let dir = real_disk_dir();
        let mut files = make_files(dir.path(), 40, 100_000);
        files.push(dir.path().join("big"));
        std::fs::write(&files[40], vec![1u8; 2 << 20]).unwrap();
        read_all(&files);
        files.push(dir.path().join("missing-wal"));
        files.push(dir.path().join("no/such/dir/x"));
        files.push(files[0].join("under-a-file"));

        let report = evict(&files).unwrap();
        assert_eq!(report.files, 41, "{report:?}");
        assert_eq!(report.bytes, 40 * 100_000 + (2 << 20), "{report:?}");
        let page = page_size();
        let pages = 40 * 100_000u64.div_ceil(page) + (2u64 << 20).div_ceil(page);
        assert_eq!(report.sampled_pages, pages, "every page of every file is sampled: {report:?}");
        assert!(report.resident_pct <= EFFECTIVE_MAX_PCT && report.effective, "{report:?}");
        assert_eq!(report.note, None);
        assert!(report.elapsed_ns > 0);
    }

    #[test]
    fn freshly_read_files_are_resident() {
        let dir = real_disk_dir();
        let files = make_files(dir.path(), 20, 64 * 1024);
        assert!(evict(&files).unwrap().effective);
        read_all(&files);
        let (sampled, resident) = residency(&files, 2000).unwrap();
        assert_eq!(sampled, 20 * (64 * 1024u64).div_ceil(page_size()));
        assert!(resident * 2 > sampled, "{resident} of {sampled} pages resident after reading");
    }

    #[test]
    fn sampling_spreads_over_files_and_over_a_big_files_pages() {
        let dir = real_disk_dir();
        let files = make_files(dir.path(), 10, 8192);
        assert_eq!(residency(&files, 3).unwrap().0, 3 * 8192u64.div_ceil(page_size()));

        // One 1024-page file checked through 4 windows of 64 pages placed at
        // pages 0, 320, 640 and 960: drop the first half, keep the second.
        let page = page_size();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![3u8; (1024 * page) as usize]).unwrap();
        let big_list = vec![big.clone()];
        assert!(evict(&big_list).unwrap().effective);
        read_all(&big_list);
        let file = File::open(&big).unwrap();
        let rc =
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, (512 * page) as libc::off_t, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        let sample = sample_residency(&big_list, 1, 4 * WINDOW_PAGES).unwrap();
        assert_eq!((sample.sampled, sample.resident), (4 * WINDOW_PAGES, 2 * WINDOW_PAGES), "{sample:?}");
    }

    #[test]
    fn nothing_to_evict_is_not_called_effective() {
        let dir = tempfile::tempdir().unwrap();
        let report = evict(&[dir.path().join("absent.db")]).unwrap();
        assert_eq!((report.files, report.sampled_pages, report.effective), (0, 0, false));
        assert_eq!(report.note.as_deref(), Some("none of the files exist"));
    }

    #[test]
    fn tmpfs_pages_cannot_be_evicted_and_the_note_says_so() {
        // The precondition is the point of the test, so it is not skipped:
        // /dev/shm is a tmpfs on every Linux with glibc's shm_open.
        let shm = Path::new("/dev/shm");
        let dir =
            tempfile::tempdir_in(shm).unwrap_or_else(|e| panic!("this test needs a writable tmpfs at /dev/shm: {e}"));
        assert_eq!(statfs_magic(dir.path()), Some(TMPFS_MAGIC), "this test needs /dev/shm to be a tmpfs");
        let files = make_files(dir.path(), 4, 64 * 1024);
        let report = evict(&files).unwrap();
        assert!(!report.effective && report.resident_pct > 90.0, "{report:?}");
        assert!(report.note.as_deref().unwrap_or_default().contains("tmpfs"), "{report:?}");
    }
}
