//! Helpers shared by the CLI tests: the real binary, small real datasets,
//! directories on a real disk for tests that need one, and the engines'
//! datasets read back through each engine's own crate.
#![allow(dead_code)] // each test file uses its own subset

pub mod s3;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use blobbench::records::EngineKind;
use predicates::prelude::*;
use rusqlite::Connection;

/// How long a test waits for something that must happen (a server up, a
/// mount made, a command ending) before calling it a hang. A bound on
/// hanging, not on speed: what it guards takes seconds even on a busy
/// machine, and no test asserts how long anything took.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(300);

/// The blobbench binary this crate builds.
pub fn blobbench() -> Command {
    let mut c = Command::cargo_bin("blobbench").unwrap();
    // Errors stay one line whatever the environment asks of panics.
    c.env_remove("RUST_BACKTRACE");
    c
}

/// stdout of a command that must succeed.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// The one stderr line of a command that must fail without panicking.
pub fn one_line_error(out: &std::process::Output) -> String {
    assert!(!out.status.success(), "should fail");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A one-line error; bad input must never hang, so a command still
/// running after [`HANG`] is killed and fails the test (a bound on
/// hanging, not on speed: no such case takes more than seconds).
pub fn quick_error(cmd: &mut Command) -> String {
    let out = cmd.timeout(HANG).output().unwrap();
    one_line_error(&out)
}

/// The one-line error of `crashtest --power-cut --method METHOD`, for a
/// method whose store the power-cut layer cannot hold (a server's).
pub fn power_cut_refusal(method: &str, workdir: &Path) -> String {
    let workdir = workdir.to_str().expect("a UTF-8 path");
    quick_error(blobbench().args(["crashtest", "--power-cut", "--method", method, "--workdir", workdir]))
}

/// A 300-blob database of 2 KB +/- 500 bytes, with 1 KiB pages.
pub fn small_db(dir: &Path) -> PathBuf {
    let db = dir.join("t.db");
    blobbench()
        .args(["init", "--count", "300", "--size", "2k", "--variance", "500", "--pagesize", "1KiB"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("300 blobs"));
    db
}

/// Every (key, value) of a kvtest database, by key.
pub fn blobs(db: &Path) -> Vec<(i64, Vec<u8>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

/// A committed result file of tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A temporary directory on a disk whose page cache can be evicted: under
/// the build's target directory (beside the checkout), never tmpfs. A test
/// that measures a cold cache must not pass by skipping itself, so a
/// checkout on tmpfs fails here, loudly, naming the reason.
pub fn disk_tempdir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    let dir = tempfile::tempdir_in(base).unwrap();
    // SAFETY: statfs fills a zeroed struct from a NUL-terminated path.
    let fs_type = unsafe {
        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let mut st: libc::statfs = std::mem::zeroed();
        assert_eq!(libc::statfs(path.as_ptr(), &mut st), 0, "statfs {}", dir.path().display());
        st.f_type
    };
    const TMPFS_MAGIC: libc::c_long = 0x0102_1994;
    assert_ne!(
        fs_type as libc::c_long,
        TMPFS_MAGIC,
        "{} is on tmpfs, whose pages cannot be evicted: run the tests from a checkout on a real disk",
        dir.path().display()
    );
    dir
}

/// A kvtest database at `path` with keys 1..=n, values of varied sizes.
pub fn kv_db(path: &Path, n: u32) -> Vec<(u32, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let rows: Vec<(u32, Vec<u8>)> = (1..=n)
        .map(|k| (k, (0..(k as usize * 331) % 5000 + 100).map(|i| ((i as u32 * 7) ^ k) as u8).collect()))
        .collect();
    for (k, v) in &rows {
        conn.execute("INSERT INTO kv VALUES(?1, ?2)", rusqlite::params![k, v]).unwrap();
    }
    rows
}

/// Every (key, value) of a kvtest database, in key order.
pub fn kv_rows(path: &Path) -> Vec<(u32, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, Vec<u8>>(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Builds `kind`'s dataset at `target` from the kvtest database `db`.
pub fn engine_dataset(kind: EngineKind, db: &Path, target: &Path) {
    blobbench::engine::dataset::build(kind, db, target, false, &blobbench::util::progress::Silent).unwrap();
}

/// Every (key, value) of an engine's dataset, read with the engine's crate.
pub fn engine_rows(kind: EngineKind, path: &Path) -> Vec<(u32, Vec<u8>)> {
    let key = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap());
    match kind {
        EngineKind::Lmdb => {
            use heed::types::Bytes;
            // SAFETY: the test owns the environment; nothing else writes it.
            let env = unsafe { heed::EnvOpenOptions::new().open(path) }.unwrap();
            let txn = env.read_txn().unwrap();
            let db = env
                .open_databases_and_commit(txn, |o, t| {
                    o.open_database::<Bytes, Bytes>(t, None).map(heed::CommitOrAbort::<_, ()>::Commit)
                })
                .unwrap()
                .unwrap_commit()
                .unwrap();
            let txn = env.read_txn().unwrap();
            let rows = db.iter(&txn).unwrap().map(|r| r.unwrap()).map(|(k, v)| (key(k), v.to_vec())).collect();
            drop(txn);
            env.prepare_for_closing().wait();
            rows
        }
        EngineKind::Redb => {
            use redb::{ReadableDatabase, ReadableTable};
            let def: redb::TableDefinition<[u8; 4], &[u8]> = redb::TableDefinition::new("blobs");
            let db = redb::Database::open(path).unwrap();
            let txn = db.begin_read().unwrap();
            let table = txn.open_table(def).unwrap();
            let rows = table.iter().unwrap().map(|r| r.unwrap()).map(|(k, v)| (key(&k.value()), v.value().to_vec()));
            rows.collect()
        }
        EngineKind::Fjall => {
            let db = fjall::Database::builder(path).open().unwrap();
            let ks = db.keyspace("blobs", fjall::KeyspaceCreateOptions::default).unwrap();
            ks.iter().map(|g| g.into_inner().unwrap()).map(|(k, v)| (key(&k), v.to_vec())).collect()
        }
        EngineKind::Postgres | EngineKind::PostgresLo => {
            let cluster = blobbench::engine::postgres::server::Cluster::start(path).unwrap();
            let socket = cluster.socket_dir().to_str().unwrap().to_string();
            let mut client = postgres::Client::connect(
                &format!("host={socket} port=5432 user=blobbench dbname=blobbench"),
                postgres::NoTls,
            )
            .unwrap();
            let value = if kind == EngineKind::Postgres { "v" } else { "lo_get(o)" };
            let rows = client.query(&format!("SELECT k, {value} FROM kv ORDER BY k"), &[]).unwrap();
            let rows = rows.iter().map(|r| (r.get::<_, i64>(0) as u32, r.get::<_, Vec<u8>>(1))).collect();
            drop(client);
            cluster.stop().unwrap();
            rows
        }
        other => panic!("{other:?} is not a key-value engine"),
    }
}

/// A child process holding an engine's dataset open; it exits when dropped.
pub struct Holder(std::process::Child, std::io::Lines<std::io::BufReader<std::process::ChildStdout>>);

impl Drop for Holder {
    /// Closes the child's stdin (it lets go and exits) and reads what it
    /// still prints, so it never writes into a closed pipe.
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        for _ in self.1.by_ref() {}
        let _ = self.0.wait();
    }
}

/// Re-runs the current test binary's ignored `hold_engine_dataset` test,
/// which opens `path` as `kind` and keeps it open until its stdin closes;
/// returns once the child says the dataset is open.
pub fn hold_in_child(kind: EngineKind, path: &Path) -> Holder {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "bad_input::hold_engine_dataset", "--nocapture", "--test-threads", "1"])
        .env("BLOBBENCH_HOLD", format!("{}:{}", kind.name(), path.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.unwrap().contains("HELD")), "the holder never opened {}", path.display());
    Holder(child, lines)
}

