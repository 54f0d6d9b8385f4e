//! A real primary and standby: failover to a synchronous standby keeps
//! what was committed; an asynchronous one on loopback serves on after
//! losing its standby; a standby that cannot start leaves nothing running.

use super::*;
use crate::engine::postgres::replication;
use crate::engine::throwaway::hosts::DIR;

fn write(client: &mut Client, k: i64) -> std::result::Result<u64, postgres::Error> {
    client.execute("INSERT INTO t(k) VALUES ($1)", &[&k])
}

fn count(client: &mut Client) -> i64 {
    client.query_one("SELECT count(*) FROM t", &[]).unwrap().get(0)
}

fn sync_state(cluster: &PgReplicated) -> Option<String> {
    let mut c = cluster.connect_to(cluster.primary(), "postgres").unwrap();
    c.query_opt("SELECT sync_state FROM pg_stat_replication", &[]).unwrap().and_then(|r| r.get(0))
}

/// No process of the cluster's left: none in its hosts' directories'
/// command lines (its postmasters name their data directory).
fn nothing_runs_under(dir: &Path) {
    let needle = dir.display().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(!text.contains(&needle), "left running: {text}");
    }
}

#[test]
fn a_lost_primary_fails_over_to_its_synchronous_standby_which_kept_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = PgReplicated::create(dir.path(), PgStandby::Sync).unwrap();
    assert!(cluster.hosts_network().is_namespaces(), "as root (.ci/run), each node on a host of its own");
    assert_eq!(sync_state(&cluster).as_deref(), Some("sync"));
    assert!(cluster.describe().contains("synchronous standby"), "{}", cluster.describe());
    let primary = cluster.primary();
    let seen = replication::read(&mut cluster.connect_to(primary, "postgres").unwrap(), dir.path()).unwrap();
    assert_eq!(seen.wait.refusal(), None, "a commit waits for the standby's disk: {}", seen.wait.describe());
    assert!(seen.wait.describe().contains("1 streaming as synchronous"), "{}", seen.wait.describe());
    let mut client = cluster.client_config(LOCAL_DB).connect(NoTls).unwrap();
    client.batch_execute("CREATE TABLE t(k bigint)").unwrap();
    for k in 0..20 {
        write(&mut client, k).unwrap();
    }
    let primary = cluster.primary();
    let lost = cluster.lose(primary).unwrap();
    assert!(lost.killed >= 2, "the postmaster and its backends");
    let pid_file = std::fs::read_to_string(lost.moved_to.join("pgdata/postmaster.pid")).unwrap();
    assert!(lost.moved_to.join("pgdata/server.log").is_file(), "its log kept aside");
    assert!(!lost.moved_to.join("pgdata/base").exists(), "its copy of the tables not kept");
    let segment = pid_file.lines().nth(6).and_then(|l| l.split_whitespace().nth(1)).unwrap().to_string();
    let segments = std::fs::read_to_string("/proc/sysvipc/shm").unwrap();
    assert!(
        !segments.lines().skip(1).any(|r| r.split_whitespace().nth(1) == Some(segment.as_str())),
        "the lost postmaster's shared memory segment {segment} went with it"
    );
    assert!(write(&mut client, 99).is_err(), "the lost primary answers nothing (bounded by NET_TIMEOUT)");
    cluster.fail_over().unwrap();
    assert_ne!(cluster.primary(), primary, "the standby leads");
    assert_eq!(cluster.endpoints().len(), 1);
    let mut client = cluster.client_config(LOCAL_DB).connect(NoTls).unwrap();
    assert_eq!(count(&mut client), 20, "every acknowledged commit is on the promoted standby");
    cluster.restore().unwrap();
    assert_eq!(sync_state(&cluster).as_deref(), Some("sync"), "a new synchronous standby");
    write(&mut client, 20).unwrap();
    assert_eq!(cluster.endpoints().len(), 2);
    cluster.stop().unwrap();
    assert!(!dir.path().join(DIR).exists(), "the hosts removed");
    nothing_runs_under(dir.path());
}

#[test]
fn an_asynchronous_standby_on_loopback_is_lost_and_replaced_while_the_primary_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = PgReplicated::create_loopback(dir.path(), PgStandby::Async, "asked by the test").unwrap();
    assert!(!cluster.hosts_network().is_namespaces());
    assert_eq!(sync_state(&cluster).as_deref(), Some("async"));
    let mut admin = cluster.connect_to(cluster.primary(), "postgres").unwrap();
    let seen = replication::read(&mut admin, dir.path()).unwrap();
    assert!(seen.wait.refusal().unwrap().contains("synchronous_standby_names"), "{:?}", seen.wait);
    admin.batch_execute("CREATE ROLE watcher LOGIN").unwrap();
    let mut watcher = bounded_config("postgres");
    watcher.user("watcher").host("127.0.0.1").port(cluster.ports[cluster.primary().0]);
    let e = replication::read(&mut watcher.connect(NoTls).unwrap(), dir.path()).unwrap_err().to_string();
    assert!(e.contains("grant it pg_monitor") && !e.contains('\n'), "{e}");
    admin.batch_execute("GRANT pg_monitor TO watcher").unwrap();
    assert!(replication::read(&mut watcher.connect(NoTls).unwrap(), dir.path()).is_ok(), "pg_monitor suffices");
    let mut client = cluster.client_config(LOCAL_DB).connect(NoTls).unwrap();
    client.batch_execute("CREATE TABLE t(k bigint)").unwrap();
    let standby = HostId(1 - cluster.primary().0);
    cluster.lose(standby).unwrap();
    cluster.fail_over().unwrap();
    write(&mut client, 1).unwrap();
    assert_eq!(count(&mut client), 1, "an asynchronous primary does not wait for a standby");
    cluster.restore().unwrap();
    drop(client);
    drop(cluster);
    assert!(!dir.path().join(DIR).exists(), "a drop removes the hosts");
    nothing_runs_under(dir.path());
}

