//! Hosts on real namespaces (the tests run as root: `.ci/run` does) and on
//! loopback: what a loss does to a peer's connection, that nothing is left
//! after a drop, and that a killed owner's set is reaped.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::host::Host;
use super::net::NETNS_DIR;
use super::record::{registry_dir, Owner};
use super::set::chosen_network;
use super::*;
use crate::engine::throwaway::{alive, start_time};
use std::net::Ipv4Addr;

/// A TCP server in `host` on `port`: it accepts one connection, says "x"
/// and waits (python3, which Swift's install brings).
fn listen_in(host: &Host, port: u16) -> std::process::Child {
    let script = format!(
        "import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('{}',{port}))\ns.listen()\nc,_=s.accept()\nc.sendall(b'x')\ntime.sleep(600)\n",
        host.addr()
    );
    let mut cmd = host.command(Path::new("python3"), None).unwrap();
    cmd.args(["-c", &script]);
    let child = cmd.spawn().expect("python3 runs (Swift's install brings it)");
    host.adopt(child.id() as i32);
    child
}

/// Connects to `addr`, retrying while the server starts (bounded, so a
/// broken setup fails rather than hangs), and reads its "x".
fn connect(addr: SocketAddr) -> TcpStream {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(mut s) => {
                let mut b = [0u8; 1];
                s.read_exact(&mut b).unwrap();
                assert_eq!(&b, b"x");
                return s;
            }
            Err(e) if Instant::now() > until => panic!("cannot reach {addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn our_namespaces(hosts: &Hosts) -> Vec<String> {
    let prefix = format!("{}{}-", super::net::NS_PREFIX, hosts.record.tag());
    std::fs::read_dir(NETNS_DIR)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

fn links() -> String {
    String::from_utf8(std::process::Command::new("ip").args(["-o", "link"]).output().unwrap().stdout).unwrap()
}

#[test]
fn a_lost_host_in_a_namespace_leaves_its_peers_connections_hanging_and_nothing_behind() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the hosts' namespaces need root; .ci/run runs the tests as root");
    let dir = tempfile::tempdir().unwrap();
    let mut hosts = Hosts::create(dir.path(), &["a", "b"]).unwrap();
    assert!(hosts.network().is_namespaces(), "{:?}", hosts.network());
    let (a, b) = (hosts.named("a").unwrap(), hosts.named("b").unwrap());
    assert_ne!(hosts.host(a).addr(), hosts.host(b).addr(), "each host its own address");
    assert_ne!(hosts.host(a).addr(), hosts.client_addr());
    let namespaces = our_namespaces(&hosts);
    assert_eq!(namespaces.len(), 3, "a switch and two hosts: {namespaces:?}");
    let client_link = super::net::client_link_name(hosts.record.tag());
    assert!(links().contains(&format!(" {client_link}@")), "the client link is in the root namespace");

    let mut server = listen_in(hosts.host(b), 7000);
    let mut conn = connect(SocketAddr::new(hosts.host(b).addr().into(), 7000));
    let b_dir = hosts.host(b).dir().to_path_buf();
    std::fs::write(b_dir.join("data"), "on b's disk").unwrap();
    let lost = hosts.lose(b).unwrap();
    assert!(lost.killed >= 1, "its server was killed");
    assert!(!b_dir.exists() && lost.moved_to.join("data").is_file(), "its directory moved aside, kept");
    conn.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut buf = [0u8; 1];
    match conn.read(&mut buf) {
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
        other => panic!("a dead machine sends nothing, so the read must hang, not {other:?}"),
    }
    assert!(hosts.lose(b).unwrap_err().to_string().contains("already lost"));

    hosts.replace(b).unwrap();
    assert!(hosts.host(b).dir().is_dir() && !hosts.host(b).is_lost(), "a new, empty host");
    let mut again = listen_in(hosts.host(b), 7000);
    drop(connect(SocketAddr::new(hosts.host(b).addr().into(), 7000)));
    // Reaped already by the loss and the removal below (their kill waits).
    let _ = server.wait();

    let root = dir.path().join(DIR);
    let record = hosts.record.file.clone();
    hosts.remove().unwrap();
    assert!(!root.exists(), "every host directory removed, the lost one's too");
    assert!(!record.exists(), "the record goes last");
    let prefix = format!("{}{}", super::net::NS_PREFIX, record.file_name().unwrap().to_string_lossy());
    let left: Vec<_> = std::fs::read_dir(NETNS_DIR)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "no namespace left: {left:?}");
    assert!(!links().contains(&format!(" {client_link}@")), "no link left in the root namespace");
    let _ = again.wait();
}