/// The child's side of [`hold_in_child`].
pub fn hold_from_env() {
    use std::io::{Read, Write};
    let spec = std::env::var("BLOBBENCH_HOLD").expect("run by hold_in_child");
    let (name, path) = spec.split_once(':').unwrap();
    let kind = EngineKind::ALL.into_iter().find(|k| k.name() == name).unwrap();
    let held = hold(kind, Path::new(path));
    // fjall's background threads may still be writing its version files
    // just after the open; the parent's snapshot must see only what the
    // command under test changes.
    wait_until_quiet(Path::new(path));
    println!("HELD");
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(held);
}

/// Waits (at most 10 s) until nothing under `path` changes size or mtime
/// for 300 ms.
fn wait_until_quiet(path: &Path) {
    fn state(path: &Path, out: &mut Vec<(PathBuf, u64, std::time::SystemTime)>) {
        let Ok(meta) = std::fs::metadata(path) else { return };
        out.push((path.to_path_buf(), meta.len(), meta.modified().unwrap_or(std::time::UNIX_EPOCH)));
        if meta.is_dir() {
            let mut entries: Vec<_> =
                std::fs::read_dir(path).into_iter().flatten().flatten().map(|e| e.path()).collect();
            entries.sort();
            for e in entries {
                state(&e, out);
            }
        }
    }
    let start = std::time::Instant::now();
    let mut last = Vec::new();
    state(path, &mut last);
    while start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let mut now = Vec::new();
        state(path, &mut now);
        if now == last {
            return;
        }
        last = now;
    }
}

