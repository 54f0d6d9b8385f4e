//! The checked removal against a small bucket model behind the scripted
//! endpoint: refusals that touch nothing, a prefix written to during the
//! removal, incomplete uploads, a bucket keeping versions, and a clean-up
//! that Ctrl-C does not stop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::engine::s3::fake::{delete_result, Fake, Reply, Request};

const P: &str = "blobbench/x-0000abcd/";

/// A bucket: each key's versions, oldest first (`None` size: a delete
/// marker); unversioned, a key has one.
#[derive(Default)]
struct Model {
    versioned: bool,
    keys: BTreeMap<String, Vec<(String, Option<u64>)>>,
    uploads: Vec<(String, String)>,
    /// Written by "someone else" at the first DELETE of a blob.
    written_meanwhile: Option<String>,
    next_version: u32,
    /// What the marker object says.
    stored_marker: Option<Marker>,
    /// Keys a DeleteObjects refuses, with the code, so many times (then
    /// deletes).
    refusals: BTreeMap<String, (&'static str, u32)>,
    /// DeleteObjects answered 501 NotImplemented (one DELETE each instead).
    no_multi_delete: bool,
    /// A DeleteObjects answer leaves its last key out (and keeps it).
    forgetful: bool,
    /// The bucket's object lock and MFA Delete, as it says them.
    object_lock: bool,
    mfa_delete: bool,
}

impl Model {
    fn put(&mut self, key: &str, size: Option<u64>) {
        self.next_version += 1;
        let v = (format!("v{}", self.next_version), size);
        let versions = self.keys.entry(key.to_string()).or_default();
        if self.versioned {
            versions.push(v);
        } else {
            *versions = vec![v];
        }
    }

    /// The marker of export `id` of prefix [`P`].
    fn marker(&mut self, id: Option<&str>) {
        let marker = Marker {
            engine: crate::engine::s3::KIND,
            bucket: "b".into(),
            prefix: P.into(),
            id: id.map(str::to_string),
        };
        self.put(&format!("{P}{MARKER}"), Some(marker.to_json().len() as u64));
        self.stored_marker = Some(marker);
    }

    fn current(&self, key: &str) -> Option<u64> {
        self.keys.get(key)?.last()?.1
    }

    fn handle(&mut self, r: &Request) -> Reply {
        let key = r.key();
        match r.method.as_str() {
            "GET" if r.has("versioning") => {
                let status = if self.versioned { "<Status>Enabled</Status>" } else { "" };
                let mfa = if self.mfa_delete { "<MfaDelete>Enabled</MfaDelete>" } else { "" };
                Reply::ok(format!("<VersioningConfiguration>{status}{mfa}</VersioningConfiguration>"))
            }
            "GET" if r.has("object-lock") && self.object_lock => Reply::ok(
                "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>",
            ),
            "GET" if r.has("object-lock") => Reply::error(404, "ObjectLockConfigurationNotFoundError"),
            "GET" if r.has("uploads") => Reply::ok(format!(
                "<ListMultipartUploadsResult>{}</ListMultipartUploadsResult>",
                self.uploads
                    .iter()
                    .map(|(k, u)| format!("<Upload><Key>{k}</Key><UploadId>{u}</UploadId></Upload>"))
                    .collect::<String>()
            )),
            "GET" if r.has("versions") => self.versions(r.param("prefix").unwrap_or("")),
            "GET" if key.is_empty() => {
                let prefix = r.param("prefix").unwrap_or("");
                let contents: String = (self.keys.keys().filter(|k| k.starts_with(prefix)))
                    .filter_map(|k| {
                        Some(format!("<Contents><Key>{k}</Key><Size>{}</Size></Contents>", self.current(k)?))
                    })
                    .collect();
                Reply::ok(format!(
                    r#"<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"#
                ))
            }
            "GET" => self.get(&key, r.param("versionId")),
            "DELETE" if r.has("uploadId") => {
                self.uploads.retain(|(_, u)| Some(u.as_str()) != r.param("uploadId"));
                Reply::Answer(204, Vec::new(), String::new())
            }
            "DELETE" => {
                self.delete(&key, r.param("versionId"));
                Reply::Answer(204, Vec::new(), String::new())
            }
            "POST" if r.has("delete") && self.no_multi_delete => Reply::error(501, "NotImplemented"),
            "POST" if r.has("delete") => {
                let mut objects = r.objects();
                if self.forgetful {
                    objects.pop();
                }
                let (mut deleted, mut refused) = (Vec::new(), Vec::new());
                for (key, version) in objects {
                    match self.refusals.get_mut(&key).filter(|(_, n)| *n > 0) {
                        Some((code, n)) => {
                            *n -= 1;
                            refused.push((key, *code));
                        }
                        None => {
                            self.delete(&key, version.as_deref());
                            deleted.push((key, version));
                        }
                    }
                }
                delete_result(&deleted, &refused)
            }
            other => panic!("unexpected {other} {}", r.line()),
        }
    }

