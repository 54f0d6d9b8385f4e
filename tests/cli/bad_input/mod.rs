//! The bad-input catalogue: every command of the real binary against every
//! kind of bad input a user can hand it. Each case runs in its own temporary
//! directory and checks that the command
//! - fails with a non-zero exit and exactly one line on stderr, starting
//!   with "error:" and naming the problem (or succeeds, where the input is
//!   legal: gaps in the keys, odd file names);
//! - never panics;
//! - leaves every file that existed before byte-for-byte unchanged, and
//!   leaves no new file behind when it fails.
//!
//! A case is one line of `cases()`; a number option is one line of
//! `NUMBER_OPTIONS`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rusqlite::Connection;

use crate::common::{self, Snapshot};

mod case;
mod cases;
mod fixtures;

use case::{Case, Expect::*};
use cases::cases;

/// Run only as the child of [`common::hold_in_child`]: holds an engine's
/// dataset open until its stdin closes.
#[test]
#[ignore = "helper process for the held-dataset cases"]
fn hold_engine_dataset() {
    common::hold_from_env();
}

// ---- the harness -------------------------------------------------------

/// The committed content of a database, as a fresh reader (which recovers
/// a hot journal or WAL) sees it: a checksum of every key and value.
fn committed_content(db: &Path) -> u64 {
    let c = Connection::open(db).unwrap();
    let mut s = c.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let rows = s.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))).unwrap();
    rows.map(|r| r.unwrap())
        .fold(0u64, |h, (k, v)| v.iter().fold(h ^ k as u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)))
}

/// Runs one case; returns what went wrong, if anything.
fn check(c: &Case) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    (c.fixture)(d);
    let reference = matches!(c.expect, Recovers).then(|| {
        let copy = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
        committed_content(&copy.path().join("db"))
    });
    // The engine is held from a child (POSIX locks are per process), opened
    // before the snapshot so that only the command's changes count.
    let engine_holder = c.held.map(|kind| common::hold_in_child(kind, &d.join("t")));
    let before = common::snapshot(d);
    // Taken after the snapshot: POSIX locks are per process, and reading
    // the file (closing any descriptor of it) would drop this one.
    let holder = c.locked.then(|| {
        let conn = Connection::open(d.join("db")).unwrap();
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        conn
    });
    // The layer runs in this process; the command, a child, uses the mount.
    let mnt = tempfile::tempdir().unwrap();
    let layer = c.fault.map(|(name, at)| {
        let plan = blobbench::powercut::FaultPlan::parse(name, at).unwrap();
        blobbench::powercut::Mounted::mount(d, mnt.path(), plan).unwrap_or_else(|e| panic!("{e}"))
    });
    let seen = if layer.is_some() { mnt.path() } else { d };
    let out = command(c, seen).output().unwrap();
    drop(holder);
    let faults = layer.map(|l| {
        let n = l.counters().faults_injected;
        drop(l); // unmounts: what was not fsync'd is dropped, as after a power cut
        n
    });
    let after = common::snapshot(d);
    drop(engine_holder);
    let recovered = reference.map(|was| (was, committed_content(&d.join("db"))));
    let problems = judge(c, &out, (&before, &after), faults, recovered);
    (!problems.is_empty()).then(|| format!("{}: {} (args {:?})", c.name, problems.join("; "), c.args))
}

