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
//! (no `id`) is read as it was: its prefix is the one it names, which must
//! still be of blobbench's form (`blobbench/NAME/`): a descriptor naming
//! any other prefix is not blobbench's, whatever else it says.
//!
//! The [`Marker`] object under the prefix says the same id: nothing under a
//! prefix is deleted until its marker has been read and matched (see
//! `remove`). An export records its descriptor, marked incomplete, before
//! its first PUT, so that a killed one can be dropped.

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
    /// An export that has not finished (killed, or its clean-up failed):
    /// `run` refuses it and `drop` removes what it left.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// The datasets an unfinished `export --force` replaces, whose objects
    /// go once it has finished (or with it, at `drop`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<Descriptor>,
}

impl Descriptor {
    /// A new export's descriptor at `target`: a new id, and the prefix
    /// carrying it.
    pub fn new_export(target: &Path, bucket: &str, endpoint: Option<&str>, replicas: Option<u8>) -> Descriptor {
        let id = new_id();
        Descriptor {
            engine: super::kind::KIND,
            bucket: bucket.into(),
            prefix: prefix_for(target, &id),
            id: Some(id),
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
            replicas,
            ca: None,
            addressing: None,
            profile: None,
            incomplete: false,
            replaces: Vec::new(),
        }
    }

    pub fn read(dir: &Path) -> Result<Descriptor> {
        let file = dir.join(DESCRIPTOR);
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "cannot read", e))?;
        let d: Descriptor = serde_json::from_str(&text)
            .map_err(|e| Error::bad_input(&file, format!("is not a blobbench S3 descriptor: {e}")))?;
        match std::iter::once(&d).chain(&d.replaces).find_map(Descriptor::flaw) {
            Some(flaw) => Err(Error::bad_input(&file, format!("is not a blobbench S3 descriptor: {flaw}"))),
            None => Ok(d),
        }
    }

    /// What makes this descriptor not one blobbench wrote, if anything.
    fn flaw(&self) -> Option<String> {
        if self.engine != super::kind::KIND {
            return Some(format!("its engine is {}", self.engine.name()));
        }
        if self.bucket.is_empty() {
            return Some("it names no bucket".into());
        }
        if let Some(why) = bucket_flaw(&self.bucket) {
            return Some(format!("bucket {:?} is not one S3 accepts ({why})", self.bucket));
        }
        if !is_dataset_prefix(&self.prefix) {
            return Some(format!("prefix {:?} is not of blobbench's form ({ROOT}NAME-ID/)", self.prefix));
        }
        match self.id.as_deref() {
            Some(id) if !(valid_id(id) && self.prefix.ends_with(&format!("-{id}/"))) => {
                Some(format!("prefix {} does not end with its id {id}", self.prefix))
            }
            _ => None,
        }
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

/// What the marker object says: the dataset's prefix and the id of the
/// export that wrote it (None: written before ids). Nothing of this
/// machine (an endpoint, a CA file's path) goes in the bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Marker {
    pub engine: EngineKind,
    pub bucket: String,
    pub prefix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Marker {
    pub fn of(desc: &Descriptor) -> Marker {
        Marker { engine: desc.engine, bucket: desc.bucket.clone(), prefix: desc.prefix.clone(), id: desc.id.clone() }
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// The marker in `bytes` (a marker written before this type kept more
    /// fields, which are ignored); None when it is not one.
    pub fn parse(bytes: &[u8]) -> Option<Marker> {
        serde_json::from_slice::<Marker>(bytes).ok().filter(|m| m.engine == super::kind::KIND)
    }

    /// Why this marker does not mark the dataset `expect` names under
    /// `prefix`, if it does not.
    pub fn mismatch(&self, prefix: &str, expect: Expect) -> Option<String> {
        let name = |id: Option<&str>| id.map_or_else(|| "none (written before ids)".to_string(), str::to_string);
        if self.prefix != prefix {
            return Some(format!("it marks prefix {}", self.prefix));
        }
        match (expect, self.id.as_deref()) {
            (Expect::Export(want), got) if want != got => {
                Some(format!("it names export {}, not the descriptor's {}", name(got), name(want)))
            }
            (Expect::Prefix, Some(got)) if !prefix.ends_with(&format!("-{got}/")) => {
                Some(format!("it names export {got}, which the prefix does not end with"))
            }
            _ => None,
        }
    }
}

/// Whose objects a removal expects under a prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect<'a> {
    /// The export a descriptor names by its id (None: written before ids).
    Export(Option<&'a str>),
    /// Whichever export the prefix itself names (`drop --prefix`).
    Prefix,
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
    match bucket_flaw(name) {
        Some(why) => Err(Error::invalid(format!("--s3-bucket {name}: {why}"))),
        None => Ok(()),
    }
}

/// Why S3 refuses `name` as a bucket's, if it does (and so a descriptor
/// naming it is not blobbench's: a hand-edited `..` would collapse the
/// path of every request).
fn bucket_flaw(name: &str) -> Option<&'static str> {
    if !(3..=63).contains(&name.len()) {
        return Some("a bucket name has 3 to 63 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.')) {
        return Some("a bucket name has only lower-case letters, digits, '-' and '.'");
    }
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !edge(name.as_bytes()[0]) || !edge(name.as_bytes()[name.len() - 1]) || name.contains("..") {
        return Some("a bucket name starts and ends with a letter or digit, with no '..'");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some("a bucket name is not an IP address");
    }
    None
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
            engine: super::super::kind::KIND,
            bucket: "bkt".into(),
            prefix: "blobbench/x-0000abcd/".into(),
            id: Some("0000abcd".into()),
            endpoint: Some(endpoint.into()),
            replicas: None,
            ca: Some("/etc/ca.pem".into()),
            addressing: Some(addressing),
            profile: None,
            incomplete: false,
            replaces: Vec::new(),
        }
    }

    #[test]
    fn keys_are_ten_digits_under_the_prefix() {
        let d = Descriptor {
            engine: super::super::kind::KIND,
            bucket: "bkt".into(),
            prefix: prefix_for(Path::new("/x/My Data.s3"), "0a1b2c3d"),
            id: Some("0a1b2c3d".into()),
            endpoint: None,
            replicas: Some(3),
            ca: None,
            addressing: None,
            profile: None,
            incomplete: false,
            replaces: Vec::new(),
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
        std::fs::write(dir.path().join(DESCRIPTOR), r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/x/"}"#)
            .unwrap();
        let old = Descriptor::read(dir.path()).unwrap();
        assert_eq!((old.prefix.as_str(), old.id), ("blobbench/x/", None));
        assert_eq!((old.ca, old.addressing), (None, None), "written before the CA and addressing were kept");
        // An id the prefix does not end with is not ours.
        let wrong = r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/x/","id":"0000abcd"}"#;
        std::fs::write(dir.path().join(DESCRIPTOR), wrong).unwrap();
        assert!(Descriptor::read(dir.path()).is_err());
        std::fs::write(dir.path().join(DESCRIPTOR), r#"{"engine":"s3","bucket":"bkt","prefix":"../x"}"#).unwrap();
        assert!(Descriptor::read(dir.path()).unwrap_err().to_string().contains("not a blobbench S3 descriptor"));
        // Issue 50: a bucket S3 would refuse, as --s3-bucket is checked (a
        // hand-edited `..` would collapse every request's path).
        for bucket in ["..", "b", "Up", "a..b"] {
            let desc = format!(r#"{{"engine":"s3","bucket":"{bucket}","prefix":"blobbench/x/"}}"#);
            std::fs::write(dir.path().join(DESCRIPTOR), desc).unwrap();
            let e = Descriptor::read(dir.path()).unwrap_err().to_string();
            assert!(e.contains(&format!("bucket {bucket:?} is not one S3 accepts")), "{e}");
        }
    }

    /// Issue 43, item 1: a descriptor naming a prefix that is not of
    /// blobbench's form (a hand-edited `images/`, with or without an id,
    /// or among those it replaces) is not blobbench's: refused in one line.
    #[test]
    fn a_descriptor_naming_a_prefix_not_of_blobbenchs_form_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = users_store("http://h", Addressing::Path);
        for bad in [
            r#"{"engine":"s3","bucket":"bkt","prefix":"images/"}"#.to_string(),
            r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/"}"#.to_string(),
            r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/a/b/"}"#.to_string(),
            r#"{"engine":"s3","bucket":"bkt","prefix":"images/x-0000abcd/","id":"0000abcd"}"#.to_string(),
            serde_json::to_string(&Descriptor {
                replaces: vec![Descriptor { prefix: "images/".into(), id: None, ..good.clone() }],
                ..good.clone()
            })
            .unwrap(),
        ] {
            std::fs::write(dir.path().join(DESCRIPTOR), &bad).unwrap();
            let e = Descriptor::read(dir.path()).unwrap_err().to_string();
            assert!(e.contains("is not a blobbench S3 descriptor: prefix") && !e.contains('\n'), "{bad}: {e}");
        }
        let incomplete =
            Descriptor { incomplete: true, replaces: vec![users_store("http://g", Addressing::Auto)], ..good };
        incomplete.write(dir.path()).unwrap();
        assert_eq!(Descriptor::read(dir.path()).unwrap(), incomplete, "an unfinished export reads back whole");
    }

    /// Issue 43, item 14: the marker in the bucket says which export wrote
    /// the prefix, and nothing of this machine: no endpoint, no CA path.
    #[test]
    fn the_marker_names_the_export_and_nothing_of_this_machine() {
        let d = users_store("http://h:9000", Addressing::Path);
        let json = String::from_utf8(Marker::of(&d).to_json()).unwrap();
        assert!(!json.contains("ca.pem") && !json.contains("h:9000") && json.contains("0000abcd"), "{json}");
        let m = Marker::parse(json.as_bytes()).unwrap();
        assert_eq!(m.mismatch(&d.prefix, Expect::Export(Some("0000abcd"))), None);
        assert_eq!(m.mismatch(&d.prefix, Expect::Prefix), None);
        assert!(m.mismatch(&d.prefix, Expect::Export(None)).is_some(), "a descriptor from before ids");
        assert!(m.mismatch("blobbench/y-0000abcd/", Expect::Prefix).unwrap().contains("it marks prefix"));
        // A marker written before this type: the descriptor's fields, read.
        let old = serde_json::to_vec(&Descriptor { id: None, ..d.clone() }).unwrap();
        let old = Marker::parse(&old).unwrap();
        assert_eq!((old.id, old.prefix), (None, d.prefix.clone()));
        assert_eq!(Marker::parse(b"not json"), None);
    }
}
