//! The server engines' flags, and the one place the CLI makes an
//! `EngineSettings`: [`StudyServers`] (`--s3-server`) for every study and,
//! around it, [`ServerArgs`] (a server the user runs instead of blobbench's
//! throwaway one: `--pg URL`, `--s3 URL`...) for `export`, `run` and
//! `stat`. A command sets its own engines' parts on top (`run`'s pragmas,
//! `export`'s `--pg-storage`); a study's arms vary theirs.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use blobbench::engine::postgres::{redact, remote_table_name};
use blobbench::engine::s3::{server_names, Server};
use blobbench::records::{Addressing, EngineSettings, DEFAULT_MULTIPART_THRESHOLD};
use blobbench::studies::context::StudyContext;
use blobbench::util::units;

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
    /// throwaway server; credentials and region as the AWS CLI finds them
    /// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else AWS_PROFILE's in
    /// ~/.aws/credentials and ~/.aws/config; AWS_REGION; a profile that
    /// assumes a role or uses SSO, web identity or a credential process is
    /// refused: `aws configure export-credentials --format env` hands its
    /// keys over); HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY
    /// are honoured (never for loopback). Each request may stall 30 s
    /// (BLOBBENCH_S3_STALL_SECS). blobbench writes only under a prefix of
    /// the export's own, blobbench/<DIR's name>-<id>/, and never makes or
    /// deletes a bucket there. With no PATH, `stat` lists the store's
    /// blobbench datasets.
    #[arg(long, value_name = "URL", requires = "s3_bucket")]
    pub s3: Option<String>,
    /// S3: the bucket in the --s3 store (it must exist).
    #[arg(long, value_name = "NAME", requires = "s3")]
    pub s3_bucket: Option<String>,
    /// S3 (export): replicas the throwaway server keeps [default: the
    /// server's own default; docs/s3.md gives each server's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=3))]
    pub s3_replicas: Option<u8>,
    /// S3: blobs of this size or more are PUT by multipart upload, in parts
    /// of 8 MiB (at export and in timed writes; K, M, MiB... suffixes work).
    #[arg(long, value_name = "SIZE", default_value_t = DEFAULT_MULTIPART_THRESHOLD, value_parser = units::positive_u64)]
    pub s3_multipart_threshold: u64,
    #[command(flatten)]
    pub reach: S3Reach,
    /// S3: export to, and write in timed runs to, a bucket that keeps
    /// every version (versioning Enabled, as object lock requires), where
    /// each overwrite and delete keeps the old bytes, billed; refused
    /// without it. `drop` then deletes every version under the prefix.
    #[arg(long)]
    pub s3_versioned_ok: bool,
    #[command(flatten)]
    pub study: StudyServers,
}

/// How to reach a store the user runs, beside its endpoint and
/// credentials: `export`, `run` and `stat` take these flags through
/// [`ServerArgs`], and `drop` takes them alone.
#[derive(Debug, Args)]
pub struct S3Reach {
    /// S3: a PEM file of CA certificates to trust, beside the system's
    /// store, for an https store with a private CA [default for a
    /// dataset: the one its export used].
    #[arg(long, value_name = "FILE", value_parser = ca_file)]
    pub s3_ca: Option<PathBuf>,
    /// S3: where requests name the bucket: in the host name (virtual), in
    /// the path, or auto (as the AWS CLI: virtual for a DNS-compatible
    /// bucket on an endpoint named by a host name without a path, path
    /// otherwise) [for a dataset, auto: as its export did].
    #[arg(long, value_name = "STYLE", value_enum, default_value_t = AddressingArg::Auto)]
    pub s3_addressing: AddressingArg,
}

impl S3Reach {
    /// The engines' settings with only these flags set (`drop`, which
    /// builds nothing and runs no engine).
    pub fn settings(&self) -> EngineSettings {
        let mut settings = StudyServers::default().settings();
        self.apply(&mut settings);
        settings
    }

    fn apply(&self, settings: &mut EngineSettings) {
        settings.s3.ca.clone_from(&self.s3_ca);
        settings.s3.addressing = self.s3_addressing.into();
    }
}