    fn delete(&mut self, key: &str, version: Option<&str>) {
        if let Some(meanwhile) = self.written_meanwhile.take().filter(|_| !key.ends_with(MARKER)) {
            self.put(&meanwhile, Some(5));
        }
        match version {
            Some(v) => self.keys.entry(key.to_string()).or_default().retain(|(id, _)| id != v),
            None if self.versioned => self.put(key, None),
            None => _ = self.keys.remove(key),
        }
        self.keys.retain(|_, v| !v.is_empty());
    }

    fn get(&self, key: &str, version: Option<&str>) -> Reply {
        let versions = self.keys.get(key).cloned().unwrap_or_default();
        let found = match version {
            Some(v) => versions.iter().find(|(id, _)| id == v).and_then(|(_, s)| *s),
            None => versions.last().and_then(|(_, s)| *s),
        };
        match found {
            Some(_) if key.ends_with(MARKER) => Reply::ok(
                self.stored_marker.as_ref().map(|m| String::from_utf8(m.to_json()).unwrap()).unwrap_or_default(),
            ),
            Some(n) => Reply::ok("x".repeat(n as usize)),
            None => Reply::error(404, "NoSuchKey"),
        }
    }

    fn versions(&self, prefix: &str) -> Reply {
        let mut body = String::new();
        for (key, versions) in self.keys.iter().filter(|(k, _)| k.starts_with(prefix)) {
            for (id, size) in versions.iter().rev() {
                body.push_str(&match size {
                    Some(n) => {
                        format!("<Version><Key>{key}</Key><VersionId>{id}</VersionId><Size>{n}</Size></Version>")
                    }
                    None => format!("<DeleteMarker><Key>{key}</Key><VersionId>{id}</VersionId></DeleteMarker>"),
                });
            }
        }
        Reply::ok(format!("<ListVersionsResult><IsTruncated>false</IsTruncated>{body}</ListVersionsResult>"))
    }
}

/// The model behind a scripted endpoint, and its store.
fn bucket(model: Model) -> (Fake, Arc<Mutex<Model>>, Arc<Store>) {
    let model = Arc::new(Mutex::new(model));
    let shared = model.clone();
    let fake = Fake::start(move |r| shared.lock().unwrap().handle(r));
    let store = Arc::new(fake.store());
    (fake, model, store)
}

fn blobs(model: &mut Model, n: u64) {
    for k in 1..=n {
        model.put(&format!("{P}{k:010}"), Some(10 * k));
    }
}

/// Every key deleted, as "DELETE key", by DELETE or DeleteObjects.
fn deletes(fake: &Fake) -> Vec<String> {
    fake.deleted().into_iter().map(|k| format!("DELETE {k}")).collect()
}

/// Issue 43, item 1: nothing under a prefix is deleted until its marker
/// has been read and names the dataset expected there.
#[test]
fn nothing_is_deleted_under_a_prefix_whose_marker_is_not_the_descriptors() {
    let cases: [(Option<&str>, Expect, &str); 5] = [
        (Some("0000beef"), Expect::Export(Some("0000abcd")), "names export 0000beef, not the descriptor's 0000abcd"),
        (Some("0000abcd"), Expect::Export(None), "names export 0000abcd, not the descriptor's none"),
        (None, Expect::Export(Some("0000abcd")), "names export none (written before ids)"),
        (Some("0000beef"), Expect::Prefix, "which the prefix does not end with"),
        (Some("-"), Expect::Prefix, "no blobbench-dataset.json"),
    ];
    for (marker, expect, why) in cases {
        let mut model = Model::default();
        blobs(&mut model, 3);
        if marker != Some("-") {
            model.marker(marker);
        }
        let before = model.keys.len();
        let (fake, model, store) = bucket(model);
        let e = remove_dataset(&store, P, expect, OnCtrlC::Stop).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("refusing to delete them"), "{why}: {e}");
        assert!(deletes(&fake).is_empty(), "{why}: {:?}", fake.lines());
        assert_eq!(model.lock().unwrap().keys.len(), before);
    }
    // Its own marker: everything goes, the marker last; an empty prefix
    // is nothing to remove.
    let mut model = Model::default();
    blobs(&mut model, 3);
    model.marker(Some("0000abcd"));
    let (fake, model, store) = bucket(model);
    let removed = remove_dataset(&store, P, Expect::Prefix, OnCtrlC::Stop).unwrap();
    assert_eq!((removed.objects, removed.bytes, removed.uploads), (4, 60 + model_marker_size(), 0));
    assert!(model.lock().unwrap().keys.is_empty());
    assert_eq!(deletes(&fake).last().unwrap(), &format!("DELETE {P}{MARKER}"));
    assert_eq!(remove_dataset(&store, P, Expect::Prefix, OnCtrlC::Stop).unwrap(), Removed::default());
}

