//! The throwaway Swift cluster's files: where they are (one host, or a
//! storage host's own directory each), each server's configuration, the
//! ports they listen on and the rings that place objects on the devices.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use super::programs::{current_user, Programs, NO_GREENDNS, STORAGE};
use crate::engine::s3::ports::{Ports, Wanted};
use crate::engine::s3::process::helper;
use crate::{Error, Result};

/// The cluster's directory inside a local dataset's directory: on one host.
pub const DIR: &str = "swift";
/// The same, with each replica on a storage host of its own.
pub const HOSTS_DIR: &str = "swift-3hosts";
/// The storage hosts of a cluster spread over hosts (one replica each).
pub const HOSTS: u8 = 3;
/// tempauth's account and user: S3 access key `test:tester`.
pub const ACCOUNT: &str = "test";
pub const USER: &str = "tester";
/// tempauth's password for that user: the S3 secret. Not a secret: the
/// cluster is reached on this machine only and lives as long as one run.
pub const SECRET: &str = "testing";
/// s3api's `location`; a client's region must match it.
pub const REGION: &str = "us-east-1";

/// How a cluster's storage servers are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One object, one container and one account server beside the proxy,
    /// each serving every device.
    OneHost,
    /// One storage host per replica: each its own object, container and
    /// account servers on its own device, in its own directory.
    Hosts,
}

/// One storage node: an object, a container and an account server over
/// its devices, with their configuration, pids and logs.
#[derive(Debug, Clone)]
pub struct Node {
    /// `h1`, `h2`... on a storage host; empty on the one-host cluster.
    pub name: String,
    /// Its directory: the host's own, or the one-host cluster's.
    pub root: PathBuf,
    /// Its devices' names (`d1`...), each one replica.
    pub devices: Vec<String>,
}

impl Node {
    pub fn etc(&self) -> PathBuf {
        self.root.join("etc")
    }
    pub fn devices(&self) -> PathBuf {
        self.root.join("devices")
    }
    pub fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    pub fn conf(&self, server: &str) -> PathBuf {
        self.etc().join(format!("{server}-server.conf"))
    }
    /// Its program `server` as the cluster's processes, ports and logs name
    /// it (`object`, or `h2.object` on a host).
    pub fn program(&self, server: &str) -> String {
        match self.name.as_str() {
            "" => server.to_string(),
            host => format!("{host}.{server}"),
        }
    }
    pub fn pid(&self, server: &str) -> PathBuf {
        self.run().join(format!("{server}.pid"))
    }
    pub fn log(&self, server: &str) -> PathBuf {
        self.root.join("log").join(format!("{server}.log"))
    }
}

/// Where a cluster's files are, inside a dataset's `swift/` (or
/// `swift-3hosts/`) directory. On hosts, `disks/h1`... are the storage
/// hosts' disks (each its servers' configuration, device, pids and logs),
/// kept from one start to the next; the proxy and memcached keep theirs in
/// the cluster's own `etc/`, `run/` and `log/`.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
    pub shape: Shape,
}

