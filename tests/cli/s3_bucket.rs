//! A production bucket, safely (issue 43), on a SeaweedFS each test starts
//! as the user's store, its buckets and objects made and counted by the
//! test itself (`common::s3`): nothing under a prefix is deleted unless
//! its marker names the dataset; a versioned bucket is refused, then
//! dropped to its last version; a killed export is dropped with its
//! incomplete multipart uploads; a Ctrl-C's clean-up finishes on a slow
//! store.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use blobbench::engine::s3::seaweedfs::Mini;
use common::s3::{as_user, as_user_process, slow_relay, OwnBucket, Under};
use common::{kvtest_db, quick_error, stdout_of, HANG};

const MARKER: &str = "blobbench-dataset.json";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The user's store: a SeaweedFS in `dir/store`, stopped when dropped.
fn users_store(dir: &Path) -> Mini {
    let store = dir.join("store");
    std::fs::create_dir(&store).unwrap();
    Mini::init(&store).unwrap();
    Mini::start(&store).unwrap()
}

fn descriptor(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("blobbench-s3.json")).unwrap()).unwrap()
}

fn prefix_of(dir: &Path) -> String {
    descriptor(dir)["prefix"].as_str().unwrap().to_string()
}

/// `export --engine s3 DB TARGET --s3 URL --s3-bucket B`, then `more`.
fn export(db: &Path, target: &Path, b: &OwnBucket, more: &[&str]) -> assert_cmd::Command {
    let args = ["export", "--engine", "s3", s(db), s(target), "--s3", &b.endpoint, "--s3-bucket", &b.name];
    as_user(&[&args[..], more].concat())
}

