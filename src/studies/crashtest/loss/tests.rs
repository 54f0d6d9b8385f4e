//! The loss loop and its accounting on a store in memory that, when a host
//! is lost, drops the last acknowledged write (a failover to a replica that
//! missed it): the count must see every one, and see none when the store
//! drops nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::engine::throwaway::hosts::{HostId, Hosts, LostHost, Replicated};
use crate::engine::{Session, SessionInfo};

/// Blobs in memory, and the write a loss drops.
struct Memory {
    blobs: Mutex<Vec<Vec<u8>>>,
    /// The last write to a checked key: (key, its content before).
    last: Mutex<Option<(u32, Vec<u8>)>>,
    checked: u32,
    drops: bool,
    /// Writes to the probes (the only keys written after a loss), and the
    /// most of them made during one restore.
    probe_writes: AtomicU64,
    most_during_restore: AtomicU64,
    /// Readmissions, and those made while a writer was writing.
    readmits: AtomicU64,
    readmits_while_writing: AtomicU64,
    /// Writes under way now.
    writing: AtomicU64,
}

struct Cluster {
    hosts: Hosts,
    memory: Arc<Memory>,
    lost: Option<HostId>,
    /// The restore after this many losses fails (a standby that cannot be made).
    restore_fails_at: Option<u32>,
    restored: u32,
}