impl Layout {
    /// The cluster of the dataset in `dir`, by absolute paths (Swift's
    /// servers run from `/`).
    pub fn of(dir: &Path, shape: Shape) -> Result<Layout> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, "cannot resolve", e))?;
        let name = match shape {
            Shape::OneHost => DIR,
            Shape::Hosts => HOSTS_DIR,
        };
        Ok(Layout { root: dir.join(name), shape })
    }

    /// The dataset's directory, which holds the cluster's.
    pub fn dataset(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }

    pub fn etc(&self) -> PathBuf {
        self.root.join("etc")
    }
    pub fn run(&self) -> PathBuf {
        self.root.join("run")
    }
    pub fn log(&self, name: &str) -> PathBuf {
        self.root.join("log").join(format!("{name}.log"))
    }
    pub fn pid(&self, name: &str) -> PathBuf {
        self.run().join(format!("{name}.pid"))
    }
    pub fn proxy_conf(&self) -> PathBuf {
        self.etc().join("proxy-server.conf")
    }
    /// The ports of the last start (reused when still free).
    pub fn ports_file(&self) -> PathBuf {
        self.etc().join("ports.json")
    }
    /// Where the storage hosts' disks are.
    pub fn disks(&self) -> PathBuf {
        self.root.join("disks")
    }

    /// The directory holding every replica of the objects (and the
    /// container and account databases): the devices, or the hosts' disks.
    pub fn data(&self) -> PathBuf {
        match self.shape {
            Shape::OneHost => self.root.join("devices"),
            Shape::Hosts => self.disks(),
        }
    }

    /// The storage nodes: the one beside the proxy, or one per host.
    pub fn nodes(&self) -> Result<Vec<Node>> {
        Ok(self.nodes_for(self.replicas()?))
    }

    fn nodes_for(&self, replicas: u8) -> Vec<Node> {
        match self.shape {
            Shape::OneHost => {
                let devices = (1..=replicas).map(|i| format!("d{i}")).collect();
                vec![Node { name: String::new(), root: self.root.clone(), devices }]
            }
            Shape::Hosts => (1..=HOSTS)
                .map(|i| Node {
                    name: format!("h{i}"),
                    root: self.disks().join(format!("h{i}")),
                    devices: vec![format!("d{i}")],
                })
                .collect(),
        }
    }

    /// Makes the directories of a new cluster with `replicas` devices (on
    /// hosts, one device on each).
    pub fn create(&self, replicas: u8) -> Result<()> {
        let mut dirs = vec![self.etc(), self.run(), self.root.join("log")];
        for node in self.nodes_for(replicas) {
            dirs.extend([node.etc(), node.run(), node.root.join("log")]);
            dirs.extend(node.devices.iter().map(|d| node.devices().join(d)));
        }
        for d in dirs {
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, "cannot create", e))?;
        }
        Ok(())
    }

    /// Replicas: the devices there are (on hosts, one per host).
    pub fn replicas(&self) -> Result<u8> {
        if self.shape == Shape::Hosts {
            return Ok(HOSTS);
        }
        let dir = self.data();
        let n = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, "cannot list the devices", e))?.count();
        u8::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| Error::bad_input(&dir, "holds no Swift device"))
    }

    /// The ports a start needs, by the names [`Node::program`] gives.
    pub fn wanted(&self) -> Result<Vec<String>> {
        let mut names = vec!["proxy".to_string(), "memcached".to_string()];
        for node in self.nodes()? {
            names.extend(STORAGE.map(|s| node.program(s)));
        }
        Ok(names)
    }

    /// Ports free now for every server: the last start's when all still
    /// are (its rings need no rewrite), else new ones.
    pub fn pick_ports(&self) -> Result<Ports> {
        self.pick_ports_from(Ports::read(&self.ports_file()))
    }

    pub fn pick_ports_from(&self, previous: Option<Ports>) -> Result<Ports> {
        let names = self.wanted()?;
        let single: Vec<&str> = names.iter().map(String::as_str).collect();
        Ports::pick(Wanted { single: &single, pairs: &[], offset: 0 }, previous)
    }

    /// Writes every server's configuration for `ports`, each storage node
    /// listening on its address in `addrs` (in [`Layout::nodes`]' order),
    /// and moves the rings' devices there when they changed (or makes the
    /// rings, the first time); each host keeps its own copy of the rings.
    pub fn write(&self, programs: &Programs, ports: &Ports, addrs: &[IpAddr]) -> Result<()> {
        let user = current_user();
        let nodes = self.nodes()?;
        let write = |path: &Path, text: String| crate::util::fsutil::write_atomic(path, text.as_bytes());
        write(&self.proxy_conf(), proxy_conf(self, ports, &user))?;
        for (node, addr) in nodes.iter().zip(addrs) {
            for server in STORAGE {
                write(&node.conf(server), storage_conf(node, server, *addr, ports.get(&node.program(server)), &user))?;
            }
        }
        let previous = Ports::read(&self.ports_file());
        let addrs_file = self.etc().join("addresses.json");
        let addrs_json = serde_json::to_string(addrs).unwrap_or_default();
        let same_addrs = std::fs::read_to_string(&addrs_file).is_ok_and(|a| a == addrs_json);
        let rings_there = nodes
            .iter()
            .all(|n| ["account", "container", "object"].iter().all(|k| n.etc().join(format!("{k}.ring.gz")).is_file()));
        if previous.as_ref() != Some(ports) || !same_addrs || !rings_there {
            self.write_rings(programs, &nodes, ports, addrs)?;
            crate::util::fsutil::write_atomic(&addrs_file, addrs_json.as_bytes())?;
        }
        ports.write(&self.ports_file())
    }

    fn write_rings(&self, programs: &Programs, nodes: &[Node], ports: &Ports, addrs: &[IpAddr]) -> Result<()> {
        let etc = self.etc();
        let out = helper(&programs.python)
            .arg("-c")
            .arg(include_str!("rings.py"))
            .arg(&etc)
            .arg(ring_spec(nodes, ports, addrs).to_string())
            .env(NO_GREENDNS.0, NO_GREENDNS.1)
            .current_dir("/")
            .output()
            .map_err(|e| Error::io(&programs.python, "cannot run Swift's Python to build the rings", e))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("no output");
            return Err(Error::bad_input(&etc, format!("cannot build Swift's rings: {last}")));
        }
        for node in nodes.iter().filter(|n| n.etc() != etc) {
            for kind in ["account", "container", "object"] {
                let (from, to) = (etc.join(format!("{kind}.ring.gz")), node.etc().join(format!("{kind}.ring.gz")));
                let ring = std::fs::read(&from).map_err(|e| Error::io(&from, "cannot read", e))?;
                crate::util::fsutil::write_atomic(&to, &ring)?;
            }
        }
        Ok(())
    }
}

