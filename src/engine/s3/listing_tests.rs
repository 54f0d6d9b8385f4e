//! Listings against the scripted endpoint: pages followed past an empty
//! truncated one, keys decoded once, versions and uploads paged by their
//! markers, the bucket's versioning read.

use super::*;
use crate::engine::s3::fake::{list_page, Fake, Reply};

fn keys(client: &Client, prefix: &str) -> crate::Result<Vec<String>> {
    let mut keys = Vec::new();
    client.list(prefix, &mut |o| {
        keys.push(o.key.clone());
        Ok(())
    })?;
    Ok(keys)
}

fn versions(client: &Client, prefix: &str) -> Vec<Version> {
    let mut all = Vec::new();
    client
        .list_versions(prefix, &mut |v| {
            all.push(v.clone());
            Ok(())
        })
        .unwrap();
    all
}

fn uploads(client: &Client, prefix: &str) -> Vec<Upload> {
    let mut all = Vec::new();
    client
        .list_uploads(prefix, &mut |u| {
            all.push(u.clone());
            Ok(())
        })
        .unwrap();
    all
}

/// Issue 43, item 2: a truncated page with nothing on it (a versioned
/// bucket full of delete markers answers such pages) is not the end.
#[test]
fn a_listing_goes_on_past_an_empty_truncated_page() {
    let fake = Fake::start(|r| match r.param("continuation-token") {
        None => list_page(&[], Some("t1")),
        Some("t1") => list_page(&["p/0000000001"], Some("t2")),
        Some(_) => list_page(&["p/0000000002"], None),
    });
    assert_eq!(keys(&fake.client(), "p/").unwrap(), ["p/0000000001", "p/0000000002"]);
    let looping = Fake::start(|_| list_page(&[], Some("again")));
    let e = keys(&looping.client(), "p/").unwrap_err().to_string();
    assert!(e.contains("LIST p/ failed: the store gave the same page twice"), "{e}");
}

/// Issue 43, item 13: a key with `%` in it comes back as the store named
/// it (rusty-s3 decodes `encoding-type=url` keys; decoding them again made
/// `drop` DELETE another key).
#[test]
fn listed_keys_are_decoded_once() {
    let fake = Fake::start(|r| {
        if r.has("versions") {
            Reply::ok(
                "<ListVersionsResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>\
                 <Version><Key>p/a%2541+b</Key><VersionId>v1</VersionId><Size>3</Size></Version></ListVersionsResult>",
            )
        } else if r.has("uploads") {
            // Not encoded: the answer does not say it is.
            Reply::ok("<ListMultipartUploadsResult><Upload><Key>p/a%41</Key><UploadId>u1</UploadId></Upload></ListMultipartUploadsResult>")
        } else {
            list_page(&["p/a%2541"], None)
        }
    });
    let client = fake.client();
    assert_eq!(keys(&client, "p/").unwrap(), ["p/a%41"]);
    let versions = versions(&client, "p/");
    let v1 = Version { key: "p/a%41 b".into(), version_id: "v1".into(), size: 3, deleted: false };
    assert_eq!(versions, [v1]);
    let uploads: Vec<String> = uploads(&client, "p/").into_iter().map(|u| u.key).collect();
    assert_eq!(uploads, ["p/a%41"]);
}

/// Versions and uploads are paged by their pairs of markers, delete
/// markers are told from versions, and a store that does not list
/// uploads has none.
#[test]
fn versions_and_uploads_are_paged_by_their_markers() {
    let fake = Fake::start(|r| {
        let page = |body: &str| {
            Reply::ok(format!(
                r#"<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{body}</ListVersionsResult>"#
            ))
        };
        match (r.param("key-marker"), r.param("version-id-marker")) {
            (None, _) => page(
                "<IsTruncated>true</IsTruncated><NextKeyMarker>p/1</NextKeyMarker><NextVersionIdMarker>v2</NextVersionIdMarker>\
                 <DeleteMarker><Key>p/1</Key><VersionId>v3</VersionId></DeleteMarker>\
                 <Version><Key>p/1</Key><VersionId>v2</VersionId><Size>10</Size></Version>",
            ),
            (Some("p/1"), Some("v2")) => {
                page("<IsTruncated>false</IsTruncated><Version><Key>p/1</Key><VersionId>v1</VersionId><Size>20</Size></Version>")
            }
            other => panic!("unexpected markers {other:?}"),
        }
    });
    let versions: Vec<_> =
        versions(&fake.client(), "p/").into_iter().map(|v| (v.version_id, v.size, v.deleted)).collect();
    assert_eq!(versions, [("v3".into(), 0, true), ("v2".into(), 10, false), ("v1".into(), 20, false)]);
    let none = Fake::start(|_| Reply::error(501, "NotImplemented"));
    assert!(uploads(&none.client(), "p/").is_empty());
    assert_eq!(none.client().versioning().unwrap(), Versioning::Off, "a store without versioning");
}

#[test]
fn the_buckets_versioning_is_read() {
    for (body, expect) in [
        (
            r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></VersioningConfiguration>"#,
            Versioning::Off,
        ),
        ("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>", Versioning::Enabled),
        ("<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>", Versioning::Suspended),
    ] {
        let fake = Fake::start(move |r| {
            assert!(r.has("versioning"), "{}", r.line());
            Reply::ok(body)
        });
        assert_eq!(fake.client().versioning().unwrap(), expect, "{body}");
    }
    assert!(Versioning::Suspended.keeps_versions() && !Versioning::Off.keeps_versions());
    let denied = Fake::start(|_| Reply::error(403, "AccessDenied"));
    let e = denied.client().versioning().unwrap_err().to_string();
    assert!(e.contains("lacks s3:GetBucketVersioning"), "{e}");
}
