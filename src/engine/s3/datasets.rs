//! A store's blobbench datasets as wholes: removing one with its objects
//! (`blobbench drop`), and listing every one in a bucket with its size and
//! age (`blobbench stat --s3 URL --s3-bucket B`), so that what an `rm -r`,
//! a killed export or a failed clean-up left behind can be seen and
//! removed. Only a prefix holding blobbench's marker is ever deleted.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::client::Client;
use super::descriptor::{check_bucket, is_dataset_prefix, Descriptor, Expect, DESCRIPTOR, MARKER, ROOT};
use super::lock::{DatasetLock, Holding};
use super::reach::user_store;
use super::remote::drop_prefix_command;
use super::remove::{remove_dataset, OnCtrlC, Removed};
use super::servers;
use crate::records::S3Params;
use crate::{Error, Result};

/// What `drop` removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// What went from a store the user runs (None: the dataset's
    /// throwaway cluster, removed with its directory).
    pub removed: Option<Removed>,
    /// The bucket and prefix they were under, or the cluster's directory.
    pub place: String,
    /// The dataset's directory, removed (false: it held other files too,
    /// which were kept; only the descriptor went).
    pub dir_removed: bool,
    /// Whether the dataset was an export that had not finished.
    pub incomplete: bool,
}

/// Removes the S3 dataset at `dir` and its objects, under the
/// directory's lock (refused, naming the holder, while an export or a
/// write run holds it): a throwaway cluster with its directory; on a store
/// the user runs, everything under its prefix (and under those of the
/// datasets an `export --force` replaced and did not retire) once its
/// marker is read and names the descriptor's id, then its descriptor (kept
/// when the store cannot be reached or a delete fails, so the same command
/// can be run again), each reached with its export's store, CA file,
/// addressing and profile unless `s3` gives others.
pub fn drop_dataset(dir: &Path, s3: &S3Params) -> Result<Dropped> {
    if !dir.join(DESCRIPTOR).is_file() {
        return Err(Error::bad_input(
            dir,
            format!("is not a blobbench S3 dataset (no {DESCRIPTOR}); drop removes only those, so nothing was removed"),
        ));
    }
    // A descriptor that is not blobbench's is refused before anything is
    // written in its directory; then read again under the lock.
    Descriptor::read(dir)?;
    let lock = DatasetLock::take(dir, Holding::Drop)?;
    let desc = Descriptor::read(dir)?;
    let mut removed: Option<Removed> = None;
    for d in std::iter::once(&desc).filter(|d| !d.local()).chain(&desc.replaces) {
        let r = remove_described(d, s3).map_err(|e| {
            Error::invalid(format!("{e}; {} keeps its descriptor: run drop again to finish", dir.display()))
        })?;
        removed = Some(removed.unwrap_or_default().plus(&r));
    }
    let Some(endpoint) = desc.endpoint.clone() else {
        let dir_removed = servers::drop_local(dir)?;
        let place = match desc.replaces.len() {
            0 => "its throwaway server".to_string(),
            n => format!("its throwaway server and the {n} dataset(s) it replaced in a store you run"),
        };
        return Ok(Dropped { removed, place, dir_removed, incomplete: false });
    };
    let file = dir.join(DESCRIPTOR);
    std::fs::remove_file(&file).map_err(|e| Error::io(&file, "cannot remove", e))?;
    if let Some(lock) = &lock {
        lock.remove_file()?;
    }
    let dir_removed = std::fs::remove_dir(dir).is_ok();
    let place = format!("bucket {} at {endpoint}, prefix {}", desc.bucket, desc.prefix);
    Ok(Dropped { removed, place, dir_removed, incomplete: desc.incomplete })
}

/// The objects of the dataset `desc` describes, removed from its store.
fn remove_described(desc: &Descriptor, s3: &S3Params) -> Result<Removed> {
    let store = user_store(desc.endpoint.as_deref().unwrap_or_default(), &desc.bucket, &desc.reached_with(s3))?;
    let store = Arc::new(store.within(&desc.prefix));
    // The first request: checks that the store answers and the bucket opens.
    Client::new(store.clone()).any_under(&desc.prefix)?;
    remove_dataset(&store, &desc.prefix, Expect::Export(desc.id.as_deref()), OnCtrlC::Stop)
}

/// Removes the objects under `prefix` (`blobbench/NAME/`, holding
/// blobbench's marker, which names that prefix) in `bucket` at `url`:
/// what a killed export or a failed clean-up left, as [`list_datasets`]
/// shows it.
pub fn drop_prefix(url: &str, bucket: &str, prefix: &str, s3: &S3Params) -> Result<Dropped> {
    check_bucket(bucket)?;
    if !is_dataset_prefix(prefix) {
        return Err(Error::invalid(format!(
            "--prefix {prefix}: not a blobbench dataset's prefix ({ROOT}NAME/, as stat --s3 lists them)"
        )));
    }
    let store = Arc::new(user_store(url, bucket, s3)?.within(prefix));
    Client::new(store.clone()).any_under(prefix)?;
    let removed = remove_dataset(&store, prefix, Expect::Prefix, OnCtrlC::Stop)?;
    let place = format!("bucket {bucket} at {}, prefix {prefix}", url.trim_end_matches('/'));
    Ok(Dropped { removed: Some(removed), place, dir_removed: false, incomplete: false })
}

