//! A throwaway store spread over hosts (network namespaces: the tests run
//! as root, as `.ci/run` does) whose run was killed: the next command ends
//! its servers and its hosts' namespaces.

use crate::common;
use crate::common::servers_under;

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
    // Started: every server's pid recorded, the filer's last, then the
    // ports. (A kill between a server's spawn and its pid file's write is
    // another case: that server is found by no pid file.)
    let run_dir = t.join("seaweedfs-2hosts/run");
    wait_until("the run starts the store", &mut run, || {
        listed(&t).contains(&pid)
            && volume_pid("h1").is_file()
            && volume_pid("h2").is_file()
            && run_dir.join("filer.pid").is_file()
            && run_dir.join("ports.json").is_file()
    });
    assert_eq!(namespaces_of(pid).len(), 3, "a namespace for each host and the switch: {:?}", namespaces_of(pid));
    let servers: Vec<i32> = servers_under(dir.path()).into_iter().filter(|&p| p != pid).collect();
    assert_eq!(servers.len(), 4, "master, filer and two volume servers: {servers:?}");
    run.kill().unwrap();
    run.wait().unwrap();

    ok(&["drop", s(&t)]);
    let left: Vec<String> = servers
        .iter()
        .filter(|&&p| alive(p))
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            format!("{p} [{}] {}", stat.trim(), String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    assert!(left.is_empty(), "every server ended; still running: {left:?}");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "the killed run's namespaces are gone");
    assert!(!t.exists() && servers_under(dir.path()).is_empty(), "the dataset removed, nothing left");
}

/// `crashtest --machine-loss` on Swift with three storage hosts, each in a
/// namespace of its own: two hosts lost while four writers write, and no
/// acknowledged write lost (a quorum of two fsync'd replicas holds each);
/// writes succeed again after each loss, and nothing is left behind.
#[test]
fn a_machine_loss_on_swift_on_three_hosts_loses_no_acknowledged_write() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the hosts' namespaces need root; .ci/run runs the tests as root");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("loss.json");
    let run = Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["crashtest", "--machine-loss", "--method", "s3-swift-3hosts", "--losses", "2", "--count", "16"])
        .args(["--workdir", s(dir.path()), "--json", s(&json)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = run.id() as i32;
    let out = run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    common::valid_results(&json);
    let file = blobbench::results::read(&json).unwrap();
    let section = file.machine_loss.expect("a machine-loss section");
    let [m] = &section.methods[..] else { panic!("one method: {:?}", section.methods) };
    assert_eq!((m.method.as_str(), m.losses), ("s3-swift-3hosts", 2));
    assert!(m.promises_survival, "a quorum of two keeps each write on two hosts");
    assert!(m.acknowledged > 0, "the writers wrote before each loss");
    assert_eq!((m.lost_acknowledged, m.torn, m.missing), (0, 0, 0), "no acknowledged write lost");
    assert_eq!(m.resumed_after_ms.len(), 2, "writes succeeded again after each loss");
    assert!(m.network.contains("namespace"), "as root each host has its own: {}", m.network);
    assert!(stdout.contains("s3-swift-3hosts") && stdout.contains("fsync"), "the table and the store:\n{stdout}");
    assert!(servers_under(dir.path()).is_empty(), "no server left");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "no namespace left");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the JSON is left in the workdir");
}
