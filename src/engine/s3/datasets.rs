//! A store's blobbench datasets as wholes: removing one with its objects
//! (`blobbench drop`), and listing every one in a bucket with its size and
//! age (`blobbench stat --s3 URL --s3-bucket B`), so that what an `rm -r`,
//! a killed export or a failed clean-up left behind can be seen and
//! removed. Only a prefix holding blobbench's marker is ever deleted.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::build::{finish_with, remove_prefix};
use super::client::{Client, Store};
use super::descriptor::{check_bucket, is_dataset_prefix, Descriptor, DESCRIPTOR, MARKER, ROOT};
use super::provider;
use super::reach::user_store;
use crate::records::S3Params;
use crate::{Error, Result};

/// What `drop` removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Objects deleted from a store the user runs (None: the dataset's
    /// throwaway cluster, removed with its directory).
    pub objects: Option<u64>,
    /// The bucket and prefix they were under, or the cluster's directory.
    pub place: String,
    /// The dataset's directory, removed (false: it held other files too,
    /// which were kept; only the descriptor went).
    pub dir_removed: bool,
}

/// Removes the S3 dataset at `dir` and its objects: a throwaway cluster
/// with its directory; on a store the user runs, every object under its
/// prefix, then its descriptor (kept when the store cannot be reached or
/// a delete fails, so the same command can be run again), reached with
/// the export's CA file and addressing unless `s3` gives others.
pub fn drop_dataset(dir: &Path, s3: &S3Params) -> Result<Dropped> {
    if !dir.join(DESCRIPTOR).is_file() {
        return Err(Error::bad_input(
            dir,
            format!("is not a blobbench S3 dataset (no {DESCRIPTOR}); drop removes only those, so nothing was removed"),
        ));
    }
    let desc = Descriptor::read(dir)?;
    let Some(endpoint) = desc.endpoint.clone() else {
        let dir_removed = provider::drop_local(dir)?;
        return Ok(Dropped { objects: None, place: "its throwaway server".into(), dir_removed });
    };
    let store = Arc::new(user_store(&endpoint, &desc.bucket, &desc.reached_with(s3))?);
    let objects = remove_marked(&store, &desc.prefix).map_err(|e| {
        Error::invalid(format!("{e}; {} keeps its descriptor: run drop again to finish", dir.display()))
    })?;
    let file = dir.join(DESCRIPTOR);
    std::fs::remove_file(&file).map_err(|e| Error::io(&file, "cannot remove", e))?;
    let dir_removed = std::fs::remove_dir(dir).is_ok();
    let place = format!("bucket {} at {endpoint}, prefix {}", desc.bucket, desc.prefix);
    Ok(Dropped { objects: Some(objects), place, dir_removed })
}

/// Removes the objects under `prefix` (`blobbench/NAME/`, holding
/// blobbench's marker) in `bucket` at `url`: what a killed export or a
/// failed clean-up left, as [`list_datasets`] shows it.
pub fn drop_prefix(url: &str, bucket: &str, prefix: &str, s3: &S3Params) -> Result<Dropped> {
    check_bucket(bucket)?;
    if !is_dataset_prefix(prefix) {
        return Err(Error::invalid(format!(
            "--prefix {prefix}: not a blobbench dataset's prefix ({ROOT}NAME/, as stat --s3 lists them)"
        )));
    }
    let store = Arc::new(user_store(url, bucket, s3)?);
    let objects = remove_marked(&store, prefix)?;
    let place = format!("bucket {bucket} at {}, prefix {prefix}", url.trim_end_matches('/'));
    Ok(Dropped { objects: Some(objects), place, dir_removed: false })
}

/// Deletes everything under `prefix` if it holds blobbench's marker (or
/// nothing at all); refuses anything else, touching nothing. The first
/// request also checks that the store answers and the credentials open
/// the bucket.
fn remove_marked(store: &Arc<Store>, prefix: &str) -> Result<u64> {
    let client = Client::new(store.clone());
    if !client.any_under(prefix)? {
        return Ok(0);
    }
    if client.head(&format!("{prefix}{MARKER}"))?.is_none() {
        return Err(Error::bad_input(
            &store.label,
            format!("objects under {prefix} are not blobbench's (no {MARKER}); refusing to delete them"),
        ));
    }
    remove_prefix(store, prefix)
}

