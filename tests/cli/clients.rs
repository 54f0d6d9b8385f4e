//! `advise --clients-are processes` end to end: each client a process of
//! its own (the binary's hidden `client-worker`), the stores one process
//! alone may open excluded with their reason, histograms merged exactly,
//! and no client process left behind.

use crate::common;

/// The environment variable that marks one test's processes.
const MARK: &str = "BLOBBENCH_CLIENTS_TEST";

/// Processes of the hidden client command that carry `mark` in [`MARK`]
/// (a client inherits its parent's environment).
fn client_workers(mark: &str) -> Vec<String> {
    let marked = format!("{MARK}={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let (Ok(cmdline), Ok(environ)) =
            (std::fs::read(entry.path().join("cmdline")), std::fs::read(entry.path().join("environ")))
        else {
            continue;
        };
        let has = |bytes: &[u8], want: &str| bytes.split(|&b| b == 0).any(|a| a == want.as_bytes());
        if has(&cmdline, "client-worker") && has(&environ, &marked) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// Two client processes per candidate: SQLite, the files and LMDB run
/// (each client its own connection, descriptors or environment); redb is
/// excluded on the page and in the result with its reason; every arm's
/// merged histograms hold exactly the operations of its timed runs.
#[test]
fn advise_with_two_client_processes() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("page");
    let stdout = common::stdout_of(
        common::blobbench()
            .args(["advise", "--quick", "--no-power-cut", "--count", "200", "--mix", "50:50"])
            .args(["--engines", "lmdb,redb", "--clients", "2", "--clients-are", "processes"])
            .env(MARK, d.path())
            .arg("--workdir")
            .arg(d.path())
            .arg("--out")
            .arg(&out),
    );
    assert!(stdout.contains("Recommendation at 2 clients (processes), the concurrency asked for: "), "{stdout}");
    let why = "redb locks its database file for one process";
    assert!(stdout.contains(&format!("redb: not measured with client processes: {why}")), "{stdout}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("not measured with client processes"), "{md}");
    assert!(md.contains("a connection per client process"), "{md}");
    let v = common::valid_results(&out.join("results.json"));
    assert_eq!(v["advise"]["clients"]["are"], "processes");
    assert!(md.contains("SQLite has no one-writer row with client processes"), "{md}");
    let parsed = blobbench::results::read(&out.join("results.json")).unwrap();
    let clients = parsed.advise.unwrap().clients.expect("the clients' section");
    let excluded: Vec<String> = clients.excluded.iter().map(|e| e.candidate.name()).collect();
    assert_eq!(excluded, ["sqlite-one-writer", "redb"]);
    assert!(clients.excluded[1].why.starts_with(why));
    assert!(!clients.arms.iter().any(|a| a.id.contains("one-writer")), "no one-writer row with processes");
    let set = parsed.rounds.iter().find(|r| r.id == "advise/clients").expect("their rounds");
    assert!(set.consistent() && set.rounds.len() >= 6, "6 paired rounds");
    for id in ["sqlite", "sqlite+select", "lmdb"] {
        for n in [1u64, 2] {
            let arm = clients.arms.iter().find(|a| a.id == format!("clients/{n}/{id}")).expect(id);
            assert_eq!(arm.runs.len(), set.rounds.len(), "{}: each timed run's counts", arm.id);
            let mut merged = 0;
            for c in &arm.classes {
                let h = blobbench::measure::Latency::from_base64(&c.histogram).unwrap();
                assert_eq!(h.count(), c.latency.count, "{}: {}", arm.id, c.class);
                merged += h.count();
            }
            // One record per op of the timed runs: those that ended in
            // the windows, and at most one per client and run under way
            // at the deadline.
            let in_windows: u64 = arm.runs.iter().map(|r| r.ops).sum();
            let runs = arm.runs.len() as u64;
            assert!(merged >= in_windows && merged <= in_windows + n * runs, "{}: {merged} {in_windows}", arm.id);
        }
    }
    assert!(!clients.arms.iter().any(|a| a.candidate.name() == "redb"));
    let mark = d.path().to_string_lossy();
    assert_eq!(client_workers(&mark), Vec::<String>::new(), "no client process left behind");
}

/// The hidden client command given no job: one line, no panic.
#[test]
fn a_client_process_without_a_job_says_so() {
    let e = common::quick_error(common::blobbench().arg("client-worker").write_stdin(""));
    assert!(e.contains("no job given"), "{e}");
}

/// `run --clients N`: one configuration over windows shared by its
/// clients, through the driver advise uses. SQLite with one writer
/// connection never waits on SQLite's lock (its writers queue on the
/// process's mutex); client processes write through a connection each;
/// under a rate the due operations are counted.
#[test]
fn run_with_clients_measures_one_configuration_over_shared_windows() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("kv.db");
    common::stdout_of(common::blobbench().arg("init").arg(&db).args(["--count", "300", "--size", "2k"]));
    let run = |extra: &[&str]| {
        common::stdout_of(
            common::blobbench()
                .arg("run")
                .arg(&db)
                .args(["--mix", "80:20", "--commit-every", "1", "--jmode", "wal", "--sync", "full"])
                .args(["--window", "100ms", "--repeat", "2"])
                .args(extra)
                .env(MARK, d.path()),
        )
    };
    let one = run(&["--clients", "4", "--sqlite-writers", "one"]);
    assert!(
        one.contains("4 clients (threads), mix 80:20, closed loop: 2 timed runs, each one window of 0.100 s"),
        "{one}"
    );
    assert!(one.contains("busy waits: 0"), "one writer connection queues in the process: {one}");
    for line in ["ops_per_s ", "client_ops_min ", "client_ops_median ", "read_p99_us ", "write_p50_us "] {
        assert!(one.lines().any(|l| l.starts_with(line)), "{line}: {one}");
    }
    let procs = run(&["--clients", "2", "--clients-are", "processes"]);
    assert!(procs.contains("2 clients (processes)"), "{procs}");
    let paced = run(&["--clients", "2", "--rate", "200"]);
    assert!(paced.contains("open loop at 200 ops/s") && paced.contains("due per run: 20;"), "{paced}");
    let kv = rusqlite::Connection::open(&db).unwrap();
    let ok: String = kv.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    assert_eq!(client_workers(&d.path().to_string_lossy()), Vec::<String>::new(), "no client process left behind");
}

/// `run --clients 4` ends on every engine, reading and at 90:10, with and
/// without `--commit-every`: no client's session holds a lock at the
/// clients' shared start (LMDB's and redb's writers once began their
/// transaction in open, and the other clients waited for it for good),
/// and a client given no commit granularity commits every write (one
/// transaction per client and run deadlocked PostgreSQL's clients).
/// SQLite in a journal mode where readers block the writer is refused in
/// one line naming `--jmode wal`; in WAL it runs. Each run is bounded by
/// [`common::HANG`], against a hang, never as a bound on speed.
#[test]
fn run_with_clients_ends_on_every_engine() {
    let d = common::enterable_tempdir();
    let db = d.path().join("kv.db");
    common::stdout_of(common::blobbench().arg("init").arg(&db).args(["--count", "200", "--size", "1k"]));
    let mut datasets = Vec::new();
    for kind in blobbench::records::EngineKind::ALL {
        let name = kind.name();
        let target = if name == "db" { db.clone() } else { d.path().join(format!("t.{name}")) };
        if name != "db" {
            let mut export = common::blobbench();
            export.arg("export").arg(&db).arg(&target);
            if name != "flat" {
                export.args(["--engine", name]);
            }
            if name == "s3" {
                export.args(["--s3-server", "seaweedfs", "--s3-replicas", "1"]);
            }
            common::stdout_of(export.timeout(common::HANG));
        }
        datasets.push((name, target));
    }
    let run = |path: &std::path::Path, extra: &[&str]| {
        common::blobbench()
            .arg("run")
            .arg(path)
            .args(["--clients", "4", "--window", "200ms", "--warmup", "1", "--repeat", "1"])
            .args(extra)
            .timeout(common::HANG)
            .output()
            .unwrap()
    };
    let refused = common::one_line_error(&run(&db, &["--mix", "90:10"]));
    assert!(refused.contains("journal mode delete") && refused.contains("--jmode wal"), "{refused}");
    for (name, path) in &datasets {
        let wal: &[&str] = if *name == "db" { &["--jmode", "wal"] } else { &[] };
        for extra in [&[][..], &["--mix", "90:10"], &["--mix", "90:10", "--commit-every", "1"]] {
            let out = run(path, &[wal, extra].concat());
            let how = format!("{name} {extra:?}");
            if *name == "external" && extra.contains(&"--commit-every") {
                // Its writes commit nothing: the flag is refused, in one line.
                let e = common::one_line_error(&out);
                assert!(e.contains("--commit-every does not apply to the external layout"), "{how}: {e}");
                continue;
            }
            if !out.status.success() {
                // A machine so loaded that no client's operation (a write
                // behind a slow sync) ended in a window: that run ends too,
                // with one line saying so, never a figure.
                let e = common::one_line_error(&out);
                assert!(e.contains("no operation of 4 client(s) ended in the window of 0.200 s"), "{how}: {e}");
                continue;
            }
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("4 clients (threads)"), "{how}: {text}");
        }
    }
}
