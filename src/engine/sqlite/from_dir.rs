//! `init --from DIR`: the user's own files as the blobs. Every regular,
//! readable, non-empty file under DIR becomes one blob, keys 1..N in the
//! order of the files' relative paths (byte order, depth first), so the same
//! tree always gives the same keys. A manifest (key, size, relative path) is
//! written beside the database. DIR is only read: files are opened
//! read-only, without updating their access time where the kernel allows.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::init::{create, InitReport, Inserter};
use crate::records::sizes::{power_of_two_histogram, MAX_BLOB};
use crate::records::{SizeBucket, SizeDist, SizesFrom};
use crate::util::fsutil;
use crate::util::interrupt::stop_requested;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Why a file under DIR did not become a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkipReason {
    Symlink,
    /// FIFOs, sockets, devices.
    Special,
    /// A file or directory that could not be opened or read.
    Unreadable,
    Empty,
    /// Larger than SQLite's largest blob.
    TooLarge,
    /// Its size or modification time changed, or it vanished, between the
    /// scan and the copy.
    Changed,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Symlink => "symbolic links (not followed)",
            SkipReason::Special => "special files (FIFOs, sockets, devices)",
            SkipReason::Unreadable => "unreadable files or directories",
            SkipReason::Empty => "empty files",
            SkipReason::TooLarge => "files larger than SQLite's blob limit (1,000,000,000 bytes)",
            SkipReason::Changed => "files that changed or vanished while being copied",
        }
    }
}

/// How many entries were skipped, per reason, in reason order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped(pub Vec<(SkipReason, u64)>);

impl Skipped {
    fn add(&mut self, why: SkipReason) {
        match self.0.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => {
                self.0.push((why, 1));
                self.0.sort();
            }
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }
}

/// A regular file found by the scan, with what it looked like then.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Relative to DIR.
    pub rel: PathBuf,
    pub size: u64,
    mtime_ns: i128,
    ino: u64,
}

/// The files that will become blobs, in key order, and what was skipped.
#[derive(Debug, Clone)]
pub struct Scan {
    pub root: PathBuf,
    pub files: Vec<SourceFile>,
    pub skipped: Skipped,
}

impl Scan {
    pub fn content_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The exact sizes found, as a histogram distribution (`--sizes-from`).
    pub fn size_dist(&self) -> SizeDist {
        let mut buckets: Vec<SizeBucket> = Vec::new();
        for s in self.sizes() {
            match buckets.last_mut() {
                Some(b) if b.size == s => b.count += 1,
                _ => buckets.push(SizeBucket { size: s, count: 1 }),
            }
        }
        SizeDist::Histogram { source: self.root.display().to_string(), buckets }
    }

    /// `keep` of the files (at least one), evenly spaced in key order, so a
    /// study's budget takes a sample of the whole tree, not its first
    /// folders.
    pub fn evenly(&self, keep: usize) -> Scan {
        let (n, keep) = (self.files.len(), keep.clamp(1, self.files.len().max(1)));
        let files = (0..keep).map(|i| self.files[i * n / keep].clone()).collect();
        Scan { root: self.root.clone(), files, skipped: self.skipped.clone() }
    }

    /// The most files, evenly spaced, whose content fits in about `bytes`.
    pub fn within_bytes(&self, bytes: u64) -> Scan {
        let content = self.content_bytes().max(1);
        let keep = if content <= bytes {
            self.files.len()
        } else {
            (self.files.len() as u128 * u128::from(bytes) / u128::from(content)) as usize
        };
        self.evenly(keep)
    }

    /// The result file's record of these files, taken from `found`.
    pub fn sizes_from(&self, found: &Scan) -> SizesFrom {
        SizesFrom::Files {
            dir: self.root.display().to_string(),
            files_found: found.files.len() as u64,
            files_used: self.files.len() as u64,
            content_bytes: self.content_bytes(),
            skipped: self.skipped.0.iter().map(|(why, n)| format!("{n} {}", why.describe())).collect(),
        }
    }

    /// The used files' sizes, ascending.
    pub fn sizes(&self) -> Vec<u32> {
        let mut sizes: Vec<u32> = self.files.iter().map(|f| f.size as u32).collect();
        sizes.sort_unstable();
        sizes
    }
}

