//! What a bucket holds under a prefix, page by page: its objects
//! (ListObjectsV2), every version of them and their delete markers
//! (ListObjectVersions), its incomplete multipart uploads
//! (ListMultipartUploads), and whether the bucket keeps versions at all
//! (GetBucketVersioning). None of it is timed.
//!
//! A listing goes on while the store says it is truncated, whether or not
//! the page held anything: S3 answers empty truncated pages (a versioned
//! bucket full of delete markers does), and stopping there once made
//! `drop` delete half a dataset and its marker. A page that would start
//! the listing over (the same token or markers again) is an error, not a
//! loop. Keys come back as the store named them: rusty-s3 decodes
//! ListObjectsV2's `encoding-type=url` keys itself, and the others are
//! decoded here, once, only when the answer says it encoded them.

use std::borrow::Cow;

use rusty_s3::{Map, Method};

use super::client::{read_text, Call, Client, SIGNED_FOR};
use crate::{Error, Result};

/// One object of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    /// When it was written, as the store gives it (RFC 3339).
    pub modified: Option<String>,
}

/// One version of an object, or a delete marker (no bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub key: String,
    pub version_id: String,
    pub size: u64,
    /// A delete marker: what a plain DELETE adds on such a bucket.
    pub deleted: bool,
}

/// A multipart upload begun and neither completed nor aborted: its parts
/// are stored (and billed) but listed nowhere else.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    pub key: String,
    pub upload_id: String,
    pub initiated: Option<String>,
}

/// Whether a bucket keeps the versions its objects replace or delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versioning {
    /// Never enabled: a DELETE removes the object, a PUT replaces it.
    Off,
    /// Every PUT adds a version and every DELETE a delete marker; the
    /// bytes stay until each version is deleted by its id.
    Enabled,
    /// Enabled once: versions written then are still kept.
    Suspended,
}

impl Versioning {
    /// Whether the bucket may hold versions besides the current objects.
    pub fn keeps_versions(self) -> bool {
        self != Versioning::Off
    }
}

/// The most entries a page may hold (S3's own maximum).
const PAGE: &str = "1000";