/// The server flags every study takes (and `export`, through
/// [`ServerArgs`]): a server engine's setting that the studies need goes
/// here once, not in each study's flags and options.
#[derive(Debug, Args, Default)]
pub struct StudyServers {
    /// `--s3-server`: the throwaway S3 server a dataset is built on.
    #[arg(long = "s3-server", value_name = "NAME", value_parser = s3_server, help = s3_server_help())]
    pub s3_server: Option<String>,
}

impl StudyServers {
    /// The engines' settings every command starts from: the servers' parts
    /// as the flags say, every other part the default (a study's arms set
    /// the part each varies). The CLI makes an `EngineSettings` only here.
    pub fn settings(&self) -> EngineSettings {
        let mut settings = EngineSettings::default();
        settings.s3.server.clone_from(&self.s3_server);
        settings
    }

    /// The context a study runs in: `workdir` and these settings, the
    /// rest each study's own until its command sets it from its flags
    /// (engines, rounds, seed, `--quick`, `--commit-every`, the observer).
    /// The CLI makes a `StudyContext` only here.
    pub fn context(&self, workdir: &Path) -> StudyContext {
        StudyContext::new(workdir, self.settings())
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

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AddressingArg {
    Auto,
    Virtual,
    Path,
}

impl From<AddressingArg> for Addressing {
    fn from(a: AddressingArg) -> Addressing {
        match a {
            AddressingArg::Auto => Addressing::Auto,
            AddressingArg::Virtual => Addressing::Virtual,
            AddressingArg::Path => Addressing::Path,
        }
    }
}

/// `--s3-ca`: a readable PEM file holding a certificate, checked before
/// any work starts.
pub fn ca_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    blobbench::engine::s3::read_ca(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

impl ServerArgs {
    /// The study's settings with each server's address in its engine's
    /// part.
    pub fn settings(&self) -> EngineSettings {
        let mut settings = self.study.settings();
        settings.pg.url.clone_from(&self.pg);
        settings.s3.url.clone_from(&self.s3);
        settings.s3.bucket.clone_from(&self.s3_bucket);
        settings.s3.replicas = self.s3_replicas;
        settings.s3.multipart_threshold = self.s3_multipart_threshold;
        settings.s3.versioned_ok = self.s3_versioned_ok;
        self.reach.apply(&mut settings);
        settings
    }

    /// What `export` of the dataset at `dir` will write on a server the
    /// user runs (none for a throwaway server), said before it starts; a
    /// malformed `--s3` endpoint is refused first, so no notice promises
    /// writes to it.
    pub fn export_notice(&self, dir: &Path) -> blobbench::Result<Option<String>> {
        if let (Some(url), Some(bucket)) = (&self.s3, &self.s3_bucket) {
            let endpoint = blobbench::engine::s3::parse_endpoint(url)?;
            blobbench::engine::s3::check_bucket(bucket)?;
            let prefix = blobbench::engine::s3::prefix_for(dir, "<id>");
            let through = match blobbench::engine::s3::proxy_for(&endpoint, |name| std::env::var(name).ok()) {
                Some((var, proxy)) => format!(" through the proxy {var} names ({})", redact_proxy(&proxy)),
                None => String::new(),
            };
            return Ok(Some(format!(
                "Writing objects under a new prefix, {prefix}, in bucket {bucket} at {url}{through} (nothing else there is touched)"
            )));
        }
        let Some(url) = self.pg.as_deref() else { return Ok(None) };
        Ok(Some(format!("Writing table {} on {} (nothing else there is touched)", remote_table_name(dir), redact(url))))
    }
}

/// Warns, before the command's first signed request, of each store it may
/// reach by plain http off this machine (`url`, and the stores the dataset
/// at `dataset` has objects in): the access key, each request's signature
/// and any session token travel unencrypted. Loopback stays silent.
pub fn warn_in_clear(url: Option<&str>, dataset: Option<&Path>) {
    let mut endpoints: Vec<String> = url.map(str::to_string).into_iter().collect();
    endpoints.extend(dataset.map(blobbench::engine::s3::endpoints_of).unwrap_or_default());
    endpoints.sort();
    endpoints.dedup();
    for endpoint in endpoints.iter().filter(|e| blobbench::engine::s3::in_clear(e)) {
        eprintln!(
            "warning: {endpoint} is plain http: the access key, each request's signature and any session token \
             travel unencrypted (use https://)"
        );
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