/// Lists DIR without reading any file's content.
pub fn scan(root: &Path) -> Result<Scan> {
    let meta = match std::fs::metadata(root) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NotFound(root.to_path_buf())),
        Err(e) => return Err(Error::io(root, "cannot access", e)),
    };
    if !meta.is_dir() {
        return Err(Error::bad_input(root, "is not a directory (--from takes a directory of files)"));
    }
    let mut scan = Scan { root: root.to_path_buf(), files: Vec::new(), skipped: Skipped::default() };
    let top = std::fs::read_dir(root).map_err(|e| Error::io(root, "cannot list the directory", e))?;
    walk(top, root, PathBuf::new(), &mut scan)?;
    if scan.files.is_empty() {
        return Err(Error::bad_input(
            root,
            format!("holds no regular, readable, non-empty file{}", skipped_note(&scan.skipped)),
        ));
    }
    if scan.files.len() > i32::MAX as usize {
        return Err(Error::bad_input(root, format!("holds more than {} files", i32::MAX)));
    }
    Ok(scan)
}

fn skipped_note(s: &Skipped) -> String {
    if s.total() == 0 {
        return String::new();
    }
    let parts: Vec<String> = s.0.iter().map(|(r, n)| format!("{n} {}", r.describe())).collect();
    format!(" (skipped: {})", parts.join(", "))
}

/// Depth first, entries in byte order of their names, links never followed.
fn walk(dir: std::fs::ReadDir, root: &Path, rel: PathBuf, scan: &mut Scan) -> Result<()> {
    let mut entries: Vec<(OsString, std::fs::FileType)> = Vec::new();
    for entry in dir {
        match entry.and_then(|e| Ok((e.file_name(), e.file_type()?))) {
            Ok(pair) => entries.push(pair),
            Err(_) => scan.skipped.add(SkipReason::Unreadable),
        }
    }
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    for (name, kind) in entries {
        let rel = rel.join(&name);
        let path = root.join(&rel);
        if kind.is_symlink() {
            scan.skipped.add(SkipReason::Symlink);
        } else if kind.is_dir() {
            match std::fs::read_dir(&path) {
                Ok(sub) => walk(sub, root, rel, scan)?,
                Err(_) => scan.skipped.add(SkipReason::Unreadable),
            }
        } else if !kind.is_file() {
            scan.skipped.add(SkipReason::Special);
        } else {
            match std::fs::symlink_metadata(&path) {
                Err(_) => scan.skipped.add(SkipReason::Changed),
                Ok(m) if m.len() == 0 => scan.skipped.add(SkipReason::Empty),
                Ok(m) if m.len() > u64::from(MAX_BLOB) => scan.skipped.add(SkipReason::TooLarge),
                Ok(m) => scan.files.push(SourceFile {
                    rel,
                    size: m.len(),
                    mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                    ino: m.ino(),
                }),
            }
        }
    }
    Ok(())
}

/// What `init --from` made.
#[derive(Debug, Clone)]
pub struct FromReport {
    pub init: InitReport,
    /// Everything skipped, by the scan and during the copy.
    pub skipped: Skipped,
    pub manifest: PathBuf,
}

/// The manifest written beside a dataset at `db`.
pub fn manifest_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".manifest.tsv");
    PathBuf::from(name)
}

/// Builds the database at `db` from the files `scan` found.
pub fn init_from(db: &Path, scan: &Scan, page_size: u32, force: bool, progress: &dyn Progress) -> Result<FromReport> {
    crate::util::units::check_page_size(page_size).map_err(Error::invalid)?;
    let need = scan.content_bytes() / 100 * 103 + scan.files.len() as u64 * 64;
    let mut skipped = scan.skipped.clone();
    let mut copied: Vec<&SourceFile> = Vec::with_capacity(scan.files.len());
    let (report, sizes) = create(db, page_size, force, need, progress, |insert, progress| {
        copy_all(scan, insert, progress, &mut skipped, &mut copied)
    })?;
    let manifest = manifest_path(db);
    fsutil::write_atomic(&manifest, manifest_text(&copied).as_bytes())?;
    let init = InitReport { size_histogram: power_of_two_histogram(sizes), ..report };
    Ok(FromReport { init, skipped, manifest })
}

fn copy_all<'s>(
    scan: &'s Scan,
    insert: &mut Inserter<'_>,
    progress: &dyn Progress,
    skipped: &mut Skipped,
    copied: &mut Vec<&'s SourceFile>,
) -> Result<Vec<u64>> {
    let largest = scan.files.iter().map(|f| f.size).max().unwrap_or(0) as usize;
    // One buffer for every file; one byte more to notice a file that grew.
    let mut buf = vec![0u8; largest + 1];
    let mut sizes = Vec::with_capacity(scan.files.len());
    progress.start("init --from", scan.files.len() as u64);
    for (i, file) in scan.files.iter().enumerate() {
        match read_unchanged(&scan.root.join(&file.rel), file, &mut buf) {
            Ok(blob) => {
                let key = copied.len() as u32 + 1;
                insert.insert(key, blob)?;
                sizes.push(blob.len() as u64);
                copied.push(file);
            }
            Err(why) => skipped.add(why),
        }
        if i % 256 == 255 {
            progress.advance(256);
            if stop_requested() {
                return Err(Error::Interrupted);
            }
        }
    }
    progress.advance(scan.files.len() as u64 % 256);
    if copied.is_empty() {
        // Nothing is renamed into place: the target stays as it was.
        return Err(Error::bad_input(&scan.root, format!("no file could be copied{}", skipped_note(skipped))));
    }
    Ok(sizes)
}

