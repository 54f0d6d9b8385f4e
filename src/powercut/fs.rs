//! The FUSE side: each kernel request becomes a call on the volatile state.
//!
//! File locks are not implemented here on purpose: the layer does not ask
//! for FUSE_POSIX_LOCKS, so the kernel keeps fcntl() byte-range locks
//! itself, which is all SQLite needs with one writer process. Shared
//! writable mmap (SQLite's WAL index, `-shm`) works because files are not
//! opened with direct I/O: the kernel's page cache holds the mapping and
//! writes it back through `write` like any other write.
//!
//! O_TMPFILE is not served: fuser 0.18 has no FUSE_TMPFILE request, so it
//! answers ENOSYS and the kernel gives the program EOPNOTSUPP, on which
//! programs that try it (an object server) fall back to a named
//! temporary file.

use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use super::state::{Node, Res, Volatile};
use super::xattrs::{fit, Sized};

/// How long the kernel may cache names and attributes. Every change goes
/// through this layer, so what it cached stays true until the unmount.
const TTL: Duration = Duration::from_secs(60);

pub struct PowerCutFs {
    pub state: Arc<Mutex<Volatile>>,
    /// Serve the xattr calls. Off, they answer ENOSYS, which the kernel
    /// remembers for the connection and turns into EOPNOTSUPP. That is
    /// worth having: once getxattr is served, the kernel asks it for
    /// `security.capability` before every write(2) (to drop file
    /// capabilities; FUSE never marks an inode as having none), one more
    /// round trip to the layer per write.
    pub xattrs: bool,
}

impl PowerCutFs {
    fn lock(&self) -> MutexGuard<'_, Volatile> {
        // A panic while holding the lock leaves the state as it was at the
        // panic; serving it is better than wedging the mount.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn attr(ino: u64, n: &Node) -> FileAttr {
    let size = n.size();
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: n.mtime,
        mtime: n.mtime,
        ctime: n.mtime,
        crtime: SystemTime::UNIX_EPOCH,
        kind: if n.is_dir() { FileType::Directory } else { FileType::RegularFile },
        perm: n.mode as u16,
        nlink: if n.is_dir() { 2 } else { n.links },
        uid: n.uid,
        gid: n.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn errno(e: i32) -> Errno {
    Errno::from_i32(e)
}

impl PowerCutFs {
    fn entry_of(&self, r: Res<u64>, reply: ReplyEntry) {
        let s = self.lock();
        match r.and_then(|ino| s.node(ino).map(|n| attr(ino, n))) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn empty(r: Res<()>, reply: ReplyEmpty) {
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    /// getxattr/listxattr's answer: the size asked for, the bytes, or
    /// ERANGE when the caller's buffer is too small.
    fn xattr_reply(r: Res<&[u8]>, size: u32, reply: ReplyXattr) {
        match r.and_then(|bytes| fit(bytes, size)) {
            Ok(Sized::Needs(n)) => reply.size(n),
            Ok(Sized::Data(d)) => reply.data(d),
            Err(e) => reply.error(errno(e)),
        }
    }
}

impl Filesystem for PowerCutFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.lock().lookup(parent.0, name);
        self.entry_of(r, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.lock().node(ino.0) {
            Ok(n) => reply.attr(&TTL, &attr(ino.0, n)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut s = self.lock();
        let r = (|| {
            if let Some(len) = size {
                s.set_size(ino.0, len)?;
            }
            if let Some(m) = mode {
                s.set_mode(ino.0, m)?;
            }
            s.node(ino.0).map(|n| attr(ino.0, n))
        })();
        match r {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let r = self.lock().create(parent.0, name, mode & !umask, req.uid(), req.gid(), true);
        self.entry_of(r, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        Self::empty(self.lock().unlink(parent.0, name, false), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        Self::empty(self.lock().unlink(parent.0, name, true), reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.contains(RenameFlags::RENAME_EXCHANGE) || flags.contains(RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let noreplace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        Self::empty(self.lock().rename(parent.0, name, newparent.0, newname, noreplace), reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.lock().node(ino.0) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.lock().read(ino.0, offset, size) {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.lock().write(ino.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        Self::empty(self.lock().sync_file(ino.0, datasync), reply);
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let list = match self.lock().list(ino.0) {
            Ok(l) => l,
            Err(e) => return reply.error(errno(e)),
        };
        let dots = [(ino.0, true, ".".into()), (ino.0, true, "..".into())];
        for (i, (child, is_dir, name)) in dots.into_iter().chain(list).enumerate().skip(offset as usize) {
            let kind = if is_dir { FileType::Directory } else { FileType::RegularFile };
            if reply.add(INodeNo(child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        Self::empty(self.lock().sync_dir(ino.0, datasync), reply);
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        Self::empty(self.lock().set_xattr(ino.0, name, value, flags), reply);
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        Self::xattr_reply(self.lock().get_xattr(ino.0, name), size, reply);
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        let names = self.lock().list_xattrs(ino.0, req.uid() == 0);
        Self::xattr_reply(names.as_deref().map_err(|e| *e), size, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        if !self.xattrs {
            return reply.error(Errno::ENOSYS);
        }
        Self::empty(self.lock().remove_xattr(ino.0, name), reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let backing = self.lock().backing.clone();
        match nix_statvfs(&backing) {
            Some(s) => reply.statfs(s.0, s.1, s.2, 0, 0, 4096, 255, 4096),
            None => reply.error(Errno::EIO),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        Self::empty(self.lock().node(ino.0).map(|_| ()), reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut s = self.lock();
        let r = s.create(parent.0, name, mode & !umask, req.uid(), req.gid(), false);
        match r.and_then(|ino| s.node(ino).map(|n| attr(ino, n))) {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(errno(e)),
        }
    }
}

/// Blocks (4 KiB), free and available, of the backing directory.
fn nix_statvfs(path: &std::path::Path) -> Option<(u64, u64, u64)> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: c is NUL-terminated; st is written by statvfs before use.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        let scale = |n: u64| n.saturating_mul(st.f_frsize) / 4096;
        Some((scale(st.f_blocks), scale(st.f_bfree), scale(st.f_bavail)))
    }
}