/// What `rings.py` places: each device with its zone (one per replica),
/// its node's address and that node's ports.
fn ring_spec(nodes: &[Node], ports: &Ports, addrs: &[IpAddr]) -> serde_json::Value {
    let mut devices = Vec::new();
    for (node, addr) in nodes.iter().zip(addrs) {
        let node_ports: serde_json::Map<String, serde_json::Value> =
            STORAGE.iter().map(|s| (s.to_string(), ports.get(&node.program(s)).into())).collect();
        for device in &node.devices {
            let zone = devices.len() + 1;
            devices
                .push(serde_json::json!({"device": device, "zone": zone, "ip": addr.to_string(), "ports": node_ports}));
        }
    }
    serde_json::json!({"replicas": devices.len(), "devices": devices})
}

/// One storage server (object, container or account) of `node`, on all
/// its devices. `workers = 0`: one process, which never drops privileges;
/// devices are plain directories (`mount_check = false`, no fallocate).
fn storage_conf(node: &Node, server: &str, addr: IpAddr, port: u16, user: &str) -> String {
    let app = if server == "object" { OBJECT_UPDATES } else { "" };
    format!(
        "# blobbench's throwaway Swift cluster: rewritten at each start\n\
         [DEFAULT]\nbind_ip = {addr}\nbind_port = {port}\nworkers = 0\ndevices = {devices}\n\
         mount_check = false\ndisable_fallocate = true\nswift_dir = {etc}\nuser = {user}\n\
         log_name = {server}-server\nrecon_cache_path = {run}\n\n\
         [pipeline:main]\npipeline = healthcheck {server}-server\n\n\
         [app:{server}-server]\nuse = egg:swift#{server}\n{app}\n\
         [filter:healthcheck]\nuse = egg:swift#healthcheck\n",
        devices = node.devices().display(),
        etc = node.etc().display(),
        run = node.run().display(),
    )
}

/// How long an object server waits for the container listing's update
/// after it stored an object, before it answers: 10 s, raised from Swift's
/// 1 s (`container_update_timeout`) and 3 s (`node_timeout`, the container
/// server's answer). blobbench learns the blobs' sizes from the listing, and
/// the throwaway cluster runs no object updater: an update that missed
/// Swift's 1 s (seen under CI's load: a listing made right after a write
/// session lacked a blob it had PUT back) reached the listing late or, saved
/// as an async pending, never. Swift already waited up to 1 s, so a PUT
/// whose update takes less answers exactly as before. The connect timeout
/// stays Swift's 0.5 s, so an update meant for a lost host still gives up
/// as soon as before.
const OBJECT_UPDATES: &str = "container_update_timeout = 10\nnode_timeout = 10\n";

