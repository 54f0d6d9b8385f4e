//! Mounting the layer, cutting its power, and never leaving a mount
//! behind: the guard unmounts on drop (errors, panics, Ctrl-C all unwind
//! through it), fusermount3's `auto_unmount` unmounts when this process is
//! killed, and [`clean_stale`] removes what a killed run left anyway.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fuser::{BackgroundSession, Config, MountOption, SessionACL};
use rand::rngs::SmallRng;

use super::fault::FaultPlan;
use super::fs::PowerCutFs;
use super::model::{CutStats, Model};
use super::state::{Counters, Volatile};
use crate::{Error, Result};

/// The mount's source name; the owner's pid follows it, so a later run can
/// tell a live mount of another run from one whose owner is gone.
const FS_NAME: &str = "blobbench-powercut";

/// A mounted layer. Dropping it unmounts, with the volatile state lost.
pub struct Mounted {
    session: Option<BackgroundSession>,
    state: Arc<Mutex<Volatile>>,
    mountpoint: PathBuf,
}

impl Mounted {
    /// Mounts the layer over `backing` at `mountpoint` (an empty directory).
    pub fn mount(backing: &Path, mountpoint: &Path, faults: FaultPlan) -> Result<Self> {
        let v =
            Volatile::load(backing, faults).map_err(|e| Error::io(backing, "cannot read the backing directory", e))?;
        let state = Arc::new(Mutex::new(v));
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName(format!("{FS_NAME}-{}", std::process::id())),
            MountOption::Subtype("blobbench".into()),
            MountOption::AutoUnmount,
            MountOption::DefaultPermissions,
        ];
        config.acl = SessionACL::RootAndOwner;
        let fs = PowerCutFs { state: Arc::clone(&state) };
        let session = fuser::spawn_mount(fs, mountpoint, &config).map_err(|e| mount_error(mountpoint, e))?;
        Ok(Mounted { session: Some(session), state, mountpoint: mountpoint.to_path_buf() })
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    pub fn counters(&self) -> Counters {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).counters
    }

    /// The power cut: whatever the model lets through reaches the backing
    /// directory, the rest is dropped, and the layer is unmounted. Stop
    /// every process writing to the mount first.
    pub fn cut(mut self, model: Model, rng: &mut SmallRng) -> Result<CutStats> {
        let stats = {
            let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let backing = s.backing.clone();
            s.cut(model, rng).map_err(|e| Error::io(&backing, "cannot write the backing directory", e))?
        };
        self.unmount()?;
        Ok(stats)
    }

    /// An orderly unmount: nothing pending is written (there is no
    /// shutdown, only power cuts), so call [`Mounted::cut`] to decide what
    /// lands.
    ///
    /// The kernel connection is aborted first (as pulling the plug would):
    /// requests still in flight fail at once, so a file left open on the
    /// mount cannot make the unmount wait.
    pub fn unmount(&mut self) -> Result<()> {
        if let Some(s) = self.session.take() {
            self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).dead = true;
            let conn = layer_mounts().into_iter().find(|m| m.mountpoint == self.mountpoint).map(|m| m.device);
            if let Some(dev) = conn {
                abort_connection(dev);
            }
            detach(&self.mountpoint);
            s.umount_and_join().map_err(|e| Error::io(&self.mountpoint, "cannot unmount the power-cut layer", e))?;
        }
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.unmount();
    }
}

fn mount_error(mountpoint: &Path, e: std::io::Error) -> Error {
    let hint = if e.kind() == std::io::ErrorKind::NotFound {
        " (is fuse3 installed? fusermount3 is needed: apt-get install fuse3)"
    } else if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
        " (mounting FUSE needs /dev/fuse access and fusermount3; run as root or in the fuse group)"
    } else {
        ""
    };
    Error::io(mountpoint, &format!("cannot mount the power-cut layer{hint}"), e)
}

/// A layer mount found in the mount table.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerMount {
    pub mountpoint: PathBuf,
    /// The process that mounted it.
    pub owner: Option<u32>,
    /// The kernel's device number, which names the connection in fusectl.
    pub device: u64,
}

const FUSECTL: &str = "/sys/fs/fuse/connections";

/// Aborts a FUSE connection through fusectl (mounting fusectl first if it
/// is not): every request waiting on the server fails with ENOTCONN.
/// Best effort: without fusectl an unmount can still wait for open files.
fn abort_connection(device: u64) {
    let abort = Path::new(FUSECTL).join(device.to_string()).join("abort");
    if !abort.exists() {
        let (src, target, fstype) = (c"fusectl", c"/sys/fs/fuse/connections", c"fusectl");
        // SAFETY: NUL-terminated constants; a failed mount changes nothing.
        unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    }
    let _ = std::fs::write(abort, b"1");
}

