//! The bad-input cases' inputs: each builds one case's files in its
//! directory.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use blobbench::records::EngineKind;
use rusqlite::Connection;

use crate::common;

/// An S3 dataset on a store nothing answers at: `drop` must keep its
/// descriptor.
pub(super) fn s3_unreachable(d: &Path) {
    std::fs::create_dir(d.join("t")).unwrap();
    let desc = r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/t-0000abcd/","id":"0000abcd","endpoint":"http://127.0.0.1:1"}"#;
    std::fs::write(d.join("t/blobbench-s3.json"), desc).unwrap();
}

/// An S3 dataset on a scripted store whose listing names a key with `..`.
pub(super) fn s3_planted(d: &Path) {
    std::fs::create_dir(d.join("t")).unwrap();
    let endpoint = common::s3::planted_store();
    let desc = format!(
        r#"{{"engine":"s3","bucket":"bkt","prefix":"blobbench/t-0000abcd/","id":"0000abcd","endpoint":"{endpoint}"}}"#
    );
    std::fs::write(d.join("t/blobbench-s3.json"), desc).unwrap();
}

/// AWS shared files: profile `scoped` with keys in the credentials file
/// and a role to assume in the config file; `sso` using SSO; and a
/// kvtest database.
pub(super) fn aws_files(d: &Path) {
    db(d);
    let credentials = "[scoped]\naws_access_key_id = AKIABROAD\naws_secret_access_key = broad\n";
    std::fs::write(d.join("aws-credentials"), credentials).unwrap();
    let config = "[profile scoped]\nrole_arn = arn:aws:iam::1:role/scoped\nsource_profile = x\n\n\
        [profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n";
    std::fs::write(d.join("aws-config"), config).unwrap();
}

pub(super) fn aws_files_and_dataset(d: &Path) {
    aws_files(d);
    s3_unreachable(d);
}

pub(super) fn engine_fixture(d: &Path, kind: EngineKind) {
    db(d);
    common::engine_dataset(kind, &d.join("db"), &d.join("t"));
}

pub(super) fn lmdb(d: &Path) {
    engine_fixture(d, EngineKind::Lmdb);
}

pub(super) fn redb(d: &Path) {
    engine_fixture(d, EngineKind::Redb);
}

pub(super) fn fjall(d: &Path) {
    engine_fixture(d, EngineKind::Fjall);
}

/// An LMDB dataset at "t" with a fjall dataset's files moved in beside it.
pub(super) fn lmdb_and_fjall(d: &Path) {
    lmdb(d);
    common::engine_dataset(EngineKind::Fjall, &d.join("db"), &d.join("f"));
    for entry in std::fs::read_dir(d.join("f")).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), d.join("t").join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(d.join("f")).unwrap();
}

pub(super) fn lmdb_no_data(d: &Path) {
    lmdb(d);
    std::fs::remove_file(d.join("t/data.mdb")).unwrap();
}

pub(super) fn lmdb_file(d: &Path) {
    std::fs::write(d.join("t"), b"data.mdb should be a directory").unwrap();
}

pub(super) fn garble(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let end = (at + 4096).min(bytes.len());
    for b in &mut bytes[at..end] {
        *b ^= 0x5a;
    }
    std::fs::write(path, bytes).unwrap();
}

pub(super) fn cut(path: &Path, keep: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(keep).unwrap();
}

pub(super) fn lmdb_corrupt(d: &Path) {
    lmdb(d);
    garble(&d.join("t/data.mdb"), 0);
}

pub(super) fn lmdb_truncated(d: &Path) {
    lmdb(d);
    let len = std::fs::metadata(d.join("t/data.mdb")).unwrap().len();
    cut(&d.join("t/data.mdb"), len / 2);
}

pub(super) fn redb_corrupt(d: &Path) {
    redb(d);
    garble(&d.join("t"), 16);
}

pub(super) fn redb_truncated(d: &Path) {
    redb(d);
    let len = std::fs::metadata(d.join("t")).unwrap().len();
    cut(&d.join("t"), len / 2);
}

pub(super) fn fjall_corrupt(d: &Path) {
    fjall(d);
    std::fs::write(d.join("t/version"), b"FJL\xff garbage").unwrap();
}

