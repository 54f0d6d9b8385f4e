//! Extended attributes on the layer: what programs see at once, what is on
//! "disk", and the ext4 limits a program meets on the machine the layer
//! stands for. Served only on a mount that asks for them
//! (`Mounted::mount_with_xattrs`): serving them costs every write a round
//! trip (see `fs.rs`).
//!
//! Durability follows ext4, which keeps a file's xattrs in its inode and
//! one attribute block, both journaled metadata of that inode: a change
//! reaches the disk with the journal commit that `fsync` of that file (or
//! directory) waits for. `fdatasync` waits only for the commit of the
//! changes needed to read the data back (ext4's `i_datasync_tid`, POSIX's
//! "synchronized I/O data integrity"), which xattrs are not, so it does
//! not persist them here. An fsync of the parent directory persists
//! names, not the xattrs of the files it names (POSIX promises nothing
//! more; on ext4 it would commit them as a side effect of the shared
//! journal, as it would an unrelated rename). A node with no durable name
//! keeps the set that was synced aside (`orphan`), as file data does, and
//! it lands under the name once the name is durable.
//!
//! Names: only the `user.`, `trusted.` and `security.` namespaces, as on
//! ext4 (others: EOPNOTSUPP; an empty name after the prefix: EINVAL). The
//! kernel refuses `system.posix_acl_*` itself (the layer does not ask for
//! FUSE_POSIX_ACL), checks write permission for `user.` and CAP_SYS_ADMIN
//! for `trusted.`, and limits names to 255 bytes and values to 64 KiB
//! before a request reaches the layer.
//!
//! Size: all of a node's xattrs must fit in one 4 KiB ext4 attribute
//! block, sized as ext4 sizes it (a 32-byte header, a 4-byte end marker,
//! per attribute a 16-byte entry plus the name without its prefix, and the
//! value, each padded to 4 bytes); a set that would not fit fails with
//! ENOSPC, as ext4's does. ext4 with 256-byte inodes also keeps about 100
//! bytes in the inode itself, which is not modelled, so the layer refuses
//! a set at most that much earlier than ext4 would.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::reply::Res;

/// A node's xattrs, name to value.
pub type XattrMap = BTreeMap<OsString, Vec<u8>>;

/// One xattr change not yet on disk, in the order made.
#[derive(Debug, Clone, PartialEq)]
pub enum XattrChange {
    Set(OsString, Vec<u8>),
    Remove(OsString),
}

/// The ext4 attribute block every xattr of a node must fit in.
const BLOCK_BYTES: usize = 4096;
/// ext4_xattr_header at the start of the block, and the 4-byte zero that
/// ends the entry table.
const BLOCK_OVERHEAD: usize = 32 + 4;
/// ext4_xattr_entry without its name.
const ENTRY_BYTES: usize = 16;
/// The namespaces ext4 stores; it keeps each as a one-byte index, so the
/// prefix costs nothing in the block.
const NAMESPACES: [&str; 3] = ["user.", "trusted.", "security."];

/// Which `setxattr` flags were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetMode {
    /// Create or replace.
    Any,
    /// XATTR_CREATE: EEXIST if the name is there.
    Create,
    /// XATTR_REPLACE: ENODATA if it is not.
    Replace,
    /// Both flags: ext4 tests both, so the call always fails.
    Both,
}

impl SetMode {
    pub fn from_flags(flags: i32) -> Res<SetMode> {
        if flags & !(libc::XATTR_CREATE | libc::XATTR_REPLACE) != 0 {
            return Err(libc::EINVAL);
        }
        Ok(match (flags & libc::XATTR_CREATE != 0, flags & libc::XATTR_REPLACE != 0) {
            (false, false) => SetMode::Any,
            (true, false) => SetMode::Create,
            (false, true) => SetMode::Replace,
            (true, true) => SetMode::Both,
        })
    }
}