/// Holds an engine's dataset open in this process until dropped.
pub fn hold(kind: EngineKind, path: &Path) -> Box<dyn std::any::Any> {
    match kind {
        // SAFETY: as above.
        EngineKind::Lmdb => Box::new(unsafe { heed::EnvOpenOptions::new().open(path) }.unwrap()),
        EngineKind::Redb => Box::new(redb::Database::open(path).unwrap()),
        EngineKind::Fjall => Box::new(fjall::Database::builder(path).open().unwrap()),
        // An S3 dataset's directory, held as a run with writes holds it.
        EngineKind::S3 => {
            use blobbench::engine::s3::{DatasetLock, Holding};
            Box::new(DatasetLock::take(path, Holding::Writes).unwrap())
        }
        other => panic!("{other:?} is not a key-value engine"),
    }
}

/// A scratch directory the `postgres` user can enter: as root the
/// throwaway PostgreSQL cluster runs as it (tests run as root in CI).
pub fn enterable_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    dir
}

/// Runs blobbench with `args`; asserts success and returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = blobbench().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A kvtest database of `count` blobs of `size` bytes.
pub fn kvtest_db(path: &Path, count: u32, size: u32) {
    ok(&["init", path.to_str().unwrap(), "--count", &count.to_string(), "--size", &size.to_string()]);
}

/// Every way `value` breaks docs/results.schema.json, one line each (with
/// where in the file), empty when it conforms.
pub fn schema_violations(value: &serde_json::Value) -> Vec<String> {
    const URL: &str = "file:///docs/results.schema.json";
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../docs/results.schema.json")).expect("schema is JSON");
    let (mut schemas, mut compiler) = (boon::Schemas::new(), boon::Compiler::new());
    compiler.add_resource(URL, schema).expect("the schema loads");
    let index = compiler.compile(URL, &mut schemas).expect("the schema compiles");
    schemas.validate(value, index).err().map(|e| leaves(&e)).unwrap_or_default()
}

/// The innermost errors of a validation error's tree: what broke, and where.
fn leaves(e: &boon::ValidationError) -> Vec<String> {
    match e.causes.is_empty() {
        true => vec![format!("{} at '{}'", e.kind, e.instance_location)],
        false => e.causes.iter().flat_map(leaves).collect(),
    }
}

/// Parses a result file and checks it against docs/results.schema.json.
pub fn valid_results(path: &Path) -> serde_json::Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let raw: serde_json::Value =
        serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let errors = schema_violations(&raw);
    assert!(errors.is_empty(), "{} does not match docs/results.schema.json: {errors:?}", path.display());
    raw
}

/// Each file under a directory with a checksum of its bytes.
pub type Snapshot = std::collections::BTreeMap<PathBuf, u64>;

/// Every file under `dir` (as [`walk`] finds them) with a checksum of its
/// bytes.
pub fn snapshot(dir: &Path) -> Snapshot {
    let sum = |bytes: Vec<u8>| {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    };
    walk(dir).into_iter().map(|p| (p.clone(), sum(std::fs::read(&p).unwrap_or_default()))).collect()
}

/// A tree of `n` files under `dir` in three folders (file i, of 5000 +
/// 397 i bytes of its own byte, in folder i % 3), plus an empty file and a
/// symbolic link, which `--from` skips: the user's own files, in small.
/// Returns the files' sizes in path order (the order `--from` keys them).
pub fn file_tree(dir: &Path, n: usize) -> Vec<u64> {
    let size = |i: usize| 5000 + 397 * i;
    for i in 0..n {
        let sub = dir.join(format!("{:02}", i % 3));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i:03}.bin")), vec![i as u8; size(i)]).unwrap();
    }
    std::fs::write(dir.join("empty"), b"").unwrap();
    std::os::unix::fs::symlink("00", dir.join("link")).unwrap();
    (0..3).flat_map(|d| (d..n).step_by(3)).map(|i| size(i) as u64).collect()
}

/// The value of the setting `name` in a run's `params.server_info` (a
/// server engine's report of itself); "" when it has none.
pub fn server_setting<'a>(server_info: &'a serde_json::Value, name: &str) -> &'a str {
    let settings = server_info["settings"].as_array().map(Vec::as_slice).unwrap_or_default();
    settings.iter().find(|s| s["name"] == name).and_then(|s| s["value"].as_str()).unwrap_or("")
}

/// Processes whose arguments name a path under `dir` (Swift's servers),
/// and the memcached any `run/memcached.pid` under `dir` names, alive.
pub fn servers_under(dir: &Path) -> Vec<i32> {
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

/// Every file under `dir`, at any depth; a symbolic link is a file here,
/// never followed.
pub fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
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
