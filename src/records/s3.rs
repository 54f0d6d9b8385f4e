//! The S3 engine's settings: where its objects go and how they are reached.

use std::path::PathBuf;

/// Blobs of this size or more go up by multipart upload unless
/// `--s3-multipart-threshold` says otherwise: where S3 clients switch
/// (the AWS CLI from 8 MiB, others up to about 100 MB), well below S3's
/// 5 GB limit for one PUT.
pub const DEFAULT_MULTIPART_THRESHOLD: u64 = 64 << 20;

/// How a bucket is named in a request's URL (`--s3-addressing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addressing {
    /// As the AWS CLI chooses: the bucket in the host name when it can be
    /// one (a DNS-compatible bucket on an endpoint named by a host name,
    /// not an IP address, with no path); in the path otherwise.
    #[default]
    Auto,
    /// `https://BUCKET.host/key`.
    Virtual,
    /// `https://host/BUCKET/key`.
    Path,
}

/// The S3 engine's own settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct S3Params {
    /// A store the user runs (`--s3 URL`, with `--s3-bucket`); None:
    /// blobbench's throwaway server inside the dataset's directory.
    pub url: Option<String>,
    /// The bucket in that store (which blobbench never makes or deletes).
    pub bucket: Option<String>,
    /// Which throwaway server to build on (`--s3-server`), by one of the
    /// names `engine::s3::server_names` gives; None: the first of them.
    /// Checked where it is used, so an unknown name is one line.
    pub server: Option<String>,
    /// The throwaway server's replicas (export only); None: the server's
    /// own default.
    pub replicas: Option<u8>,
    /// Blobs of this many bytes or more are PUT by multipart upload (at
    /// export and in timed writes).
    pub multipart_threshold: u64,
    /// Whether exports and timed writes may go to a bucket that keeps
    /// every version (`--s3-versioned-ok`), where each overwrite and
    /// delete keeps the old bytes.
    #[serde(default)]
    pub versioned_ok: bool,
    /// A PEM bundle of CAs trusted beside the system's (`--s3-ca`).
    pub ca: Option<PathBuf>,
    /// How the bucket is addressed on a store the user runs.
    pub addressing: Addressing,
    /// The AWS profile (of the shared credentials and config files) a
    /// dataset on a store the user runs was exported with, when the
    /// environment names none (`AWS_PROFILE` wins); a name, never a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl Default for S3Params {
    fn default() -> Self {
        S3Params {
            url: None,
            bucket: None,
            server: None,
            replicas: None,
            multipart_threshold: DEFAULT_MULTIPART_THRESHOLD,
            versioned_ok: false,
            ca: None,
            addressing: Addressing::Auto,
            profile: None,
        }
    }
}

impl S3Params {
    /// A throwaway server by name, nothing else set (a study's datasets).
    pub fn on_server(server: Option<&str>) -> S3Params {
        S3Params { server: server.map(str::to_string), ..S3Params::default() }
    }
}
