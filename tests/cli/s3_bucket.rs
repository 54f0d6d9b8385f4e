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
use common::s3::{as_user, as_user_process, slow_relay, Meddler, OwnBucket, Under};
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

/// Issue 50, the serious one: a proxy in front of SeaweedFS plants
/// `PREFIX../../victim` in every full listing of a dataset's prefix (which
/// rusty-s3's URL would resolve to the user's `victim`). `drop DIR`, `drop
/// --prefix`, `export --force`'s retirement and a failed export's clean-up
/// each stop naming the key, send no DELETE outside the prefix (none at
/// all), and `victim` survives; `export --force` and the failed export
/// keep the prefixes they could not remove in their descriptors, which
/// `drop DIR` removes once the store lists honestly again (by
/// DeleteObjects).
#[test]
fn a_key_planted_in_a_listing_gets_no_delete_outside_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = users_store(dir.path());
    let b = OwnBucket::create(&store.endpoint(), "users");
    b.put("victim", b"the user's own");
    let m = Meddler::start(&b.endpoint);
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 6, 1000);
    let via = |target: &Path, more: &[&str]| {
        let args = ["export", "--engine", "s3", s(&db), s(target), "--s3", &m.endpoint, "--s3-bucket", "users"];
        as_user(&[&args[..], more].concat())
    };
    let t = dir.path().join("t.s3");
    via(&t, &[]).assert().success();
    let old = prefix_of(&t);
    m.plant.store(true, std::sync::atomic::Ordering::SeqCst);
    let untouched = |prefix: &str, objects: usize| {
        assert!(m.deleted().is_empty(), "no DELETE sent: {:?}", m.deleted());
        assert_eq!(b.keys(prefix).len(), objects, "nothing under {prefix} deleted");
        assert_eq!(b.get("victim").as_deref(), Some(&b"the user's own"[..]), "the object outside survives");
    };
    let refused = format!(r#"key "{old}../../victim" is refused"#);

    let err = quick_error(&mut as_user(&["drop", s(&t)]));
    assert!(err.contains(&refused) && err.contains("nothing was deleted"), "{err}");
    untouched(&old, 7);
    let err = quick_error(&mut as_user(&["drop", "--prefix", &old, "--s3", &m.endpoint, "--s3-bucket", "users"]));
    assert!(err.contains(&refused) && err.contains("nothing was deleted"), "{err}");
    untouched(&old, 7);

    // export --force writes the new dataset; the old one's retirement
    // stops at the planted key, and the descriptor keeps naming it.
    let err = quick_error(&mut via(&t, &["--force"]));
    assert!(err.contains("holds the new export") && err.contains(&refused), "{err}");
    assert!(err.contains("descriptor still names them"), "{err}");
    let new = prefix_of(&t);
    assert_ne!(new, old);
    assert_eq!(descriptor(&t)["replaces"][0]["prefix"], old.as_str(), "{}", descriptor(&t));
    assert_eq!(b.keys(&new).len(), 7, "the new export is whole");
    untouched(&old, 7);

    // A failed export (its fourth PUT refused): its clean-up stops at the
    // planted key, and its directory keeps the prefix for drop DIR.
    *m.puts_left.lock().unwrap() = Some(3);
    let f = dir.path().join("f.s3");
    let err = quick_error(&mut via(&f, &[]));
    assert!(err.contains("AccessDenied") && err.contains("removing the objects written under"), "{err}");
    assert!(
        err.contains("is refused") && err.contains(&format!("finish with: blobbench drop {}", f.display())),
        "{err}"
    );
    assert_eq!(descriptor(&f)["incomplete"], true);
    untouched(&prefix_of(&f), 3);

    // An honest store again: drop DIR removes every prefix each names.
    m.plant.store(false, std::sync::atomic::Ordering::SeqCst);
    *m.puts_left.lock().unwrap() = None;
    let out = stdout_of(&mut as_user(&["drop", s(&t)]));
    assert!(out.contains("removed 14 objects"), "the new dataset and the one it replaced: {out}");
    assert!(stdout_of(&mut as_user(&["drop", s(&f)])).contains("removed 3 objects"));
    assert!(b.keys("blobbench/").is_empty(), "{:?}", b.keys("blobbench/"));
    assert_eq!(b.get("victim").as_deref(), Some(&b"the user's own"[..]));
    let outside: Vec<String> =
        m.deleted().into_iter().filter(|k| !k.starts_with("blobbench/") || k.contains("/../")).collect();
    assert!(outside.is_empty(), "{outside:?}");
    let batched = m.seen().iter().filter(|p| p.method == "POST" && p.target.contains("delete")).count();
    assert!(batched >= 3, "SeaweedFS took DeleteObjects: {batched} batches");
    store.stop().unwrap();
}

