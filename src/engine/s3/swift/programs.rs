//! The programs a throwaway Swift cluster runs, found where Debian installs
//! them, and how they are started (without eventlet's own DNS module).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

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
/// each, measured 2026-11-28), for name lookups a cluster addressed by IP
/// never makes. With it off, eventlet uses the system resolver.
pub const NO_GREENDNS: (&str, &str) = ("EVENTLET_NO_GREENDNS", "yes");

/// The storage servers, in the order they start (before the proxy, which
/// answers before its backends are up, so it is not what tells the
/// cluster is up).
pub const STORAGE: [&str; 3] = ["object", "container", "account"];

/// The programs a cluster runs.
#[derive(Debug, Clone)]
pub struct Programs {
    /// `swift-{object,container,account}-server`, in [`STORAGE`]'s order.
    storage: [PathBuf; 3],
    proxy: PathBuf,
    pub memcached: PathBuf,
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
        let names = ["object", "container", "account", "proxy"].map(|s| format!("swift-{s}-server"));
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
        let [object, container, account, proxy] = found.map(|f| f.expect("checked above"));
        let python = interpreter(&proxy)?;
        Ok(Programs {
            storage: [object, container, account],
            proxy,
            memcached: memcached.expect("checked above"),
            python,
        })
    }

    /// The server program named `server` (`proxy` or one of [`STORAGE`]).
    pub fn server(&self, server: &str) -> &Path {
        match STORAGE.iter().position(|s| *s == server) {
            Some(i) => &self.storage[i],
            None => &self.proxy,
        }
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

/// The user the servers run as: Swift drops privileges to `user` only with
/// `workers >= 1`, so with `workers = 0` naming ourselves keeps it from
/// trying to become someone else (and memcached refuses root without `-u`).
pub fn current_user() -> String {
    // SAFETY: geteuid has no preconditions; getpwuid's result is copied out
    // at once, before any other call could reuse its static buffer.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() {
            return "root".into();
        }
        std::ffi::CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned()
    }
}

/// Whether the last line of a program that ended says its port was taken:
/// Swift's servers give up binding after their `bind_timeout` ("Could not
/// bind to 127.0.0.1:PORT after trying for 30 seconds"), memcached at once
/// ("failed to listen on TCP port PORT: Address already in use").
pub fn port_taken(last_line: &str) -> bool {
    last_line.contains("Could not bind to") || last_line.contains("Address already in use")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_or_memcached_that_lost_its_port_is_told_from_other_failures() {
        let swift = "Exception: Could not bind to 127.0.0.1:6011 after trying for 30 seconds";
        let memcached = "failed to listen on TCP port 11211: Address already in use";
        assert!(port_taken(swift) && port_taken(memcached));
        assert!(!port_taken("ImportError: No module named swift"));
    }
}