/// A node's xattrs as programs see them, the changes not yet synced, and
/// what reached the disk while the node had no durable name.
#[derive(Debug, Default)]
pub struct Xattrs {
    current: XattrMap,
    pending: Vec<XattrChange>,
    /// Synced while the node had no durable name; written under the name
    /// once it is durable.
    pub orphan: Option<XattrMap>,
}

impl Xattrs {
    /// A node loaded from the disk at power-on: what is on disk is synced.
    pub fn loaded(on_disk: XattrMap) -> Self {
        Xattrs { current: on_disk, ..Xattrs::default() }
    }

    pub fn get(&self, name: &OsStr) -> Res<&[u8]> {
        namespace_of(name)?;
        self.current.get(name).map(Vec::as_slice).ok_or(libc::ENODATA)
    }

    /// The names, each followed by a NUL, as listxattr(2) returns them;
    /// `trusted.` names only to a privileged caller, as ext4 lists them.
    pub fn list(&self, privileged: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for name in self.current.keys() {
            if privileged || !name.as_bytes().starts_with(b"trusted.") {
                out.extend_from_slice(name.as_bytes());
                out.push(0);
            }
        }
        out
    }

    pub fn set(&mut self, name: &OsStr, value: &[u8], mode: SetMode) -> Res<()> {
        namespace_of(name)?;
        let exists = self.current.contains_key(name);
        if matches!(mode, SetMode::Replace | SetMode::Both) && !exists {
            return Err(libc::ENODATA);
        }
        if matches!(mode, SetMode::Create | SetMode::Both) && exists {
            return Err(libc::EEXIST);
        }
        let others = self.current.iter().filter(|(n, _)| n.as_os_str() != name);
        let needed = BLOCK_OVERHEAD + block_bytes(name, value) + others.map(|(n, v)| block_bytes(n, v)).sum::<usize>();
        if needed > BLOCK_BYTES {
            return Err(libc::ENOSPC);
        }
        self.current.insert(name.to_os_string(), value.to_vec());
        self.pending.push(XattrChange::Set(name.to_os_string(), value.to_vec()));
        Ok(())
    }

    pub fn remove(&mut self, name: &OsStr) -> Res<()> {
        namespace_of(name)?;
        self.current.remove(name).ok_or(libc::ENODATA)?;
        self.pending.push(XattrChange::Remove(name.to_os_string()));
        Ok(())
    }

    /// The changes since the last sync, oldest first; they are no longer
    /// pending.
    pub fn take_pending(&mut self) -> Vec<XattrChange> {
        std::mem::take(&mut self.pending)
    }
}

/// EOPNOTSUPP outside ext4's namespaces, EINVAL for a bare prefix.
fn namespace_of(name: &OsStr) -> Res<&'static str> {
    let bytes = name.as_bytes();
    let ns = NAMESPACES.iter().find(|p| bytes.starts_with(p.as_bytes())).ok_or(libc::EOPNOTSUPP)?;
    if bytes.len() == ns.len() {
        return Err(libc::EINVAL);
    }
    Ok(ns)
}

/// What one attribute takes in an ext4 attribute block (EXT4_XATTR_LEN of
/// the name without its prefix, plus EXT4_XATTR_SIZE of the value).
fn block_bytes(name: &OsStr, value: &[u8]) -> usize {
    let prefix = namespace_of(name).map_or(0, str::len);
    pad4(ENTRY_BYTES + name.len() - prefix) + pad4(value.len())
}

fn pad4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The reply to getxattr/listxattr for a caller's buffer of `size`.
#[derive(Debug, PartialEq)]
pub enum Sized<'a> {
    /// `size` 0: the caller asks how big a buffer it needs.
    Needs(u32),
    Data(&'a [u8]),
}

/// ERANGE when the caller's buffer is too small, as the system calls say.
pub fn fit(bytes: &[u8], size: u32) -> Res<Sized<'_>> {
    let len = u32::try_from(bytes.len()).map_err(|_| libc::E2BIG)?;
    match size {
        0 => Ok(Sized::Needs(len)),
        s if s < len => Err(libc::ERANGE),
        _ => Ok(Sized::Data(bytes)),
    }
}

