//! The layer's volatile state: the namespace and file contents a program
//! on the mount sees (what a kernel's page cache and dentry cache would
//! hold), kept apart from what is on "disk" (the backing directory).
//!
//! Every file's current content is held in memory, so reads see every
//! write at once; what reached the disk is the backing directory plus, for
//! files synced before they had a durable name, an in-memory copy
//! (`orphan`). The layer is meant for crash-test datasets of a few MB, not
//! for benchmark-size data. What makes things durable is in `durable.rs`.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::fault::{FaultPlan, Op as FaultOp};
pub use super::reply::{Counters, Errno, Res};
use super::xattrs::{self, SetMode, Xattrs};

/// The root directory's inode number (FUSE's convention).
pub const ROOT: u64 = 1;

/// One change to a file's content not yet on disk, in the order made.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    Write { offset: u64, data: Vec<u8> },
    Truncate(u64),
}

#[derive(Debug)]
pub enum Body {
    File {
        /// What readers see now.
        data: Vec<u8>,
        /// Changes since the last fsync, oldest first.
        pending: Vec<Pending>,
        /// Content that reached the disk while the file had no durable name
        /// (fsync before the directory's fsync); written under its name when
        /// the name becomes durable.
        orphan: Option<Vec<u8>>,
    },
    Dir {
        entries: BTreeMap<OsString, u64>,
        /// The entries as they are on disk.
        on_disk: BTreeMap<OsString, u64>,
    },
}

#[derive(Debug)]
pub struct Node {
    pub body: Body,
    /// Parent directory and name on disk, if the node has a durable name.
    pub disk_name: Option<(u64, OsString)>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: SystemTime,
    /// Names in the current namespace (0 once unlinked).
    pub links: u32,
    /// Extended attributes, durable as the data is (see `xattrs.rs`).
    pub xattrs: Xattrs,
}

impl Node {
    pub fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir { .. })
    }

    pub fn size(&self) -> u64 {
        match &self.body {
            Body::File { data, .. } => data.len() as u64,
            Body::Dir { entries, .. } => entries.len() as u64,
        }
    }
}

pub struct Volatile {
    pub(super) backing: PathBuf,
    pub(super) nodes: HashMap<u64, Node>,
    next_ino: u64,
    /// After a power cut every request fails: the "machine" is off.
    pub(super) dead: bool,
    pub(super) faults: FaultPlan,
    pub counters: Counters,
}

impl Volatile {
    /// Reads the backing directory as the disk at power-on: everything in
    /// it is durable.
    pub fn load(backing: &Path, faults: FaultPlan) -> std::io::Result<Self> {
        let mut v = Volatile {
            backing: backing.to_path_buf(),
            nodes: HashMap::new(),
            next_ino: ROOT + 1,
            dead: false,
            faults,
            counters: Counters::default(),
        };
        let meta = std::fs::metadata(backing)?;
        v.nodes.insert(ROOT, v.node_from(&meta, backing, empty_dir())?);
        v.load_dir(ROOT, backing)?;
        Ok(v)
    }

    fn node_from(&self, meta: &std::fs::Metadata, path: &Path, body: Body) -> std::io::Result<Node> {
        use std::os::unix::fs::MetadataExt;
        Ok(Node {
            body,
            disk_name: None,
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            links: 1,
            xattrs: Xattrs::loaded(xattrs::read_from(path)?),
        })
    }

