//! The ports of a throwaway server's start, by name (`proxy`,
//! `h2.object`, `s3.grpc`), kept in its `run/` directory: the next start
//! takes them again while every one is still free, so that what the
//! server recorded of them (Swift's rings, SeaweedFS's master state) need
//! not change.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::process::{all_free, HeldPorts};
use crate::{Error, Result};

/// The ports of one start, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ports(BTreeMap<String, u16>);

/// The ports a server needs: single ones, and pairs whose second must be
/// `offset` above the first (SeaweedFS's admin server looks for its gRPC
/// port at its HTTP port + 10000, whatever its flag says).
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub single: &'a [&'a str],
    pub pairs: &'a [[&'a str; 2]],
    pub offset: u16,
}

impl Ports {
    /// Ports free now: `previous` when it names every wanted port and all
    /// still are free, else new ones (see [`HeldPorts`]), each different.
    pub fn pick(wanted: Wanted, previous: Option<Ports>) -> Result<Ports> {
        let names = wanted.single.iter().chain(wanted.pairs.iter().flatten());
        let names: Vec<String> = names.map(|n| n.to_string()).collect();
        if let Some(p) = previous.filter(|p| names.iter().all(|n| p.0.contains_key(n)) && all_free(&p.all())) {
            return Ok(p);
        }
        // Both held until the map is made, so no port is picked twice.
        let single = HeldPorts::pick(wanted.single.len())?;
        let pairs = match wanted.pairs.len() {
            0 => None,
            n => Some(HeldPorts::pick_spaced(n, Some(wanted.offset))?),
        };
        let mut ports = BTreeMap::new();
        for (i, name) in wanted.single.iter().enumerate() {
            ports.insert(name.to_string(), single.port(i));
        }
        for (i, [first, second]) in wanted.pairs.iter().enumerate() {
            let held = pairs.as_ref().expect("picked for every pair");
            ports.insert(first.to_string(), held.port(2 * i));
            ports.insert(second.to_string(), held.port(2 * i + 1));
        }
        Ok(Ports(ports))
    }

    /// The port named `name` (0 when this start has none of that name).
    pub fn get(&self, name: &str) -> u16 {
        self.0.get(name).copied().unwrap_or(0)
    }

    pub fn all(&self) -> Vec<u16> {
        self.0.values().copied().collect()
    }

    /// The ports a start recorded in `file` (None: none, or unreadable).
    pub fn read(file: &Path) -> Option<Ports> {
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
    }

    pub fn write(&self, file: &Path) -> Result<()> {
        let json = serde_json::to_string(self).map_err(|e| Error::invalid(format!("cannot encode the ports: {e}")))?;
        crate::util::fsutil::write_atomic(file, json.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const WANTED: Wanted =
        Wanted { single: &["proxy", "h1.object", "memcached"], pairs: &[["admin", "admin.grpc"]], offset: 10_000 };

    #[test]
    fn every_port_is_picked_apart_kept_while_free_and_replaced_once_taken() {
        let p = Ports::pick(WANTED, None).unwrap();
        let mut all = p.all();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "five different ports: {p:?}");
        assert_eq!(p.get("admin.grpc"), p.get("admin") + 10_000);
        assert_eq!(Ports::pick(WANTED, Some(p.clone())).unwrap(), p, "free ports are kept");
        let held = TcpListener::bind(("127.0.0.1", p.get("proxy"))).unwrap();
        assert_ne!(
            Ports::pick(WANTED, Some(p.clone())).unwrap().get("proxy"),
            p.get("proxy"),
            "a taken port is replaced"
        );
        drop(held);
        let fewer = Wanted { single: &["proxy"], pairs: &[], offset: 0 };
        let more = Ports::pick(WANTED, Some(Ports::pick(fewer, None).unwrap())).unwrap();
        assert_eq!(more.all().len(), 5, "a previous start that lacks a name is not taken again");
    }

    /// Swift's clusters made before ports had names recorded the same
    /// flat object: they read back as they were.
    #[test]
    fn a_flat_record_of_named_ports_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ports.json");
        std::fs::write(&file, r#"{"proxy":1,"object":2,"container":3,"account":4,"memcached":5}"#).unwrap();
        let p = Ports::read(&file).unwrap();
        assert_eq!((p.get("proxy"), p.get("memcached"), p.get("nothing")), (1, 5, 0));
        p.write(&file).unwrap();
        assert_eq!(Ports::read(&file), Some(p));
        std::fs::write(&file, r#"{"s3":[1,2]}"#).unwrap();
        assert_eq!(Ports::read(&file), None, "another shape is no record: new ports are picked");
    }
}