pub(super) fn db_and_text_dir(d: &Path) {
    db(d);
    std::fs::create_dir(d.join("t")).unwrap();
    std::fs::write(d.join("t/notes.txt"), b"mine").unwrap();
}

pub(super) fn empty_src(d: &Path) {
    std::fs::create_dir(d.join("src")).unwrap();
}

pub(super) fn loop_src(d: &Path) {
    empty_src(d);
    std::os::unix::fs::symlink("loop", d.join("src/loop")).unwrap();
}

pub(super) fn loop_and_file_src(d: &Path) {
    empty_src(d);
    std::os::unix::fs::symlink("b", d.join("src/a")).unwrap();
    std::os::unix::fs::symlink("a", d.join("src/b")).unwrap();
    std::fs::write(d.join("src/c"), b"content").unwrap();
}

pub(super) fn links_and_empty_src(d: &Path) {
    loop_and_file_src(d);
    std::fs::write(d.join("src/c"), b"").unwrap();
}

pub(super) fn unreadable_sub_src(d: &Path) {
    std::fs::create_dir_all(d.join("src/locked")).unwrap();
    std::fs::write(d.join("src/open.bin"), b"readable").unwrap();
    std::fs::write(d.join("src/locked/secret.bin"), b"hidden").unwrap();
    std::fs::set_permissions(d.join("src/locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
}

pub(super) fn non_utf8_src(d: &Path) {
    use std::os::unix::ffi::OsStrExt;
    empty_src(d);
    std::fs::write(d.join("src").join(std::ffi::OsStr::from_bytes(b"caf\xe9.bin")), b"latin-1 name").unwrap();
    std::fs::write(d.join("src").join(std::ffi::OsStr::from_bytes(b"tab\there")), b"tab").unwrap();
}

pub(super) fn text_empty_hist(d: &Path) {
    std::fs::write(d.join("hist"), "# sizes\n\n").unwrap();
}

pub(super) fn text_bad_hist(d: &Path) {
    std::fs::write(d.join("hist"), "1000 5\n2000\n").unwrap();
}

pub(super) fn text_negative_hist(d: &Path) {
    std::fs::write(d.join("hist"), "1000 -5\n").unwrap();
}

pub(super) fn none(_: &Path) {}

/// A suite file written before `--commit-every` (schema version 3).
pub(super) fn older_suite(d: &Path) {
    std::fs::copy(common::fixture("suite-host-a.json"), d.join("r.json")).unwrap();
}

/// An external-blobs dataset "@t" built from "@db".
pub(super) fn external(d: &Path) {
    engine_fixture(d, EngineKind::External);
}

/// A version 3 suite file whose reads ran in 4 rounds, changed by `spoil`.
pub(super) fn rounds_file(d: &Path, spoil: fn(&mut serde_json::Value)) {
    let text = std::fs::read_to_string(common::fixture("suite-host-a.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["schema_version"] = 3.into();
    let arms = ["read/db-blob-mmap", "read/flat-posix"];
    let round =
        |a: f64, b: f64| serde_json::json!({"order": [0, 1], "per_op_us": [a, b], "elapsed_ms": 1.0, "load": {}});
    v["rounds"] = serde_json::json!([{
        "id": "suite/reads", "arms": arms, "seed": 1, "warmup": true, "target_pct": 5.0,
        "max_rounds": 4, "stop": "max-rounds",
        "rounds": [round(5.0, 10.0), round(5.0, 10.0), round(5.0, 10.0), round(5.0, 10.0)]
    }]);
    spoil(&mut v);
    std::fs::write(d.join("r.json"), serde_json::to_string(&v).unwrap()).unwrap();
}

pub(super) fn rounds_arm_missing(d: &Path) {
    rounds_file(d, |v| {
        v["rounds"][0]["rounds"][2] =
            serde_json::json!({"order": [0], "per_op_us": [5.0], "elapsed_ms": 1.0, "load": {}})
    });
}

pub(super) fn rounds_uneven(d: &Path) {
    rounds_file(d, |v| v["rounds"][0]["rounds"][1]["per_op_us"] = serde_json::json!([5.0, 10.0, 7.0]));
}

pub(super) fn make_db(path: &Path, keys: impl Iterator<Item = u32>) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for k in keys {
        let v: Vec<u8> = (0..2000u32).map(|i| (i.wrapping_mul(k).wrapping_add(k) % 251) as u8).collect();
        conn.execute("INSERT INTO kv VALUES(?1, ?2)", rusqlite::params![k, v]).unwrap();
    }
    conn
}

pub(super) fn db(d: &Path) {
    make_db(&d.join("db"), 1..=20);
}

pub(super) fn dir(d: &Path) {
    std::fs::create_dir(d.join("dir")).unwrap();
}

pub(super) fn db_and_dir(d: &Path) {
    db(d);
    dir(d);
}

pub(super) fn text(d: &Path) {
    std::fs::write(d.join("text.txt"), "hello, this is not a database\n").unwrap();
}

pub(super) fn db_and_text(d: &Path) {
    db(d);
    text(d);
}

pub(super) fn empty(d: &Path) {
    std::fs::write(d.join("empty"), b"").unwrap();
}

pub(super) fn binary(d: &Path) {
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(d.join("bin"), bytes).unwrap();
}

pub(super) fn no_kv(d: &Path) {
    Connection::open(d.join("db")).unwrap().execute_batch("CREATE TABLE other(x)").unwrap();
}

pub(super) fn kv_columns(d: &Path) {
    let c = Connection::open(d.join("db")).unwrap();
    c.execute_batch("CREATE TABLE kv(k INTEGER, v BLOB, extra TEXT); INSERT INTO kv VALUES(1, x'00', 'a')").unwrap();
}

pub(super) fn kv_text(d: &Path) {
    make_db(&d.join("db"), 1..=5).execute("UPDATE kv SET v='text' WHERE k=3", []).unwrap();
}

pub(super) fn kv_null(d: &Path) {
    make_db(&d.join("db"), 1..=5).execute("UPDATE kv SET v=NULL WHERE k=3", []).unwrap();
}

pub(super) fn kv_gaps(d: &Path) {
    make_db(&d.join("db"), (1..=10).map(|k| 2 * k));
}

pub(super) fn flat_gaps(d: &Path) {
    std::fs::create_dir(d.join("flat")).unwrap();
    for k in (1..=10).map(|k| 2 * k) {
        std::fs::write(d.join(format!("flat/{k:06}")), vec![k as u8; 1000]).unwrap();
    }
}

pub(super) fn truncated(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    let f = std::fs::OpenOptions::new().write(true).open(d.join("db")).unwrap();
    f.set_len(3 * 4096 + 100).unwrap();
}

pub(super) fn bad_header(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    let mut bytes = std::fs::read(d.join("db")).unwrap();
    bytes[16..100].fill(0xA5);
    std::fs::write(d.join("db"), bytes).unwrap();
}

/// The state a writer killed in the middle of a transaction leaves: the
/// database with some new pages written and the hot journal that undoes them.
pub(super) fn hot_journal(d: &Path) {
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let conn = make_db(&work.join("db"), 1..=20);
    conn.execute_batch("PRAGMA cache_size=2; BEGIN; UPDATE kv SET v=randomblob(length(v));").unwrap();
    assert!(work.join("db-journal").exists());
    std::fs::copy(work.join("db"), d.join("db")).unwrap();
    std::fs::copy(work.join("db-journal"), d.join("db-journal")).unwrap();
    drop(conn);
    std::fs::remove_dir_all(&work).unwrap();
}

/// A writer killed after committing to the WAL, before any checkpoint:
/// the committed data lives only in the -wal file.
pub(super) fn hot_wal(d: &Path) {
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let conn = make_db(&work.join("db"), 1..=20);
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; UPDATE kv SET v=randomblob(length(v));")
        .unwrap();
    std::fs::copy(work.join("db"), d.join("db")).unwrap();
    std::fs::copy(work.join("db-wal"), d.join("db-wal")).unwrap();
    drop(conn);
    std::fs::remove_dir_all(&work).unwrap();
}

pub(super) fn db_wal_mode(d: &Path) {
    make_db(&d.join("db"), 1..=20).execute_batch("PRAGMA journal_mode=WAL").unwrap();
}

pub(super) fn read_only(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    std::fs::set_permissions(d.join("db"), std::fs::Permissions::from_mode(0o444)).unwrap();
}

pub(super) fn read_only_flat(d: &Path) {
    flat_gaps(d);
    for e in std::fs::read_dir(d.join("flat")).unwrap() {
        std::fs::set_permissions(e.unwrap().path(), std::fs::Permissions::from_mode(0o444)).unwrap();
    }
}

pub(super) fn ro_dir(d: &Path) {
    std::fs::create_dir(d.join("ro")).unwrap();
    std::fs::set_permissions(d.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
}

pub(super) fn db_and_ro_dir(d: &Path) {
    db(d);
    ro_dir(d);
}

pub(super) fn spaced_dir(d: &Path) {
    std::fs::create_dir(d.join("my dir")).unwrap();
}

pub(super) fn spaced_db(d: &Path) {
    spaced_dir(d);
    make_db(&d.join("my dir/dätä ñ.db"), 1..=20);
}

pub(super) fn spaced_flat(d: &Path) {
    spaced_dir(d);
    std::fs::create_dir(d.join("my dir/fläť")).unwrap();
    for k in 1..=20 {
        std::fs::write(d.join(format!("my dir/fläť/{k:06}")), vec![k as u8; 1000]).unwrap();
    }
}

pub(super) const SUITE_RESULTS: &str = include_str!("../../fixtures/suite-host-a.json");

pub(super) fn results(d: &Path) {
    std::fs::write(d.join("r.json"), SUITE_RESULTS).unwrap();
}

/// A change to a result file's JSON.
pub(super) type Spoil = fn(&mut serde_json::Value);

/// `run` result files of a small database: "@a.json", "@same.json" (its
/// copy), and copies that differ in one field each ("@update.json",
/// "@endpoint.json", "@dataset.json"); "@r.json" is a suite's.
pub(super) fn run_files(d: &Path) {
    let db = common::small_db(d);
    let a = d.join("a.json");
    common::ok(&["run", db.to_str().unwrap(), "--count", "20", "--repeat", "1", "--json", a.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let variants: [(&str, Spoil); 4] = [
        ("same.json", |_| {}),
        ("update.json", |v| v["experiments"][0]["params"]["update"] = true.into()),
        ("endpoint.json", |v| v["run"]["endpoint"] = "elsewhere:/data/t.db".into()),
        ("dataset.json", |v| v["experiments"][0]["params"]["max_id"] = 7.into()),
    ];
    for (name, change) in variants {
        let mut w = v.clone();
        change(&mut w);
        std::fs::write(d.join(name), serde_json::to_string(&w).unwrap()).unwrap();
    }
    results(d);
}

pub(super) fn results_and_text(d: &Path) {
    results(d);
    text(d);
}

pub(super) fn results_in_dir(d: &Path) {
    std::fs::create_dir(d.join("rep")).unwrap();
    std::fs::write(d.join("rep/r.json"), SUITE_RESULTS).unwrap();
}

pub(super) fn spaced_results(d: &Path) {
    spaced_dir(d);
    std::fs::write(d.join("my dir/rësults ü.json"), SUITE_RESULTS).unwrap();
}

pub(super) fn foreign_json(d: &Path) {
    std::fs::write(d.join("r.json"), r#"{"name": "something else", "values": [1, 2, 3]}"#).unwrap();
}

pub(super) fn future_json(d: &Path) {
    std::fs::write(d.join("r.json"), SUITE_RESULTS.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1))
        .unwrap();
}

pub(super) fn results_and_future(d: &Path) {
    results(d);
    std::fs::write(d.join("f.json"), SUITE_RESULTS.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1))
        .unwrap();
}

pub(super) fn truncated_json(d: &Path) {
    std::fs::write(d.join("r.json"), &SUITE_RESULTS[..SUITE_RESULTS.len() / 2]).unwrap();
}

pub(super) fn shape_json(d: &Path) {
    std::fs::write(d.join("r.json"), r#"{"schema": "blobbench-results", "schema_version": 1, "command": 7}"#).unwrap();
}

/// A real crashtest result file, from the binary itself (a fraction of a second).
pub(super) fn power_results(d: &Path) {
    std::fs::write(d.join("power.json"), include_str!("../../fixtures/power-cut-strict.json")).unwrap();
}

pub(super) fn crash_results(d: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_blobbench"))
        .args(["crashtest", "--method", "replace", "--kills", "1", "--count", "5", "--workdir"])
        .arg(d)
        .arg("--json")
        .arg(d.join("crash.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