/// Applies changes, oldest first, to an in-memory copy of a disk's set.
pub fn apply_to_map(map: &mut XattrMap, changes: &[XattrChange]) {
    for c in changes {
        match c {
            XattrChange::Set(n, v) => {
                map.insert(n.clone(), v.clone());
            }
            XattrChange::Remove(n) => {
                map.remove(n);
            }
        }
    }
}

/// Applies changes, oldest first, to a file or directory in the backing
/// directory. A removal of a name already gone is no error.
pub fn apply_to_path(path: &Path, changes: &[XattrChange]) -> std::io::Result<()> {
    for c in changes {
        match c {
            XattrChange::Set(n, v) => xattr::set(path, n, v)?,
            XattrChange::Remove(n) => match xattr::remove(path, n) {
                Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
                other => other?,
            },
        }
    }
    Ok(())
}

/// The xattrs of a file or directory in the backing directory (none where
/// its filesystem has no xattrs).
pub fn read_from(path: &Path) -> std::io::Result<XattrMap> {
    let mut map = XattrMap::new();
    let names = match xattr::list(path) {
        Ok(names) => names,
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(map),
        Err(e) => return Err(e),
    };
    for name in names {
        if namespace_of(&name).is_err() {
            continue; // system.* (ACLs) belong to the backing filesystem
        }
        if let Some(value) = xattr::get(path, &name)? {
            map.insert(name, value);
        }
    }
    Ok(map)
}

