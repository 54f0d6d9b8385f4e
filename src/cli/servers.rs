//! The flags that point a server engine at a server the user runs instead
//! of blobbench's throwaway one (PostgreSQL's `--pg URL`), flattened into
//! `export`, `run` and `stat` so each server engine's flags are written
//! once.

use std::path::Path;

use clap::Args;

use blobbench::engine::postgres::{redact, remote_table_name};
use blobbench::engine::s3::{server_names, Server};
use blobbench::records::{EngineSettings, S3Params};

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// PostgreSQL: use this server (postgresql://user:password@host:port/db)
    /// instead of a throwaway cluster; export writes only to the table it
    /// creates there, blobbench_<DIR's name>, and run and stat of that
    /// dataset need the same URL again.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// S3 (export): put the objects in this store (http(s)://host:port), in
    /// --s3-bucket, instead of a throwaway server; credentials come
    /// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
    /// blobbench writes only under its own prefix, blobbench/<DIR's name>/,
    /// and never makes or deletes a bucket there.
    #[arg(long, value_name = "URL", requires = "s3_bucket")]
    pub s3: Option<String>,
    /// S3: the bucket in the --s3 store (it must exist).
    #[arg(long, value_name = "NAME", requires = "s3")]
    pub s3_bucket: Option<String>,
    /// S3 (export): replicas the throwaway server keeps [default: the
    /// server's own default; docs/s3.md gives each server's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=3))]
    pub s3_replicas: Option<u8>,
    #[command(flatten)]
    pub s3_server: S3ServerArg,
}

/// `--s3-server`, for `export` and every study that takes `--engines s3`.
#[derive(Debug, Args, Default)]
pub struct S3ServerArg {
    #[arg(long = "s3-server", value_name = "NAME", value_parser = s3_server, help = s3_server_help())]
    pub name: Option<String>,
}

impl S3ServerArg {
    /// The S3 settings of a study's datasets.
    pub fn params(&self) -> S3Params {
        S3Params::on_server(self.name.as_deref())
    }
}

/// A name `--s3-server` takes, checked by the engine's own list.
fn s3_server(name: &str) -> Result<String, String> {
    Server::from_setting(Some(name)).map(|s| s.name().to_string()).map_err(|e| e.to_string())
}

fn s3_server_help() -> String {
    format!(
        "S3: the throwaway server to build the objects on: {} [default: {}] (not with --s3)",
        server_names().join(", "),
        server_names()[0]
    )
}

impl ServerArgs {
    /// Puts each server's address in its engine's part of `settings`.
    pub fn apply(&self, settings: &mut EngineSettings) {
        settings.pg.url.clone_from(&self.pg);
        settings.s3.url.clone_from(&self.s3);
        settings.s3.bucket.clone_from(&self.s3_bucket);
        settings.s3.replicas = self.s3_replicas;
        settings.s3.server.clone_from(&self.s3_server.name);
    }

    /// What `export` of the dataset at `dir` will write on a server the
    /// user runs (none for a throwaway server), said before it starts; a
    /// malformed `--s3` endpoint is refused first, so no notice promises
    /// writes to it.
    pub fn export_notice(&self, dir: &Path) -> blobbench::Result<Option<String>> {
        if let (Some(url), Some(bucket)) = (&self.s3, &self.s3_bucket) {
            blobbench::engine::s3::parse_endpoint(url)?;
            let prefix = blobbench::engine::s3::prefix_for(dir);
            return Ok(Some(format!(
                "Writing objects under {prefix} in bucket {bucket} at {url} (nothing else there is touched)"
            )));
        }
        let Some(url) = self.pg.as_deref() else { return Ok(None) };
        Ok(Some(format!("Writing table {} on {} (nothing else there is touched)", remote_table_name(dir), redact(url))))
    }
}
