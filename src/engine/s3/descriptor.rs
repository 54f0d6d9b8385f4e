//! The file that names a directory as a blobbench S3 dataset, and what it
//! says: the bucket, the key prefix, and the endpoint of a store the user
//! runs (none: blobbench's throwaway Swift cluster beside it) with the CA
//! file and addressing the export reached it with, so that `drop DIR`
//! reaches it the same way. Never a credential.
//!
//! Each export makes a new id, and its prefix carries it
//! (`blobbench/<DIR's name>-<8 hex>/`): two datasets of one name, on one
//! bucket or exported at once, never share a key, so one is never refused,
//! replaced or deleted for the other. A descriptor written before ids
//! (no `id`) is read as it was: its prefix is the one it names.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::records::{Addressing, EngineKind, S3Params};
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
    /// The export's id, the prefix's last part (None: a dataset exported
    /// before ids, whose prefix is DIR's name alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A store the user runs (`--s3 URL`); None: the throwaway Swift
    /// cluster in the directory's `swift/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The throwaway cluster's replicas (None for a store the user runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u8>,
    /// The CA bundle the export trusted beside the system's (`--s3-ca`,
    /// absolute); None: the system's alone, or a descriptor written before
    /// it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// How the export addressed the bucket (`--s3-addressing`) when not
    /// `auto`; None: `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addressing: Option<Addressing>,
    /// The AWS profile whose keys the export used (its name, never a key);
    /// None: the environment's keys, or blobbench's own server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl Descriptor {
    pub fn read(dir: &Path) -> Result<Descriptor> {
        let file = dir.join(DESCRIPTOR);
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "cannot read", e))?;
        let d: Descriptor = serde_json::from_str(&text)
            .map_err(|e| Error::bad_input(&file, format!("is not a blobbench S3 descriptor: {e}")))?;
        let id_ok = d.id.as_deref().is_none_or(|id| valid_id(id) && d.prefix.ends_with(&format!("-{id}/")));
        if d.engine != super::KIND || !plain_prefix(&d.prefix) || d.bucket.is_empty() || !id_ok {
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

    /// `s3` with the export's CA file and addressing where `s3` sets none
    /// (no `--s3-ca`, `--s3-addressing auto`).
    pub fn reached_with(&self, s3: &S3Params) -> S3Params {
        let addressing = match s3.addressing {
            Addressing::Auto => self.addressing.unwrap_or(Addressing::Auto),
            given => given,
        };
        let profile = s3.profile.clone().or_else(|| self.profile.clone());
        S3Params { ca: s3.ca.clone().or_else(|| self.ca.clone()), addressing, profile, ..s3.clone() }
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

/// Where every dataset's prefix starts.
pub const ROOT: &str = "blobbench/";

/// A new export's id: 8 random hex digits (32 bits: two exports of one
/// name collide about once in 4 billion, and the build refuses a prefix
/// that already holds anything).
pub fn new_id() -> String {
    format!("{:08x}", rand::random::<u32>())
}

fn valid_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The prefix of the export `id` of a dataset built at `target`:
/// `blobbench/`, the target's name (lower-cased, other characters as `-`),
/// `-`, the id, `/`.
pub fn prefix_for(target: &Path, id: &str) -> String {
    let stem = target.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    let mut clean: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    clean.truncate(100);
    if clean.is_empty() {
        clean.push_str("dataset");
    }
    format!("{ROOT}{clean}-{id}/")
}

/// A bucket name S3 accepts (3 to 63 lower-case letters, digits, `-` and
/// `.`, starting and ending with a letter or digit, not an IP address),
/// checked before any request so a refused name is one line naming the
/// rule rather than a store's 400.
pub fn check_bucket(name: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(format!("--s3-bucket {name}: {why}")));
    if !(3..=63).contains(&name.len()) {
        return bad("a bucket name has 3 to 63 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.')) {
        return bad("a bucket name has only lower-case letters, digits, '-' and '.'");
    }
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !edge(name.as_bytes()[0]) || !edge(name.as_bytes()[name.len() - 1]) || name.contains("..") {
        return bad("a bucket name starts and ends with a letter or digit, with no '..'");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("a bucket name is not an IP address");
    }
    Ok(())
}

/// Whether `prefix` is one blobbench could have written: `blobbench/`, one
/// name, `/` (what `drop --prefix` accepts, marker aside).
pub fn is_dataset_prefix(prefix: &str) -> bool {
    prefix.strip_prefix(ROOT).and_then(|rest| rest.strip_suffix('/')).is_some_and(|name| {
        !name.is_empty() && !name.contains('/') && name != "." && name != ".." && plain_prefix(prefix)
    })
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

    /// An export to a store the user runs at `endpoint`, with a CA file.
    fn users_store(endpoint: &str, addressing: Addressing) -> Descriptor {
        Descriptor {
            engine: super::super::KIND,
            bucket: "b".into(),
            prefix: "blobbench/x-0000abcd/".into(),
            id: Some("0000abcd".into()),
            endpoint: Some(endpoint.into()),
            replicas: None,
            ca: Some("/etc/ca.pem".into()),
            addressing: Some(addressing),
            profile: None,
        }
    }

    #[test]
    fn keys_are_ten_digits_under_the_prefix() {
        let d = Descriptor {
            engine: super::super::KIND,
            bucket: "b".into(),
            prefix: prefix_for(Path::new("/x/My Data.s3"), "0a1b2c3d"),
            id: Some("0a1b2c3d".into()),
            endpoint: None,
            replicas: Some(3),
            ca: None,
            addressing: None,
            profile: None,
        };
        assert_eq!(d.prefix, "blobbench/my-data-s3-0a1b2c3d/");
        assert!(plain_prefix(&d.prefix));
        let mut name = String::new();
        d.key_into(42, &mut name);
        assert_eq!(name, "blobbench/my-data-s3-0a1b2c3d/0000000042");
        assert_eq!(d.key_of(&name), Some(42));
        assert_eq!(d.key_of(&d.marker()), None);
        assert_eq!(d.key_of("blobbench/other/0000000042"), None);
        assert_eq!(prefix_for(Path::new("/"), "00000000"), "blobbench/dataset-00000000/");
    }

    #[test]
    fn a_drop_reaches_the_store_as_the_export_did_unless_told_otherwise() {
        let d = users_store("https://h", Addressing::Path);
        let kept = d.reached_with(&S3Params::default());
        assert_eq!((kept.ca.as_deref(), kept.addressing), (Some(Path::new("/etc/ca.pem")), Addressing::Path));
        let given = S3Params { ca: Some("/other.pem".into()), addressing: Addressing::Virtual, ..S3Params::default() };
        let told = d.reached_with(&given);
        assert_eq!((told.ca.as_deref(), told.addressing), (Some(Path::new("/other.pem")), Addressing::Virtual));
        let old = Descriptor { ca: None, addressing: None, ..d };
        assert_eq!(old.reached_with(&S3Params::default()), S3Params::default(), "an old descriptor: the defaults");
    }

    #[test]
    fn same_named_datasets_get_prefixes_of_their_own() {
        let (a, b) = (new_id(), new_id());
        assert!(valid_id(&a) && valid_id(&b) && a != b, "{a} {b}");
        let (pa, pb) = (prefix_for(Path::new("/a/w.s3"), &a), prefix_for(Path::new("/b/w.s3"), &b));
        assert_ne!(pa, pb);
        assert!(!pa.starts_with(&pb) && !pb.starts_with(&pa), "neither prefix holds the other's keys");
        assert!(is_dataset_prefix(&pa) && is_dataset_prefix("blobbench/w-s3/"));
        for not in ["blobbench/", "blobbench/a/b/", "other/w/", "blobbench/w", "blobbench/../"] {
            assert!(!is_dataset_prefix(not), "{not}");
        }
    }

    #[test]
    fn bucket_names_s3_refuses_are_refused_before_any_request() {
        for ok in ["abc", "users-bucket", "my.bucket.1", "a".repeat(63).as_str()] {
            assert!(check_bucket(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("ab", "3 to 63"),
            ("a".repeat(64).as_str(), "3 to 63"),
            ("Upper", "lower-case"),
            ("under_score", "lower-case"),
            ("-dash", "starts and ends"),
            ("a..b", "no '..'"),
            ("192.168.1.1", "IP address"),
        ] {
            let e = check_bucket(bad).unwrap_err().to_string();
            assert!(e.contains(why) && e.starts_with(&format!("--s3-bucket {bad}:")), "{bad}: {e}");
        }
    }

    #[test]
    fn descriptors_round_trip_and_refuse_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = users_store("http://h:9000", Addressing::Virtual);
        d.write(dir.path()).unwrap();
        assert_eq!(Descriptor::read(dir.path()).unwrap(), d);
        let text = std::fs::read_to_string(dir.path().join(DESCRIPTOR)).unwrap();
        assert!(text.contains(r#""ca": "/etc/ca.pem""#) && text.contains(r#""addressing": "virtual""#), "{text}");
        assert!(detect(dir.path()));
        // Written before ids: read as it was, its prefix as named.
        std::fs::write(dir.path().join(DESCRIPTOR), r#"{"engine":"s3","bucket":"b","prefix":"blobbench/x/"}"#).unwrap();
        let old = Descriptor::read(dir.path()).unwrap();
        assert_eq!((old.prefix.as_str(), old.id), ("blobbench/x/", None));
        assert_eq!((old.ca, old.addressing), (None, None), "written before the CA and addressing were kept");
        // An id the prefix does not end with is not ours.
        let wrong = r#"{"engine":"s3","bucket":"b","prefix":"blobbench/x/","id":"0000abcd"}"#;
        std::fs::write(dir.path().join(DESCRIPTOR), wrong).unwrap();
        assert!(Descriptor::read(dir.path()).is_err());
        std::fs::write(dir.path().join(DESCRIPTOR), r#"{"engine":"s3","bucket":"b","prefix":"../x"}"#).unwrap();
        assert!(Descriptor::read(dir.path()).unwrap_err().to_string().contains("not a blobbench S3 descriptor"));
    }
}
