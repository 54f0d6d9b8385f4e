//! The checked removal against a small bucket model behind the scripted
//! endpoint: refusals that touch nothing, a prefix written to during the
//! removal, incomplete uploads, a bucket keeping versions, and a clean-up
//! that Ctrl-C does not stop.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::engine::s3::fake::{Fake, Reply, Request};

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
                Reply::ok(format!("<VersioningConfiguration>{status}</VersioningConfiguration>"))
            }
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
                if let Some(meanwhile) = self.written_meanwhile.take().filter(|_| !key.ends_with(MARKER)) {
                    self.put(&meanwhile, Some(5));
                }
                match r.param("versionId") {
                    Some(v) => self.keys.entry(key.clone()).or_default().retain(|(id, _)| id != v),
                    None if self.versioned => self.put(&key, None),
                    None => _ = self.keys.remove(&key),
                }
                self.keys.retain(|_, v| !v.is_empty());
                Reply::Answer(204, Vec::new(), String::new())
            }
            other => panic!("unexpected {other} {}", r.line()),
        }
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

fn deletes(fake: &Fake) -> Vec<String> {
    fake.lines().into_iter().filter(|l| l.starts_with("DELETE")).collect()
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
    let stopped = Client::stopped_by(store.clone(), || true).delete_patiently("k").unwrap_err();
    assert!(matches!(stopped, crate::Error::Interrupted), "{stopped}");
    assert_eq!(Client::unstoppable(store).delete_patiently("k").unwrap(), 0);
}
