//! The machine a result was measured on, recorded in every result file so
//! that figures from different machines can be told apart and compared.
//!
//! Everything here is best effort: a source that is missing (no /proc, no
//! git at build time, an odd mount table) leaves its field empty, zero or
//! None. Describing the machine must never stop a measurement.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub blobbench_version: String,
    /// `git describe`-style revision of the blobbench build, when known.
    pub git_revision: Option<String>,
    pub sqlite_version: String,
    pub sqlite_source_id: String,
    /// `PRAGMA compile_options` of the SQLite blobbench is linked with.
    pub sqlite_compile_options: Vec<String>,
    pub hostname: String,
    pub os: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Machine hardware name (`uname -m`).
    pub arch: String,
    pub cpu_model: String,
    /// CPUs this process may run on (affinity and cgroup quota included).
    pub cores: u32,
    pub memory_bytes: u64,
    /// The filesystem holding the dataset.
    pub storage: Option<StorageInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageInfo {
    /// The path examined: the dataset, or its nearest existing ancestor when
    /// the dataset does not exist yet, made absolute and canonical.
    pub path: String,
    pub mount_point: String,
    /// Mount source, e.g. `/dev/nvme0n1p2`.
    pub device: String,
    pub fs_type: String,
    /// Per-mount options followed by the filesystem's own (superblock) ones.
    pub mount_options: String,
    /// Allocation unit (statvfs f_frsize): file sizes round up to it.
    pub block_size: u64,
    pub total_bytes: u64,
    /// Free bytes available to this user (statvfs f_bavail).
    pub free_bytes: u64,
    /// Whether the block device reports itself as spinning
    /// (/sys/dev/block/MAJ:MIN/queue/rotational); None when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The disk under the filesystem (kind, virtual or not); None for a
    /// filesystem without one (tmpfs) and in version 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_device: Option<crate::measure::blockdev::BlockDevice>,
}

/// Describes this machine and the filesystem that holds `dataset`.
pub fn collect(dataset: &Path) -> Environment {
    let uts = Uname::now();
    Environment {
        blobbench_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: option_env!("BLOBBENCH_GIT_REVISION").map(str::to_string),
        sqlite_version: rusqlite::version().to_string(),
        sqlite_source_id: crate::engine::sqlite::raw::source_id(),
        sqlite_compile_options: sqlite_compile_options(),
        hostname: uts.nodename,
        os: non_empty_or(uts.sysname, std::env::consts::OS),
        kernel: uts.release,
        arch: non_empty_or(uts.machine, std::env::consts::ARCH),
        cpu_model: std::fs::read_to_string("/proc/cpuinfo").map(|t| cpu_model(&t)).unwrap_or_default(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
        memory_bytes: std::fs::read_to_string("/proc/meminfo").map_or(0, |t| mem_total(&t)),
        storage: storage_info(dataset),
    }
}

fn non_empty_or(value: String, fallback: &str) -> String {
    if value.is_empty() {
        fallback.to_string()
    } else {
        value
    }
}

fn sqlite_compile_options() -> Vec<String> {
    let list = || -> rusqlite::Result<Vec<String>> {
        let db = rusqlite::Connection::open_in_memory()?;
        let mut stmt = db.prepare("PRAGMA compile_options")?;
        let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
        rows.collect()
    };
    list().unwrap_or_default()
}

/// The fields of uname(2) that a result file records.
struct Uname {
    sysname: String,
    nodename: String,
    release: String,
    machine: String,
}

impl Uname {
    fn now() -> Self {
        // SAFETY: uname only writes into the struct we own.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut u) } != 0 {
            return Uname {
                sysname: String::new(),
                nodename: String::new(),
                release: String::new(),
                machine: String::new(),
            };
        }
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        Uname {
            sysname: field(&u.sysname),
            nodename: field(&u.nodename),
            release: field(&u.release),
            machine: field(&u.machine),
        }
    }
}

/// The CPU's name from /proc/cpuinfo. x86 says "model name"; ARM, RISC-V
/// and POWER kernels use other keys, tried in turn.
fn cpu_model(cpuinfo: &str) -> String {
    for key in ["model name", "Hardware", "uarch", "cpu model", "cpu", "Processor"] {
        let found = cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_string())
        });
        if let Some(model) = found {
            return model;
        }
    }
    String::new()
}