/// Makes the xattrs of `path` exactly `map` (a node given a durable name).
pub fn replace_at(path: &Path, map: &XattrMap) -> std::io::Result<()> {
    let mut changes: Vec<XattrChange> =
        read_from(path)?.into_keys().filter(|n| !map.contains_key(n)).map(XattrChange::Remove).collect();
    changes.extend(map.iter().map(|(n, v)| XattrChange::Set(n.clone(), v.clone())));
    apply_to_path(path, &changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    #[test]
    fn flags_and_missing_names_give_the_system_calls_errors() {
        let mut x = Xattrs::default();
        let (create, replace) = (SetMode::Create, SetMode::Replace);
        assert_eq!(x.set(os("user.a"), b"1", replace), Err(libc::ENODATA));
        x.set(os("user.a"), b"1", create).unwrap();
        assert_eq!(x.set(os("user.a"), b"2", create), Err(libc::EEXIST));
        x.set(os("user.a"), b"2", replace).unwrap();
        x.set(os("user.a"), b"3", SetMode::Any).unwrap();
        assert_eq!(x.set(os("user.a"), b"4", SetMode::Both), Err(libc::EEXIST));
        assert_eq!(x.set(os("user.b"), b"4", SetMode::Both), Err(libc::ENODATA));
        assert_eq!(x.get(os("user.a")), Ok(&b"3"[..]));
        assert_eq!(x.get(os("user.b")), Err(libc::ENODATA));
        assert_eq!(x.remove(os("user.b")), Err(libc::ENODATA));
        assert_eq!(x.set(os("system.x"), b"", SetMode::Any), Err(libc::EOPNOTSUPP));
        assert_eq!(x.set(os("other.x"), b"", SetMode::Any), Err(libc::EOPNOTSUPP));
        assert_eq!(x.set(os("user."), b"", SetMode::Any), Err(libc::EINVAL));
        assert_eq!(SetMode::from_flags(libc::XATTR_CREATE), Ok(SetMode::Create));
        assert_eq!(SetMode::from_flags(4), Err(libc::EINVAL));
        x.set(os("trusted.t"), b"", SetMode::Any).unwrap();
        x.remove(os("user.a")).unwrap();
        assert_eq!(x.list(true), b"trusted.t\0");
        assert_eq!(x.list(false), b"", "trusted names only to root, as ext4 lists them");
        let changes = x.take_pending();
        assert_eq!(changes.len(), 5, "every successful change, in order: {changes:?}");
        assert_eq!(changes[4], XattrChange::Remove(os("user.a").into()));
        assert!(x.take_pending().is_empty());
    }

    #[test]
    fn buffers_too_small_are_erange_and_size_zero_asks_the_size() {
        assert_eq!(fit(b"abc", 0), Ok(Sized::Needs(3)));
        assert_eq!(fit(b"abc", 2), Err(libc::ERANGE));
        assert_eq!(fit(b"abc", 3), Ok(Sized::Data(b"abc")));
        assert_eq!(fit(b"", 0), Ok(Sized::Needs(0)));
    }

    #[test]
    fn all_of_a_nodes_xattrs_fit_in_one_ext4_block() {
        // One attribute "user.v" (name 1 byte after the prefix: entry 20
        // bytes) leaves 4096 - 36 - 20 = 4040 bytes for its value.
        let mut x = Xattrs::default();
        assert_eq!(x.set(os("user.v"), &[0; 4041], SetMode::Any), Err(libc::ENOSPC));
        x.set(os("user.v"), &[0; 4040], SetMode::Any).unwrap();
        assert_eq!(x.set(os("user.w"), b"", SetMode::Any), Err(libc::ENOSPC), "the block is full");
        x.set(os("user.v"), &[0; 4000], SetMode::Any).unwrap();
        x.set(os("user.w"), &[1; 20], SetMode::Any).unwrap();
        assert_eq!(x.get(os("user.v")).unwrap().len(), 4000, "a replaced value frees its old room");
        let mut many = Xattrs::default();
        let mut n = 0;
        while many.set(os(&format!("user.k{n:04}")), b"v", SetMode::Any).is_ok() {
            n += 1;
        }
        // Each: entry 16 + name 5 -> 24, value 1 -> 4.
        assert_eq!(n, (4096 - 36) / 28);
    }

    #[test]
    fn changes_apply_in_order_to_a_map_and_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"").unwrap();
        xattr::set(&f, "user.stale", b"x").unwrap();
        let changes = vec![
            XattrChange::Set("user.a".into(), b"1".to_vec()),
            XattrChange::Set("user.b".into(), b"2".to_vec()),
            XattrChange::Remove("user.a".into()),
            XattrChange::Remove("user.never".into()),
            XattrChange::Set("user.b".into(), b"3".to_vec()),
        ];
        let mut map = XattrMap::new();
        apply_to_map(&mut map, &changes);
        apply_to_path(&f, &changes).unwrap();
        assert_eq!(map, XattrMap::from([("user.b".into(), b"3".to_vec())]));
        assert_eq!(read_from(&f).unwrap().len(), 2, "user.b and the stale one");
        replace_at(&f, &map).unwrap();
        assert_eq!(read_from(&f).unwrap(), map);
    }
}

/// Through a real mount, with the system calls programs make.
#[cfg(test)]
mod mounted_tests {
    use super::super::mount::scratch_dirs;
    use super::super::{FaultPlan, Model, Mounted};
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use std::ffi::CString;
    use std::io::Write;

    fn c(s: &[u8]) -> CString {
        CString::new(s).unwrap()
    }