#[test]
fn a_lost_host_on_loopback_resets_its_connections_and_is_said_to() {
    let dir = tempfile::tempdir().unwrap();
    let mut hosts = Hosts::create_loopback(dir.path(), &["a", "b"], "asked by the test").unwrap();
    assert!(hosts.network().describe().contains("reset"), "{}", hosts.network().describe());
    let b = hosts.named("b").unwrap();
    assert_eq!(hosts.host(b).addr(), Ipv4Addr::LOCALHOST);
    let port = free_port();
    let mut server = listen_in(hosts.host(b), port);
    let mut conn = connect(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port));
    let lost = hosts.lose(b).unwrap();
    assert_eq!(lost.killed, 1, "the adopted process");
    assert!(!alive(server.id() as i32));
    let _ = server.wait();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 1];
    match conn.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("on loopback the kernel ends the connection at once, not {other:?}"),
    }
    let root = dir.path().join(DIR);
    drop(hosts);
    assert!(!root.exists());
}

#[test]
fn a_killed_owners_hosts_are_reaped_processes_namespaces_and_directories() {
    // An owner killed once its hosts are made (alive while they are, so
    // that no other test's reaper, running meanwhile, takes them half-made).
    let mut child = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = child.id() as i32;
    let started = start_time(pid).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let network = chosen_network();
    let hosts = Hosts::make(dir.path(), &["a"], network, Owner { pid, started }).unwrap();
    let a = hosts.named("a").unwrap();
    let mut sleeper = hosts.host(a).command(Path::new("sleep"), None).unwrap();
    let mut sleeper = sleeper.arg("600").spawn().unwrap();
    hosts.host(a).adopt(sleeper.id() as i32);
    let namespaces = our_namespaces(&hosts);
    let root = dir.path().join(DIR);
    let record = registry_dir().unwrap().join(hosts.record.tag());
    // As a killed blobbench leaves it: nothing torn down.
    std::mem::forget(hosts);
    child.kill().unwrap();
    child.wait().unwrap();
    // Another test's reaper may take the set first: what holds is the end.
    reap_orphans().unwrap();
    assert!(!alive(sleeper.id() as i32), "its process killed");
    let _ = sleeper.wait();
    assert!(!root.exists() && !record.exists(), "its directories and record removed");
    for ns in namespaces {
        assert!(!Path::new(NETNS_DIR).join(&ns).exists(), "namespace {ns} deleted");
    }
}

/// A run killed between a process's start in a host and its adoption
/// (during `pg_ctl start`) leaves a process no record names; on loopback
/// no namespace holds it either: the reaper finds it by its set's mark.
/// Reapers take turns (across processes, through a lock in the records'
/// directory): one that met a set another was ending would find its
/// marker gone, leave its directory and return before it was ended.
#[test]
fn a_reaper_waits_while_another_holds_the_records() {
    use crate::engine::throwaway::lock::{AtCtrlC, DirLock};
    let held = DirLock::take(&registry_dir().unwrap(), Duration::from_secs(120), AtCtrlC::GiveUp).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reaper = std::thread::spawn(move || tx.send(reap_orphans().map(|_| ())).unwrap());
    assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "a reaper ran while another held the records");
    drop(held);
    assert!(rx.recv_timeout(Duration::from_secs(120)).unwrap().is_ok(), "it ran once they were let go");
    reaper.join().unwrap();
}

#[test]
fn a_process_started_in_a_loopback_host_and_never_adopted_is_reaped() {
    let mut owner = std::process::Command::new("sleep").arg("600").spawn().unwrap();
    let pid = owner.id() as i32;
    let started = start_time(pid).unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    let network = Network::Loopback { why: "the test".into() };
    let hosts = Hosts::make(dir.path(), &["a"], network, Owner { pid, started }).unwrap();
    let a = hosts.named("a").unwrap();
    let mut cmd = hosts.host(a).command(Path::new("sleep"), None).unwrap();
    let mut unadopted = cmd.arg("600").spawn().unwrap();
    let root = dir.path().join(DIR);
    std::mem::forget(hosts);
    owner.kill().unwrap();
    owner.wait().unwrap();
    // Another test's reaper may take the set first: what holds is the end.
    reap_orphans().unwrap();
    let _ = unadopted.try_wait();
    assert!(!alive(unadopted.id() as i32), "the process it never adopted is ended");
    let _ = unadopted.wait();
    assert!(!root.exists());
}

#[test]
fn host_names_are_plain_and_distinct() {
    let dir = tempfile::tempdir().unwrap();
    for names in [&["a", "a"][..], &["sw"], &["Bad"], &[]] {
        assert!(Hosts::create_loopback(dir.path(), names, "test").is_err(), "{names:?}");
    }
    assert!(!dir.path().join(DIR).exists(), "a refusal makes nothing");
}
