//! PostgreSQL end to end, on real throwaway clusters (PostgreSQL's server
//! programs must be installed: `.ci/run` installs them; without them these
//! tests fail, they never skip): durable and fast commits recorded, a cold
//! run's server restart, a SIGKILLed run's server stopped by the next run,
//! the crash test killing the server (no durable commit lost), and the bad
//! input of the issue (a full disk during export, wrong credentials...),
//! each a one-line error that changes nothing of the user's.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blobbench::engine::postgres::server::{alive, socket_dir_for, Cluster, DATA_DIR};
use common::{blobbench, enterable_tempdir, kvtest_db, ok, one_line_error, quick_error, server_setting, valid_results};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn postmaster_pid(dataset: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(dataset.join(DATA_DIR).join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// A kvtest database of `count` blobs of `size` bytes exported as `engine`
/// (in a directory the server's user can enter): the directory and the dataset.
fn exported(engine: &str, count: u32, size: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = enterable_tempdir();
    let (db, pg) = (dir.path().join("kv.db"), dir.path().join("pg"));
    kvtest_db(&db, count, size);
    ok(&["export", "--engine", engine, s(&db), s(&pg)]);
    (dir, pg)
}

#[test]
fn durable_and_fast_commits_are_recorded_with_the_server_settings() {
    let (dir, pg) = exported("postgres", 50, 3000);
    for (sync, setting) in [("durable", "on"), ("fast", "off")] {
        let out = dir.path().join(format!("{sync}.json"));
        ok(&["run", s(&pg), "--update", "--count", "50", "--repeat", "2", "--kv-sync", sync, "--json", s(&out)]);
        let r = valid_results(&out);
        let server = &r["experiments"][0]["params"]["server_info"];
        assert_eq!(server_setting(server, "synchronous_commit"), setting, "{server}");
        assert_eq!((server["place"].as_str(), server_setting(server, "fsync")), (Some("local"), "on"), "{server}");
        assert!(server_setting(server, "server_version_num").parse::<u64>().unwrap() >= 100_000);
        assert!(postmaster_pid(&pg).is_none(), "the server is stopped after the run");
    }
    let stat = ok(&["stat", s(&pg)]);
    assert!(stat.contains("Number of entries:        50") && stat.contains("TOAST bytes"), "{stat}");
}

/// Every process of the cluster that ever logged: the pids in
/// `server.log`'s line prefix ("2024-01-01 ... UTC [PID] LOG: ...").
fn logged_pids(dataset: &Path) -> Vec<i32> {
    let log = std::fs::read_to_string(dataset.join(DATA_DIR).join("server.log")).unwrap();
    let mut pids: Vec<i32> =
        log.lines().filter_map(|l| l.split_once(" [")?.1.split_once(']')?.0.parse().ok()).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Whether `pid` is a `postgres` process in the process table, running or
/// a zombie not yet reaped (what `pgrep postgres` finds).
fn postgres_listed(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(" (postgres) "))
}

/// `export` and `run` return only once their server has exited and been
/// reaped: right after, none of the cluster's processes is listed, so a
/// script may remove the dataset at once.
#[test]
fn no_process_of_the_cluster_outlives_the_command() {
    let (_dir, pg) = exported("postgres", 20, 1000);
    let listed = |pids: &[i32]| -> Vec<i32> { pids.iter().copied().filter(|&p| postgres_listed(p)).collect() };
    let after_export = logged_pids(&pg);
    assert!(!after_export.is_empty(), "the server logged its pid");
    assert_eq!(listed(&after_export), Vec::<i32>::new(), "after export");
    ok(&["run", s(&pg), "--count", "20", "--repeat", "1"]);
    let after_run = logged_pids(&pg);
    assert!(after_run.len() > after_export.len(), "the run's server logged too");
    assert_eq!(listed(&after_run), Vec::<i32>::new(), "after run");
    std::fs::remove_dir_all(&pg).expect("the dataset can be removed at once");
}

#[test]
fn a_cold_run_restarts_the_server_to_empty_shared_buffers() {
    let (_dir, pg) = exported("postgres", 20, 1000);
    let starts = || {
        let log = std::fs::read_to_string(pg.join(DATA_DIR).join("server.log")).unwrap();
        log.matches("ready to accept connections").count()
    };
    let before = starts();
    ok(&["run", s(&pg), "--count", "20", "--repeat", "3", "--cold"]);
    assert_eq!(starts() - before, 1 + 3, "one start for the run, one restart before each cold run");
    ok(&["run", s(&pg), "--count", "20", "--repeat", "3"]);
    assert_eq!(starts() - before, 5, "a warm run starts the server once");
}

#[test]
fn a_sigkilled_runs_server_is_stopped_by_the_next_run() {
    let (_dir, pg) = exported("postgres-lo", 20, 1000);
    let bin = assert_cmd::cargo::cargo_bin("blobbench");
    let mut child = std::process::Command::new(bin)
        .args(["run", s(&pg), "--count", "100000000", "--repeat", "50"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while postmaster_pid(&pg).is_none() {
        assert!(started.elapsed() < common::HANG, "the server never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let orphan = postmaster_pid(&pg).unwrap();
    assert!(alive(orphan), "a SIGKILLed run leaves its server running");
    ok(&["run", s(&pg), "--count", "20", "--repeat", "1"]);
    assert!(!alive(orphan), "the next run stopped the orphaned server");
    assert!(postmaster_pid(&pg).is_none());
}

#[test]
fn a_sigkilled_server_keeps_every_durable_commit() {
    let dir = enterable_tempdir();
    let json = dir.path().join("crash.json");
    let (kills, count) = ("2", "20");
    let out = ok(&[
        "crashtest",
        "--method",
        "postgres-durable,postgres-fast,postgres-lo-durable,postgres-lo-fast",
        "--kills",
        kills,
        "--count",
        count,
        "--workdir",
        s(dir.path()),
        "--json",
        s(&json),
    ]);
    let file = blobbench::results::read(&json).unwrap();
    let section = file.crashtest.expect("a crashtest section");
    let names: Vec<&str> = section.methods.iter().map(|m| m.method.as_str()).collect();
    assert_eq!(names, ["postgres-durable", "postgres-fast", "postgres-lo-durable", "postgres-lo-fast"]);
    for m in &section.methods {
        assert!(out.contains(&m.method), "{} is in the table:\n{out}", m.method);
        assert_eq!(m.kills, 2, "{}", m.method);
        assert!(m.server.as_deref().is_some_and(|d| d.starts_with("PostgreSQL ")), "{m:?}");
        assert_eq!(m.checks.integrity_failures, 0, "{}: the restarted server recovered", m.method);
        assert_eq!((m.checks.torn, m.checks.missing, m.checks.unexpected_version), (0, 0, 0), "{}", m.method);
        assert_eq!(m.checks.intact_old + m.checks.intact_new, 40, "{}", m.method);
        if m.method.ends_with("-durable") {
            assert!(m.acknowledges_durability, "{}", m.method);
            assert_eq!(m.undone, 0, "{}: synchronous_commit=on loses no acknowledged commit", m.method);
            assert!(m.checks.intact_new > 0, "{}: killed while writing, not before", m.method);
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the JSON is left");
    let err = common::power_cut_refusal("postgres-fast", dir.path());
    assert!(err.contains("cannot run on the power-cut layer"), "{err}");
}

#[test]
fn a_full_disk_during_export_leaves_nothing_that_looks_complete() {
    let dir = enterable_tempdir();
    let (db, pg) = (dir.path().join("kv.db"), dir.path().join("pg"));
    kvtest_db(&db, 300, 100_000);
    // A 20 MB file size limit on blobbench, inherited by the server: the
    // table's file cannot grow past it (the 16 MB WAL segments fit), so
    // COPY fails part way, as on a full disk.
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"));
    cmd.args(["export", "--engine", "postgres", s(&db), s(&pg)]).env_remove("RUST_BACKTRACE");
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let limit = libc::rlimit { rlim_cur: 20_000_000, rlim_max: 20_000_000 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let err = one_line_error(&cmd.output().unwrap());
    assert!(err.contains("cannot copy the rows") && err.contains("disk space"), "{err}");
    assert!(!pg.exists(), "no dataset under the target's name");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the staging cluster is removed: only kv.db");
}

#[test]
fn missing_server_programs_are_named_with_what_to_install() {
    let dir = enterable_tempdir();
    let (db, pg) = (dir.path().join("kv.db"), dir.path().join("pg"));
    kvtest_db(&db, 5, 100);
    let err = quick_error(blobbench().env("PATH", "/nonexistent").env("BLOBBENCH_PG_LIB", "/nonexistent").args([
        "export",
        "--engine",
        "postgres",
        s(&db),
        s(&pg),
    ]));
    assert!(err.contains("initdb and pg_ctl not found") && err.contains("apt-get install postgresql"), "{err}");
    assert!(!pg.exists(), "nothing is left behind");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only kv.db");
    // A study finds out before it builds anything.
    let out = dir.path().join("out");
    let err = quick_error(blobbench().env("PATH", "/nonexistent").env("BLOBBENCH_PG_LIB", "/nonexistent").args([
        "matrix",
        "--engines",
        "postgres",
        "--workdir",
        s(dir.path()),
        "--out",
        s(&out),
    ]));
    assert!(err.contains("initdb and pg_ctl not found"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no work directory, no report: only kv.db");
}

/// A dataset too deep for a socket address in its data directory (the
/// default `--workdir .` in a deep project directory) works: its cluster
/// listens in a short directory of its own under /tmp, removed when the
/// server stops.
#[test]
fn a_dataset_too_deep_for_a_socket_in_its_directory_is_exported_and_run() {
    let dir = enterable_tempdir();
    let deep = dir.path().join("d".repeat(70));
    std::fs::create_dir(&deep).unwrap();
    let (db, pg) = (deep.join("kv.db"), deep.join("pg"));
    kvtest_db(&db, 20, 1000);
    ok(&["export", "--engine", "postgres", s(&db), s(&pg)]);
    let socket = socket_dir_for(&pg.join(DATA_DIR));
    assert!(socket.to_string_lossy().starts_with("/tmp/blobbench-pg-"), "{}", socket.display());
    assert!(!socket.exists(), "removed when the export's server stopped");
    ok(&["run", s(&pg), "--count", "20", "--repeat", "1"]);
    assert!(!socket.exists(), "removed when the run's server stopped");
}

#[test]
fn the_matrix_puts_postgres_beside_the_files_by_blob_size() {
    let dir = enterable_tempdir();
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let args = ["matrix", "--engines", "postgres,postgres-lo", "--sizes", "4k,64k", "--pagesizes", "1024,4096"];
    let stdout =
        ok(&[&args[..], &["--total", "512k", "--rounds", "3", "--workdir", s(&work), "--out", s(&out)]].concat());
    assert!(stdout.contains("Engines beside the files"), "{stdout}");
    assert!(stdout.contains("PostgreSQL (bytea)") && stdout.contains("PostgreSQL (large objects)"), "{stdout}");
    let raw = valid_results(&out.join("results.json"));
    let m = &raw["matrix"];
    assert_eq!(m["params"]["engine_page_size"], 4096);
    for cell in m["cells"].as_array().unwrap() {
        let engines = cell["engines"].as_array().map_or(0, Vec::len);
        assert_eq!(engines, if cell["page_size"] == 4096 { 2 } else { 0 }, "{}", cell["page_size"]);
        for e in cell["engines"].as_array().into_iter().flatten() {
            let run = &e["read"]["runs"][0];
            let expect = cell["count"].as_u64().unwrap() * cell["size_bytes"].as_u64().unwrap();
            assert_eq!(run["bytes"].as_u64(), Some(expect), "every blob read back whole from the server");
            assert_eq!(e["files_ratio"]["rounds"], 3, "paired over the three rounds");
            let w = &e["writes"];
            assert_eq!(server_setting(&w["durable"]["params"]["server_info"], "synchronous_commit"), "on", "{w}");
            assert_eq!(server_setting(&w["fast"]["params"]["server_info"], "synchronous_commit"), "off", "{w}");
        }
    }
    let crossovers = m["engine_crossovers"].as_array().unwrap();
    let engines: Vec<&str> = crossovers.iter().map(|c| c["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["postgres", "postgres-lo"]);
    assert!(crossovers.iter().all(|c| c["durable"]["kind"].is_string()), "{crossovers:?}");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "every cell, cluster included, removed");
}

#[test]
fn crashtest_names_missing_server_programs_before_any_method_runs() {
    let dir = enterable_tempdir();
    let run = |methods: &str| {
        quick_error(blobbench().env("PATH", "/nonexistent").env("BLOBBENCH_PG_LIB", "/nonexistent").args([
            "crashtest",
            "--method",
            methods,
            "--kills",
            "1",
            "--count",
            "5",
            "--workdir",
            s(dir.path()),
        ]))
    };
    // `all` runs SQLite's and the files' methods first: named by the
    // up-front check (the method prefix), not by the first server method's
    // build after the others ran.
    for (methods, first) in [("all", "postgres-durable"), ("db-off,postgres-lo-fast", "postgres-lo-fast")] {
        let err = run(methods);
        assert!(err.starts_with(&format!("error: --method {first}: initdb and pg_ctl not found")), "{err}");
        assert!(err.contains("apt-get install postgresql"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{methods}: nothing is left behind");
    }
}

#[test]
fn bad_urls_and_servers_are_one_line_errors_that_change_nothing() {
    let dir = enterable_tempdir();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 5, 100);
    let out = dir.path().join("out");
    let export = |url: &str| {
        let mut c = blobbench();
        c.args(["export", "--engine", "postgres", s(&db), s(&out), "--pg", url]);
        c
    };
    let err = quick_error(&mut export("postgresql://[::1"));
    assert!(err.contains("not a PostgreSQL connection URL"), "{err}");
    let err = quick_error(&mut export("postgresql://u@127.0.0.1:1/db"));
    assert!(err.contains("cannot connect"), "unreachable: {err}");
    // A port in use by something that is not PostgreSQL.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let err = quick_error(&mut export(&format!("postgresql://u@127.0.0.1:{port}/db")));
    assert!(err.contains("cannot connect"), "port in use: {err}");
    drop(listener);
    assert!(!out.exists());

    // The user's own server: a cluster this test runs.
    let server_dir = dir.path().join("server");
    std::fs::create_dir(&server_dir).unwrap();
    Cluster::init(&server_dir).unwrap();
    let cluster = Cluster::start(&server_dir).unwrap();
    let socket = cluster.socket_dir().to_str().unwrap().to_string();
    let url = |user: &str| format!("postgresql://{user}@/postgres?host={socket}&port=5432");
    let err = quick_error(&mut export(&url("nobody")));
    assert!(err.contains("cannot connect") && err.contains("nobody"), "wrong credentials: {err}");

    let mut client =
        postgres::Client::connect(&format!("host={socket} port=5432 user=blobbench dbname=postgres"), postgres::NoTls)
            .unwrap();
    // A role that must give its password (scram), given the wrong one.
    let hba = server_dir.join(DATA_DIR).join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(&hba, format!("local all pw scram-sha-256\n{rules}")).unwrap();
    client.batch_execute("CREATE ROLE pw LOGIN PASSWORD 'right'; SELECT pg_reload_conf()").unwrap();
    let err = quick_error(&mut export(&url("pw:wrong")));
    assert!(err.contains("password authentication failed"), "wrong password: {err}");
    assert!(!err.contains("wrong"), "the password is not repeated: {err}");
    assert!(!out.exists());
    client.batch_execute("CREATE TABLE blobbench_out (k int); INSERT INTO blobbench_out VALUES (7)").unwrap();
    let err = quick_error(&mut export(&url("blobbench")));
    assert!(err.contains("table blobbench_out exists and is not blobbench's"), "{err}");
    let err = quick_error(export(&url("blobbench")).arg("--force"));
    assert!(err.contains("not blobbench's"), "{err}");
    let kept: i64 = client.query_one("SELECT sum(k)::int8 FROM blobbench_out", &[]).unwrap().get(0);
    assert_eq!(kept, 7, "the user's table is untouched");

    // A table blobbench made, run and then refused once it is not its own.
    let mine = dir.path().join("mine");
    ok(&["export", "--engine", "postgres", s(&db), s(&mine), "--pg", &url("blobbench")]);
    ok(&["run", s(&mine), "--count", "5", "--repeat", "1", "--pg", &url("blobbench")]);
    let err = quick_error(blobbench().args(["run", s(&mine), "--count", "5"]));
    assert!(err.contains("give its URL with --pg"), "{err}");
    client.batch_execute("COMMENT ON TABLE blobbench_mine IS 'somebody else''s'").unwrap();
    let err = quick_error(blobbench().args(["run", s(&mine), "--count", "5", "--update", "--pg", &url("blobbench")]));
    assert!(err.contains("is not blobbench's"), "{err}");
    let rows: i64 = client.query_one("SELECT count(*) FROM blobbench_mine", &[]).unwrap().get(0);
    assert_eq!(rows, 5);
    cluster.stop().unwrap();
}

/// The latency histogram of a result file, decoded by the hdrhistogram
/// crate itself (not by blobbench's merge).
fn histogram(file: &serde_json::Value) -> hdrhistogram::Histogram<u64> {
    use base64::Engine;
    let text = file["experiments"][0]["latency_histogram"].as_str().expect("a histogram");
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
    hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
}

/// A file's throughput: its timed operations over its timed loops' time.
fn ops_per_s(file: &serde_json::Value) -> f64 {
    let runs = file["experiments"][0]["runs"].as_array().unwrap();
    let ops: u64 = runs.iter().map(|r| r["ops"].as_u64().unwrap()).sum();
    let loop_ns: u64 = runs.iter().map(|r| r["phases"]["loop_ns"].as_u64().unwrap()).sum();
    ops as f64 * 1e9 / loop_ns as f64
}

/// Issue 35: four `run` processes on one throwaway dataset, started
/// together (`--start-at`), share its server (the first starts it, the
/// last stops it); `report --merge` of their four files gives the
/// percentiles of all their samples pooled and the sum of their
/// throughputs.
#[test]
fn four_client_processes_share_one_server_and_their_files_merge_exactly() {
    let (dir, pg) = exported("postgres", 50, 1000);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let at = (now + 5).to_string();
    let bin = assert_cmd::cargo::cargo_bin("blobbench");
    let outs: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("client{i}.json"))).collect();
    let clients: Vec<std::process::Child> = outs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            std::process::Command::new(&bin)
                .args(["run", s(&pg), "--count", "200", "--random", "--repeat", "2", "--start-at", &at])
                .args(["--label", &format!("client{i}"), "--json", s(out)])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in clients {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "a client failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(postmaster_pid(&pg).is_none(), "the last client stopped the server");
    assert!(!pg.join("blobbench-server.pid").exists(), "no user left listed");

    let files: Vec<serde_json::Value> = outs.iter().map(|p| valid_results(p)).collect();
    let start_at_ns = (now + 5) * 1_000_000_000;
    for f in &files {
        let run = &f["run"];
        assert_eq!(run["start_at_unix_ns"].as_u64(), Some(start_at_ns), "{run}");
        assert!(run["timed_start_unix_ns"].as_u64().unwrap() >= start_at_ns, "timed runs began at --start-at");
    }
    let mut pooled = histogram(&files[0]);
    for f in &files[1..] {
        pooled.add(histogram(f)).unwrap();
    }
    let sum: f64 = files.iter().map(ops_per_s).sum();
    let merged = blobbench::report::merge_files(&outs).unwrap();
    let us = |q: f64| pooled.value_at_quantile(q) as f64 / 1000.0;
    assert_eq!((merged.latency.p50_us, merged.latency.p99_us), (us(0.5), us(0.99)));
    assert_eq!(merged.latency.count, pooled.len());
    assert!((merged.ops_per_s - sum).abs() <= sum * 1e-9, "{} against {sum}", merged.ops_per_s);

    let mut args = vec!["report", "--merge"];
    args.extend(outs.iter().map(|p| s(p)));
    let text = ok(&args);
    assert!(text.contains(&format!("{sum:.0} ops/s")), "{text}");
    assert!(text.contains(&format!("{:.2}", us(0.99))) && text.contains("client3"), "{text}");
}
