//! The S3 engine end to end on real throwaway Swift clusters (Swift's
//! servers and memcached must be installed: `.ci/run` installs them;
//! without them these tests fail, they never skip): export, run, stat and
//! the crash test on a tiny dataset, a killed export leaving no server,
//! and a store the user runs (a cluster this test starts, with a bucket it
//! makes, which must survive) with bad endpoints, bad credentials and a
//! missing bucket, each a one-line error.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use blobbench::engine::s3::swift::Cluster;
use common::{blobbench, kvtest_db, ok, one_line_error, quick_error, valid_results};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Processes whose arguments name a path under `dir` (Swift's servers),
/// and the memcached any `run/memcached.pid` under `dir` names, alive.
fn servers_under(dir: &Path) -> Vec<i32> {
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
fn a_tiny_dataset_is_exported_run_described_and_crash_tested() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = (dir.path().join("kv.db"), dir.path().join("t.s3"));
    kvtest_db(&db, 20, 3000);
    let out = ok(&["export", "--engine", "s3", "--s3-replicas", "1", s(&db), s(&t)]);
    assert!(out.contains("Exported 20 blobs") && out.contains("blobs/s"), "{out}");
    let json = dir.path().join("r.json");
    ok(&["run", s(&t), "--count", "40", "--repeat", "2", "--json", s(&json)]);
    let r = valid_results(&json);
    let params = &r["experiments"][0]["params"];
    assert_eq!(params["layout"], "s3");
    let info = &params["server_info"];
    assert_eq!(info["place"], "local", "{info}");
    assert!(info["product"].as_str().unwrap().contains("Swift"), "{info}");
    let text = ok(&["run", s(&t), "--update", "--count", "10", "--repeat", "1"]);
    assert!(text.contains("commit is nothing: a PUT that returned is stored"), "{text}");
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
    assert_eq!((m.method.as_str(), m.kills, m.integrity_failures), ("s3-durable", 2, 0), "{out}");
    assert_eq!((m.torn, m.missing, m.unexpected_version, m.undone), (0, 0, 0, 0), "no acknowledged PUT lost: {out}");
    assert!(m.acknowledged > 0 && m.intact_new > 0, "killed while writing: {m:?}");
    // Listings and plain GETs are facts to report, not promises: a killed
    // object server can leave one container replica or one object replica
    // behind until Swift's replicators run.
    assert!(m.unlisted.is_some_and(|n| n <= m.blobs_checked), "the listing compared with the GETs: {m:?}");
    assert!(m.stale_reads.is_some_and(|n| n <= m.blobs_checked), "plain GETs compared with the newest: {m:?}");
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
    // The next export removes the killed one's directory.
    ok(&["export", "--engine", "s3", "--s3-replicas", "1", s(&db), s(&t)]);
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.starts_with(".t.s3.")), "{names:?}");
    assert!(servers_under(dir.path()).is_empty());
}

