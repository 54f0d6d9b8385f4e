//! A store the user runs (a SeaweedFS the tests start, with buckets they
//! make, which must survive): datasets on it, each owning its prefix, bad
//! endpoints and credentials, and drops that touch nothing else.

use std::path::Path;
use std::time::{Duration, Instant};

use blobbench::engine::s3::seaweedfs::{self, Mini};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use crate::common::{self, blobbench, kvtest_db, quick_error, servers_under, valid_results};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
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
    fn new(endpoint: &str, bucket: &str) -> UsersStore {
        let bucket = Bucket::new(endpoint.parse().unwrap(), UrlStyle::Path, bucket.to_string(), "us-east-1").unwrap();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().into();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dead_proxy = format!("http://127.0.0.1:{closed}");
        let credentials = Credentials::new(seaweedfs::ACCESS_KEY, seaweedfs::SECRET);
        UsersStore { endpoint: endpoint.into(), bucket, credentials, agent, dead_proxy }
    }

    /// The user's store as the tests make it: a SeaweedFS in `dir/store`,
    /// started through blobbench's own code, with `bucket` made in it.
    /// The server runs until the test stops it.
    pub(crate) fn started(dir: &Path, bucket: &str) -> (Mini, UsersStore) {
        let store_dir = dir.join("store");
        std::fs::create_dir(&store_dir).unwrap();
        Mini::init(&store_dir).unwrap();
        let server = Mini::start(&store_dir).unwrap();
        let user = UsersStore::new(&server.endpoint(), bucket);
        user.create();
        (server, user)
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
    let (store, user) = UsersStore::started(dir.path(), "users-bucket");
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

    bad_endpoints_are_one_line(&user, &db, dir.path());

    // The user's bucket and objects are all still there.
    assert_eq!(user.get("theirs.txt").as_deref(), Some(&b"not blobbench's"[..]));
    assert!(user.get("blobbench/foreign/0000000001").is_some());
    store.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
}

/// Bad input against the user's store, each one line within 5 s, touching
/// nothing: a missing bucket, bad credentials, endpoints that refuse,
/// that go through a proxy, or that never answer.
fn bad_endpoints_are_one_line(user: &UsersStore, db: &Path, dir: &Path) {
    let endpoint = user.endpoint.clone();
    let export = |target: &Path, bucket: &str| {
        user.command(&["export", "--engine", "s3", s(db), s(target), "--s3", &endpoint, "--s3-bucket", bucket])
    };
    let err = quick_error(&mut export(&dir.join("x"), "no-such-bucket"));
    assert!(err.contains("bucket no-such-bucket does not exist") && err.contains("create it first"), "{err}");
    let err = quick_error(export(&dir.join("x"), "users-bucket").env("AWS_SECRET_ACCESS_KEY", "wrong-s3cret"));
    assert!(err.contains("refused access key blobbench") && !err.contains("wrong-s3cret"), "{err}");
    let err = quick_error(export(&dir.join("x"), "users-bucket").env_remove("AWS_SECRET_ACCESS_KEY"));
    assert!(err.contains("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"), "{err}");
    let export_to = |url: &str| {
        let x = dir.join("x");
        user.command(&["export", "--engine", "s3", s(db), s(&x), "--s3", url, "--s3-bucket", "bkt"])
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
    let x = dir.join("x");
    let virtual_dots = ["--s3", "https://s3.invalid", "--s3-bucket", "a.b", "--s3-addressing", "virtual"];
    let err =
        quick_error(&mut user.command(&[&["export", "--engine", "s3", s(db), s(&x)][..], &virtual_dots].concat()));
    assert!(err.contains("cannot be part of a host name over https"), "{err}");
    // Something that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let err = quick_error(export_to(&silent_url).env(blobbench::engine::s3::STALL_ENV, "1"));
    assert!(err.contains("no answer within 1 s") && err.contains("waits longer"), "{err}");
    drop(silent);
    assert!(!dir.join("x").exists(), "no dataset made by a failed export");
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
    let (store_server, user) = UsersStore::started(dir.path(), "shared-bucket");
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

    an_interrupted_export_removes_what_it_wrote(&user, dir.path(), &store);
    an_unreachable_store_keeps_the_descriptor(&user, dir.path());

    assert_eq!(user.get("theirs.txt").as_deref(), Some(&b"not blobbench's"[..]));
    store_server.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
}

/// Ctrl-C during an export to the user's store: it stops, removes what it
/// wrote, says so.
fn an_interrupted_export_removes_what_it_wrote(user: &UsersStore, dir: &Path, store: &[&str]) {
    let big = dir.join("big.db");
    kvtest_db(&big, 20_000, 100);
    let c = dir.join("c.s3");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args([&["export", "--engine", "s3", s(&big), s(&c)][..], store].concat())
        .env("AWS_ACCESS_KEY_ID", seaweedfs::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", seaweedfs::SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while list_under(user, "blobbench/c-s3-") < 50 {
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
    assert_eq!(list_under(user, "blobbench/"), 0, "nothing left behind");
    assert!(!c.exists());
}

/// A store that cannot be reached: one line, the descriptor kept.
fn an_unreachable_store_keeps_the_descriptor(user: &UsersStore, dir: &Path) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = dir.join("gone");
    std::fs::create_dir(&gone).unwrap();
    let desc = format!(
        r#"{{"engine":"s3","bucket":"shared-bucket","prefix":"blobbench/gone-0000abcd/","id":"0000abcd","endpoint":"http://127.0.0.1:{closed}"}}"#
    );
    std::fs::write(gone.join("blobbench-s3.json"), &desc).unwrap();
    let err = quick_error(&mut user.command(&["drop", s(&gone)]));
    assert!(err.contains("connection refused") && err.contains("run drop again"), "{err}");
    assert_eq!(std::fs::read_to_string(gone.join("blobbench-s3.json")).unwrap(), desc);
}

/// How many objects of the user's bucket start with `prefix`.
fn list_under(user: &UsersStore, prefix: &str) -> usize {
    let mut list = user.bucket.list_objects_v2(Some(&user.credentials));
    list.with_prefix(prefix);
    let url = list.sign(Duration::from_secs(60));
    let text = user.agent.get(url.as_str()).call().unwrap().body_mut().read_to_string().unwrap();
    rusty_s3::actions::ListObjectsV2::parse_response(&text).unwrap().contents.len()
}
