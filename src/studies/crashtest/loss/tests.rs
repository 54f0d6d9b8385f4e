//! The loss loop and its accounting on a store in memory that, when a host
//! is lost, drops the last acknowledged write (a failover to a replica that
//! missed it): the count must see every one, and see none when the store
//! drops nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::engine::throwaway::hosts::{HostId, Hosts, LostHost};
use crate::engine::SessionInfo;

/// Blobs in memory, and the write a loss drops.
struct Memory {
    blobs: Mutex<Vec<Vec<u8>>>,
    /// The last write to a checked key: (key, its content before).
    last: Mutex<Option<(u32, Vec<u8>)>>,
    checked: u32,
    drops: bool,
}

struct Cluster {
    hosts: Hosts,
    memory: Arc<Memory>,
    lost: Option<HostId>,
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
            if let Some((key, before)) = self.memory.last.lock().unwrap().take() {
                self.memory.blobs.lock().unwrap()[key as usize] = before;
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
    fn restore(&mut self) -> Result<()> {
        match self.lost.take() {
            Some(host) => self.hosts.replace(host),
            None => Ok(()),
        }
    }
}

struct MemorySession {
    memory: Arc<Memory>,
    buf: Vec<u8>,
}

impl Session for MemorySession {
    fn read(&mut self, key: u32) -> Result<u64> {
        self.buf = self.memory.blobs.lock().unwrap()[key as usize].clone();
        Ok(self.buf.len() as u64)
    }
    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        let mut blobs = self.memory.blobs.lock().unwrap();
        let before = std::mem::replace(&mut blobs[key as usize], content.to_vec());
        if key <= self.memory.checked {
            *self.memory.last.lock().unwrap() = Some((key, before));
        }
        Ok(content.len() as u64)
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
    let memory = Arc::new(Memory { blobs: Mutex::new(blobs), last: Mutex::new(None), checked: plan.checked(), drops });
    let dir = tempfile::tempdir().unwrap();
    let hosts = Hosts::create_loopback(dir.path(), &["a", "b"], "a test").unwrap();
    let cluster: Arc<Mutex<dyn Replicated + Send>> =
        Arc::new(Mutex::new(Cluster { hosts, memory: Arc::clone(&memory), lost: None }));
    let target: Arc<dyn Target> = Arc::new(MemoryTarget { memory, cluster });
    let method = ConfigId::Replicated(crate::records::EngineKind::Postgres, crate::records::Replica::SyncStandby);
    let mut r = MachineLossMethodResult::default();
    losses_into(&target, &plan, method, &mut r);
    r
}

fn losses_into(target: &Arc<dyn Target>, plan: &Plan, method: ConfigId, r: &mut MachineLossMethodResult) {
    losses(target, plan, method, r, &mut || {}).unwrap();
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