/// The proxy with Swift's S3 API (`s3api`, path-style, region us-east-1)
/// and its test authentication (`tempauth`: access key `test:tester`,
/// secret `testing`), in the pipeline order s3api needs, on loopback
/// beside blobbench. Its timeouts for its own requests to the storage
/// servers are raised from Swift's 0.5 s to connect and 10 s to answer: on
/// a busy machine a single-process object server in an fsync can miss
/// those, and with one replica the proxy then answers 503 to a PUT it
/// never tried elsewhere. A storage host lost costs each request that
/// tries it up to `conn_timeout` until the proxy error-limits it (Swift's
/// own failure detection: 10 errors, then skipped for 60 s).
fn proxy_conf(layout: &Layout, ports: &Ports, user: &str) -> String {
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
         [filter:s3api]\nuse = egg:swift#s3api\nlocation = {REGION}\n\n\
         [filter:tempauth]\nuse = egg:swift#tempauth\nuser_{ACCOUNT}_{USER} = {SECRET} .admin\n\n\
         [filter:copy]\nuse = egg:swift#copy\n\n\
         [filter:slo]\nuse = egg:swift#slo\n\n\
         [filter:dlo]\nuse = egg:swift#dlo\n\n\
         [filter:versioned_writes]\nuse = egg:swift#versioned_writes\n",
        proxy = ports.get("proxy"),
        memcached = ports.get("memcached"),
        etc = layout.etc().display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_speaks_s3_on_loopback_with_the_test_account() {
        let layout = Layout { root: PathBuf::from("/d/swift"), shape: Shape::OneHost };
        let ports: Ports =
            serde_json::from_str(r#"{"proxy":1,"object":2,"container":3,"account":4,"memcached":5}"#).unwrap();
        let proxy = proxy_conf(&layout, &ports, "root");
        assert!(proxy.contains("bind_ip = 127.0.0.1\nbind_port = 1\n"));
        assert!(proxy.contains("s3api tempauth"));
        assert!(proxy.contains("memcache_servers = 127.0.0.1:5"));
        assert!(proxy.contains("user_test_tester = testing .admin"));
        assert!(proxy.contains("conn_timeout = 5\nnode_timeout = 60\n"), "timeouts for a busy machine");
        let node = Node { name: String::new(), root: layout.root.clone(), devices: vec!["d1".into()] };
        let object = storage_conf(&node, "object", [127, 0, 0, 1].into(), 2, "root");
        assert!(object.contains("bind_ip = 127.0.0.1\nbind_port = 2\n"));
        assert!(object.contains("devices = /d/swift/devices\nmount_check = false"));
        assert!(object.contains("workers = 0") && object.contains("use = egg:swift#object"));
        assert!(
            object.contains("use = egg:swift#object\ncontainer_update_timeout = 10\nnode_timeout = 10\n"),
            "an object server answers once its listing's update is made: {object}"
        );
        let container = storage_conf(&node, "container", [127, 0, 0, 1].into(), 3, "root");
        assert!(!container.contains("container_update_timeout"), "{container}");
    }

    /// On hosts, each replica's device is on a host of its own, in a zone
    /// of its own, at that host's address and ports; each host's servers
    /// read only their own directory.
    #[test]
    fn three_hosts_hold_one_device_each_at_their_own_address() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::of(dir.path(), Shape::Hosts).unwrap();
        layout.create(HOSTS).unwrap();
        assert_eq!(layout.replicas().unwrap(), 3);
        let nodes = layout.nodes().unwrap();
        assert_eq!(
            nodes.iter().map(|n| n.program("object")).collect::<Vec<_>>(),
            ["h1.object", "h2.object", "h3.object"]
        );
        assert!(nodes.iter().all(|n| n.devices().join(&n.devices[0]).is_dir() && n.root.starts_with(layout.disks())));
        let ports = layout.pick_ports_from(None).unwrap();
        assert_eq!(ports.all().len(), 2 + 3 * 3);
        let addrs: Vec<IpAddr> = ["10.0.0.2", "10.0.0.3", "10.0.0.4"].map(|a| a.parse().unwrap()).to_vec();
        let spec = ring_spec(&nodes, &ports, &addrs);
        assert_eq!(spec["replicas"], 3);
        let second = &spec["devices"][1];
        assert_eq!(
            (second["device"].as_str(), second["zone"].as_u64(), second["ip"].as_str()),
            (Some("d2"), Some(2), Some("10.0.0.3"))
        );
        assert_eq!(second["ports"]["container"].as_u64(), Some(u64::from(ports.get("h2.container"))));
        let conf = storage_conf(&nodes[1], "container", addrs[1], ports.get("h2.container"), "root");
        let own = nodes[1].root.display().to_string();
        assert!(conf.contains("bind_ip = 10.0.0.3\n") && conf.contains(&format!("devices = {own}/devices")), "{conf}");
        assert!(conf.contains(&format!("swift_dir = {own}/etc")), "its own copy of the rings: {conf}");
    }
}