    fn load_dir(&mut self, dir: u64, path: &Path) -> std::io::Result<()> {
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            let body = if meta.is_dir() {
                empty_dir()
            } else if meta.is_file() {
                Body::File { data: std::fs::read(entry.path())?, pending: Vec::new(), orphan: None }
            } else {
                continue; // symlinks and devices are not part of any dataset
            };
            let ino = self.alloc();
            let mut node = self.node_from(&meta, &entry.path(), body)?;
            node.disk_name = Some((dir, entry.file_name()));
            self.nodes.insert(ino, node);
            if let Some(Body::Dir { entries, on_disk }) = self.nodes.get_mut(&dir).map(|n| &mut n.body) {
                entries.insert(entry.file_name(), ino);
                on_disk.insert(entry.file_name(), ino);
            }
            if meta.is_dir() {
                self.load_dir(ino, &entry.path())?;
            }
        }
        Ok(())
    }

    fn alloc(&mut self) -> u64 {
        self.next_ino += 1;
        self.next_ino - 1
    }

    pub(super) fn alive(&self) -> Res<()> {
        if self.dead {
            Err(libc::EIO)
        } else {
            Ok(())
        }
    }

    pub fn node(&self, ino: u64) -> Res<&Node> {
        self.alive()?;
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    fn node_mut(&mut self, ino: u64) -> Res<&mut Node> {
        self.alive()?;
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn entries(&self, dir: u64) -> Res<&BTreeMap<OsString, u64>> {
        match &self.node(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            Body::File { .. } => Err(libc::ENOTDIR),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> Res<&mut BTreeMap<OsString, u64>> {
        match &mut self.node_mut(dir)?.body {
            Body::Dir { entries, .. } => Ok(entries),
            Body::File { .. } => Err(libc::ENOTDIR),
        }
    }

    pub fn lookup(&self, dir: u64, name: &OsStr) -> Res<u64> {
        self.entries(dir)?.get(name).copied().ok_or(libc::ENOENT)
    }

    /// The directory's entries, `.` and `..` not included.
    pub fn list(&self, dir: u64) -> Res<Vec<(u64, bool, OsString)>> {
        let entries = self.entries(dir)?;
        Ok(entries.iter().map(|(n, &i)| (i, self.nodes.get(&i).is_some_and(Node::is_dir), n.clone())).collect())
    }

    /// A new file or directory: in the namespace at once, on disk only once
    /// its directory is fsync'd.
    pub fn create(&mut self, dir: u64, name: &OsStr, mode: u32, uid: u32, gid: u32, is_dir: bool) -> Res<u64> {
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let ino = self.alloc();
        let body =
            if is_dir { empty_dir() } else { Body::File { data: Vec::new(), pending: Vec::new(), orphan: None } };
        let mtime = SystemTime::now();
        let xattrs = Xattrs::default();
        let node = Node { body, disk_name: None, mode: mode & 0o7777, uid, gid, mtime, links: 1, xattrs };
        self.nodes.insert(ino, node);
        self.entries_mut(dir)?.insert(name.to_os_string(), ino);
        Ok(ino)
    }

    /// Removes a name. The node lives on (open handles, its disk name)
    /// until nothing refers to it.
    pub fn unlink(&mut self, dir: u64, name: &OsStr, want_dir: bool) -> Res<()> {
        let ino = self.lookup(dir, name)?;
        let node = self.node(ino)?;
        match (&node.body, want_dir) {
            (Body::Dir { .. }, false) => return Err(libc::EISDIR),
            (Body::File { .. }, true) => return Err(libc::ENOTDIR),
            (Body::Dir { entries, .. }, true) if !entries.is_empty() => return Err(libc::ENOTEMPTY),
            _ => {}
        }
        self.entries_mut(dir)?.remove(name);
        self.node_mut(ino)?.links = 0;
        Ok(())
    }

    /// Renames a file (directories are not renamed: no dataset needs it, and
    /// it would move every durable path below it).
    pub fn rename(&mut self, dir: u64, name: &OsStr, to_dir: u64, to_name: &OsStr, noreplace: bool) -> Res<()> {
        let ino = self.lookup(dir, name)?;
        if self.node(ino)?.is_dir() {
            return Err(libc::EXDEV);
        }
        self.entries(to_dir)?;
        if let Ok(old) = self.lookup(to_dir, to_name) {
            if noreplace {
                return Err(libc::EEXIST);
            }
            if old == ino {
                return Ok(());
            }
            if self.node(old)?.is_dir() {
                return Err(libc::EISDIR);
            }
            self.node_mut(old)?.links = 0;
        }
        self.entries_mut(dir)?.remove(name);
        self.entries_mut(to_dir)?.insert(to_name.to_os_string(), ino);
        Ok(())
    }

    pub fn read(&mut self, ino: u64, offset: u64, size: u32) -> Res<Vec<u8>> {
        self.faults.check(FaultOp::Read, &mut self.counters)?;
        match &self.node(ino)?.body {
            Body::File { data, .. } => {
                let start = (offset as usize).min(data.len());
                let end = start.saturating_add(size as usize).min(data.len());
                Ok(data[start..end].to_vec())
            }
            Body::Dir { .. } => Err(libc::EISDIR),
        }
    }

    pub fn write(&mut self, ino: u64, offset: u64, bytes: &[u8]) -> Res<u32> {
        self.alive()?;
        self.faults.check(FaultOp::Write, &mut self.counters)?;
        self.counters.writes += 1;
        let node = self.node_mut(ino)?;
        node.mtime = SystemTime::now();
        let Body::File { data, pending, .. } = &mut node.body else { return Err(libc::EISDIR) };
        let end = offset as usize + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(bytes);
        pending.push(Pending::Write { offset, data: bytes.to_vec() });
        Ok(bytes.len() as u32)
    }

    pub fn set_size(&mut self, ino: u64, size: u64) -> Res<()> {
        let node = self.node_mut(ino)?;
        node.mtime = SystemTime::now();
        let Body::File { data, pending, .. } = &mut node.body else { return Err(libc::EISDIR) };
        data.resize(size as usize, 0);
        pending.push(Pending::Truncate(size));
        Ok(())
    }

    pub fn set_mode(&mut self, ino: u64, mode: u32) -> Res<()> {
        self.node_mut(ino)?.mode = mode & 0o7777;
        Ok(())
    }

    pub fn get_xattr(&self, ino: u64, name: &OsStr) -> Res<&[u8]> {
        self.node(ino)?.xattrs.get(name)
    }

    pub fn list_xattrs(&self, ino: u64, privileged: bool) -> Res<Vec<u8>> {
        Ok(self.node(ino)?.xattrs.list(privileged))
    }

    /// setxattr(2): in effect at once, on disk at the node's next fsync.
    pub fn set_xattr(&mut self, ino: u64, name: &OsStr, value: &[u8], flags: i32) -> Res<()> {
        let mode = SetMode::from_flags(flags)?;
        self.node_mut(ino)?.xattrs.set(name, value, mode)
    }

    pub fn remove_xattr(&mut self, ino: u64, name: &OsStr) -> Res<()> {
        self.node_mut(ino)?.xattrs.remove(name)
    }

    /// Where a node with a durable name lives in the backing directory.
    pub(super) fn disk_path(&self, ino: u64) -> Option<PathBuf> {
        if ino == ROOT {
            return Some(self.backing.clone());
        }
        let (parent, name) = self.nodes.get(&ino)?.disk_name.as_ref()?;
        Some(self.disk_path(*parent)?.join(name))
    }
}

fn empty_dir() -> Body {
    Body::Dir { entries: BTreeMap::new(), on_disk: BTreeMap::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_see_writes_and_names_at_once() {
        let disk = tempfile::tempdir().unwrap();
        std::fs::write(disk.path().join("a"), b"old!").unwrap();
        let mut v = Volatile::load(disk.path(), FaultPlan::none()).unwrap();
        let a = v.lookup(ROOT, OsStr::new("a")).unwrap();
        assert_eq!(v.read(a, 0, 100).unwrap(), b"old!");
        v.write(a, 2, b"w!!").unwrap();
        assert_eq!(v.read(a, 0, 100).unwrap(), b"olw!!");
        let b = v.create(ROOT, OsStr::new("b"), 0o644, 0, 0, false).unwrap();
        assert_eq!(v.create(ROOT, OsStr::new("b"), 0o644, 0, 0, false), Err(libc::EEXIST));
        v.rename(ROOT, OsStr::new("b"), ROOT, OsStr::new("a"), false).unwrap();
        assert_eq!(v.lookup(ROOT, OsStr::new("a")), Ok(b));
        assert_eq!(v.list(ROOT).unwrap().len(), 1);
        assert_eq!(std::fs::read(disk.path().join("a")).unwrap(), b"old!", "the disk is untouched");
        assert!(!disk.path().join("b").exists());
    }
}
