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
    let parsed = blobbench::results::read(&out.join("results.json")).unwrap();
    let clients = parsed.advise.unwrap().clients.expect("the clients' section");
    assert_eq!(clients.excluded.len(), 1);
    assert_eq!(clients.excluded[0].candidate, "redb");
    assert!(clients.excluded[0].why.starts_with(why));
    let set = parsed.rounds.iter().find(|r| r.id == "advise/clients").expect("their rounds");
    assert!(set.consistent() && set.rounds.len() >= 6, "6 paired rounds");
    let timed = set.rounds.len() as u64;
    for candidate in ["sqlite", "lmdb"] {
        for n in [1, 2] {
            let arm = clients.arms.iter().find(|a| a.candidate == candidate && a.clients == n).expect(candidate);
            assert!(arm.ops_per_run > 0);
            let mut merged = 0;
            for c in &arm.classes {
                let h = blobbench::measure::Latency::from_base64(&c.histogram).unwrap();
                assert_eq!(h.count(), c.latency.count, "{}: {}", arm.id, c.class);
                merged += h.count();
            }
            assert_eq!(merged, arm.ops_per_run * timed, "{}: one record per op of the timed runs", arm.id);
        }
    }
    assert!(!clients.arms.iter().any(|a| a.candidate == "redb"));
    let mark = d.path().to_string_lossy();
    assert_eq!(client_workers(&mark), Vec::<String>::new(), "no client process left behind");
}

/// The hidden client command given no job: one line, no panic.
#[test]
fn a_client_process_without_a_job_says_so() {
    let e = common::quick_error(common::blobbench().arg("client-worker").write_stdin(""));
    assert!(e.contains("no job given"), "{e}");
}
