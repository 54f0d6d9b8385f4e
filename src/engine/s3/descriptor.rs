//! The file that names a directory as a blobbench S3 dataset, and what it
//! says: the bucket, the key prefix, and the endpoint of a store the user
//! runs (none: blobbench's throwaway Swift cluster beside it). Never a
//! credential.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::records::EngineKind;
use crate::{Error, Result};

/// The file naming a directory as a blobbench S3 dataset.
pub const DESCRIPTOR: &str = "blobbench-s3.json";
/// The object beside a dataset's blobs, under its prefix, that marks the
/// prefix as blobbench's (the only prefix it ever writes to or deletes in
/// a store the user runs).
pub const MARKER: &str = "blobbench-dataset.json";
/// The bucket of blobbench's own cluster.
pub const LOCAL_BUCKET: &str = "blobbench";

/// What a dataset directory says about its objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    pub engine: EngineKind,
    pub bucket: String,
    /// Every blob's key starts with it (and ends with the key, 10 digits).
    pub prefix: String,
    /// A store the user runs (`--s3 URL`); None: the throwaway Swift
    /// cluster in the directory's `swift/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The throwaway cluster's replicas (None for a store the user runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u8>,
}

impl Descriptor {
    pub fn read(dir: &Path) -> Result<Descriptor> {
        let file = dir.join(DESCRIPTOR);
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "cannot read", e))?;
        let d: Descriptor = serde_json::from_str(&text)
            .map_err(|e| Error::bad_input(&file, format!("is not a blobbench S3 descriptor: {e}")))?;
        if d.engine != super::KIND || !plain_prefix(&d.prefix) || d.bucket.is_empty() {
            return Err(Error::bad_input(&file, "is not a blobbench S3 descriptor"));
        }
        Ok(d)
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::invalid(format!("cannot encode the descriptor: {e}")))?;
        crate::util::fsutil::write_atomic(&dir.join(DESCRIPTOR), text.as_bytes())
    }

    pub fn local(&self) -> bool {
        self.endpoint.is_none()
    }

    /// The object key of blob `key`, written into `name` (reused).
    #[inline]
    pub fn key_into(&self, key: u32, name: &mut String) {
        use std::fmt::Write;
        name.clear();
        name.push_str(&self.prefix);
        let _ = write!(name, "{key:010}");
    }

    /// The blob key an object key names, if it is one of this dataset's.
    pub fn key_of(&self, object: &str) -> Option<u32> {
        let digits = object.strip_prefix(&self.prefix)?;
        if digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse().ok()
        } else {
            None
        }
    }

    pub fn marker(&self) -> String {
        format!("{}{MARKER}", self.prefix)
    }
}

/// Whether `dir` holds an S3 dataset.
pub(crate) fn detect(dir: &Path) -> bool {
    Descriptor::read(dir).is_ok()
}

/// The prefix a dataset built at `target` writes under: `blobbench/` and
/// the target's name, lower-cased, other characters as `-`, then `/`.
pub fn prefix_for(target: &Path) -> String {
    let stem = target.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    let mut clean: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    clean.truncate(100);
    if clean.is_empty() {
        clean.push_str("dataset");
    }
    format!("blobbench/{clean}/")
}

/// Letters, digits, `-`, `_`, `.` and `/`, ending in `/`: a prefix no
/// other dataset's keys can start with, and safe in a URL path.
fn plain_prefix(prefix: &str) -> bool {
    prefix.ends_with('/')
        && prefix.len() <= 200
        && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_ten_digits_under_the_prefix() {
        let d = Descriptor {
            engine: super::super::KIND,
            bucket: "b".into(),
            prefix: prefix_for(Path::new("/x/My Data.s3")),
            endpoint: None,
            replicas: Some(3),
        };
        assert_eq!(d.prefix, "blobbench/my-data-s3/");
        assert!(plain_prefix(&d.prefix));
        let mut name = String::new();
        d.key_into(42, &mut name);
        assert_eq!(name, "blobbench/my-data-s3/0000000042");
        assert_eq!(d.key_of(&name), Some(42));
        assert_eq!(d.key_of(&d.marker()), None);
        assert_eq!(d.key_of("blobbench/other/0000000042"), None);
        assert_eq!(prefix_for(Path::new("/")), "blobbench/dataset/");
    }

    #[test]
    fn descriptors_round_trip_and_refuse_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = Descriptor {
            engine: super::super::KIND,
            bucket: "b".into(),
            prefix: "blobbench/x/".into(),
            endpoint: Some("http://h:9000".into()),
            replicas: None,
        };
        d.write(dir.path()).unwrap();
        assert_eq!(Descriptor::read(dir.path()).unwrap(), d);
        assert!(detect(dir.path()));
        std::fs::write(dir.path().join(DESCRIPTOR), r#"{"engine":"s3","bucket":"b","prefix":"../x"}"#).unwrap();
        assert!(Descriptor::read(dir.path()).unwrap_err().to_string().contains("not a blobbench S3 descriptor"));
    }
}
