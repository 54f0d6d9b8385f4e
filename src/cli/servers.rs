//! The flags that point a server engine at a server the user runs instead
//! of blobbench's throwaway one (PostgreSQL's `--pg URL`), flattened into
//! `export`, `run` and `stat` so each server engine's flags are written
//! once.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use blobbench::engine::postgres::{redact, remote_table_name};
use blobbench::records::{Addressing, EngineSettings, DEFAULT_REPLICAS};

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// PostgreSQL: use this server (postgresql://user:password@host:port/db)
    /// instead of a throwaway cluster; export writes only to the table it
    /// creates there, blobbench_<DIR's name>, and run and stat of that
    /// dataset need the same URL again.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// S3 (export): put the objects in this store (http(s)://host:port, or
    /// with a path for a gateway below one), in --s3-bucket, instead of a
    /// throwaway Swift cluster; credentials come from AWS_ACCESS_KEY_ID,
    /// AWS_SECRET_ACCESS_KEY, the region from AWS_REGION or
    /// AWS_DEFAULT_REGION; HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY
    /// are honoured (never for loopback). Each request may stall 30 s
    /// (BLOBBENCH_S3_STALL_SECS). blobbench writes only under its own
    /// prefix, blobbench/<DIR's name>/, and never makes or deletes a bucket
    /// there.
    #[arg(long, value_name = "URL", requires = "s3_bucket")]
    pub s3: Option<String>,
    /// S3: the bucket in the --s3 store (it must exist).
    #[arg(long, value_name = "NAME", requires = "s3")]
    pub s3_bucket: Option<String>,
    /// S3 (export): replicas of the throwaway Swift cluster, one device
    /// directory each.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REPLICAS, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub s3_replicas: u8,
    /// S3: a PEM file of CA certificates to trust, beside the system's
    /// store, for an https --s3 endpoint with a private CA.
    #[arg(long, value_name = "FILE", value_parser = ca_file)]
    pub s3_ca: Option<PathBuf>,
    /// S3: where requests name the bucket: in the host name (virtual), in
    /// the path, or auto (as the AWS CLI: virtual for a DNS-compatible
    /// bucket on an endpoint named by a host name without a path, path
    /// otherwise).
    #[arg(long, value_name = "STYLE", value_enum, default_value_t = AddressingArg::Auto)]
    pub s3_addressing: AddressingArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AddressingArg {
    Auto,
    Virtual,
    Path,
}

/// `--s3-ca`: a readable PEM file holding a certificate, checked before
/// any work starts.
fn ca_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    blobbench::engine::s3::read_ca(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

impl ServerArgs {
    /// Puts each server's address in its engine's part of `settings`.
    pub fn apply(&self, settings: &mut EngineSettings) {
        settings.pg.url.clone_from(&self.pg);
        settings.s3.url.clone_from(&self.s3);
        settings.s3.bucket.clone_from(&self.s3_bucket);
        settings.s3.replicas = self.s3_replicas;
        settings.s3.ca.clone_from(&self.s3_ca);
        settings.s3.addressing = match self.s3_addressing {
            AddressingArg::Auto => Addressing::Auto,
            AddressingArg::Virtual => Addressing::Virtual,
            AddressingArg::Path => Addressing::Path,
        };
    }

    /// What `export` of the dataset at `dir` will write on a server the
    /// user runs (none for a throwaway server), said before it starts; a
    /// malformed `--s3` endpoint is refused first, so no notice promises
    /// writes to it.
    pub fn export_notice(&self, dir: &Path) -> blobbench::Result<Option<String>> {
        if let (Some(url), Some(bucket)) = (&self.s3, &self.s3_bucket) {
            let endpoint = blobbench::engine::s3::parse_endpoint(url)?;
            let prefix = blobbench::engine::s3::prefix_for(dir);
            let through = match blobbench::engine::s3::proxy_for(&endpoint, |name| std::env::var(name).ok()) {
                Some((var, proxy)) => format!(" through the proxy {var} names ({})", redact_proxy(&proxy)),
                None => String::new(),
            };
            return Ok(Some(format!(
                "Writing objects under {prefix} in bucket {bucket} at {url}{through} (nothing else there is touched)"
            )));
        }
        let Some(url) = self.pg.as_deref() else { return Ok(None) };
        Ok(Some(format!("Writing table {} on {} (nothing else there is touched)", remote_table_name(dir), redact(url))))
    }
}

/// A proxy URL without the credentials it may hold.
fn redact_proxy(proxy: &str) -> String {
    match proxy.rsplit_once('@') {
        Some((before, host)) => {
            let scheme = before.split_once("://").map(|(s, _)| format!("{s}://")).unwrap_or_default();
            format!("{scheme}{host}")
        }
        None => proxy.to_string(),
    }
}