/// MemTotal from /proc/meminfo, in bytes (the file counts in KiB).
fn mem_total(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Describes the filesystem holding `path` (or its nearest existing
/// ancestor). None when neither the mount table nor statvfs can say anything.
pub fn storage_info(path: &Path) -> Option<StorageInfo> {
    let existing = nearest_existing(path)?;
    let mount = std::fs::read("/proc/self/mountinfo").ok().and_then(|t| mount_of(&t, &existing));
    let fs = statvfs(&existing);
    if mount.is_none() && fs.is_none() {
        return None;
    }
    let mut info = StorageInfo { path: existing.display().to_string(), ..StorageInfo::default() };
    if let Some(m) = mount {
        // btrfs reports an anonymous 0:N device; its mount source is the disk.
        let numbers = match crate::measure::blockdev::describe(&m.major_minor) {
            Some(_) => Some(m.major_minor.clone()),
            None => crate::measure::blockdev::numbers_of(&m.device),
        };
        if let Some(n) = numbers {
            info.rotational = rotational(&n);
            info.block_device = crate::measure::blockdev::describe(&n);
        }
        info.mount_point = m.mount_point.display().to_string();
        info.device = m.device;
        info.fs_type = m.fs_type;
        info.mount_options = m.options;
    }
    if let Some((block_size, total, free)) = fs {
        info.block_size = block_size;
        info.total_bytes = total;
        info.free_bytes = free;
    }
    Some(info)
}

/// The canonical form of `path` or of its closest ancestor that exists.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    let mut candidate = absolute.as_path();
    loop {
        if let Ok(canonical) = candidate.canonicalize() {
            return Some(canonical);
        }
        candidate = candidate.parent()?;
    }
}

/// (block size, total bytes, free bytes) from statvfs.
fn statvfs(path: &Path) -> Option<(u64, u64, u64)> {
    let c = crate::util::fsutil::cstring(path).ok()?;
    // SAFETY: statvfs writes into the struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let unit = if st.f_frsize > 0 { st.f_frsize as u64 } else { st.f_bsize as u64 };
    Some((unit, st.f_blocks as u64 * unit, st.f_bavail as u64 * unit))
}

/// One line of /proc/self/mountinfo, the parts a result file records.
#[derive(Debug, PartialEq)]
struct Mount {
    major_minor: String,
    mount_point: PathBuf,
    device: String,
    fs_type: String,
    options: String,
}

/// The mount holding `path` (canonical): the longest mount point that is a
/// prefix of it; of equal ones the last listed, which is on top of the others.
fn mount_of(mountinfo: &[u8], path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for line in mountinfo.split(|&b| b == b'\n') {
        let Some(m) = parse_mount_line(line) else { continue };
        let depth = m.mount_point.components().count();
        if path.starts_with(&m.mount_point) && best.as_ref().is_none_or(|b| depth >= b.mount_point.components().count())
        {
            best = Some(m);
        }
    }
    best
}

/// Parses `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
/// (see proc(5)): optional fields end at the lone "-".
fn parse_mount_line(line: &[u8]) -> Option<Mount> {
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').filter(|f| !f.is_empty()).collect();
    let dash = fields.iter().position(|f| *f == b"-")?;
    if dash < 6 || fields.len() < dash + 3 {
        return None;
    }
    let text = |f: &[u8]| String::from_utf8_lossy(&unescape(f)).into_owned();
    let mut options: Vec<String> = text(fields[5]).split(',').map(str::to_string).collect();
    for extra in text(fields[dash + 3..].first().copied().unwrap_or_default()).split(',') {
        if !extra.is_empty() && !options.iter().any(|o| o == extra) {
            options.push(extra.to_string());
        }
    }
    Some(Mount {
        major_minor: text(fields[2]),
        mount_point: PathBuf::from(OsString::from_vec(unescape(fields[4]))),
        device: text(fields[dash + 2]),
        fs_type: text(fields[dash + 1]),
        options: options.join(","),
    })
}

/// Undoes the kernel's octal escapes in mount fields (`\040` is a space).
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal =
            field.get(i + 1..i + 4).filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(value as u8);
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// Spinning disk or not, from sysfs. A partition has no queue/ of its own;
/// its parent disk's is one directory up.
fn rotational(major_minor: &str) -> Option<bool> {
    let dev = Path::new("/sys/dev/block").join(OsStr::from_bytes(major_minor.as_bytes()));
    let flag = std::fs::read_to_string(dev.join("queue/rotational"))
        .or_else(|_| std::fs::read_to_string(dev.join("../queue/rotational")))
        .ok()?;
    match flag.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &[u8] = b"\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:2 - proc proc rw
30 22 0:25 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,size=1024k
41 22 259:2 / /mnt/my\\040disk rw,noatime - xfs /dev/nvme0n1p2 rw,attr2,inode64
42 41 259:3 / /mnt/my\\040disk/sub rw - btrfs /dev/sdb rw
43 30 253:4 / /tmp rw,noatime - ext4 /dev/vdb rw
garbage line
";

    #[test]
    fn longest_mount_prefix_wins_and_escapes_are_decoded() {
        let m = mount_of(MOUNTINFO, Path::new("/mnt/my disk/data/kv.db")).unwrap();
        assert_eq!(m.mount_point, Path::new("/mnt/my disk"));
        assert_eq!((m.fs_type.as_str(), m.device.as_str()), ("xfs", "/dev/nvme0n1p2"));
        assert_eq!(m.options, "rw,noatime,attr2,inode64");
        assert_eq!(m.major_minor, "259:2");
        assert_eq!(mount_of(MOUNTINFO, Path::new("/mnt/my disk/sub/x")).unwrap().fs_type, "btrfs");
        assert_eq!(mount_of(MOUNTINFO, Path::new("/home/u")).unwrap().fs_type, "ext4");
        // A prefix by bytes is not a prefix by path components.
        assert_eq!(mount_of(MOUNTINFO, Path::new("/procfoo")).unwrap().mount_point, Path::new("/"));
    }

    #[test]
    fn a_later_mount_over_the_same_point_hides_the_earlier() {
        let m = mount_of(MOUNTINFO, Path::new("/tmp/x")).unwrap();
        assert_eq!((m.fs_type.as_str(), m.device.as_str()), ("ext4", "/dev/vdb"));
    }

    #[test]
    fn unescape_handles_octal_and_leaves_other_backslashes() {
        assert_eq!(unescape(b"a\\040b\\011c\\134d"), b"a b\tc\\d");
        assert_eq!(unescape(b"x\\9y\\04"), b"x\\9y\\04");
    }

    #[test]
    fn cpu_model_and_memory_parse_proc_text() {
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n"), "AMD EPYC 7B13");
        assert_eq!(cpu_model("processor\t: 0\nBogoMIPS : 50\nHardware\t: BCM2835\n"), "BCM2835");
        assert_eq!(cpu_model("nothing useful\n"), "");
        assert_eq!(mem_total("MemTotal:       16303744 kB\nMemFree: 1 kB\n"), 16303744 * 1024);
        assert_eq!(mem_total("MemFree: 1 kB\n"), 0);
    }

    #[test]
    fn storage_of_a_path_not_yet_created_is_its_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let info = storage_info(&dir.path().join("not/yet/kv.db")).unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(info.path, canonical.display().to_string());
        assert!(info.total_bytes > 0 && info.block_size > 0, "{info:?}");
        assert!(info.free_bytes <= info.total_bytes, "{info:?}");
        if Path::new("/proc/self/mountinfo").exists() {
            assert!(canonical.starts_with(&info.mount_point), "{info:?}");
            assert!(!info.fs_type.is_empty() && !info.mount_options.is_empty(), "{info:?}");
        }
    }

    #[test]
    fn collect_describes_this_build_and_machine() {
        let env = collect(Path::new("."));
        assert_eq!(env.sqlite_version, rusqlite::version());
        assert!(env.sqlite_source_id.starts_with("20"), "{}", env.sqlite_source_id);
        assert!(
            env.sqlite_compile_options.iter().any(|o| o.starts_with("THREADSAFE=")),
            "{:?}",
            env.sqlite_compile_options
        );
        assert!(env.cores >= 1);
        assert!(!env.os.is_empty() && !env.arch.is_empty());
        if cfg!(target_os = "linux") {
            assert_eq!(env.os, "Linux");
            assert!(!env.kernel.is_empty() && env.memory_bytes > 0, "{env:?}");
        }
        assert!(env.storage.is_some());
        let from_checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join(".git").exists();
        let git_works = std::process::Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success());
        if from_checkout && git_works {
            let rev = env.git_revision.expect("built from a git checkout, so the revision is recorded");
            assert!(rev.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()), "{rev}");
        }
    }
}