impl Replicated for Cluster {
    fn describe(&self) -> String {
        "memory".into()
    }
    fn hosts(&self) -> &Hosts {
        &self.hosts
    }
    fn losable(&self) -> Vec<HostId> {
        self.hosts.ids()
    }
    fn lose(&mut self, host: HostId) -> Result<LostHost> {
        let lost = self.hosts.lose(host)?;
        if self.memory.drops {
            // Locked in the writers' order (blobs, then last): the other
            // order deadlocked against a writer between its two locks.
            let mut blobs = self.memory.blobs.lock().unwrap();
            if let Some((key, before)) = self.memory.last.lock().unwrap().take() {
                blobs[key as usize] = before;
            }
        }
        self.lost = Some(host);
        Ok(lost)
    }
    fn fail_over(&mut self) -> Result<()> {
        Ok(())
    }
    fn endpoints(&self) -> Vec<std::net::SocketAddr> {
        Vec::new()
    }
    /// Lets the writers write while it restores: until they have made
    /// more writes than each writer's last two (one answered after the
    /// loss, one issued before it and answered after), or for a second.
    fn restore(&mut self) -> Result<()> {
        let writes = || self.memory.probe_writes.load(Ordering::SeqCst);
        let (from, until) = (writes(), std::time::Instant::now() + Duration::from_secs(1));
        while writes() - from <= 2 * u64::from(WRITERS) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.memory.most_during_restore.fetch_max(writes() - from, Ordering::SeqCst);
        self.restored += 1;
        if self.restore_fails_at == Some(self.restored) {
            return Err(Error::invalid("the standby could not be made"));
        }
        match self.lost.take() {
            Some(host) => self.hosts.replace(host),
            None => Ok(()),
        }
    }
    fn readmit(&mut self) -> Result<()> {
        self.memory.readmits.fetch_add(1, Ordering::SeqCst);
        if self.memory.writing.load(Ordering::SeqCst) > 0 {
            self.memory.readmits_while_writing.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

struct MemorySession {
    memory: Arc<Memory>,
    buf: Vec<u8>,
}

impl MemorySession {
    fn write(&self, key: u32, content: &[u8]) -> Result<u64> {
        let mut blobs = self.memory.blobs.lock().unwrap();
        let before = std::mem::replace(&mut blobs[key as usize], content.to_vec());
        if key <= self.memory.checked {
            *self.memory.last.lock().unwrap() = Some((key, before));
        } else {
            self.memory.probe_writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(content.len() as u64)
    }
}

impl Session for MemorySession {
    fn read(&mut self, key: u32) -> Result<u64> {
        self.buf = self.memory.blobs.lock().unwrap()[key as usize].clone();
        Ok(self.buf.len() as u64)
    }
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        self.memory.writing.fetch_add(1, Ordering::SeqCst);
        // A write takes a while, as a store's does: a readmission made
        // while the writers write would see one under way.
        std::thread::sleep(Duration::from_micros(200));
        let written = self.write(key, content);
        self.memory.writing.fetch_sub(1, Ordering::SeqCst);
        written
    }
    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        self.overwrite(key, content).map(drop)
    }
    fn delete(&mut self, _: u32) -> Result<bool> {
        Ok(false)
    }
    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
    fn info(&self) -> SessionInfo {
        SessionInfo::default()
    }
    fn last_read(&self) -> Option<&[u8]> {
        Some(&self.buf)
    }
    fn round_trip(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }
}

struct MemoryTarget {
    memory: Arc<Memory>,
    cluster: Arc<Mutex<dyn Replicated + Send>>,
}

impl Target for MemoryTarget {
    fn cluster(&self) -> Arc<Mutex<dyn Replicated + Send>> {
        Arc::clone(&self.cluster)
    }
    fn session(&self, _newest: bool) -> Result<Box<dyn Session>> {
        Ok(Box::new(MemorySession { memory: Arc::clone(&self.memory), buf: Vec::new() }))
    }
}

/// `losses` losses on a store in memory of 12 blobs at version 0.
fn run(drops: bool, losses: u32) -> MachineLossMethodResult {
    let (r, ended, _) = run_failing(drops, losses, None);
    ended.unwrap();
    r
}

/// As [`run`], its restore failing at loss `restore_fails_at`; how the
/// losses ended, and the store.
fn run_failing(
    drops: bool,
    losses: u32,
    restore_fails_at: Option<u32>,
) -> (MachineLossMethodResult, Result<()>, Arc<Memory>) {
    let plan = Plan {
        losses,
        count: 12,
        writers: WRITERS,
        seed: 3,
        max_delay: Duration::from_millis(5),
        bound: Duration::from_secs(600),
    };
    let blobs = (0..=plan.count)
        .map(|key| {
            let mut b = vec![0u8; super::super::dataset::blob_len(plan.seed, key)];
            if key > 0 {
                super::super::blob::encode(&mut b, key, 0);
            }
            b
        })
        .collect();
    let memory = Arc::new(Memory {
        blobs: Mutex::new(blobs),
        last: Mutex::new(None),
        checked: plan.checked(),
        drops,
        probe_writes: AtomicU64::new(0),
        most_during_restore: AtomicU64::new(0),
        readmits: AtomicU64::new(0),
        readmits_while_writing: AtomicU64::new(0),
        writing: AtomicU64::new(0),
    });
    let dir = tempfile::tempdir().unwrap();
    let hosts = Hosts::create_loopback(dir.path(), &["a", "b"], "a test").unwrap();
    let cluster: Arc<Mutex<dyn Replicated + Send>> =
        Arc::new(Mutex::new(Cluster { hosts, memory: Arc::clone(&memory), lost: None, restore_fails_at, restored: 0 }));
    let target: Arc<dyn Target> = Arc::new(MemoryTarget { memory: Arc::clone(&memory), cluster });
    let method = ConfigId::Replicated(crate::records::EngineKind::Postgres, crate::records::Replica::SyncStandby);
    let mut r = MachineLossMethodResult::default();
    let ended = super::losses(&target, &plan, method, &mut r, &|| {});
    (r, ended, memory)
}

#[test]
fn a_store_that_drops_an_acknowledged_write_at_each_loss_is_caught_every_time() {
    let r = run(true, 3);
    assert_eq!(r.losses, 3);
    assert_eq!(r.lost_acknowledged, 3, "one acknowledged write dropped per loss, each seen: {r:?}");
    assert_eq!((r.torn, r.missing), (0, 0), "an older whole version, not damage");
    assert!(r.acknowledged >= 3, "writes were acknowledged before each loss");
    assert_eq!(r.resumed_after_ms.len(), 3, "a time to resume per loss");
    assert_eq!(r.hosts_lost.len(), 3);
}

/// Writes that went on through a restore measured nothing, and bloated
/// a store whose writes go on meanwhile (an asynchronous standby's
/// primary), which every restore then copied whole: 20 losses filled the
/// disk. A writer stops once a write it issued after the loss is answered.
#[test]
fn the_writers_stop_once_writes_resumed_and_do_not_write_through_the_restore() {
    let (r, ended, memory) = run_failing(false, 3, None);
    ended.unwrap();
    assert_eq!(r.resumed_after_ms.len(), 3, "writes resumed after each loss: {r:?}");
    let most = memory.most_during_restore.load(Ordering::SeqCst);
    assert!(most <= 2 * u64::from(WRITERS), "{most} probe writes during one restore");
}

/// The next loss must strike a store whole as its clients see it: after
/// each round, once its writers stopped, the store readmits the new host
/// (Swift's proxy would skip it for a minute, leaving one host of three).
#[test]
fn each_loss_is_followed_by_the_readmission_of_the_new_host_once_the_writers_stopped() {
    let (r, ended, memory) = run_failing(false, 3, None);
    ended.unwrap();
    assert_eq!(r.losses, 3);
    assert_eq!(memory.readmits.load(Ordering::SeqCst), 3, "one readmission per loss");
    assert_eq!(memory.readmits_while_writing.load(Ordering::SeqCst), 0, "never while a writer writes");
}

/// At once, every method runs beside the others (each on a thread of its
/// own); one after the other, never two.
#[test]
fn methods_at_once_run_side_by_side_and_in_turn_one_at_a_time() {
    use crate::records::{EngineKind, Replica};
    let methods = [
        ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby),
        ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby),
        ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts),
    ];
    for at_once in [false, true] {
        let (running, most) = (AtomicU64::new(0), AtomicU64::new(0));
        let one = |_: usize, m: ConfigId| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // At once, wait (bounded) for the others to start too.
            let until = std::time::Instant::now() + Duration::from_secs(60);
            while at_once && most.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(m.name().to_string())
        };
        let (rows, interrupted) = each_method(&methods, at_once, &one, |m, _| m.name().into());
        assert!(!interrupted);
        assert_eq!(rows, methods.map(|m| m.name().to_string()), "in the methods' order");
        assert_eq!(most.load(Ordering::SeqCst), if at_once { 3 } else { 1 }, "at once: {at_once}");
    }
}