    fn last_errno<T>() -> Result<T, i32> {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    fn setx(p: &Path, name: &str, value: &[u8], flags: i32) -> Result<(), i32> {
        let (p, n) = (c(p.as_os_str().as_bytes()), c(name.as_bytes()));
        // SAFETY: NUL-terminated strings; value is valid for its length.
        let r = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), flags) };
        if r == 0 {
            Ok(())
        } else {
            last_errno()
        }
    }

    /// getxattr(2) with a buffer of `size` bytes (0: the size query); the
    /// size it returned and the bytes.
    fn getx(p: &Path, name: &str, size: usize) -> Result<(usize, Vec<u8>), i32> {
        let (p, n) = (c(p.as_os_str().as_bytes()), c(name.as_bytes()));
        let mut buf = vec![0u8; size];
        // SAFETY: as above; buf is writable for `size` bytes.
        let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size) };
        if r < 0 {
            return last_errno();
        }
        buf.truncate(r as usize);
        Ok((r as usize, buf))
    }

    fn listx(p: &Path, size: usize) -> Result<(usize, Vec<u8>), i32> {
        let p = c(p.as_os_str().as_bytes());
        let mut buf = vec![0u8; size];
        // SAFETY: as above.
        let r = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), size) };
        if r < 0 {
            return last_errno();
        }
        buf.truncate(r as usize);
        Ok((r as usize, buf))
    }

    fn removex(p: &Path, name: &str) -> Result<(), i32> {
        let (p, n) = (c(p.as_os_str().as_bytes()), c(name.as_bytes()));
        // SAFETY: NUL-terminated strings.
        if unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) } == 0 {
            Ok(())
        } else {
            last_errno()
        }
    }

    fn on_disk(path: &Path) -> XattrMap {
        read_from(path).unwrap()
    }

    fn map(list: &[(&str, &[u8])]) -> XattrMap {
        list.iter().map(|(n, v)| (OsString::from(n), v.to_vec())).collect()
    }

    fn sync_dir(p: &Path) {
        std::fs::File::open(p).unwrap().sync_all().unwrap();
    }

    #[test]
    fn the_system_calls_answer_as_on_ext4() {
        let (_dir, disk, mnt) = scratch_dirs();
        std::fs::write(disk.join("f"), b"x").unwrap();
        xattr::set(disk.join("f"), "user.kept", b"on disk").unwrap();
        let m = Mounted::mount_with_xattrs(&disk, &mnt, FaultPlan::none()).unwrap_or_else(|e| panic!("{e}"));
        let f = mnt.join("f");
        assert_eq!(getx(&f, "user.kept", 0), Ok((7, Vec::new())), "size 0 asks the size");
        assert_eq!(getx(&f, "user.kept", 6), Err(libc::ERANGE));
        assert_eq!(getx(&f, "user.kept", 7), Ok((7, b"on disk".to_vec())));
        assert_eq!(getx(&f, "user.none", 64), Err(libc::ENODATA));
        assert_eq!(setx(&f, "user.kept", b"v", libc::XATTR_CREATE), Err(libc::EEXIST));
        assert_eq!(setx(&f, "user.none", b"v", libc::XATTR_REPLACE), Err(libc::ENODATA));
        setx(&f, "user.added", b"", libc::XATTR_CREATE).unwrap();
        assert_eq!(getx(&f, "user.added", 0), Ok((0, Vec::new())), "an empty value is a value");
        assert_eq!(listx(&f, 0).map(|r| r.0), Ok(21));
        assert_eq!(listx(&f, 20), Err(libc::ERANGE));
        assert_eq!(listx(&f, 64), Ok((21, b"user.added\0user.kept\0".to_vec())));
        assert_eq!(removex(&f, "user.none"), Err(libc::ENODATA));
        removex(&f, "user.added").unwrap();
        assert_eq!(setx(&f, "user.big", &[7; 4050], 0), Err(libc::ENOSPC), "past one 4 KiB block");
        assert_eq!(setx(&f, "user.big", &[7; 4000], 0), Ok(()));
        assert_eq!(setx(&f, "nonamespace", b"v", 0), Err(libc::EOPNOTSUPP));
        std::fs::create_dir(mnt.join("d")).unwrap();
        setx(&mnt.join("d"), "user.on_a_dir", b"1", 0).unwrap();
        assert_eq!(getx(&mnt.join("d"), "user.on_a_dir", 8), Ok((1, b"1".to_vec())));
        // O_TMPFILE: fuser has no FUSE_TMPFILE, so the kernel answers
        // EOPNOTSUPP, which an object server takes as "use a named temporary file".
        let d = c(mnt.as_os_str().as_bytes());
        // SAFETY: NUL-terminated path; the descriptor is closed if opened.
        let fd = unsafe { libc::open(d.as_ptr(), libc::O_TMPFILE | libc::O_WRONLY, 0o600) };
        let err = std::io::Error::last_os_error().raw_os_error();
        if fd >= 0 {
            // SAFETY: fd was just opened.
            unsafe { libc::close(fd) };
        }
        assert_eq!((fd, err), (-1, Some(libc::EOPNOTSUPP)));
        drop(m);
    }

    #[test]
    fn a_mount_without_xattrs_does_not_support_them() {
        let (_dir, disk, mnt) = scratch_dirs();
        std::fs::write(disk.join("f"), b"x").unwrap();
        let m = Mounted::mount(&disk, &mnt, FaultPlan::none()).unwrap_or_else(|e| panic!("{e}"));
        let f = mnt.join("f");
        assert_eq!(setx(&f, "user.a", b"1", 0), Err(libc::EOPNOTSUPP));
        assert_eq!(getx(&f, "user.a", 8), Err(libc::EOPNOTSUPP));
        assert_eq!(listx(&f, 8), Err(libc::EOPNOTSUPP));
        assert_eq!(removex(&f, "user.a"), Err(libc::EOPNOTSUPP));
        drop(m);
    }

    #[test]
    fn a_cut_keeps_the_xattrs_set_before_the_files_fsync_and_no_later_ones() {
        let (_dir, disk, mnt) = scratch_dirs();
        std::fs::write(disk.join("old"), b"x").unwrap();
        xattr::set(disk.join("old"), "user.kept", b"on disk").unwrap();
        let m = Mounted::mount_with_xattrs(&disk, &mnt, FaultPlan::none()).unwrap_or_else(|e| panic!("{e}"));
        // On a file with a durable name, never fsync'd: nothing changes.
        setx(&mnt.join("old"), "user.kept", b"unsynced", 0).unwrap();
        setx(&mnt.join("old"), "user.added", b"unsynced", 0).unwrap();
        // A new file: data and xattr, fsync, then the directory's fsync.
        let mut synced = std::fs::File::create(mnt.join("synced")).unwrap();
        synced.write_all(b"body").unwrap();
        setx(&mnt.join("synced"), "user.object.metadata", b"pickled", 0).unwrap();
        synced.sync_all().unwrap();
        sync_dir(&mnt);
        setx(&mnt.join("synced"), "user.after_fsync", b"late", 0).unwrap();
        removex(&mnt.join("synced"), "user.object.metadata").unwrap();
        // fdatasync persists the data and not the xattrs.
        let mut ds = std::fs::File::create(mnt.join("datasync")).unwrap();
        ds.write_all(b"data").unwrap();
        setx(&mnt.join("datasync"), "user.x", b"1", 0).unwrap();
        ds.sync_data().unwrap();
        sync_dir(&mnt);
        assert_eq!(getx(&mnt.join("synced"), "user.after_fsync", 16), Ok((4, b"late".to_vec())));
        m.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap_or_else(|e| panic!("{e}"));
        drop((synced, ds));
        assert_eq!(on_disk(&disk.join("old")), map(&[("user.kept", b"on disk")]));
        assert_eq!(on_disk(&disk.join("synced")), map(&[("user.object.metadata", b"pickled")]));
        assert_eq!(std::fs::read(disk.join("datasync")).unwrap(), b"data");
        assert_eq!(on_disk(&disk.join("datasync")), map(&[]));
        // Power back on: the layer serves what the disk kept.
        let m = Mounted::mount_with_xattrs(&disk, &mnt, FaultPlan::none()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(getx(&mnt.join("synced"), "user.object.metadata", 64), Ok((7, b"pickled".to_vec())));
        assert_eq!(getx(&mnt.join("synced"), "user.after_fsync", 64), Err(libc::ENODATA));
        assert_eq!(listx(&mnt.join("old"), 64), Ok((10, b"user.kept\0".to_vec())));
        drop(m);
    }
}
