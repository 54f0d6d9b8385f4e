//! The reaper: a record whose owner has died is a killed run's set of
//! hosts; [`reap_orphans`] kills its processes, deletes its namespaces
//! (named after its tag) and removes its directories.

use std::path::{Path, PathBuf};

use super::host::SET_VAR;
use super::kill::kill_all;
use super::net::{remove_client_link, remove_namespace, NETNS_DIR, NS_PREFIX};
use super::record::{pid_namespace, registry_dir, MARKER, PROCS};
use crate::engine::throwaway::lock::{AtCtrlC, DirLock};
use crate::engine::throwaway::{alive, start_time};
use crate::{Error, Result};

/// Ends every set of hosts whose owner has died (a killed run's): its
/// processes, namespaces and directories. Returns how many sets it ended.
/// A set recorded in another pid namespace is left alone. One reaper at a
/// time, across processes: a second one meeting a set half-ended would
/// find its marker gone, leave its directory and drop its record, and
/// return before the first had ended it.
pub fn reap_orphans() -> Result<usize> {
    let dir = registry_dir()?;
    let _one_reaper = DirLock::take(&dir, REAPER_WAIT, AtCtrlC::GiveUp)?;
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(0) };
    let mut reaped = 0;
    for entry in entries.flatten() {
        let tag = entry.file_name().to_string_lossy().into_owned();
        let Some((pid, started)) = owner_of(&tag) else { continue };
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let mut lines = text.lines();
        let root = PathBuf::from(lines.next().unwrap_or_default());
        if lines.next().unwrap_or_default() != pid_namespace() || (alive(pid) && start_time(pid) == Some(started)) {
            continue;
        }
        end_set(&tag, &root)?;
        let _ = std::fs::remove_file(entry.path());
        reaped += 1;
    }
    Ok(reaped)
}

/// How long a reaper waits for another to end the sets it is ending.
const REAPER_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The owner's pid and start time in a tag; None for another file.
fn owner_of(tag: &str) -> Option<(i32, u64)> {
    let mut parts = tag.split('-');
    let pid = parts.next()?.parse().ok()?;
    let started = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u32>().ok()?;
    Some((pid, started))
}

/// Kills a dead owner's set: the processes adopted into its hosts (each
/// still the one recorded), those marked with its tag, every process in its namespaces and the
/// namespaces, then its directory (only when marked with its tag).
fn end_set(tag: &str, root: &Path) -> Result<()> {
    let procs = std::fs::read_to_string(root.join(PROCS)).unwrap_or_default();
    let confirmed: Vec<i32> = procs
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().skip(1);
            let pid: i32 = w.next()?.parse().ok()?;
            let started: u64 = w.next()?.parse().ok()?;
            (alive(pid) && start_time(pid) == Some(started)).then_some(pid)
        })
        .collect();
    let mut all = confirmed.clone();
    for &pid in &confirmed {
        all.extend(crate::engine::throwaway::procs::descendants(pid));
    }
    // Those started in its hosts and not adopted yet when the run died.
    all.extend(crate::engine::throwaway::marked(SET_VAR, std::ffi::OsStr::new(tag)));
    all.sort_unstable();
    all.dedup();
    kill_all(&all, root)?;
    remove_client_link(tag)?;
    let prefix = format!("{NS_PREFIX}{tag}-");
    if let Ok(namespaces) = std::fs::read_dir(NETNS_DIR) {
        // The hosts first: the switch's deletion takes the client link.
        let mut names: Vec<String> = namespaces
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        names.sort_by_key(|n| n.ends_with("-sw"));
        for name in names {
            remove_namespace(&name)?;
        }
    }
    if std::fs::read_to_string(root.join(MARKER)).is_ok_and(|t| t == tag) {
        match std::fs::remove_dir_all(root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(root, "cannot remove a killed run's hosts", e));
            }
            _ => {}
        }
    }
    Ok(())
}