fn model_marker_size() -> u64 {
    let mut m = Model::default();
    m.marker(Some("0000abcd"));
    m.current(&format!("{P}{MARKER}")).unwrap()
}

/// Issue 43, item 2: an object written under the prefix while it is
/// removed is listed again and deleted before the marker goes.
#[test]
fn objects_written_during_a_removal_are_deleted_before_the_marker() {
    let mut model = Model::default();
    blobs(&mut model, 2);
    model.marker(Some("0000abcd"));
    model.written_meanwhile = Some(format!("{P}0000000009"));
    let (fake, model, store) = bucket(model);
    let removed = remove_dataset(&store, P, Expect::Export(Some("0000abcd")), OnCtrlC::Stop).unwrap();
    assert_eq!(removed.objects, 4, "two blobs, the one written meanwhile, the marker");
    assert!(model.lock().unwrap().keys.is_empty());
    let deletes = deletes(&fake);
    assert_eq!(deletes.last().unwrap(), &format!("DELETE {P}{MARKER}"), "{deletes:?}");
    assert!(deletes.contains(&format!("DELETE {P}0000000009")), "{deletes:?}");
}

/// Issue 43, item 3: a killed export's incomplete multipart uploads are
/// aborted with its objects.
#[test]
fn incomplete_uploads_are_aborted_with_the_objects() {
    let mut model = Model::default();
    blobs(&mut model, 1);
    model.marker(Some("0000abcd"));
    model.uploads = vec![(format!("{P}0000000002"), "u2".into()), (format!("{P}0000000003"), "u3".into())];
    let (_fake, model, store) = bucket(model);
    let removed = remove_dataset(&store, P, Expect::Export(Some("0000abcd")), OnCtrlC::Stop).unwrap();
    assert_eq!((removed.objects, removed.uploads), (2, 2));
    let model = model.lock().unwrap();
    assert!(model.uploads.is_empty() && model.keys.is_empty());
}