/// A port picked here and taken before its node starts again (another
/// test's connection, say, while the host was lost) is picked anew: the
/// restored standby streams on another port, the old one's log kept.
#[test]
fn a_restored_standby_whose_picked_port_was_taken_starts_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = PgReplicated::create_loopback(dir.path(), PgStandby::Async, "asked by the test").unwrap();
    let standby = HostId(1 - cluster.primary().0);
    cluster.lose(standby).unwrap();
    let taken = cluster.ports[standby.0];
    let held = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, taken)).unwrap();
    cluster.restore().unwrap();
    assert_ne!(cluster.ports[standby.0], taken, "a new port picked");
    assert_eq!(sync_state(&cluster).as_deref(), Some("async"), "the standby streams");
    let data = node::data_dir(cluster.h().host(standby));
    assert!(std::fs::read_to_string(data.join("server.log.port-taken")).unwrap().contains("could not bind"));
    drop(held);
    cluster.stop().unwrap();
    nothing_runs_under(dir.path());
}

#[test]
fn a_standby_whose_port_is_taken_is_one_line_and_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let held = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let taken = held.local_addr().unwrap().port();
    let hosts = Hosts::create_loopback(dir.path(), &HOSTS, "test").unwrap();
    let ports = Some([free_port().unwrap(), taken]);
    let e = PgReplicated::start_on(hosts, Programs::find().unwrap(), PgStandby::Sync, ports).unwrap_err().to_string();
    assert!(e.contains("the standby did not start") && e.contains(&format!("port {taken}")), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(!dir.path().join(DIR).exists(), "the hosts removed");
    nothing_runs_under(dir.path());
}

#[test]
fn a_missing_pg_basebackup_is_named_with_its_install() {
    let dir = tempfile::tempdir().unwrap();
    let e = node::beside(&dir.path().join("pg_ctl")).unwrap_err().to_string();
    assert!(e.contains("pg_basebackup not found") && e.contains("postgresql-client"), "{e}");
    std::fs::write(dir.path().join("pg_basebackup"), "").unwrap();
    assert!(node::beside(&dir.path().join("pg_ctl")).is_ok());
}

/// The asynchronous standby's window, held open: the primary's WAL sender
/// stopped (a standby behind, as over a slow link), the primary still
/// acknowledges every commit, and a failover then loses them. (Stopping
/// the standby's WAL receiver would not do: what reached its socket is on
/// the standby's machine, and promotion reads it.) The window is the
/// standby's lag behind the primary's acknowledgements: on an idle veth
/// link the WAL sender is woken by each commit's flush, before the commit
/// is answered.
#[test]
fn an_asynchronous_standby_that_lags_loses_the_commits_its_primary_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = PgReplicated::create(dir.path(), PgStandby::Async).unwrap();
    let (primary, standby) = (cluster.primary(), HostId(1 - cluster.primary().0));
    let mut client = cluster.client_config(LOCAL_DB).connect(NoTls).unwrap();
    client.batch_execute("CREATE TABLE t(k bigint)").unwrap();
    write(&mut client, 0).unwrap();
    let mut replica = cluster.connect_to(standby, LOCAL_DB).unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while replica.query_one("SELECT count(*) FROM t", &[]).map(|r| r.get::<_, i64>(0)).ok() != Some(1) {
        assert!(Instant::now() < until, "the standby never replayed the first commit");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(replica);
    let mut admin = cluster.connect_to(primary, "postgres").unwrap();
    let sender: i32 = admin.query_one("SELECT pid FROM pg_stat_replication", &[]).unwrap().get(0);
    drop(admin);
    // SAFETY: kill only sends a signal, to the primary's WAL sender (the
    // loss SIGKILLs it with the rest of its host).
    unsafe { libc::kill(sender, libc::SIGSTOP) };
    for k in 1..=10 {
        write(&mut client, k).unwrap();
    }
    cluster.lose(primary).unwrap();
    cluster.fail_over().unwrap();
    let mut client = cluster.client_config(LOCAL_DB).connect(NoTls).unwrap();
    assert_eq!(count(&mut client), 1, "the 10 commits acknowledged while the standby lagged are gone");
    cluster.stop().unwrap();
    nothing_runs_under(dir.path());
}