#[test]
fn a_store_that_keeps_every_acknowledged_write_loses_none() {
    let r = run(false, 3);
    assert_eq!(r.lost_acknowledged, 0, "{r:?}");
    assert!(r.acknowledged >= 3);
}

#[test]
fn a_machine_loss_of_a_store_with_one_copy_is_one_line() {
    let e = check_methods(&[ConfigId::Durable(crate::records::EngineKind::Postgres)]).unwrap_err().to_string();
    assert!(e.contains("postgres-durable") && e.contains("one copy") && !e.contains('\n'), "{e}");
    let replicated = ConfigId::Replicated(crate::records::EngineKind::Postgres, crate::records::Replica::SyncStandby);
    assert!(check_methods(&[replicated]).is_ok());
}

#[test]
fn a_method_that_fails_at_its_third_loss_keeps_the_two_it_completed_and_says_why() {
    let (mut r, ended, _) = run_failing(true, 5, Some(3));
    keep_completed(ended, &mut r).unwrap();
    assert_eq!(r.losses, 2, "{r:?}");
    assert_eq!(r.lost_acknowledged, 2, "the completed losses' counts are kept: {r:?}");
    assert!(r.failed.as_deref().is_some_and(|e| e.contains("the standby could not be made")), "{r:?}");
}

#[test]
fn a_failed_method_leaves_the_others_results_and_is_named_with_its_error() {
    use crate::records::{EngineKind, Replica};
    let methods = [
        ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby),
        ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby),
        ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts),
    ];
    for at_once in [false, true] {
        let ran = Mutex::new(Vec::new());
        let one = |i: usize, m: ConfigId| {
            ran.lock().unwrap().push(i);
            match i {
                1 => Err(Error::invalid("pg_basebackup failed")),
                _ => Ok(MachineLossMethodResult { method: m.name().into(), losses: 20, ..Default::default() }),
            }
        };
        let (rows, interrupted) = each_method(&methods, at_once, &one, MachineLossMethodResult::failed_before_any_loss);
        assert!(!interrupted);
        let mut ran = ran.into_inner().unwrap();
        ran.sort_unstable();
        assert_eq!(ran, [0, 1, 2], "the methods beside the failed one still run");
        check_rows(rows);
    }
}

/// The rows of three methods of which the second failed.
fn check_rows(rows: Vec<MachineLossMethodResult>) {
    let names: Vec<&str> = rows.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(names, ["postgres-sync-standby", "postgres-async-standby", "s3-swift-3hosts"]);
    assert_eq!((rows[0].losses, rows[2].losses), (20, 20), "the finished methods' results are kept");
    assert_eq!(rows[1].losses, 0);
    assert!(rows[1].failed.as_deref().is_some_and(|e| e.contains("pg_basebackup failed")), "{rows:?}");
    let section = MachineLossSection { methods: rows, ..MachineLossSection::default() };
    let failed: Vec<&str> = section.failed().map(|m| m.method.as_str()).collect();
    assert_eq!(failed, ["postgres-async-standby"]);
}

/// The cost reuses the loss run's cluster: a kept method's store is
/// handed back once, the very one (no second cluster is built for it);
/// one not asked for, or whose losses did not all complete, is not kept.
#[test]
fn a_store_is_kept_only_when_asked_and_whole_and_handed_back_once() {
    use crate::records::{EngineKind, Replica};
    let dir = tempfile::tempdir().unwrap();
    let kept = Kept::new(tempfile::tempdir_in(dir.path()).unwrap());
    // An S3 engine starts nothing until used: a store with no server.
    let store = |name: &str| -> Box<dyn Engine> {
        Box::new(crate::engine::s3::S3Engine::new(&dir.path().join(name), &EngineSettings::default()))
    };
    let swift = ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts);
    let (sync, control) = (
        ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby),
        ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby),
    );
    let keep = [swift, sync];
    assert!(kept.offer(&keep, (swift, true), Some(store("swift"))));
    assert!(!kept.offer(&keep, (control, true), Some(store("control"))), "a control is not asked for");
    assert!(!kept.offer(&keep, (sync, false), Some(store("sync"))), "its losses failed: not whole");
    assert!(!kept.offer(&keep, (sync, true), None), "a writer still held it");
    let handed = kept.take(swift).expect("the kept store");
    assert!(handed.path().ends_with("swift"), "the very store its losses ran on");
    assert!(kept.take(swift).is_none(), "handed back once");
    assert!(kept.take(sync).is_none() && kept.take(control).is_none());
}
