//! What one flush costs on DIR's disk (issue 42):
//!
//!   reference_loops flush DIR [TRIALS]
//!
//! TRIALS (default 200) of each, back to back, p50 and p99 (nearest rank):
//! - `rewrite_4k_fdatasync`: pwrite 4 KB of new content into an existing
//!   1 MB file (each trial the next 4 KB block), then fdatasync;
//! - `new_file_fsync_dir`: create a new file, write 4 KB, fsync it, close
//!   it, fsync its directory;
//! - `sqlite_commit_full` and `sqlite_commit_normal`: one autocommitted
//!   `UPDATE` of a 10 KB blob (new content) in WAL mode, synchronous FULL
//!   (the commit fsyncs the WAL) and NORMAL (it does not), on a 100-row
//!   table;
//! - `sqlite_commit_full_unchanged`: the same at FULL, each UPDATE setting
//!   the value the row already holds: SQLite leaves unchanged pages clean,
//!   so such a commit writes and syncs nothing (a write loop that repeats
//!   its content measures this, not a durable commit).
//!
//! `..._wal_frames`: the frames in the WAL after a probe's trials (from an
//! empty WAL; autocheckpoints may have restarted it): 0 means no commit
//! wrote anything.
//!
//! Every file it makes is under DIR and removed at the end.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use crate::{os_err, Content, Res};

const BLOCK: usize = 4096;
const FILE_BLOCKS: usize = 256;

pub fn main(args: &[String]) -> Res<()> {
    let usage = "usage: reference_loops flush DIR [TRIALS]";
    let [dir, rest @ ..] = args else { return Err(usage.into()) };
    let trials: usize = rest.first().map_or(Ok(200), |t| t.parse()).map_err(|_| usage)?;
    if trials == 0 {
        return Err(usage.into());
    }
    let dir = Path::new(dir);
    let mut content = Content::new(u64::from(std::process::id()));
    print("rewrite_4k_fdatasync", rewrite(dir, trials, &mut content)?);
    print("new_file_fsync_dir", new_files(dir, trials, &mut content)?);
    for (name, sync, value) in [
        ("sqlite_commit_full", "FULL", Value::New),
        ("sqlite_commit_normal", "NORMAL", Value::New),
        ("sqlite_commit_full_unchanged", "FULL", Value::Unchanged),
    ] {
        let (times, frames) = sqlite_commits(dir, trials, sync, value, &mut content)?;
        print(name, times);
        println!("{name}_wal_frames {frames}");
    }
    Ok(())
}

