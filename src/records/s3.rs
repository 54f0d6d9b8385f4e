//! The S3 engine's settings: where its objects go.

/// Replicas of blobbench's throwaway Swift cluster unless `--s3-replicas`
/// says otherwise: Swift's default policy, and what a real cluster keeps.
pub const DEFAULT_REPLICAS: u8 = 3;

/// Blobs of this size or more go up by multipart upload unless
/// `--s3-multipart-threshold` says otherwise: where S3 clients switch
/// (the AWS CLI from 8 MiB, others up to about 100 MB), well below S3's
/// 5 GB limit for one PUT.
pub const DEFAULT_MULTIPART_THRESHOLD: u64 = 64 << 20;

/// The S3 engine's own settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Params {
    /// A store the user runs (`--s3 URL`, with `--s3-bucket`); None:
    /// blobbench's throwaway Swift cluster inside the dataset's directory.
    pub url: Option<String>,
    /// The bucket in that store (which blobbench never makes or deletes).
    pub bucket: Option<String>,
    /// The throwaway cluster's replicas, one device directory each (export
    /// only).
    pub replicas: u8,
    /// Blobs of this many bytes or more are PUT by multipart upload (at
    /// export and in timed writes).
    pub multipart_threshold: u64,
}

impl Default for S3Params {
    fn default() -> Self {
        S3Params {
            url: None,
            bucket: None,
            replicas: DEFAULT_REPLICAS,
            multipart_threshold: DEFAULT_MULTIPART_THRESHOLD,
        }
    }
}
