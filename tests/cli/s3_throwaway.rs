//! A throwaway SeaweedFS shared by two `run`s of one dataset: it outlives
//! the run that started it while the other uses it (that run's Ctrl-C
//! leaves at once and stops nothing), the last run stops it, it never
//! sees the user's AWS secret, and `drop DIR` removes the dataset only
//! once no one uses it, and only what blobbench made there.

use crate::common;
use crate::common::servers_under;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use blobbench::engine::throwaway::{alive, start_time, OWNER};
use common::{kvtest_db, ok, quick_error};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The pids the owner file lists.
fn listed(dir: &Path) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.join(OWNER)).unwrap_or_default();
    text.lines().filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect()
}

/// The pid `weed.pid` records.
fn weed_pid(dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(dir.join("seaweedfs/run/weed.pid")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Waits (bounded by [`common::HANG`], against a hang) until `ready`.
fn wait_until(what: &str, child: &mut Child, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < common::HANG, "{what}: never happened");
        assert!(child.try_wait().unwrap().is_none(), "{what}: the run ended first");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A `run` that goes on until it is interrupted, with an AWS secret of the
/// user's in its environment.
fn endless_run(t: &Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["run", s(t), "--count", "20", "--repeat", "10000"])
        .env("AWS_ACCESS_KEY_ID", "AKIAUSERSOWN")
        .env("AWS_SECRET_ACCESS_KEY", "users-own-s3cret")
        .env("AWS_SESSION_TOKEN", "users-own-token")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn ctrl_c(child: &Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

#[test]
fn a_shared_seaweedfs_outlives_its_starter_and_stops_with_its_last_user() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 10, 2000);
    ok(&["export", "--engine", "s3", "--s3-server", "seaweedfs", s(&db), s(&t)]);

    let mut starter = endless_run(&t);
    let first = starter.id() as i32;
    wait_until("the first run starts weed", &mut starter, || listed(&t).contains(&first) && weed_pid(&t).is_some());
    let weed = weed_pid(&t).unwrap();
    let environ = std::fs::read(format!("/proc/{weed}/environ")).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(!environ.contains("users-own") && !environ.contains("AKIAUSERSOWN"), "weed holds the user's AWS variables");
    assert!(environ.contains("AWS_ACCESS_KEY_ID=blobbench"), "its own loopback credentials");

    let mut other = endless_run(&t);
    let second = other.id() as i32;
    wait_until("the second run joins", &mut other, || listed(&t).contains(&second));
    // Ctrl-C of the run that started weed: it leaves at once (the other
    // never ends by itself, so a wait for it would never end) and leaves
    // weed running for the other.
    ctrl_c(&starter);
    let out = starter.wait_with_output().unwrap();
    assert!(out.status.code().is_some(), "it ended by itself: {:?}", out.status);
    assert!(alive(weed), "weed was stopped under the other run");
    assert!(other.try_wait().unwrap().is_none(), "the other run goes on");
    assert_eq!(listed(&t), [second], "the starter is off the list, the other still on it");

    // While a run uses it, the dataset is not dropped.
    let err = quick_error(common::blobbench().args(["drop", s(&t)]));
    assert!(err.contains(&format!("cannot remove it while blobbench process {second} uses it")), "{err}");
    assert!(t.join("seaweedfs/data").is_dir() && alive(weed), "nothing removed, nothing stopped");

    ctrl_c(&other);
    let out = other.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("connection refused") && !err.contains("cannot connect"), "it lost its server: {err}");
    assert!(!alive(weed), "the last run stopped weed");
    assert!(!t.join(OWNER).exists() && servers_under(dir.path()).is_empty());
}

/// `drop DIR` of a throwaway dataset decides under the server's lock, so
/// a user listed there (here a live process, whose server is not yet up)
/// keeps it; and it removes only the files blobbench made in DIR.
#[test]
fn dropping_a_throwaway_dataset_spares_its_users_and_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 3, 500);
    ok(&["export", "--engine", "s3", "--s3-server", "seaweedfs", s(&db), s(&t)]);
    let mut user = Command::new("sleep").arg("300").spawn().unwrap();
    let pid = user.id() as i32;
    std::fs::write(t.join(OWNER), format!("{pid} {}\n", start_time(pid).unwrap())).unwrap();
    let err = quick_error(common::blobbench().args(["drop", s(&t)]));
    assert!(err.contains(&format!("while blobbench process {pid} uses it")), "{err}");
    assert!(t.join("seaweedfs/data").is_dir() && t.join("blobbench-s3.json").is_file(), "nothing removed");
    user.kill().unwrap();
    user.wait().unwrap();

    std::fs::write(t.join("notes.txt"), "the user's own").unwrap();
    let out = ok(&["drop", s(&t)]);
    assert!(out.contains("its directory held other files, kept"), "{out}");
    let left: Vec<String> =
        std::fs::read_dir(&t).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["notes.txt"], "only blobbench's files went");
    assert!(servers_under(dir.path()).is_empty());
}