/// The case's command: its arguments with `@` paths under `seen`, no
/// backtrace and no AWS credentials from this environment, and the limits
/// the case asks for.
fn command(c: &Case, seen: &Path) -> Command {
    let args: Vec<PathBuf> = c
        .args
        .iter()
        .map(|a| match a.strip_prefix('@') {
            Some("") => seen.to_path_buf(),
            Some(rel) => seen.join(rel),
            None => match a.strip_prefix("file:@") {
                Some(rel) => PathBuf::from(format!("file:{}", seen.join(rel).display())),
                None => PathBuf::from(a),
            },
        })
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blobbench"));
    cmd.args(&args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_DEFAULT_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_SECURITY_TOKEN")
        .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
        .env_remove("AWS_ROLE_ARN")
        .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        .env_remove("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        // No profile of this machine's user either.
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws/config");
    for (name, value) in &c.env {
        match value.strip_prefix('@') {
            Some(rel) => cmd.env(name, seen.join(rel)),
            None => cmd.env(name, value),
        };
    }
    if let Some(limit) = c.fsize {
        // SAFETY: setrlimit and signal are async-signal-safe. SIGXFSZ is
        // left at its default (a core dump): blobbench must ignore it
        // itself so that write() fails with EFBIG, as a full disk fails
        // with ENOSPC.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                libc::setrlimit(libc::RLIMIT_FSIZE, &r);
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                Ok(())
            });
        }
    }
    if c.nocaps {
        // SAFETY: prctl is async-signal-safe. Dropped from the bounding set,
        // the capabilities are gone from the binary exec'd next.
        unsafe {
            cmd.pre_exec(|| {
                // CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2), linux/capability.h.
                for cap in [1 as libc::c_ulong, 2] {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                }
                Ok(())
            });
        }
    }
    cmd
}

/// What is wrong with the command's outcome, for the case's expectation,
/// given the work directory's files before and after it, the faults the
/// layer injected and the committed content before and after it.
fn judge(
    c: &Case,
    out: &Output,
    (before, after): (&Snapshot, &Snapshot),
    faults: Option<u64>,
    recovered: Option<(u64, u64)>,
) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut problems = Vec::new();
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        problems.push("panicked".to_string());
    }
    match c.expect {
        Fail(needle) => {
            if out.status.success() {
                problems.push("exit status 0".into());
            }
            let lines: Vec<&str> = stderr.lines().collect();
            if lines.len() != 1 || !lines[0].starts_with("error: ") {
                problems.push(format!("stderr is not one \"error:\" line: {stderr:?}"));
            } else if !lines[0].contains(needle) {
                problems.push(format!("error does not say {needle:?}: {}", lines[0]));
            }
            let changes = diff(before, after);
            if !changes.is_empty() {
                problems.push(format!("files changed or left behind: {changes:?}"));
            }
            if faults == Some(0) {
                problems.push("the fault was never injected".into());
            }
            if faults.is_some() && !stdout.trim().is_empty() {
                problems.push(format!("printed figures from a run that hit an I/O error: {stdout}"));
            }
        }
        Works(needle) => {
            if !out.status.success() {
                problems.push(format!("failed: {stderr:?}"));
            } else if !stdout.contains(needle) {
                problems.push(format!("stdout lacks {needle:?}: {stdout}"));
            }
            let changed: Vec<_> = before.iter().filter(|(p, s)| after.get(*p) != Some(s)).collect();
            if !c.args.contains(&"--update".to_string()) && !changed.is_empty() {
                problems.push(format!("inputs changed: {changed:?}"));
            }
        }
        Recovers => {
            if !out.status.success() {
                problems.push(format!("failed: {stderr:?}"));
            }
            if recovered.is_none_or(|(was, now)| was != now) {
                problems.push("committed data changed".into());
            }
        }
    }
    problems
}

/// What changed between two snapshots. SQLite's own "-shm" index and an
/// empty "-wal", which any open of a WAL database may create and cannot
/// always remove after a failure, hold no data and are not counted.
fn diff(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    const EMPTY: u64 = 0xcbf2_9ce4_8422_2325;
    let sqlite_own = |p: &Path, sum: u64| {
        let name = p.to_string_lossy();
        name.ends_with("-shm") || (name.ends_with("-wal") && sum == EMPTY)
    };
    let mut d: Vec<String> = Vec::new();
    for (p, s) in after {
        match before.get(p) {
            None if sqlite_own(p, *s) => {}
            None => d.push(format!("new {}", p.display())),
            Some(b) if b != s => d.push(format!("changed {}", p.display())),
            _ => {}
        }
    }
    d.extend(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("removed {}", p.display())));
    d
}

#[test]
fn every_command_survives_bad_input() {
    let run = cases();
    // Cases wait on locks and child processes; a few at a time keep the
    // whole catalogue short on a small machine.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = run.get(i) else { break };
                if let Some(f) = check(c) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), run.len(), failures.join("\n"));
}