/// The user's own store, as the test makes it: a bucket and an object of
/// theirs, reached with rusty-s3 and ureq directly.
struct UsersStore {
    endpoint: String,
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
        let credentials = Credentials::new("test:tester", "testing");
        UsersStore { endpoint: endpoint.into(), bucket, credentials, agent, dead_proxy }
    }

    fn create(&self) {
        let url = self.bucket.create_bucket(&self.credentials).sign(Duration::from_secs(60));
        assert!(self.agent.put(url.as_str()).send_empty().unwrap().status().is_success());
    }

    fn put(&self, key: &str, body: &[u8]) {
        let url = self.bucket.put_object(Some(&self.credentials), key).sign(Duration::from_secs(60));
        assert!(self.agent.put(url.as_str()).send(body).unwrap().status().is_success());
    }

    fn get(&self, key: &str) -> Option<Vec<u8>> {
        let url = self.bucket.get_object(Some(&self.credentials), key).sign(Duration::from_secs(60));
        let mut resp = self.agent.get(url.as_str()).call().unwrap();
        resp.status().is_success().then(|| resp.body_mut().read_to_vec().unwrap())
    }

    /// blobbench with the store's credentials and every proxy variable
    /// naming a closed port: a store on loopback is reached directly.
    fn command(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = blobbench();
        c.args(args)
            .env("AWS_ACCESS_KEY_ID", "test:tester")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
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
fn a_store_you_run_keeps_its_bucket_and_bad_endpoints_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 12, 2000);
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    Cluster::init(&store_dir, 1).unwrap();
    let cluster = Cluster::start(&store_dir).unwrap();
    let user = UsersStore::new(&cluster.endpoint(), "users-bucket");
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
    assert!(out.contains("Writing objects under blobbench/mine/ in bucket users-bucket"), "{out}");
    assert!(user.get("blobbench/mine/0000000007").is_some(), "blob 7 is an object");
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

    // Replaced only with --force, and only its own prefix.
    let err = quick_error(&mut export(&mine, "users-bucket"));
    assert!(err.contains("--force"), "{err}");
    export(&mine, "users-bucket").arg("--force").assert().success();
    let err = quick_error(&mut export(&dir.path().join("foreign"), "users-bucket"));
    assert!(err.contains("are not blobbench's") && err.contains("refusing"), "{err}");

    // Bad input, each one line, within 5 s, touching nothing.
    let err = quick_error(&mut export(&dir.path().join("x"), "no-such-bucket"));
    assert!(err.contains("bucket no-such-bucket does not exist") && err.contains("create it first"), "{err}");
    let err = quick_error(export(&dir.path().join("x"), "users-bucket").env("AWS_SECRET_ACCESS_KEY", "wrong-s3cret"));
    assert!(err.contains("refused access key test:tester") && !err.contains("wrong-s3cret"), "{err}");
    let err = quick_error(export(&dir.path().join("x"), "users-bucket").env_remove("AWS_SECRET_ACCESS_KEY"));
    assert!(err.contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "{err}");
    let export_to = |url: &str| {
        let x = dir.path().join("x");
        user.command(&["export", "--engine", "s3", s(&db), s(&x), "--s3", url, "--s3-bucket", "b"])
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = quick_error(&mut export_to(&format!("http://127.0.0.1:{closed}")));
    assert!(err.contains(&format!("cannot connect to 127.0.0.1:{closed}: connection refused")), "{err}");
    // A store elsewhere goes through the proxy, and the error names it.
    let err = quick_error(&mut export_to("http://s3.invalid:9000"));
    assert!(err.contains(&format!("cannot connect to proxy {}: connection refused", user.dead_proxy)), "{err}");
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
    let err = quick_error(&mut export_to(&format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port())));
    assert!(err.contains("no answer within"), "{err}");
    drop(silent);
    assert!(!dir.path().join("x").exists(), "no dataset made by a failed export");

    // The user's bucket and objects are all still there.
    assert_eq!(user.get("theirs.txt").as_deref(), Some(&b"not blobbench's"[..]));
    assert!(user.get("blobbench/foreign/0000000001").is_some());
    cluster.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
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
    let args = ["matrix", "--engines", "s3", "--sizes", "4k,64k", "--pagesizes", "4096", "--total", "256k"];
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
    let stdout =
        ok(&[&args[..], &["--rounds", "1", "--engines", "s3", "--workdir", s(dir.path()), "--out", s(&out)]].concat());
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
    let err = quick_error(blobbench().args([
        "concurrency",
        "--engines",
        "lmdb",
        "--workdir",
        s(dir.path()),
        "--out",
        s(&dir.path().join("no")),
    ]));
    assert!(err.contains("lmdb is not a server store"), "{err}");
    assert!(!dir.path().join("no").exists());
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
    let args = ["advise", "--quick", "--count", "100", "--engines", "s3", "--budget", "45s"];
    let stdout = ok(&[&args[..], &["--workdir", work, "--out", page]].concat());
    let answer = stdout.rsplit_once("\nRecommendation: ").expect("a recommendation").1;
    assert!(answer.lines().any(|l| l.contains("S3 object store")), "a ranking line for s3: {answer}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("Crash facts: measured here by a quick power-cut run"), "the others' cuts ran: {md}");
    assert!(md.contains("(s3-durable): a server's data directory cannot run on the power-cut layer"), "{md}");
    assert!(md.contains("matrix --engines s3"), "why s3 has no size crossover: {md}");
    let v = valid_results(&out.join("results.json"));
    let ids: Vec<&str> = v["experiments"].as_array().unwrap().iter().filter_map(|e| e["id"].as_str()).collect();
    assert!(ids.contains(&"read/s3") && ids.contains(&"commit/s3-durable"), "{ids:?}");
    assert!(servers_under(dir.path()).is_empty(), "no cluster left after advise");
}