/// A listing paged by a pair of markers: its sub-resource, its page size
/// parameter, the markers a request continues from and the elements of
/// the answer that give them.
struct Paged {
    op: &'static str,
    param: &'static str,
    max: &'static str,
    markers: [&'static str; 2],
    next: [&'static str; 2],
}

const VERSIONS: Paged = Paged {
    op: "LIST (versions)",
    param: "versions",
    max: "max-keys",
    markers: ["key-marker", "version-id-marker"],
    next: ["NextKeyMarker", "NextVersionIdMarker"],
};

const UPLOADS: Paged = Paged {
    op: "LIST (uploads)",
    param: "uploads",
    max: "max-uploads",
    markers: ["key-marker", "upload-id-marker"],
    next: ["NextKeyMarker", "NextUploadIdMarker"],
};

impl Client {
    /// Calls `each` for every object whose key starts with `prefix`, in key
    /// order, a page of up to 1000 at a time.
    pub fn list(&self, prefix: &str, each: &mut dyn FnMut(&Listed) -> Result<()>) -> Result<()> {
        let mut token: Option<String> = None;
        loop {
            let page = self.list_page(prefix, token.as_deref(), 1000, None)?;
            for obj in page.contents {
                each(&Listed { key: obj.key, size: obj.size.unwrap_or(0), modified: obj.last_modified })?;
            }
            match page.next_continuation_token {
                None => return Ok(()),
                Some(t) if token.as_deref() == Some(t.as_str()) => {
                    return Err(self.failed(Call { op: "LIST", key: prefix }, "the store gave the same page twice"));
                }
                Some(t) => token = Some(t),
            }
        }
    }

    /// Calls `each` for every version and delete marker under `prefix`.
    pub fn list_versions(&self, prefix: &str, each: &mut dyn FnMut(&Version) -> Result<()>) -> Result<()> {
        let listed = self.pages(&VERSIONS, prefix, &mut |node, encoded| {
            if !(is(node, "Version") || is(node, "DeleteMarker")) {
                return Ok(());
            }
            let key = decoded(child(node, "Key").unwrap_or_default(), encoded).into_owned();
            let version_id = child(node, "VersionId").unwrap_or("null").to_string();
            let size = child(node, "Size").and_then(|s| s.parse().ok()).unwrap_or(0);
            each(&Version { key, version_id, size, deleted: is(node, "DeleteMarker") })
        })?;
        match listed {
            true => Ok(()),
            false => Err(self.failed(Call { op: VERSIONS.op, key: prefix }, "the store does not list versions")),
        }
    }

    /// Calls `each` for every incomplete multipart upload under `prefix`
    /// (none when the store does not implement the listing).
    pub fn list_uploads(&self, prefix: &str, each: &mut dyn FnMut(&Upload) -> Result<()>) -> Result<()> {
        self.pages(&UPLOADS, prefix, &mut |node, encoded| {
            if !is(node, "Upload") {
                return Ok(());
            }
            let key = decoded(child(node, "Key").unwrap_or_default(), encoded).into_owned();
            let upload_id = child(node, "UploadId").unwrap_or_default().to_string();
            each(&Upload { key, upload_id, initiated: child(node, "Initiated").map(str::to_string) })
        })
        .map(drop)
    }

    /// Calls `each` with every element of every page of `kind` under
    /// `prefix`, and whether its keys are URL-encoded. False when the store
    /// does not implement the listing.
    fn pages(
        &self,
        kind: &Paged,
        prefix: &str,
        each: &mut dyn FnMut(roxmltree::Node<'_, '_>, bool) -> Result<()>,
    ) -> Result<bool> {
        let call = Call { op: kind.op, key: prefix };
        let mut markers: Option<[String; 2]> = None;
        loop {
            let mut query = vec![(kind.param, ""), ("prefix", prefix), ("encoding-type", "url"), (kind.max, PAGE)];
            if let Some([a, b]) = &markers {
                query.extend([(kind.markers[0], a.as_str()), (kind.markers[1], b.as_str())]);
            }
            let Some(text) = self.bucket_get(call, &query)? else { return Ok(false) };
            let doc = parse(&text).map_err(|e| self.failed(call, e.as_str()))?;
            let page = doc.root_element();
            let encoded = child(page, "EncodingType") == Some("url");
            for node in page.children().filter(roxmltree::Node::is_element) {
                each(node, encoded)?;
            }
            if child(page, "IsTruncated") != Some("true") {
                return Ok(true);
            }
            let Some(key) = child(page, kind.next[0]) else {
                return Err(self.failed(call, "a truncated listing without its next marker"));
            };
            let next = [decoded(key, encoded).into_owned(), child(page, kind.next[1]).unwrap_or_default().to_string()];
            if markers.as_ref() == Some(&next) {
                return Err(self.failed(call, "the store gave the same page twice"));
            }
            markers = Some(next);
        }
    }

    /// The bucket's versioning (off when the store does not implement it).
    pub fn versioning(&self) -> Result<Versioning> {
        let call = Call { op: "GET (versioning)", key: "" };
        let Some(text) = self.bucket_get(call, &[("versioning", "")])? else { return Ok(Versioning::Off) };
        let doc = parse(&text).map_err(|e| self.failed(call, e.as_str()))?;
        Ok(match child(doc.root_element(), "Status") {
            Some("Enabled") => Versioning::Enabled,
            Some("Suspended") => Versioning::Suspended,
            _ => Versioning::Off,
        })
    }

    /// A signed GET of the bucket with `query`: the answer's text, or None
    /// when the store does not implement it (501, `NotImplemented`).
    pub(super) fn bucket_get(&self, call: Call, query: &[(&'static str, &str)]) -> Result<Option<String>> {
        let mut map = Map::new();
        for &(name, value) in query {
            map.insert(name, Cow::Owned(value.to_string()));
        }
        let store = &self.store;
        let c = &store.credentials;
        let url = rusty_s3::signing::sign(
            &jiff::Timestamp::now(),
            Method::Get,
            store.bucket.base_url().clone(),
            c.key(),
            c.secret(),
            c.token(),
            store.bucket.region(),
            SIGNED_FOR.as_secs(),
            map.iter(),
            std::iter::empty(),
        );
        let mut resp = self.agent.get(url.as_str()).call().map_err(|e| self.transport(call, e, None))?;
        if resp.status().as_u16() == 501 {
            return Ok(None);
        }
        self.check(call, &mut resp)?;
        Ok(Some(read_text(&mut resp)))
    }
}

/// Refuses a bucket that keeps every version unless the user said it may:
/// there every overwrite and delete keeps the old bytes, billed.
pub(super) fn check_versioning(client: &Client, versioned_ok: bool) -> Result<()> {
    let versioning = client.versioning()?;
    if versioning != Versioning::Enabled || versioned_ok {
        return Ok(());
    }
    Err(Error::bad_input(
        &client.store().label,
        "keeps every version (versioning Enabled): each PUT and DELETE there keeps the old bytes, billed until each \
         version is deleted; give --s3-versioned-ok to write anyway (drop then deletes every version under the prefix)",
    ))
}

fn parse(text: &str) -> std::result::Result<roxmltree::Document<'_>, String> {
    roxmltree::Document::parse(text).map_err(|e| format!("the store's answer could not be read: {e}"))
}

/// The text of `node`'s first child element named `name` (any namespace:
/// some stores leave S3's out).
pub(super) fn child<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.children().find(|&n| is(n, name)).map(|n| n.text().unwrap_or_default())
}

/// `value` decoded as S3 encodes keys for `encoding-type=url` (as HTML
/// forms: `+` is a space, `%2B` a plus) when `encoded`, else as it is.
fn decoded(value: &str, encoded: bool) -> Cow<'_, str> {
    if !encoded {
        return Cow::Borrowed(value);
    }
    let spaced = value.replace('+', " ");
    Cow::Owned(percent_encoding::percent_decode_str(&spaced).decode_utf8_lossy().into_owned())
}

/// Whether `node` is an element named `name`, in any namespace.
fn is(node: roxmltree::Node<'_, '_>, name: &str) -> bool {
    node.is_element() && node.tag_name().name() == name
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
