//! The S3 engine's settings: where its objects go.

/// Replicas of blobbench's throwaway Swift cluster unless `--s3-replicas`
/// says otherwise: Swift's default policy, and what a real cluster keeps.
pub const DEFAULT_REPLICAS: u8 = 3;

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
}

impl Default for S3Params {
    fn default() -> Self {
        S3Params { url: None, bucket: None, replicas: DEFAULT_REPLICAS }
    }
}
