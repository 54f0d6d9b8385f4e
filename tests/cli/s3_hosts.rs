//! A throwaway store spread over hosts (network namespaces: the tests run
//! as root, as `.ci/run` does) whose run was killed: the next command ends
//! its servers and its hosts' namespaces.

use crate::common;
use crate::s3::servers_under;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use blobbench::engine::throwaway::{alive, OWNER};
use common::{kvtest_db, ok};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The pids the owner file lists.
fn listed(dir: &Path) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.join(OWNER)).unwrap_or_default();
    text.lines().filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect()
}

/// The network namespaces made for the hosts of blobbench process `pid`.
fn namespaces_of(pid: i32) -> Vec<String> {
    let prefix = format!("blobbench-{pid}-");
    let names = std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect());
    names.unwrap_or_else(|_| Vec::new()).into_iter().filter(|n: &String| n.starts_with(&prefix)).collect()
}

/// Waits (bounded by [`common::HANG`], against a hang) until `ready`.
fn wait_until(what: &str, child: &mut Child, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < common::HANG, "{what}: never happened");
        assert!(child.try_wait().unwrap().is_none(), "{what}: the run ended first");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `run` that goes on until it is interrupted.
fn endless_run(t: &Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["run", s(t), "--count", "20", "--repeat", "10000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A `run` killed (SIGKILL) while alone on a store spread over hosts
/// leaves its servers and its hosts' namespaces; the next command on the
/// dataset (here `drop`, which then removes it) ends them all.
#[test]
fn a_killed_runs_replicated_store_is_ended_namespaces_and_all_by_the_next_command() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the hosts' namespaces need root; .ci/run runs the tests as root");
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 10, 2000);
    ok(&["export", "--engine", "s3", "--s3-server", "seaweedfs-2hosts", s(&db), s(&t)]);
    let volume_pid = |h: &str| t.join(format!("seaweedfs-2hosts/disks/{h}/run/volume.pid"));

    let mut run = endless_run(&t);
    let pid = run.id() as i32;
    wait_until("the run starts the store", &mut run, || {
        listed(&t).contains(&pid) && volume_pid("h1").is_file() && volume_pid("h2").is_file()
    });
    assert_eq!(namespaces_of(pid).len(), 3, "a namespace for each host and the switch: {:?}", namespaces_of(pid));
    let servers: Vec<i32> = servers_under(dir.path()).into_iter().filter(|&p| p != pid).collect();
    assert_eq!(servers.len(), 4, "master, filer and two volume servers: {servers:?}");
    run.kill().unwrap();
    run.wait().unwrap();

    ok(&["drop", s(&t)]);
    assert!(servers.iter().all(|&p| !alive(p)), "every server ended");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "the killed run's namespaces are gone");
    assert!(!t.exists() && servers_under(dir.path()).is_empty(), "the dataset removed, nothing left");
}
