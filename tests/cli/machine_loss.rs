//! `crashtest --machine-loss` end to end on PostgreSQL's throwaway primary
//! and synchronous standby (network namespaces as root, which CI is): a
//! few losses of a whole host, each acknowledged write read back, none
//! lost; and nothing of the cluster (process, namespace, directory) left
//! when the command returns. Kept to a few losses: it runs in CI.

use std::path::Path;
use std::process::Command;

use crate::common::enterable_tempdir;

/// Network namespaces whose name says they were made by process `pid`
/// (`engine::throwaway::hosts` names them `blobbench-PID-...`).
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip (iproute2) is installed");
    let prefix = format!("blobbench-{pid}-");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with(&prefix)).map(str::to_string).collect()
}

/// Processes whose command line names `dir` (a server started on a host
/// directory under it), running or not yet reaped.
fn processes_under(dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(dir.as_ref()) && !cmdline.contains("cargo") {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[test]
fn losing_a_host_of_a_primary_and_synchronous_standby_loses_no_acknowledged_write() {
    let dir = enterable_tempdir();
    let json = dir.path().join("loss.json");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&work, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["crashtest", "--machine-loss", "--method", "postgres-sync-standby", "--losses", "2", "--count", "16"])
        .args(["--seed", "5", "--workdir"])
        .arg(&work)
        .arg("--json")
        .arg(&json)
        .env_remove("RUST_BACKTRACE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("postgres-sync-standby") && stdout.contains("lost-acked"), "{stdout}");

    let file = crate::common::valid_results(&json);
    let m = &file["machine_loss"]["methods"][0];
    assert_eq!(m["method"], "postgres-sync-standby", "{m}");
    assert_eq!(m["losses"], 2, "{m}");
    assert_eq!(m["promises_survival"], true, "{m}");
    assert!(m["acknowledged"].as_u64().unwrap() > 0, "writes were acknowledged before each loss: {m}");
    assert_eq!(m["lost_acknowledged"], 0, "a synchronous standby keeps every acknowledged write: {m}");
    assert_eq!(m["resumed_after_ms"].as_array().unwrap().len(), 2, "a time to resume per loss: {m}");
    assert_eq!(m["hosts_lost"].as_array().unwrap().len(), 2, "{m}");
    assert!(m["network"].as_str().unwrap().contains("namespace"), "as root, each host its own namespace: {m}");

    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "no namespace outlives the command");
    assert_eq!(processes_under(&work), Vec::<String>::new(), "no server outlives the command");
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "the hosts' directories are removed: {left:?}");
}

/// `advise --durability replicated --pg URL` on a server with no standby:
/// excluded, naming the setting; with no other candidate that can meet the
/// class, one line and a non-zero exit, and no page.
#[test]
fn advise_replicated_on_a_server_without_a_standby_names_synchronous_standby_names() {
    use blobbench::engine::postgres::server::Cluster;
    let dir = enterable_tempdir();
    let server_dir = dir.path().join("server");
    std::fs::create_dir(&server_dir).unwrap();
    Cluster::init(&server_dir).unwrap();
    let cluster = Cluster::start(&server_dir).unwrap();
    let socket = cluster.socket_dir().to_str().unwrap().to_string();
    let url = format!("postgresql://blobbench@/postgres?host={socket}&port=5432");
    let (work, out) = (dir.path().join("work"), dir.path().join("page"));
    let result = crate::common::blobbench()
        .args(["advise", "--durability", "replicated", "--engines", "postgres", "--pg", &url, "--workdir"])
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    cluster.stop().unwrap();
    let err = crate::common::one_line_error(&result);
    assert!(err.contains("postgres: --pg URL: synchronous_standby_names is empty"), "{err}");
    assert!(err.contains("sqlite, files-inplace, files-replace: one machine each"), "{err}");
    assert!(!out.exists(), "no page for an advice that cannot be given");
}

/// `advise --quick --durability replicated --no-power-cut --engines
/// postgres`: no machine is lost; the synchronous standby is admitted by
/// the documented table, marked documented, the asynchronous one still
/// excluded; what the standby costs per write is measured against
/// PostgreSQL alone in paired rounds, with the sentence saying it is a
/// floor; no server, namespace or directory is left.
#[test]
fn advise_replicated_without_losses_is_documented_and_states_the_standbys_cost() {
    let dir = enterable_tempdir();
    let (work, out) = (dir.path().join("work"), dir.path().join("page"));
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&work, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("blobbench"))
        .args(["advise", "--quick", "--durability", "replicated", "--no-power-cut", "--engines", "postgres"])
        .arg("--workdir")
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
    assert!(result.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("meets it: postgres"), "{stdout}");
    assert!(stdout.contains("postgres: no acknowledged write lost in machine losses (*documented*"), "{stdout}");
    assert!(stdout.contains("postgres-async-standby: excluded, a commit does not wait"), "{stdout}");
    let cost = stdout.lines().find(|l| l.starts_with("What replication costs: postgres-sync-standby")).expect(&stdout);
    assert!(cost.contains("against postgres-durable") && cost.contains("(95% paired, 6 rounds"), "{cost}");
    assert!(cost.contains("at 1 client (") && !cost.contains("clients"), "one client, no --clients: {cost}");
    assert!(stdout.contains("the cost above is a floor"), "{stdout}");

    let file = crate::common::valid_results(&out.join("results.json"));
    assert!(file.get("machine_loss").is_none(), "no machine was lost: {file}");
    let rounds = &file["rounds"][0];
    assert_eq!(rounds["id"], "replication-cost/postgres-sync-standby", "{rounds}");
    assert_eq!(rounds["arms"], serde_json::json!(["postgres-sync-standby@1", "postgres-durable@1"]), "{rounds}");
    assert_eq!(rounds["rounds"].as_array().unwrap().len(), 6, "{rounds}");

    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "no namespace outlives the command");
    assert_eq!(processes_under(&work), Vec::<String>::new(), "no server outlives the command");
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "the stores' directories are removed: {left:?}");
}