/// The same export, started in the background.
fn spawn_export(db: &Path, target: &Path, endpoint: &str, bucket: &str, more: &[&str]) -> Child {
    let args = ["export", "--engine", "s3", s(db), s(target), "--s3", endpoint, "--s3-bucket", bucket];
    as_user_process(&[&args[..], more].concat()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits until `ready` holds while `child` still runs.
fn wait_for(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < HANG, "{what} never happened");
        assert!(child.try_wait().unwrap().is_none(), "the export ended before {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 43, item 1 (and 13): `export --force` and `drop` delete only a
/// prefix whose marker they have read and matched to the descriptor's id;
/// a descriptor edited to name the user's prefix, another dataset's, or a
/// prefix above a dataset is one line and touches nothing; a dataset from
/// before ids is dropped only once its marker is read; a key with `%` in
/// it is deleted as itself.
#[test]
fn export_force_and_drop_delete_only_a_prefix_marked_as_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let store = users_store(dir.path());
    let b = OwnBucket::create(&store.endpoint(), "users");
    for i in 0..5 {
        b.put(&format!("images/{i}.jpg"), b"a photo");
    }
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 6, 1000);
    let (mine, other) = (dir.path().join("mine"), dir.path().join("other"));
    export(&db, &mine, &b, &[]).assert().success();
    export(&db, &other, &b, &[]).assert().success();
    let (pm, po) = (prefix_of(&mine), prefix_of(&other));
    let endpoint = b.endpoint.clone();
    let edit = |prefix: &str| {
        let desc = format!(r#"{{"engine":"s3","bucket":"users","prefix":"{prefix}","endpoint":"{endpoint}"}}"#);
        std::fs::write(mine.join("blobbench-s3.json"), desc).unwrap();
    };

    // Edited to the user's prefix: not blobbench's, whatever the command.
    edit("images/");
    for cmd in [&mut export(&db, &mine, &b, &["--force"]), &mut as_user(&["drop", s(&mine)])] {
        let err = quick_error(cmd);
        assert!(
            err.contains(r#"is not a blobbench S3 descriptor: prefix "images/" is not of blobbench's form"#),
            "{err}"
        );
    }
    assert_eq!(b.keys("images/").len(), 5, "the user's objects are all there");

    // Edited to another dataset's prefix, without its id: that prefix's
    // marker names another export, so neither command deletes it.
    edit(&po);
    let err = quick_error(&mut export(&db, &mine, &b, &["--force"]));
    assert!(err.contains("exported before ids") && err.contains("drop it first"), "{err}");
    let err = quick_error(&mut as_user(&["drop", s(&mine)]));
    assert!(err.contains("names export") && err.contains("not the descriptor's none"), "{err}");
    assert!(err.contains("refusing to delete them"), "{err}");
    assert_eq!(b.keys(&po).len(), 7, "six blobs and the marker");

    // A prefix above a dataset, or outside blobbench's: refused.
    for above in ["blobbench/", "blobbench", "images/", "blobbench/other/x/"] {
        let err = quick_error(&mut as_user(&["drop", "--prefix", above, "--s3", &endpoint, "--s3-bucket", "users"]));
        assert!(err.contains("not a blobbench dataset's prefix"), "{above}: {err}");
    }

    // What mine's edited descriptor no longer names, dropped by its prefix
    // (the marker names it), reached by path as a path-style store is.
    let cmd = ["drop", "--prefix", &pm, "--s3", &endpoint, "--s3-bucket", "users", "--s3-addressing", "path"];
    assert!(stdout_of(&mut as_user(&cmd)).contains("removed 7 objects"));

    // A dataset from before ids: runs as it did; --force refuses it;
    // drop reads its marker, then removes it.
    let old = dir.path().join("old");
    std::fs::create_dir(&old).unwrap();
    let desc = format!(r#"{{"engine":"s3","bucket":"users","prefix":"blobbench/old/","endpoint":"{endpoint}"}}"#);
    std::fs::write(old.join("blobbench-s3.json"), &desc).unwrap();
    b.put(&format!("blobbench/old/{MARKER}"), desc.as_bytes());
    b.put("blobbench/old/0000000001", b"an old blob");
    as_user(&["run", s(&old), "--count", "3", "--repeat", "1"]).assert().success();
    let err = quick_error(&mut export(&db, &old, &b, &["--force"]));
    assert!(err.contains("exported before ids") && err.contains("blobbench/old/"), "{err}");
    assert!(stdout_of(&mut as_user(&["drop", s(&old)])).contains("removed 2 objects"));

    // A stray key with `%` under a dataset goes with it, as itself.
    b.put(&format!("{po}notes%41.txt"), b"stray");
    b.put(&format!("{po}notesA.txt"), b"stray too");
    assert!(stdout_of(&mut as_user(&["drop", s(&other)])).contains("removed 9 objects"));
    assert!(b.keys("blobbench/").is_empty(), "{:?}", b.keys("blobbench/"));
    assert_eq!(b.keys("images/").len(), 5);
    store.stop().unwrap();
}

/// Issue 43, item 6 and the versioned "done when": a bucket with
/// versioning on refuses an export and a write run without
/// `--s3-versioned-ok`, touching nothing; with it, an export and a write
/// run, then `drop`, leave no version and no incomplete upload under the
/// prefix (ListObjectVersions and ListMultipartUploads). Item 14: the
/// marker keeps no local CA path.
#[test]
fn a_versioned_bucket_is_refused_then_dropped_to_no_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = users_store(dir.path());
    let b = OwnBucket::create(&store.endpoint(), "versioned");
    b.enable_versioning();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 10, 3000);
    let t = dir.path().join("v.s3");

    let err = quick_error(&mut export(&db, &t, &b, &[]));
    assert!(err.contains("keeps every version (versioning Enabled)") && err.contains("--s3-versioned-ok"), "{err}");
    assert!(!t.exists(), "no dataset made");
    assert_eq!(b.under("blobbench/"), Under::default(), "nothing written");

    let ca = "/etc/ssl/certs/ca-certificates.crt";
    stdout_of(&mut export(&db, &t, &b, &["--s3-versioned-ok", "--s3-ca", ca]));
    let prefix = prefix_of(&t);
    assert_eq!(descriptor(&t)["ca"], ca, "the descriptor keeps the CA file for drop");
    let marker = String::from_utf8(b.get(&format!("{prefix}{MARKER}")).unwrap()).unwrap();
    assert!(!marker.contains("ca-certificates") && marker.contains(&prefix), "{marker}");

    as_user(&["run", s(&t), "--count", "10", "--repeat", "1"]).assert().success();
    let update = ["run", s(&t), "--update", "--count", "20", "--repeat", "1"];
    let err = quick_error(&mut as_user(&update));
    assert!(err.contains("keeps every version") && err.contains("--s3-versioned-ok"), "{err}");
    as_user(&[&update[..], &["--s3-versioned-ok"]].concat()).assert().success();
    let before = b.under(&prefix);
    assert!(before.versions > 11, "the overwrites kept the old versions: {before:?}");

    let out = stdout_of(&mut as_user(&["drop", s(&t)]));
    let expect = format!("removed {} object versions and delete markers ({} bytes)", before.versions, before.bytes);
    assert!(out.contains(&expect), "{out}");
    assert_eq!(b.under(&prefix), Under::default(), "no version, no incomplete upload");
    assert!(!t.exists());
    store.stop().unwrap();
}

/// Issue 43, killed export and item 3 (and 5): an export killed by SIGKILL
/// mid-multipart left its descriptor marked incomplete; `run` refuses it
/// in one line, `stat --s3` lists its incomplete uploads, and `drop DIR`
/// removes its objects and aborts its uploads. A Ctrl-C on a store slower
/// than a Ctrl-C check still cleans up what it wrote. Both exports reach
/// the store through a relay that holds each answer 300 ms, so that an
/// upload lasts at least three of them and an export is still writing
/// when it is killed, however fast the machine.
#[test]
fn a_killed_export_is_dropped_with_its_incomplete_uploads() {
    let dir = tempfile::tempdir().unwrap();
    let store = users_store(dir.path());
    let b = OwnBucket::create(&store.endpoint(), "users");
    let slow = slow_relay(&b.endpoint, Duration::from_millis(300));
    let db = dir.path().join("big.db");
    kvtest_db(&db, 24, 6_000_000);
    let t = dir.path().join("killed.s3");
    let mut child = spawn_export(&db, &t, &slow, "users", &["--s3-multipart-threshold", "5M"]);
    wait_for(&mut child, "a multipart upload", || b.under("blobbench/").uploads > 0);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(descriptor(&t)["incomplete"], true, "{}", descriptor(&t));
    let prefix = prefix_of(&t);
    assert!(b.under(&prefix).uploads > 0, "the killed export's uploads are left");

    let err = quick_error(&mut as_user(&["run", s(&t), "--count", "5"]));
    assert!(err.contains("is an export that did not finish") && err.contains("blobbench drop DIR"), "{err}");
    let listed = stdout_of(&mut as_user(&["stat", "--json", "--s3", &b.endpoint, "--s3-bucket", "users"]));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let entry = listed.as_array().unwrap().iter().find(|d| d["prefix"] == prefix.as_str()).expect("listed");
    assert!(entry["uploads"].as_u64().unwrap() > 0, "{entry}");

    let out = stdout_of(&mut as_user(&["drop", s(&t)]));
    assert!(out.contains("(an export that had not finished)") && out.contains("incomplete multipart upload"), "{out}");
    assert_eq!(b.under(&prefix), Under::default(), "no object, no incomplete upload");
    assert!(!t.exists());

    // Ctrl-C on a store whose every answer takes longer than a Ctrl-C
    // check: the clean-up it starts still removes what was written.
    let small = dir.path().join("small.db");
    kvtest_db(&small, 3000, 100);
    let c = dir.path().join("c.s3");
    let mut child = spawn_export(&small, &c, &slow, "users", &[]);
    wait_for(&mut child, "20 objects written", || b.keys("blobbench/c-s3-").len() >= 20);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.trim_end().lines().count() == 1, "{err}");
    assert!(err.contains("interrupted: removed the") && err.contains("under blobbench/c-s3-"), "{err}");
    assert_eq!(b.under("blobbench/"), Under::default(), "nothing left behind");
    assert!(!c.exists());
    store.stop().unwrap();
}