/// One dataset's prefix in a store, as the listing shows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct StoreDataset {
    pub prefix: String,
    pub objects: u64,
    pub bytes: u64,
    /// Incomplete multipart uploads under it (parts stored and billed,
    /// in no object listing): what a killed export leaves.
    pub uploads: u64,
    /// Whether the prefix holds blobbench's marker (only then may `drop
    /// --prefix` delete it).
    pub blobbench: bool,
    /// When it was written: the marker's time (an export writes it first),
    /// else the oldest object's or upload's, as the store gives it (RFC 3339).
    pub written: Option<String>,
    /// Seconds since then, by this machine's clock.
    pub age_secs: Option<u64>,
}

/// Every `blobbench/NAME/` prefix in `bucket` at `url` holding objects or
/// incomplete uploads, in key order, with their count, bytes and age.
pub fn list_datasets(url: &str, bucket: &str, s3: &S3Params) -> Result<Vec<StoreDataset>> {
    check_bucket(bucket)?;
    let store = Arc::new(user_store(url, bucket, s3)?);
    let client = Client::new(store.clone());
    client.any_under(ROOT)?;
    let mut found = BTreeMap::new();
    client.list(ROOT, &mut |o| {
        add(&mut found, &o.key, o.modified.as_deref()).into_iter().for_each(|d| {
            d.objects += 1;
            d.bytes += o.size;
        });
        Ok(())
    })?;
    client.list_uploads(ROOT, &mut |u| {
        add(&mut found, &u.key, u.initiated.as_deref()).into_iter().for_each(|d| d.uploads += 1);
        Ok(())
    })?;
    let now = jiff::Timestamp::now();
    let mut found: Vec<StoreDataset> = found.into_values().collect();
    for d in &mut found {
        let when = d.written.as_deref().and_then(|w| w.parse::<jiff::Timestamp>().ok());
        d.age_secs = when.map(|w| now.as_second().saturating_sub(w.as_second()).max(0) as u64);
    }
    Ok(found)
}

/// The entry of the prefix `key` is under, dated by `modified` (the
/// marker's time, else the oldest); None when `key` is under none.
fn add<'a>(
    found: &'a mut BTreeMap<String, StoreDataset>,
    key: &str,
    modified: Option<&str>,
) -> Option<&'a mut StoreDataset> {
    let rest = key.strip_prefix(ROOT)?;
    let (name, within) = rest.split_once('/')?;
    let prefix = format!("{ROOT}{name}/");
    let d = found.entry(prefix.clone()).or_insert_with(|| StoreDataset { prefix, ..StoreDataset::default() });
    let modified = modified.map(str::to_string);
    if within == MARKER {
        d.blobbench = true;
        d.written = modified;
    } else if !d.blobbench && modified.is_some() && (d.written.is_none() || modified < d.written) {
        d.written = modified;
    }
    Some(d)
}

/// The command that removes a listed prefix.
pub fn drop_command(url: &str, bucket: &str, prefix: &str) -> String {
    drop_prefix_command(url.trim_end_matches('/'), bucket, prefix, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_groups_keys_by_dataset_and_dates_them_by_the_marker() {
        let mut found = BTreeMap::new();
        let t = |s: &str| Some(s.to_string());
        let mut object = |key: &str, size: u64, modified: Option<&str>| {
            if let Some(d) = add(&mut found, key, modified) {
                d.objects += 1;
                d.bytes += size;
            }
        };
        object("blobbench/foreign/0000000001", 7, Some("2026-03-01T00:00:00Z"));
        object("blobbench/foreign/x", 8, Some("2026-02-01T00:00:00Z"));
        object("blobbench/a-0000000a/0000000001", 10, Some("2026-01-02T00:00:00Z"));
        object("blobbench/a-0000000a/blobbench-dataset.json", 5, Some("2026-01-01T00:00:00Z"));
        object("blobbench/loose", 1, None);
        add(&mut found, "blobbench/killed-0000000b/0000000003", Some("2026-04-01T00:00:00Z")).unwrap().uploads += 1;
        let found: Vec<StoreDataset> = found.into_values().collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            (found[2].prefix.as_str(), found[2].objects, found[2].uploads),
            ("blobbench/killed-0000000b/", 0, 1)
        );
        let (a, f) = (&found[0], &found[1]);
        assert_eq!((a.prefix.as_str(), a.objects, a.bytes, a.blobbench), ("blobbench/a-0000000a/", 2, 15, true));
        assert_eq!(a.written, t("2026-01-01T00:00:00Z"), "the marker's time");
        assert_eq!((f.objects, f.bytes, f.blobbench), (2, 15, false));
        assert_eq!(f.written, t("2026-02-01T00:00:00Z"), "the oldest object's time without a marker");
        let cmd = drop_command("http://h:1/", "b-1", "blobbench/a-0000000a/");
        assert!(cmd.ends_with("drop --s3 http://h:1 --s3-bucket b-1 --prefix blobbench/a-0000000a/"), "{cmd}");
    }
}
