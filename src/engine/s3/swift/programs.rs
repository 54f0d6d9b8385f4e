//! What a throwaway Swift cluster is made of before it is configured: the
//! names and credentials its files and clients share, and the programs it
//! runs, found on `PATH` or where Debian installs them. A bottom file: the
//! cluster (`mod.rs`) and its files (`config.rs`) both use it, it uses
//! neither.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The four servers, in the order they start (the proxy last: it answers
/// before its backends are up, so it is not what tells the cluster is up).
pub const SERVERS: [&str; 4] = ["object", "container", "account", "proxy"];

/// The cluster's directory inside a local dataset's directory.
pub const DIR: &str = "swift";
/// tempauth's account and user: S3 access key `test:tester`.
pub const ACCOUNT: &str = "test";
pub const USER: &str = "tester";
/// tempauth's password for that user: the S3 secret. Not a secret: the
/// cluster listens on loopback only and lives as long as one run.
pub const SECRET: &str = "testing";
/// s3api's `location`; a client's region must match it.
pub const REGION: &str = "us-east-1";
/// What to install when Swift's programs are missing.
pub const INSTALL: &str =
    "install OpenStack Swift and memcached (Debian: apt-get install swift-proxy swift-object swift-container swift-account memcached)";
/// Swift's servers read their cluster's hash settings from this fixed path
/// (Debian's `swift` package installs it).
const SWIFT_CONF: &str = "/etc/swift/swift.conf";
/// Where Debian installs the programs; `BLOBBENCH_SWIFT_BIN` replaces it
/// (tests use it, with an empty `PATH`, to hide the install).
const DEBIAN_BIN: &str = "/usr/bin";
/// Keeps eventlet from importing dnspython (and through it httpx) in each
/// server: more than half of a server's start-up CPU (1.0-1.5 s to 0.44 s
/// each, measured 2026-11-28), for name lookups a cluster bound to
/// 127.0.0.1 never makes. With it off, eventlet uses the system resolver.
pub const NO_GREENDNS: (&str, &str) = ("EVENTLET_NO_GREENDNS", "yes");

/// The programs a cluster runs.
#[derive(Debug, Clone)]
pub struct Programs {
    /// `swift-{object,container,account,proxy}-server`, in [`SERVERS`]' order.
    pub(super) servers: [PathBuf; 4],
    pub(super) memcached: PathBuf,
    /// The interpreter Swift's programs run under (their `#!` line), for
    /// the ring builder.
    pub python: PathBuf,
}

impl Programs {
    /// Finds Swift's servers and memcached on `PATH`, else in `/usr/bin`;
    /// the error names every program missing and the packages to install.
    pub fn find() -> Result<Programs> {
        let bin = std::env::var_os("BLOBBENCH_SWIFT_BIN").map(PathBuf::from).unwrap_or_else(|| DEBIAN_BIN.into());
        let mut dirs: Vec<PathBuf> =
            std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
        dirs.push(bin.clone());
        let find = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());
        let names = SERVERS.map(|s| format!("swift-{s}-server"));
        let found = names.clone().map(|n| find(&n));
        let memcached = find("memcached");
        let mut missing: Vec<&str> =
            names.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(n, _)| n.as_str()).collect();
        if memcached.is_none() {
            missing.push("memcached");
        }
        if !missing.is_empty() {
            return Err(Error::invalid(format!(
                "{} not found on PATH or in {}: {INSTALL}",
                missing.join(", "),
                bin.display()
            )));
        }
        if !Path::new(SWIFT_CONF).is_file() {
            return Err(Error::invalid(format!("{SWIFT_CONF} is missing (Swift's servers read it): {INSTALL}")));
        }
        let servers = found.map(|f| f.expect("checked above"));
        let python = interpreter(&servers[3])?;
        Ok(Programs { servers, memcached: memcached.expect("checked above"), python })
    }
}

/// The interpreter named on `script`'s `#!` line (`#! /usr/bin/python3`,
/// or `#!/usr/bin/env python3`).
fn interpreter(script: &Path) -> Result<PathBuf> {
    let text = std::fs::read(script).map_err(|e| Error::io(script, "cannot read", e))?;
    let first = String::from_utf8_lossy(text.split(|&b| b == b'\n').next().unwrap_or_default()).into_owned();
    let words: Vec<&str> = first.strip_prefix("#!").unwrap_or_default().split_whitespace().collect();
    match words.as_slice() {
        [env, name, ..] if env.ends_with("/env") => Ok(PathBuf::from(name)),
        [python, ..] => Ok(PathBuf::from(python)),
        [] => Err(Error::bad_input(script, "has no #! line naming its Python")),
    }
}

/// Whether a throwaway cluster could be started here (each error says
/// what to install).
pub fn check_installed() -> Result<()> {
    Programs::find().map(drop)
}