/// Reads `path` whole into `buf`, checking that it is still the file the
/// scan saw: same inode, size and modification time before and after the
/// read, and no byte beyond the size.
fn read_unchanged<'b>(path: &Path, seen: &SourceFile, buf: &'b mut [u8]) -> Result<&'b [u8], SkipReason> {
    let mut f = open_for_copy(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SkipReason::Changed,
        _ => SkipReason::Unreadable,
    })?;
    let same = |f: &File| {
        f.metadata().is_ok_and(|m| {
            m.ino() == seen.ino
                && m.len() == seen.size
                && i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()) == seen.mtime_ns
        })
    };
    if !same(&f) {
        return Err(SkipReason::Changed);
    }
    let want = seen.size as usize;
    let mut n = 0;
    while n < want + 1 {
        match f.read(&mut buf[n..want + 1]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(SkipReason::Unreadable),
        }
    }
    if n != want || !same(&f) {
        return Err(SkipReason::Changed);
    }
    Ok(&buf[..want])
}

/// Read-only, and without touching the access time when the kernel lets
/// us (O_NOATIME needs the file's owner or CAP_FOWNER).
fn open_for_copy(path: &Path) -> std::io::Result<File> {
    let noatime = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOATIME).open(path);
    match noatime {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => File::open(path),
        other => other,
    }
}

/// `key<TAB>size<TAB>path` lines; bytes of a path that are not printable
/// UTF-8 (or are a tab, newline or backslash) are written as `\xNN`.
fn manifest_text(files: &[&SourceFile]) -> String {
    let mut out = String::from("# blobbench init --from manifest: key, size in bytes, path relative to the source\n");
    for (i, f) in files.iter().enumerate() {
        out.push_str(&format!("{}\t{}\t{}\n", i + 1, f.size, escape_path(f.rel.as_os_str())));
    }
    out
}

fn escape_path(p: &OsStr) -> String {
    let mut out = String::new();
    for chunk in p.as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' || c.is_control() {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            } else {
                out.push(c);
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_or_removed_after_the_scan_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            std::fs::write(dir.path().join(name), b"12345").unwrap();
        }
        let scan = scan(dir.path()).unwrap();
        assert_eq!(scan.files.len(), 3);
        std::fs::write(dir.path().join("a"), b"123456789").unwrap();
        std::fs::remove_file(dir.path().join("b")).unwrap();
        let db = tempfile::tempdir().unwrap();
        let r = init_from(&db.path().join("x.db"), &scan, 4096, false, &crate::util::progress::Silent).unwrap();
        assert_eq!(r.init.count, 1);
        assert_eq!(r.skipped.0, [(SkipReason::Changed, 2)]);
        let manifest = std::fs::read_to_string(&r.manifest).unwrap();
        assert!(manifest.ends_with("1\t5\tc\n"), "{manifest}");
    }

    #[test]
    fn a_budget_keeps_files_evenly_spaced() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10u8 {
            std::fs::write(dir.path().join(format!("f{i}")), vec![i; 100 + usize::from(i)]).unwrap();
        }
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        let all = scan(dir.path()).unwrap();
        let some = all.within_bytes(560);
        let names: Vec<String> = some.files.iter().map(|f| f.rel.display().to_string()).collect();
        assert_eq!(names, ["f0", "f2", "f4", "f6", "f8"], "every other file, not the first five");
        assert_eq!(all.within_bytes(u64::MAX).files.len(), 10);
        assert_eq!(all.within_bytes(1).files.len(), 1, "at least one file");
        let SizesFrom::Files { files_found, files_used, content_bytes, skipped, .. } = some.sizes_from(&all) else {
            panic!("files")
        };
        assert_eq!((files_found, files_used, content_bytes), (10, 5, 520));
        assert_eq!(skipped, ["1 empty files"]);
    }

    #[test]
    fn odd_names_are_escaped() {
        assert_eq!(escape_path(OsStr::from_bytes(b"a\tb\\c\xff")), "a\\x09b\\x5cc\\xff");
        assert_eq!(escape_path(OsStr::new("été/x")), "été/x");
    }
}
