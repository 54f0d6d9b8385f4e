//! The unprivileged user a server runs as when blobbench runs as root
//! (PostgreSQL refuses root), and the switch to it between fork and exec.

use std::ffi::CString;

/// The user asked for does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoSuchUser;

/// A user and its primary group, looked up once before any fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
}

impl RunAs {
    /// The user `name`, when this process is root and it exists; None
    /// when not root (programs then run as ourselves). `Err(NoSuchUser)` when
    /// root and there is no such user: the caller names what to install.
    pub fn when_root(name: &str) -> Result<Option<RunAs>, NoSuchUser> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let cname = CString::new(name).map_err(|_| NoSuchUser)?;
        // SAFETY: getpwnam reads a NUL-terminated name; the result is copied
        // out at once, before any other call could reuse its static buffer.
        let pw = unsafe { libc::getpwnam(cname.as_ptr()) };
        if pw.is_null() {
            return Err(NoSuchUser);
        }
        // SAFETY: pw is non-null and points to a valid passwd entry.
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        Ok(Some(RunAs { uid, gid }))
    }

    /// Becomes this user: no supplementary groups, its group, its uid.
    /// Only async-signal-safe calls, so it may run between fork and exec.
    pub fn become_it(self) -> std::io::Result<()> {
        // SAFETY: setgroups, setgid and setuid only change this process's credentials.
        unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(self.gid) != 0 || libc::setuid(self.uid) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Gives `path` to this user (a directory a server must write in).
    pub fn chown(self, path: &std::path::Path) -> std::io::Result<()> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid))
    }
}
