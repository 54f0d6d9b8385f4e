//! Removing a dataset's objects from a store the user runs: the one path
//! every deletion there takes (`drop DIR`, `drop --prefix`, the dataset
//! `export --force` replaced, a failed export's clean-up).
//!
//! Nothing is deleted until the marker under the prefix has been read and
//! matched to the dataset expected there ([`Expect`]); a prefix with
//! anything under it and no marker, or another export's marker, is refused
//! and left whole. Nor until every key listed under it (each object, each
//! version, each incomplete upload) has passed the rule of [`super::keys`]:
//! under the prefix, no empty, `.` or `..` segment after it; one that
//! breaks it stops the removal, naming it. Then every incomplete multipart
//! upload under the prefix is aborted and every object deleted (by
//! DeleteObjects, [`super::delete`]; on a bucket that keeps versions,
//! every version and delete marker, by its id: a plain DELETE there only
//! adds a marker and keeps the bytes), listing again until only the
//! marker is left, which goes last: a removal cut short is finished by
//! running it again, the prefix still saying it is blobbench's.

use std::sync::Arc;

use rusty_s3::S3Action;

use super::client::{read_text, Call, Client, Store, SIGNED_FOR};
use super::delete::{Deleting, Item, BATCH};
use super::descriptor::{Expect, Marker, MARKER};
use super::inflight;
use super::keys::{key_flaw, refusal};
use super::listing::{Upload, Versioning};
use super::retry::is_busy;
use crate::{Error, Result};

/// How many times the prefix is listed again, after deleting what the last
/// listing showed, before the removal gives up on a prefix still written to.
const PASSES: usize = 5;

/// What a removal took away.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Removed {
    /// Objects deleted, the marker included (on a bucket keeping versions:
    /// versions and delete markers).
    pub objects: u64,
    /// Their bytes, as the listings gave them.
    pub bytes: u64,
    /// Incomplete multipart uploads aborted.
    pub uploads: u64,
    /// Whether the bucket keeps versions (each was deleted by its id).
    pub versioned: bool,
}

/// Whether Ctrl-C ends a removal: `drop` stops at it, a clean-up that
/// Ctrl-C started does not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OnCtrlC {
    Stop,
    Finish,
}

impl OnCtrlC {
    fn client(self, store: &Arc<Store>) -> Client {
        match self {
            OnCtrlC::Stop => Client::new(store.clone()),
            OnCtrlC::Finish => Client::unstoppable(store.clone()),
        }
    }
}

/// Deletes everything under `prefix` in `store` once its marker names the
/// dataset `expect` says and every key listed under it passes the rule
/// (see the module's doc).
pub fn remove_dataset(store: &Arc<Store>, prefix: &str, expect: Expect, ctrl_c: OnCtrlC) -> Result<Removed> {
    let client = ctrl_c.client(store);
    let versioning = client.versioning()?;
    let mut removed = Removed { versioned: versioning.keeps_versions(), ..Removed::default() };
    if !marked(&client, prefix, expect, versioning)? {
        return Ok(removed);
    }
    let marker = format!("{prefix}{MARKER}");
    let make = || ctrl_c.client(store);
    let deleting = Deleting::default();
    for pass in 0..PASSES {
        let uploads = uploads_under(&client, prefix)?;
        let items = items_under(&client, prefix, versioning)?;
        let done = if pass == 0 { "nothing was deleted" } else { "nothing more was deleted, and its marker is kept" };
        check_listed(store, prefix, uploads.iter().map(|u| &u.key).chain(items.iter().map(|i| &i.key)), done)?;
        let items: Vec<Item> = items.into_iter().filter(|i| i.key != marker).collect();
        if uploads.is_empty() && items.is_empty() {
            let last: Vec<Item> =
                items_under(&client, &marker, versioning)?.into_iter().filter(|i| i.key == marker).collect();
            last.iter().try_for_each(|item| client.delete_item(item))?;
            removed.add(&last);
            return Ok(removed);
        }
        inflight::for_each(&uploads, &make, &|c, u| c.patiently(|| c.abort_once(&u.key, &u.upload_id)).map(drop))?;
        removed.uploads += uploads.len() as u64;
        let batches: Vec<&[Item]> = items.chunks(BATCH).collect();
        inflight::for_each(&batches, &make, &|c, batch| deleting.delete(c, batch))?;
        removed.add(&items);
    }
    Err(Error::bad_input(
        &store.label,
        format!("objects kept appearing under {prefix} over {PASSES} listings (is an export or a run still writing there?); its marker is kept: run the removal again"),
    ))
}

