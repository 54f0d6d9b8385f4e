//! The throwaway Swift cluster's files: each server's configuration, the
//! loopback ports they listen on, and the rings that place objects on the
//! device directories.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::programs::{Programs, ACCOUNT, DIR, NO_GREENDNS, REGION, SECRET, SERVERS, USER};
use crate::engine::s3::process::{all_free, helper, HeldPorts};
use crate::{Error, Result};

/// The loopback ports of one start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    pub proxy: u16,
    pub object: u16,
    pub container: u16,
    pub account: u16,
    pub memcached: u16,
}

impl Ports {
    /// The port of `server` (one of [`SERVERS`]).
    pub fn of(&self, server: &str) -> u16 {
        match server {
            "object" => self.object,
            "container" => self.container,
            "account" => self.account,
            _ => self.proxy,
        }
    }

    fn all(&self) -> [u16; 5] {
        [self.proxy, self.object, self.container, self.account, self.memcached]
    }

    /// Five loopback ports free now: the previous start's when all still
    /// are (its rings need no rewrite), else new ones the kernel picks.
    pub fn pick(previous: Option<Ports>) -> Result<Ports> {
        if let Some(p) = previous.filter(|p| all_free(&p.all())) {
            return Ok(p);
        }
        let held = HeldPorts::pick(5)?;
        let port = |i| held.port(i);
        Ok(Ports { proxy: port(0), object: port(1), container: port(2), account: port(3), memcached: port(4) })
    }
}

/// Where a cluster's files are, inside a dataset's `swift/` directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    /// The cluster of the dataset in `dir`, by absolute paths (Swift's
    /// servers run from `/`).
    pub fn of(dir: &Path) -> Result<Layout> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        Ok(Layout { root: dir.join(DIR) })
    }

    /// The dataset's directory, which holds `swift/`.
    pub fn dataset(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    pub fn etc(&self) -> PathBuf {
        self.root.join("etc")
    }
    pub fn devices(&self) -> PathBuf {
        self.root.join("devices")
    }
    pub fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    pub fn log(&self, name: &str) -> PathBuf {
        self.root.join("log").join(format!("{name}.log"))
    }
    pub fn conf(&self, server: &str) -> PathBuf {
        self.etc().join(format!("{server}-server.conf"))
    }
    pub fn pid(&self, name: &str) -> PathBuf {
        self.run().join(format!("{name}.pid"))
    }
    /// The ports of the last start (reused when still free).
    pub fn ports_file(&self) -> PathBuf {
        self.etc().join("ports.json")
    }

    /// Makes the directories of a new cluster with `replicas` devices.
    pub fn create(&self, replicas: u8) -> Result<()> {
        let mut dirs = vec![self.etc(), self.run(), self.root.join("log")];
        dirs.extend((1..=replicas).map(|i| self.devices().join(format!("d{i}"))));
        for d in dirs {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
        }
        Ok(())
    }

    pub fn replicas(&self) -> Result<u8> {
        let dir = self.devices();
        let n = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, "cannot list the devices", e))?.count();
        u8::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| Error::bad_input(&dir, "holds no Swift device"))
    }

    /// Writes every server's configuration for `ports` and moves the rings'
    /// devices there when they changed (or makes the rings, the first time).
    pub fn write(&self, programs: &Programs, ports: Ports) -> Result<()> {
        let user = current_user();
        for server in SERVERS {
            let text = if server == "proxy" {
                proxy_conf(self, ports, &user)
            } else {
                storage_conf(self, server, ports.of(server), &user)
            };
            crate::util::fsutil::write_atomic(&self.conf(server), text.as_bytes())?;
        }
        let previous = read_ports(&self.ports_file());
        let rings_there =
            ["account", "container", "object"].iter().all(|k| self.etc().join(format!("{k}.ring.gz")).is_file());
        if previous != Some(ports) || !rings_there {
            self.write_rings(programs, ports)?;
        }
        let json =
            serde_json::to_string(&ports).map_err(|e| Error::invalid(format!("cannot encode the ports: {e}")))?;
        crate::util::fsutil::write_atomic(&self.ports_file(), json.as_bytes())
    }

    fn write_rings(&self, programs: &Programs, ports: Ports) -> Result<()> {
        let etc = self.etc();
        let out = helper(&programs.python)
            .arg("-c")
            .arg(include_str!("rings.py"))
            .arg(&etc)
            .arg(self.replicas()?.to_string())
            .arg(format!("account={}", ports.account))
            .arg(format!("container={}", ports.container))
            .arg(format!("object={}", ports.object))
            .env(NO_GREENDNS.0, NO_GREENDNS.1)
            .current_dir("/")
            .output()
            .map_err(|e| Error::io(&programs.python, "cannot run Swift's Python to build the rings", e))?;
        if out.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output");
        Err(Error::bad_input(&etc, format!("cannot build Swift's rings: {last}")))
    }
}