/// Issue 50, moderate 1: `drop DIR` while a write run holds the dataset
/// is refused before anything is deleted, naming the run; a write run
/// whose marker is gone writes nothing; once the run has ended, `drop`
/// removes everything under the prefix. The run reaches the
/// store through a relay that holds each answer 200 ms, so that it is
/// still writing when the drop comes, however fast the machine.
#[test]
fn a_drop_while_a_write_run_holds_the_dataset_is_refused_naming_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = users_store(dir.path());
    let b = OwnBucket::create(&store.endpoint(), "users");
    let slow = slow_relay(&b.endpoint, Duration::from_millis(200));
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 10, 1000);
    let t = dir.path().join("t.s3");
    let export = ["export", "--engine", "s3", s(&db), s(&t), "--s3", &slow, "--s3-bucket", "users"];
    as_user(&export).assert().success();
    let prefix = prefix_of(&t);
    assert_eq!(b.keys(&prefix).len(), 11);
    let update = ["run", s(&t), "--update", "--count", "30", "--repeat", "1"];
    let mut run = as_user_process(&update).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let lock = t.join("blobbench-s3.lock");
    wait_for(&mut run, "the run's lock", || lock.exists());
    let err = quick_error(&mut as_user(&["drop", s(&t)]));
    let named = format!("is in use by blobbench process {} (a run with writes, since ", run.id());
    assert!(err.contains(&named) && err.contains("nothing was changed"), "{err}");
    assert_eq!(b.keys(&prefix).len(), 11, "nothing deleted");
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!lock.exists(), "the lock's file goes with the run");
    // A write run reads the marker before its first PUT: with it gone (a
    // drop elsewhere), nothing is written.
    let marker = format!("{prefix}{MARKER}");
    let saved = b.get(&marker).unwrap();
    b.delete(&marker);
    let err = quick_error(&mut as_user(&update));
    assert!(err.contains(&format!("its marker {marker} is gone")) && err.contains("nothing was written"), "{err}");
    assert_eq!(b.keys(&prefix).len(), 10, "no PUT");
    b.put(&marker, &saved);
    let out = stdout_of(&mut as_user(&["drop", s(&t)]));
    assert!(out.contains("removed 11 objects"), "{out}");
    assert_eq!(b.under(&prefix), Under::default(), "no object left under the prefix");
    assert!(!t.exists());
    store.stop().unwrap();
}

/// Issue 50, bad input and minor: a plain-http store off this machine
/// gets one warning line before the first signed request (keys and
/// session token travel unencrypted); loopback gets none.
#[test]
fn plain_http_off_this_machine_is_warned_of_and_loopback_is_not() {
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for (host, warned) in [("0.0.0.0", true), ("127.0.0.1", false)] {
        let url = format!("http://{host}:{gone}");
        let out = as_user(&["stat", "--s3", &url, "--s3-bucket", "users"]).timeout(HANG).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert!(!out.status.success() && lines.len() == 1 + usize::from(warned), "{err}");
        assert!(lines.last().unwrap().contains("cannot connect to"), "{err}");
        if warned {
            assert!(lines[0].starts_with(&format!("warning: {url} is plain http")), "{err}");
            assert!(lines[0].contains("session token travel unencrypted"), "{err}");
        }
    }
}