/// Issue 43, item 6: on a bucket keeping versions every version and
/// delete marker is deleted by its id, and the bytes are counted; a marker
/// an older `drop` hid behind a delete marker is still read.
#[test]
fn a_versioned_bucket_loses_every_version_by_its_id() {
    let mut model = Model { versioned: true, ..Model::default() };
    blobs(&mut model, 2);
    model.put(&format!("{P}0000000001"), Some(7));
    model.put(&format!("{P}0000000002"), None);
    model.marker(Some("0000abcd"));
    model.put(&format!("{P}{MARKER}"), None);
    let (fake, model, store) = bucket(model);
    let removed = remove_dataset(&store, P, Expect::Export(Some("0000abcd")), OnCtrlC::Stop).unwrap();
    assert!(removed.versioned);
    assert_eq!((removed.objects, removed.bytes), (6, 10 + 20 + 7 + model_marker_size()));
    assert!(model.lock().unwrap().keys.is_empty(), "no version left");
    let requests = fake.lines();
    assert!(requests.iter().any(|l| l == &format!("GET {P}{MARKER}")), "{requests:?}");
    assert_eq!(deletes(&fake).len(), 6);
}

/// Issue 43, item 5: a clean-up runs with Ctrl-C's flag still set; its
/// requests wait for a store slower than a stop check, where a stoppable
/// one gives up.
#[test]
fn a_clean_up_is_not_stopped_by_the_ctrl_c_that_started_it() {
    let slow = Fake::start(|_| {
        Reply::After(Duration::from_millis(700), Box::new(Reply::Answer(204, Vec::new(), String::new())))
    });
    let store = Arc::new(slow.store());
    let stopped = Client::stopped_by(store.clone(), || true).delete_patiently("blobbench/k").unwrap_err();
    assert!(matches!(stopped, crate::Error::Interrupted), "{stopped}");
    assert_eq!(Client::unstoppable(store).delete_patiently("blobbench/k").unwrap(), 0);
}

/// Issue 50, the serious one: a key planted in a listing with `..` (which
/// rusty-s3's URL would resolve to `victim`), `.`, or an empty segment,
/// among the objects, the versions or the incomplete uploads, stops the
/// removal before anything is deleted, naming the key; the object outside
/// survives.
#[test]
fn a_key_a_url_would_resolve_outside_the_prefix_stops_the_removal_before_any_delete() {
    let planted = [format!("{P}../../victim"), format!("{P}a/./b"), format!("{P}a//b"), format!("{P}../{P}1")];
    for (i, key) in planted.iter().enumerate() {
        for place in ["objects", "versions", "uploads"] {
            let mut model = Model { versioned: place == "versions", ..Model::default() };
            blobs(&mut model, 3);
            model.marker(Some("0000abcd"));
            model.put("victim", Some(6));
            match place {
                "uploads" => model.uploads.push((key.clone(), "u1".into())),
                _ => model.put(key, Some(1)),
            }
            let (fake, model, store) = bucket(model);
            let e = remove_dataset(&store, P, Expect::Export(Some("0000abcd")), OnCtrlC::Stop).unwrap_err().to_string();
            assert!(e.contains(&format!("names a key {key:?} is refused")), "{i} {place}: {e}");
            assert!(e.contains("nothing was deleted") && !e.contains('\n'), "{i} {place}: {e}");
            assert!(deletes(&fake).is_empty(), "{i} {place}: {:?}", fake.lines());
            assert!(!fake.lines().iter().any(|l| l.starts_with("DELETE") || l.starts_with("POST")), "{i} {place}");
            assert_eq!(model.lock().unwrap().current("victim"), Some(6), "the object outside survives");
        }
    }
}

