//! The flags that point a server engine at a server the user runs instead
//! of blobbench's throwaway one (PostgreSQL's `--pg URL`), flattened into
//! `export`, `run` and `stat` so each server engine's flags are written
//! once.

use std::path::Path;

use clap::Args;

use blobbench::engine::postgres::{redact, remote_table_name};
use blobbench::records::{EngineSettings, DEFAULT_MULTIPART_THRESHOLD, DEFAULT_REPLICAS};
use blobbench::util::units;

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// PostgreSQL: use this server (postgresql://user:password@host:port/db)
    /// instead of a throwaway cluster; export writes only to the table it
    /// creates there, blobbench_<DIR's name>, and run and stat of that
    /// dataset need the same URL again.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// S3 (export): put the objects in this store (http(s)://host:port), in
    /// --s3-bucket, instead of a throwaway Swift cluster; credentials come
    /// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
    /// blobbench writes only under a prefix of the export's own,
    /// blobbench/<DIR's name>-<id>/, and never makes or deletes a bucket
    /// there. With no PATH, `stat` lists the store's blobbench datasets.
    #[arg(long, value_name = "URL", requires = "s3_bucket")]
    pub s3: Option<String>,
    /// S3: the bucket in the --s3 store (it must exist).
    #[arg(long, value_name = "NAME", requires = "s3")]
    pub s3_bucket: Option<String>,
    /// S3 (export): replicas of the throwaway Swift cluster, one device
    /// directory each.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REPLICAS, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub s3_replicas: u8,
    /// S3: blobs of this size or more are PUT by multipart upload, in parts
    /// of 8 MiB (at export and in timed writes; K, M, MiB... suffixes work).
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MULTIPART_THRESHOLD, value_parser = units::positive_u64)]
    pub s3_multipart_threshold: u64,
}

impl ServerArgs {
    /// Puts each server's address in its engine's part of `settings`.
    pub fn apply(&self, settings: &mut EngineSettings) {
        settings.pg.url.clone_from(&self.pg);
        settings.s3.url.clone_from(&self.s3);
        settings.s3.bucket.clone_from(&self.s3_bucket);
        settings.s3.replicas = self.s3_replicas;
        settings.s3.multipart_threshold = self.s3_multipart_threshold;
    }

    /// What `export` of the dataset at `dir` will write on a server the
    /// user runs (none for a throwaway server), said before it starts; a
    /// malformed `--s3` endpoint is refused first, so no notice promises
    /// writes to it.
    pub fn export_notice(&self, dir: &Path) -> blobbench::Result<Option<String>> {
        if let (Some(url), Some(bucket)) = (&self.s3, &self.s3_bucket) {
            blobbench::engine::s3::parse_endpoint(url)?;
            blobbench::engine::s3::check_bucket(bucket)?;
            let prefix = blobbench::engine::s3::prefix_for(dir, "<id>");
            return Ok(Some(format!(
                "Writing objects under a new prefix, {prefix}, in bucket {bucket} at {url} (nothing else there is touched)"
            )));
        }
        let Some(url) = self.pg.as_deref() else { return Ok(None) };
        Ok(Some(format!("Writing table {} on {} (nothing else there is touched)", remote_table_name(dir), redact(url))))
    }
}
