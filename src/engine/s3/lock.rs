//! The lock on a dataset's directory, for the commands that change what
//! its prefix holds in a store the user runs: `export` (into DIR, and
//! `--force`'s retirement of what DIR held), a `run` with writes, and
//! `drop DIR`. One at a time: a `drop` while a run writes would delete
//! part of the dataset and leave the PUTs that land after its marker went
//! unmarked, and two `export --force DIR` at once would leave a dataset DIR
//! no longer names.
//!
//! The lock is `flock` on the directory itself, taken without waiting and
//! held for the command's life (the kernel lets it go when its holder
//! dies, so a killed command never blocks the next one). Its holder writes
//! [`HOLDER`] beside the descriptor: its owner line as `engine::throwaway`
//! writes it (`PID START BOOT PIDNS HOST`), what it is doing and since
//! when, so a refusal names it; the file goes when the lock does. A client
//! process of `run --clients-are processes` runs under its command's lock:
//! the holder is its parent.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::engine::throwaway::User;
use crate::{Error, Result};

/// The file in a dataset's directory naming the command that holds its
/// lock.
pub const HOLDER: &str = "blobbench-s3.lock";

/// What a holder is doing, as a refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    Export,
    Writes,
    Drop,
}

impl Holding {
    fn name(self) -> &'static str {
        match self {
            Holding::Export => "an export",
            Holding::Writes => "a run with writes",
            Holding::Drop => "a drop",
        }
    }
}

/// This process's hold on a dataset's directory; let go of when the last
/// clone is dropped.
#[derive(Debug)]
pub struct DatasetLock {
    dir: PathBuf,
    _dir_file: File,
}

/// The locks this process holds, by directory: a command's engines and
/// removals share one.
static HELD: Mutex<Vec<(PathBuf, Weak<DatasetLock>)>> = Mutex::new(Vec::new());

impl DatasetLock {
    /// Takes the lock on the dataset directory `dir` for `what`, or the
    /// one this process already holds there. None: the process that
    /// started this one holds it (a client process of the command). Refused
    /// at once, in one line naming the holder, while another process holds
    /// it.
    pub fn take(dir: &Path, what: Holding) -> Result<Option<Arc<DatasetLock>>> {
        let key = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(_, l)| l.strong_count() > 0);
        if let Some(lock) = held.iter().find(|(d, _)| *d == key).and_then(|(_, l)| l.upgrade()) {
            return Ok(Some(lock));
        }
        let file = File::open(dir).map_err(|e| Error::io(dir, "cannot open the dataset's directory to lock it", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return match holder(dir) {
                    Some(h) if h.user.is_my_parent() => Ok(None),
                    h => Err(Error::bad_input(dir, refusal(h.as_ref()))),
                };
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(dir, "cannot lock the dataset's directory", e));
            }
        }
        let since = jiff::Timestamp::now().as_second();
        write_holder(dir, &format!("{}{}\n{since}\n", User::me().line(), what.name()))?;
        let lock = Arc::new(DatasetLock { dir: dir.to_path_buf(), _dir_file: file });
        held.push((key, Arc::downgrade(&lock)));
        Ok(Some(lock))
    }

    /// Removes the holder's file now, when it names this process (a
    /// `drop`, or a failed export, removing the directory under the lock).
    pub fn remove_file(&self) -> Result<()> {
        let file = self.dir.join(HOLDER);
        if !holder(&self.dir).is_some_and(|h| h.user.is_me()) {
            return Ok(());
        }
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&file, "cannot remove", e)),
            _ => Ok(()),
        }
    }
}

/// The holder's file goes before the lock does, so that no later holder's
/// file is removed.
impl Drop for DatasetLock {
    fn drop(&mut self) {
        let _ = self.remove_file();
    }
}

/// Writes the holder's file whole (renamed into place, so a refused
/// command never reads half of it), without an fsync: after a crash the
/// lock is gone with its holder, and the file means nothing.
fn write_holder(dir: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let file = dir.join(HOLDER);
    let mut tmp = tempfile::Builder::new()
        .prefix(".blobbench-")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, "cannot create a file in this directory", e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| Error::io(&file, "cannot write", e))?;
    tmp.persist(&file).map_err(|e| Error::io(&file, "cannot write", e.error))?;
    Ok(())
}

/// Who holds a lock, as its file says.
struct Holder {
    user: User,
    what: String,
    since: Option<i64>,
}

fn holder(dir: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(dir.join(HOLDER)).ok()?;
    let mut lines = text.lines();
    let user = User::parse(lines.next()?)?;
    let what = lines.next().unwrap_or("a command").to_string();
    let since = lines.next().and_then(|s| s.trim().parse().ok());
    Some(Holder { user, what, since })
}

/// The one line refusing a command while `holder` holds the lock.
fn refusal(holder: Option<&Holder>) -> String {
    let Some(h) = holder else {
        return format!(
            "is in use by another process (its lock is held and {HOLDER} names no holder); wait for it to end"
        );
    };
    let here = crate::engine::throwaway::Place::here();
    let host = match &h.user.place {
        Some(p) if p.host != here.host => format!(" on host {}", p.host),
        _ => String::new(),
    };
    let since = h.since.and_then(|s| jiff::Timestamp::from_second(s).ok()).map(|t| format!(", since {t}"));
    format!(
        "is in use by blobbench process {}{host} ({}{}); nothing was changed: wait for it to end",
        h.user.pid,
        h.what,
        since.unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: a second command on a dataset is refused at once, in one
    /// line naming the holder and what it does; the lock and its file go
    /// with the holder, and a process's own engines share one.
    #[test]
    fn a_held_dataset_is_refused_naming_its_holder_and_free_once_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let lock = DatasetLock::take(dir.path(), Holding::Writes).unwrap().unwrap();
        let again = DatasetLock::take(dir.path(), Holding::Drop).unwrap().unwrap();
        assert!(Arc::ptr_eq(&lock, &again), "one lock per directory in a process");
        let text = std::fs::read_to_string(dir.path().join(HOLDER)).unwrap();
        assert!(text.starts_with(&format!("{} ", std::process::id())) && text.contains("a run with writes"), "{text}");
        // Another process's view: the flock held elsewhere (another open
        // file description), the holder read from its file.
        let other = File::open(dir.path()).unwrap();
        assert!(matches!(other.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
        let why = refusal(holder(dir.path()).as_ref());
        assert!(
            why.starts_with(&format!(
                "is in use by blobbench process {} (a run with writes, since ",
                std::process::id()
            )),
            "{why}"
        );
        assert!(!why.contains('\n'));
        drop((lock, again));
        assert!(!dir.path().join(HOLDER).exists(), "the holder's file goes with the lock");
        other.try_lock().unwrap();
    }

    /// A client process runs under its command's lock: the holder is its
    /// parent (this test's own parent stands for the command).
    #[test]
    fn the_commands_own_client_processes_run_under_its_lock() {
        use crate::engine::throwaway::{start_time, Place};
        let parent = std::os::unix::process::parent_id() as i32;
        let place = Some(Place::here().clone());
        let started = start_time(parent);
        assert!(started.is_some(), "the test's parent runs");
        let line = User { pid: parent, started, place: place.clone() }.line();
        assert!(User::parse(&line).unwrap().is_my_parent(), "{line}");
        let recycled = User { pid: parent, started: started.map(|s| s + 1), place };
        assert!(!recycled.is_my_parent(), "another process given the parent's pid");
        assert!(!User::me().is_my_parent());
    }
}