fn print(name: &str, mut ns: Vec<u64>) {
    ns.sort_unstable();
    let q = |q: f64| ns[((q * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1] as f64 / 1e3;
    println!("{name}_p50_us {:.1}", q(0.5));
    println!("{name}_p99_us {:.1}", q(0.99));
}

fn c_path(p: &Path) -> Res<CString> {
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// pwrite 4 KB into an existing, synced file, then fdatasync.
fn rewrite(dir: &Path, trials: usize, content: &mut Content) -> Res<Vec<u64>> {
    let path = dir.join("flush-probe.dat");
    std::fs::write(&path, content.next(BLOCK * FILE_BLOCKS))?;
    let name = c_path(&path)?;
    let mut times = Vec::with_capacity(trials);
    // SAFETY: a NUL-terminated path; writes come from `content`; the
    // descriptor is closed before returning.
    unsafe {
        let fd = libc::open(name.as_ptr(), libc::O_WRONLY);
        if fd < 0 {
            return Err(os_err("open"));
        }
        let ok = libc::fsync(fd) == 0;
        for i in 0..trials {
            let data = content.next(BLOCK);
            let t = Instant::now();
            let offset = ((i % FILE_BLOCKS) * BLOCK) as libc::off_t;
            if libc::pwrite(fd, data.as_ptr().cast(), BLOCK, offset) != BLOCK as isize || libc::fdatasync(fd) != 0 {
                libc::close(fd);
                return Err(os_err("pwrite + fdatasync"));
            }
            times.push(elapsed_ns(t));
        }
        libc::close(fd);
        if !ok {
            return Err(os_err("fsync"));
        }
    }
    std::fs::remove_file(&path)?;
    Ok(times)
}

/// A new file of 4 KB: create, write, fsync, close, fsync the directory.
fn new_files(dir: &Path, trials: usize, content: &mut Content) -> Res<Vec<u64>> {
    let sub = dir.join("flush-probe-new");
    std::fs::create_dir(&sub)?;
    let names = (0..trials).map(|i| c_path(&sub.join(format!("{i:06}")))).collect::<Res<Vec<_>>>()?;
    let mut times = Vec::with_capacity(trials);
    // SAFETY: NUL-terminated paths; writes come from `content`; every
    // descriptor is closed before returning.
    unsafe {
        let dfd = libc::open(c_path(&sub)?.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        if dfd < 0 {
            return Err(os_err("open the directory"));
        }
        for name in &names {
            let data = content.next(BLOCK);
            let t = Instant::now();
            let fd = libc::open(name.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644 as libc::c_uint);
            let ok = fd >= 0
                && libc::write(fd, data.as_ptr().cast(), BLOCK) == BLOCK as isize
                && libc::fsync(fd) == 0
                && libc::close(fd) == 0
                && libc::fsync(dfd) == 0;
            if !ok {
                libc::close(dfd);
                return Err(os_err("new file + fsync + directory fsync"));
            }
            times.push(elapsed_ns(t));
        }
        libc::close(dfd);
    }
    std::fs::remove_dir_all(&sub)?;
    Ok(times)
}

/// What the UPDATEs of [`sqlite_commits`] write.
#[derive(Clone, Copy, PartialEq)]
enum Value {
    /// New content each time.
    New,
    /// The content the row already holds: SQLite leaves the pages it would
    /// not change clean, so the commit has nothing to write or sync.
    Unchanged,
}

/// Autocommitted 10 KB UPDATEs in WAL mode at `sync`, from an empty WAL:
/// their times and the frames in the WAL after them.
fn sqlite_commits(dir: &Path, trials: usize, sync: &str, value: Value, content: &mut Content) -> Res<(Vec<u64>, i64)> {
    let path = dir.join("flush-probe.db");
    let _ = std::fs::remove_file(&path);
    let blob = 10 * 1024;
    let mut times = Vec::with_capacity(trials);
    let frames = {
        let conn = rusqlite::Connection::open(&path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("journal mode stayed {mode}").into());
        }
        conn.execute_batch(&format!("PRAGMA synchronous={sync}; CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)"))?;
        let fill = conn.unchecked_transaction()?;
        for k in 1..=100 {
            fill.execute("INSERT INTO kv VALUES (?1, ?2)", rusqlite::params![k, content.next(blob)])?;
        }
        fill.commit()?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
        let mut select = conn.prepare("SELECT v FROM kv WHERE k=?1")?;
        let mut update = conn.prepare("UPDATE kv SET v=?2 WHERE k=?1")?;
        for i in 0..trials {
            let key = (i % 100 + 1) as i64;
            let data = match value {
                Value::New => content.next(blob).to_vec(),
                Value::Unchanged => select.query_row([key], |r| r.get::<_, Vec<u8>>(0))?,
            };
            let t = Instant::now();
            let changed = update.execute(rusqlite::params![key, data])?;
            times.push(elapsed_ns(t));
            if changed != 1 {
                return Err("an update changed no row".into());
            }
        }
        // The WAL's frames (a passive checkpoint's second column), before
        // the close, which checkpoints and deletes the WAL.
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))?
    };
    let _ = std::fs::remove_file(dir.join("flush-probe.db-wal"));
    let _ = std::fs::remove_file(dir.join("flush-probe.db-shm"));
    std::fs::remove_file(&path)?;
    Ok((times, frames))
}