/// Whether `prefix` holds anything to remove: its marker, read and
/// matched to `expect`. A prefix holding anything without a marker, or
/// with another dataset's, is refused.
fn marked(client: &Client, prefix: &str, expect: Expect, versioning: Versioning) -> Result<bool> {
    let marker = format!("{prefix}{MARKER}");
    let refuse = |why: String| Err(Error::bad_input(&client.store().label, format!("{why}; refusing to delete them")));
    match read_marker(client, &marker, versioning)? {
        None if has_anything(client, prefix, versioning)? => {
            refuse(format!("objects under {prefix} are not blobbench's (no {MARKER})"))
        }
        None => Ok(false),
        Some(text) => match Marker::parse(text.as_bytes()) {
            None => {
                refuse(format!("{marker} is not a blobbench marker, so objects under {prefix} are not blobbench's"))
            }
            Some(m) => match m.mismatch(prefix, expect) {
                Some(why) => {
                    refuse(format!("the marker of {prefix} is not this dataset's ({why}), so its objects are not"))
                }
                None => Ok(true),
            },
        },
    }
}

/// Refuses a removal whose listing under `prefix` named a key that breaks
/// the rule of [`super::keys`], naming it; `done` says what was deleted.
fn check_listed<'a>(store: &Store, prefix: &str, keys: impl Iterator<Item = &'a String>, done: &str) -> Result<()> {
    for key in keys {
        if let Some(why) = key_flaw(prefix, key) {
            return Err(Error::bad_input(
                &store.label,
                format!(
                    "the listing of {prefix} names a {}; {done} (delete that object by other means, then drop again)",
                    refusal(prefix, key, why)
                ),
            ));
        }
    }
    Ok(())
}

impl Removed {
    /// This removal and `other` together.
    pub fn plus(&self, other: &Removed) -> Removed {
        Removed {
            objects: self.objects + other.objects,
            bytes: self.bytes + other.bytes,
            uploads: self.uploads + other.uploads,
            versioned: self.versioned || other.versioned,
        }
    }

    fn add(&mut self, items: &[Item]) {
        self.objects += items.len() as u64;
        self.bytes += items.iter().map(|i| i.size).sum::<u64>();
    }
}

/// Every object under `prefix`, or every version and delete marker when
/// the bucket keeps versions.
fn items_under(client: &Client, prefix: &str, versioning: Versioning) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    if versioning.keeps_versions() {
        client.list_versions(prefix, &mut |v| {
            items.push(Item { key: v.key.clone(), version: Some(v.version_id.clone()), size: v.size });
            Ok(())
        })?;
    } else {
        client.list(prefix, &mut |o| {
            items.push(Item { key: o.key.clone(), version: None, size: o.size });
            Ok(())
        })?;
    }
    Ok(items)
}

fn uploads_under(client: &Client, prefix: &str) -> Result<Vec<Upload>> {
    let mut uploads = Vec::new();
    client.list_uploads(prefix, &mut |u| {
        uploads.push(u.clone());
        Ok(())
    })?;
    Ok(uploads)
}

/// Whether anything at all is under `prefix`: an object, a version or an
/// incomplete upload.
fn has_anything(client: &Client, prefix: &str, versioning: Versioning) -> Result<bool> {
    if !client.list_page(prefix, None, 1, None)?.contents.is_empty() {
        return Ok(true);
    }
    if versioning.keeps_versions() && !items_under(client, prefix, versioning)?.is_empty() {
        return Ok(true);
    }
    Ok(!uploads_under(client, prefix)?.is_empty())
}

/// The marker's text: its current object, or on a bucket keeping versions
/// whose marker was deleted (by a `drop` that did not know of versions),
/// its newest version. None when there is none.
fn read_marker(client: &Client, key: &str, versioning: Versioning) -> Result<Option<String>> {
    if let Some(text) = client.get_small(key, None)? {
        return Ok(Some(text));
    }
    if !versioning.keeps_versions() {
        return Ok(None);
    }
    let mut newest = None;
    client.list_versions(key, &mut |v| {
        if v.key == key && !v.deleted && newest.is_none() {
            newest = Some(v.version_id.clone());
        }
        Ok(())
    })?;
    match newest {
        Some(version) => client.get_small(key, Some(&version)),
        None => Ok(None),
    }
}

impl Client {
    /// GETs a small object (of `version`, if given), tried again while the
    /// store answers busy; None when there is no such object.
    pub(super) fn get_small(&self, key: &str, version: Option<&str>) -> Result<Option<String>> {
        self.store.check_key("GET", key)?;
        let mut text = None;
        self.patiently(|| {
            let call = Call { op: if version.is_some() { "GET (version)" } else { "GET" }, key };
            let mut get = self.store.bucket.get_object(Some(&self.store.credentials), key);
            if let Some(v) = version {
                get.query_mut().insert("versionId", v);
            }
            let mut resp = match self.agent.get(get.sign(SIGNED_FOR).as_str()).call() {
                Ok(resp) => resp,
                Err(e) => return self.failed_to_send(call, e),
            };
            match resp.status().as_u16() {
                404 => text = None,
                s if is_busy(s) => return self.answer(call, &mut resp),
                _ => {
                    self.check(call, &mut resp)?;
                    text = Some(read_text(&mut resp));
                }
            }
            Ok(None)
        })?;
        Ok(text)
    }
}

#[cfg(test)]
#[path = "remove_tests.rs"]
mod tests;