fn read_ports(file: &Path) -> Option<Ports> {
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

/// The ports of the cluster's last start, if it ever started.
pub fn last_ports(layout: &Layout) -> Option<Ports> {
    read_ports(&layout.ports_file())
}

/// The user the servers run as: Swift drops privileges to `user` only with
/// `workers >= 1`, so with `workers = 0` naming ourselves keeps it from
/// trying to become someone else.
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

/// One storage server (object, container or account) on all the devices.
/// `workers = 0`: one process, which never drops privileges; devices are
/// plain directories (`mount_check = false`, no fallocate).
fn storage_conf(layout: &Layout, server: &str, port: u16, user: &str) -> String {
    format!(
        "# blobbench's throwaway Swift cluster: rewritten at each start\n\
         [DEFAULT]\nbind_ip = 127.0.0.1\nbind_port = {port}\nworkers = 0\ndevices = {devices}\n\
         mount_check = false\ndisable_fallocate = true\nswift_dir = {etc}\nuser = {user}\n\
         log_name = {server}-server\nrecon_cache_path = {run}\n\n\
         [pipeline:main]\npipeline = healthcheck {server}-server\n\n\
         [app:{server}-server]\nuse = egg:swift#{server}\n\n\
         [filter:healthcheck]\nuse = egg:swift#healthcheck\n",
        devices = layout.devices().display(),
        etc = layout.etc().display(),
        run = layout.run().display(),
    )
}

/// The proxy with Swift's S3 API (`s3api`, path-style, region us-east-1)
/// and its test authentication (`tempauth`: access key `test:tester`,
/// secret `testing`), in the pipeline order s3api needs. Its timeouts for
/// its own requests to the storage servers are raised from Swift's 0.5 s
/// to connect and 10 s to answer: on a busy machine a single-process
/// object server in an fsync can miss those, and with one replica the
/// proxy then answers 503 to a PUT it never tried elsewhere.
fn proxy_conf(layout: &Layout, ports: Ports, user: &str) -> String {
    format!(
        "# blobbench's throwaway Swift cluster: rewritten at each start\n\
         [DEFAULT]\nbind_ip = 127.0.0.1\nbind_port = {proxy}\nworkers = 0\nswift_dir = {etc}\nuser = {user}\n\
         log_name = proxy-server\n\n\
         [pipeline:main]\npipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats \
         s3api tempauth copy slo dlo versioned_writes proxy-logging proxy-server\n\n\
         [app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\nconn_timeout = 5\nnode_timeout = 60\n\n\
         [filter:catch_errors]\nuse = egg:swift#catch_errors\n\n\
         [filter:gatekeeper]\nuse = egg:swift#gatekeeper\n\n\
         [filter:healthcheck]\nuse = egg:swift#healthcheck\n\n\
         [filter:proxy-logging]\nuse = egg:swift#proxy_logging\n\n\
         [filter:cache]\nuse = egg:swift#memcache\nmemcache_servers = 127.0.0.1:{memcached}\n\n\
         [filter:listing_formats]\nuse = egg:swift#listing_formats\n\n\
         [filter:s3api]\nuse = egg:swift#s3api\nlocation = {region}\n\n\
         [filter:tempauth]\nuse = egg:swift#tempauth\nuser_{account}_{user_name} = {secret} .admin\n\n\
         [filter:copy]\nuse = egg:swift#copy\n\n\
         [filter:slo]\nuse = egg:swift#slo\n\n\
         [filter:dlo]\nuse = egg:swift#dlo\n\n\
         [filter:versioned_writes]\nuse = egg:swift#versioned_writes\n",
        proxy = ports.proxy,
        memcached = ports.memcached,
        etc = layout.etc().display(),
        region = REGION,
        account = ACCOUNT,
        user_name = USER,
        secret = SECRET,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn five_different_free_ports_are_picked_and_kept_while_free() {
        let p = Ports::pick(None).unwrap();
        let mut all = p.all().to_vec();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 5, "{p:?}");
        assert_eq!(Ports::pick(Some(p)).unwrap(), p, "free ports are kept");
        let held = TcpListener::bind(("127.0.0.1", p.proxy)).unwrap();
        assert_ne!(Ports::pick(Some(p)).unwrap().proxy, p.proxy, "a taken port is replaced");
        drop(held);
    }

    #[test]
    fn the_proxy_speaks_s3_on_loopback_with_the_test_account() {
        let layout = Layout { root: PathBuf::from("/d/swift") };
        let ports = Ports { proxy: 1, object: 2, container: 3, account: 4, memcached: 5 };
        let proxy = proxy_conf(&layout, ports, "root");
        assert!(proxy.contains("bind_ip = 127.0.0.1\nbind_port = 1\n"));
        assert!(proxy.contains("s3api tempauth"));
        assert!(proxy.contains("memcache_servers = 127.0.0.1:5"));
        assert!(proxy.contains("user_test_tester = testing .admin"));
        assert!(proxy.contains("conn_timeout = 5\nnode_timeout = 60\n"), "timeouts for a busy machine");
        let object = storage_conf(&layout, "object", 2, "root");
        assert!(object.contains("devices = /d/swift/devices\nmount_check = false"));
        assert!(object.contains("workers = 0") && object.contains("use = egg:swift#object"));
    }
}
