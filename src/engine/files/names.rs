//! kvtest's file names for each key (`%06d` flat, `%02d/%02d/%02d` in a
//! tree), written into a reused buffer for the timed loop, and the keys
//! found in a directory.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use crate::records::EngineKind;
use crate::{Error, Result};

/// The path of one blob file, rewritten in place for each key so that the
/// timed loop builds paths without allocating. Holds a NUL-terminated C path.
pub struct BlobPath {
    buf: Vec<u8>,
    prefix: usize,
    layout: EngineKind,
    suffix: Box<[u8]>,
}

impl BlobPath {
    /// `suffix` is appended after the name (".tmp" for replace-by-rename).
    pub fn new(dir: &Path, layout: EngineKind, suffix: &[u8]) -> Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let mut buf = dir.as_os_str().as_bytes().to_vec();
        if buf.contains(&0) {
            return Err(Error::bad_input(dir, "path contains a NUL byte"));
        }
        buf.push(b'/');
        let prefix = buf.len();
        buf.reserve(32 + suffix.len());
        Ok(BlobPath { buf, prefix, layout, suffix: suffix.into() })
    }

    /// Points at `key`'s file: %06d flat, %02d/%02d/%02d in a tree.
    #[inline]
    pub fn set(&mut self, key: u32) -> &CStr {
        self.buf.truncate(self.prefix);
        push_name(&mut self.buf, self.layout, key);
        self.buf.extend_from_slice(&self.suffix);
        self.buf.push(0);
        // SAFETY: the prefix was checked for NUL bytes, names are digits and
        // '/', and exactly one NUL ends the buffer.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf) }
    }

    /// Points at the directory `key`'s file is in: the store's own (flat)
    /// or its %02d/%02d (tree).
    #[inline]
    pub fn set_dir(&mut self, key: u32) -> &CStr {
        self.buf.truncate(self.prefix);
        match self.layout {
            EngineKind::Tree => {
                push_name(&mut self.buf, self.layout, key);
                // Drop "/%02d", the file's own name.
                self.buf.truncate(self.buf.len() - 3);
            }
            _ => {
                self.buf.push(b'.');
            }
        }
        self.buf.push(0);
        // SAFETY: as in `set`.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf) }
    }

    /// The current path, for error messages (off the hot path).
    pub fn path(&self) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let end = self.buf.len().saturating_sub(1);
        PathBuf::from(std::ffi::OsStr::from_bytes(&self.buf[..end]))
    }
}

/// kvtest's relative name of `key`'s file.
pub fn blob_name(layout: EngineKind, key: u32) -> String {
    let mut v = Vec::with_capacity(16);
    push_name(&mut v, layout, key);
    String::from_utf8(v).expect("digits")
}

#[inline]
fn push_name(buf: &mut Vec<u8>, layout: EngineKind, key: u32) {
    match layout {
        EngineKind::Tree => {
            push_padded(buf, key / 10_000, 2);
            buf.push(b'/');
            push_padded(buf, (key / 100) % 100, 2);
            buf.push(b'/');
            push_padded(buf, key % 100, 2);
        }
        _ => push_padded(buf, key, 6),
    }
}

#[inline]
fn push_padded(buf: &mut Vec<u8>, mut v: u32, width: usize) {
    let mut digits = [b'0'; 10];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        v /= 10;
        n += 1;
        if v == 0 {
            break;
        }
    }
    n = n.max(width);
    buf.extend(digits[..n].iter().rev());
}

/// Keys of the blob files present under `dir`, ascending. Names that are
/// not kvtest names are ignored.
pub fn list_keys(dir: &Path, layout: EngineKind) -> Result<Vec<u32>> {
    let mut keys = Vec::new();
    match layout {
        EngineKind::Flat => {
            for name in dir_names(dir)? {
                if let Some(k) = parse_digits(&name, 6) {
                    keys.push(k);
                }
            }
        }
        EngineKind::Tree => {
            for a in dir_names(dir)? {
                let Some(ka) = parse_digits(&a, 2) else {
                    continue;
                };
                let da = dir.join(&a);
                if !da.is_dir() {
                    continue;
                }
                for b in dir_names(&da)? {
                    let Some(kb) = parse_digits(&b, 2).filter(|&v| v < 100) else {
                        continue;
                    };
                    let db = da.join(&b);
                    if !db.is_dir() {
                        continue;
                    }
                    for c in dir_names(&db)? {
                        if let Some(kc) = parse_digits(&c, 2).filter(|&v| v < 100) {
                            keys.push(ka * 10_000 + kb * 100 + kc);
                        }
                    }
                }
            }
        }
        other => {
            return Err(Error::bad_input(
                dir,
                format!("is a {} dataset, expected a directory of blob files", other.name()),
            ))
        }
    }
    keys.sort_unstable();
    Ok(keys)
}

/// Every blob file under `dir` (for cache eviction).
pub fn blob_files(dir: &Path, layout: EngineKind) -> Result<Vec<PathBuf>> {
    Ok(list_keys(dir, layout)?.into_iter().map(|k| dir.join(blob_name(layout, k))).collect())
}

fn dir_names(dir: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, "cannot list directory", e))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, "cannot list directory", e))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

fn parse_digits(name: &str, min_width: usize) -> Option<u32> {
    if name.len() < min_width || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvtest_names() {
        assert_eq!(blob_name(EngineKind::Flat, 1), "000001");
        assert_eq!(blob_name(EngineKind::Flat, 1_234_567), "1234567");
        assert_eq!(blob_name(EngineKind::Tree, 1), "00/00/01");
        assert_eq!(blob_name(EngineKind::Tree, 123_456), "12/34/56");
        assert_eq!(blob_name(EngineKind::Tree, 1_000_000), "100/00/00");
    }

    #[test]
    fn blob_path_rewrites_in_place() {
        let mut p = BlobPath::new(Path::new("/d"), EngineKind::Tree, b".tmp").unwrap();
        assert_eq!(p.set(10_203).to_str().unwrap(), "/d/01/02/03.tmp");
        let cap = p.buf.capacity();
        assert_eq!(p.set(7).to_str().unwrap(), "/d/00/00/07.tmp");
        assert_eq!(p.buf.capacity(), cap, "no reallocation per key");
        assert_eq!(p.path(), Path::new("/d/00/00/07.tmp"));
    }
}