/// Issue 50: DeleteObjects' partial errors. A key the store was too busy
/// to delete is sent again after a pause; a key it refused ends the
/// removal naming it, its code and how many were refused, the marker kept;
/// an answer that leaves a key out is an error, not a success.
#[test]
fn delete_objects_partial_errors_are_tried_again_or_named() {
    let removal = |model: Model| {
        let (fake, model, store) = bucket(model);
        let result = remove_dataset(&store, P, Expect::Export(Some("0000abcd")), OnCtrlC::Stop);
        (fake, model, result)
    };
    let mut busy = Model::default();
    blobs(&mut busy, 3);
    busy.marker(Some("0000abcd"));
    busy.refusals.insert(format!("{P}0000000002"), ("SlowDown", 1));
    let (fake, model, result) = removal(busy);
    assert_eq!(result.unwrap().objects, 4);
    assert!(model.lock().unwrap().keys.is_empty());
    let posts = fake.lines().iter().filter(|l| l.starts_with("POST")).count();
    assert_eq!(posts, 2, "one batch, then the busy key again: {:?}", fake.lines());

    let mut denied = Model::default();
    blobs(&mut denied, 3);
    denied.marker(Some("0000abcd"));
    for k in [2, 3] {
        denied.refusals.insert(format!("{P}{k:010}"), ("AccessDenied", 9));
    }
    let (_fake, model, result) = removal(denied);
    let e = result.unwrap_err().to_string();
    assert!(e.contains("the store refused 2 of 3 deletes; the first: ") && e.contains("(AccessDenied)"), "{e}");
    assert!(e.contains(&format!("DELETE {P}0000000002 was denied")) && e.contains("lacks s3:DeleteObject"), "{e}");
    assert!(model.lock().unwrap().current(&format!("{P}{MARKER}")).is_some(), "the marker is kept");

    let mut forgetful = Model { forgetful: true, ..Model::default() };
    blobs(&mut forgetful, 3);
    forgetful.marker(Some("0000abcd"));
    let e = removal(forgetful).2.unwrap_err().to_string();
    assert!(e.contains("the store's answer named 2 of the 3 keys"), "{e}");
}

/// Issue 50: a store without DeleteObjects (501) gets one DELETE per
/// object, each checked as every key is.
#[test]
fn a_store_without_delete_objects_gets_one_delete_each() {
    let mut model = Model { no_multi_delete: true, ..Model::default() };
    blobs(&mut model, 3);
    model.marker(Some("0000abcd"));
    let (fake, model, store) = bucket(model);
    let removed = remove_dataset(&store, P, Expect::Prefix, OnCtrlC::Stop).unwrap();
    assert_eq!(removed.objects, 4);
    assert!(model.lock().unwrap().keys.is_empty());
    assert_eq!(fake.lines().iter().filter(|l| l.starts_with("POST")).count(), 1, "asked once: {:?}", fake.lines());
    assert_eq!(fake.lines().iter().filter(|l| l.starts_with("DELETE")).count(), 4);
}

/// Issue 50, minor: a version whose delete is denied on a bucket with
/// object lock (or MFA Delete) says so, not only that a permission is
/// missing: the bucket's configuration is read then.
#[test]
fn a_denied_version_delete_names_object_lock_or_mfa_delete() {
    for (lock, mfa, says) in
        [(true, false, "has object lock on"), (false, true, "has MFA Delete on"), (false, false, "")]
    {
        let mut model = Model { versioned: true, object_lock: lock, mfa_delete: mfa, ..Model::default() };
        blobs(&mut model, 1);
        model.marker(Some("0000abcd"));
        model.refusals.insert(format!("{P}0000000001"), ("AccessDenied", 9));
        let (_fake, _model, store) = bucket(model);
        let e = remove_dataset(&store, P, Expect::Prefix, OnCtrlC::Stop).unwrap_err().to_string();
        assert!(e.contains("lacks s3:DeleteObjectVersion") && e.contains(says) && !e.contains('\n'), "{e}");
        assert_eq!(e.contains("object lock") || e.contains("MFA"), lock || mfa, "{e}");
    }
}