/// One dataset's prefix in a store, as the listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreDataset {
    pub prefix: String,
    pub objects: u64,
    pub bytes: u64,
    /// Whether the prefix holds blobbench's marker (only then may `drop
    /// --prefix` delete it).
    pub blobbench: bool,
    /// When it was written: the marker's time (an export writes it first),
    /// else the oldest object's, as the store gives it (RFC 3339).
    pub written: Option<String>,
    /// Seconds since then, by this machine's clock.
    pub age_secs: Option<u64>,
}

/// Every `blobbench/NAME/` prefix in `bucket` at `url`, in key order,
/// with its objects' count, bytes and age.
pub fn list_datasets(url: &str, bucket: &str, s3: &S3Params) -> Result<Vec<StoreDataset>> {
    check_bucket(bucket)?;
    let store = Arc::new(user_store(url, bucket, s3)?);
    let client = Client::new(store.clone());
    client.any_under(ROOT)?;
    let mut found: Vec<StoreDataset> = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = client.list_page(ROOT, token.as_deref(), 1000, None)?;
        for obj in &page.contents {
            let key = percent_encoding::percent_decode_str(&obj.key).decode_utf8_lossy();
            add(&mut found, &key, obj.size.unwrap_or(0), obj.last_modified.as_deref());
        }
        match page.next_continuation_token {
            Some(t) if !page.contents.is_empty() => token = Some(t),
            _ => break,
        }
    }
    let now = jiff::Timestamp::now();
    for d in &mut found {
        let when = d.written.as_deref().and_then(|w| w.parse::<jiff::Timestamp>().ok());
        d.age_secs = when.map(|w| now.as_second().saturating_sub(w.as_second()).max(0) as u64);
    }
    Ok(found)
}

/// Counts object `key` into its prefix's entry (keys come in order, so a
/// prefix's objects are together).
fn add(found: &mut Vec<StoreDataset>, key: &str, size: u64, modified: Option<&str>) {
    let Some(rest) = key.strip_prefix(ROOT) else { return };
    let Some((name, within)) = rest.split_once('/') else { return };
    let prefix = format!("{ROOT}{name}/");
    if found.last().is_none_or(|d| d.prefix != prefix) {
        let new = StoreDataset { prefix, objects: 0, bytes: 0, blobbench: false, written: None, age_secs: None };
        found.push(new);
    }
    let Some(d) = found.last_mut() else { return };
    d.objects += 1;
    d.bytes += size;
    let modified = modified.map(str::to_string);
    if within == MARKER {
        d.blobbench = true;
        d.written = modified;
    } else if !d.blobbench && modified.is_some() && (d.written.is_none() || modified < d.written) {
        d.written = modified;
    }
}

/// The command that removes a listed prefix.
pub fn drop_command(url: &str, bucket: &str, prefix: &str) -> String {
    let desc = Descriptor {
        engine: super::KIND,
        bucket: bucket.into(),
        prefix: prefix.into(),
        id: None,
        endpoint: Some(url.trim_end_matches('/').into()),
        replicas: None,
        ca: None,
        addressing: None,
        profile: None,
    };
    finish_with(&desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_groups_keys_by_dataset_and_dates_them_by_the_marker() {
        let mut found = Vec::new();
        let t = |s: &str| Some(s.to_string());
        add(&mut found, "blobbench/a-0000000a/0000000001", 10, Some("2026-01-02T00:00:00Z"));
        add(&mut found, "blobbench/a-0000000a/blobbench-dataset.json", 5, Some("2026-01-01T00:00:00Z"));
        add(&mut found, "blobbench/foreign/0000000001", 7, Some("2026-03-01T00:00:00Z"));
        add(&mut found, "blobbench/foreign/x", 8, Some("2026-02-01T00:00:00Z"));
        add(&mut found, "blobbench/loose", 1, None);
        assert_eq!(found.len(), 2, "{found:?}");
        let (a, f) = (&found[0], &found[1]);
        assert_eq!((a.prefix.as_str(), a.objects, a.bytes, a.blobbench), ("blobbench/a-0000000a/", 2, 15, true));
        assert_eq!(a.written, t("2026-01-01T00:00:00Z"), "the marker's time");
        assert_eq!((f.objects, f.bytes, f.blobbench), (2, 15, false));
        assert_eq!(f.written, t("2026-02-01T00:00:00Z"), "the oldest object's time without a marker");
        let cmd = drop_command("http://h:1/", "b-1", "blobbench/a-0000000a/");
        assert!(cmd.ends_with("drop --s3 http://h:1 --s3-bucket b-1 --prefix blobbench/a-0000000a/"), "{cmd}");
    }
}