/// Lazy unmount: never waits on the server, alive or dead.
fn detach(mountpoint: &Path) -> bool {
    let c = std::ffi::CString::new(mountpoint.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: c is NUL-terminated.
    (unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) == 0 })
        || std::process::Command::new("fusermount3")
            .arg("-uz")
            .arg(mountpoint)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Every power-cut layer mounted on this machine, from /proc/self/mountinfo
/// (reading it never touches the mounts, so a dead one cannot hang us).
pub fn layer_mounts() -> Vec<LayerMount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(parse_mountinfo_line).collect()
}

fn parse_mountinfo_line(line: &str) -> Option<LayerMount> {
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let (major, minor) = fields.get(2)?.split_once(':')?;
    let device = (major.parse::<u64>().ok()? << 20) | minor.parse::<u64>().ok()?;
    let mountpoint = fields.get(4)?;
    let mut r = right.split(' ');
    let (fstype, source) = (r.next()?, r.next()?);
    let owner = source.strip_prefix(FS_NAME)?.strip_prefix('-').map(|p| p.parse().ok());
    if !fstype.starts_with("fuse") {
        return None;
    }
    Some(LayerMount { mountpoint: PathBuf::from(unescape(mountpoint)), owner: owner.flatten(), device })
}

/// mountinfo writes space, tab, newline and backslash as \ooo.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b.get(i + 1..i + 4).filter(|o| b[i] == b'\\' && o.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(o) = oct {
            out.push((o[0] - b'0') * 64 + (o[1] - b'0') * 8 + (o[2] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid == std::process::id() || unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Unmounts layer mounts under `dir` whose owner is gone (a killed run) and
/// returns them. A mount that cannot be removed is an error that says how.
pub fn clean_stale(dir: &Path) -> Result<Vec<PathBuf>> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut cleaned = Vec::new();
    for m in layer_mounts() {
        if !m.mountpoint.starts_with(&dir) || m.owner.is_some_and(alive) {
            continue;
        }
        abort_connection(m.device);
        if !detach(&m.mountpoint) {
            return Err(Error::bad_input(
                &m.mountpoint,
                format!(
                    "a power-cut layer left mounted by a killed run; unmount it with: fusermount3 -uz '{}'",
                    m.mountpoint.display()
                ),
            ));
        }
        cleaned.push(m.mountpoint);
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_read_with_owner_and_escapes() {
        let line = "98 29 0:52 / /tmp/a\\040b/mnt rw,nosuid,nodev,relatime shared:1 - fuse.blobbench \
                    blobbench-powercut-4242 rw,user_id=0,group_id=0,default_permissions,allow_other";
        assert_eq!(
            parse_mountinfo_line(line),
            Some(LayerMount { mountpoint: PathBuf::from("/tmp/a b/mnt"), owner: Some(4242), device: 52 })
        );
        let other = "23 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw";
        assert_eq!(parse_mountinfo_line(other), None);
    }
}

#[cfg(test)]
mod mounted_tests {
    use super::*;
    use rand::SeedableRng;

    /// A real mount: what the program sees, what the disk keeps, and an
    /// SQLite WAL database (fcntl locks, mmapped -shm) working on it.
    #[test]
    fn a_real_mount_keeps_only_what_was_synced() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, mnt) = (dir.path().join("disk"), dir.path().join("mnt"));
        std::fs::create_dir(&disk).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        std::fs::write(disk.join("kept"), b"old").unwrap();
        let m = Mounted::mount(&disk, &mnt, FaultPlan::none()).unwrap();
        assert!(layer_mounts().iter().any(|l| l.mountpoint == mnt && l.owner == Some(std::process::id())));
        std::fs::write(mnt.join("kept"), b"new, unsynced").unwrap();
        assert_eq!(std::fs::read(mnt.join("kept")).unwrap(), b"new, unsynced");
        let f = std::fs::File::create(mnt.join("synced")).unwrap();
        std::io::Write::write_all(&mut &f, b"data").unwrap();
        f.sync_all().unwrap();
        std::fs::File::open(&mnt).unwrap().sync_all().unwrap();
        drop(f);
        let conn = rusqlite::Connection::open(mnt.join("t.db")).unwrap();
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        conn.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(x); INSERT INTO t VALUES(42);").unwrap();
        // Left open: the cut must not wait for it. (Its handles close on the
        // dead mount when it drops.)
        m.cut(Model::Strict, &mut SmallRng::seed_from_u64(1)).unwrap();
        assert!(!layer_mounts().iter().any(|l| l.mountpoint == mnt), "unmounted");
        assert_eq!(std::fs::read(disk.join("kept")).unwrap(), b"old");
        assert_eq!(std::fs::read(disk.join("synced")).unwrap(), b"data");
        let conn = rusqlite::Connection::open(disk.join("t.db")).unwrap();
        let x: i64 = conn.query_row("SELECT x FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(x, 42, "a WAL commit under synchronous=FULL survives the cut");
        drop(conn);
    }
}
