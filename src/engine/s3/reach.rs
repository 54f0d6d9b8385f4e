//! Reaching a dataset's objects through its [`Provider`]: blobbench's
//! throwaway server, started (or shared) for the run, or a store the user
//! runs, with the credentials the AWS CLI would use; and the blobs' sizes as
//! the store's listing gives them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::client::{Client, Store};
use super::credentials;
use super::descriptor::{Descriptor, Expect, Marker};
use super::listing::check_versioning;
use super::lock::{DatasetLock, Holding};
use super::net::Net;
use super::provider::{setting, Provider};
use super::servers::Server;
use crate::records::{S3Params, ServerPlace, ServerSetting};
use crate::{Error, Result};

/// A dataset's store, ready for requests.
pub(super) struct Reach {
    /// Also held for its drop: the last holder's stops a throwaway server.
    pub provider: Arc<dyn Provider>,
    pub store: Arc<Store>,
    pub desc: Descriptor,
    /// The dataset's directory.
    dir: PathBuf,
    /// `--s3-versioned-ok`: writes may go to a bucket keeping versions.
    versioned_ok: bool,
    /// Whether writes were found allowed (asked once, before the first).
    writable: OnceLock<std::result::Result<(), String>>,
    /// The directory's lock, taken before the first write and held as
    /// long as this is (the run's engine).
    lock: Mutex<Option<Arc<DatasetLock>>>,
}

impl Reach {
    /// The store of the dataset in `dir`: its throwaway server, started
    /// now (or shared with the run's other engines), or the user's store.
    /// A run's `--s3` must name the descriptor's endpoint (the descriptor
    /// alone is enough); its `--s3-ca` and `--s3-addressing` apply, else
    /// those the export reached the store with. An export that did not
    /// finish is refused.
    pub fn for_dataset(dir: &Path, s3: &S3Params) -> Result<Reach> {
        let desc = Descriptor::read(dir)?;
        if desc.incomplete {
            return Err(Error::bad_input(
                dir,
                "is an export that did not finish (killed, or its clean-up failed): \
                 remove what it left with blobbench drop DIR, or export again with --force",
            ));
        }
        let (versioned_ok, writable, lock) = (s3.versioned_ok, OnceLock::new(), Mutex::new(None));
        let dir = dir.to_path_buf();
        match (s3.url.as_deref().map(|u| u.trim_end_matches('/')), desc.endpoint.as_deref()) {
            (Some(_), None) => {
                return Err(Error::bad_input(&dir, "holds its own throwaway S3 server; run it without --s3"))
            }
            (Some(u), Some(e)) if u != e => {
                return Err(Error::bad_input(&dir, format!("its objects are at {e}, not at the --s3 given ({u})")))
            }
            _ => {}
        }
        match &desc.endpoint {
            None => {
                let server = Server::of_dataset(&dir)
                    .ok_or_else(|| Error::bad_input(&dir, "holds no throwaway S3 server's directory"))?;
                let provider = server.shared(&dir)?;
                let store = Arc::new(provider.store(&desc.bucket)?.within(&desc.prefix));
                Ok(Reach { provider, store, desc, dir, versioned_ok, writable, lock })
            }
            Some(endpoint) => {
                let provider: Arc<dyn Provider> = Arc::new(user_provider(endpoint, &desc, s3));
                let store = Arc::new(provider.store(&desc.bucket)?.within(&desc.prefix));
                // Fails fast, in one line, on a silent endpoint, bad
                // credentials or a missing bucket.
                Client::new(store.clone()).any_under(&desc.prefix)?;
                Ok(Reach { provider, store, desc, dir, versioned_ok, writable, lock })
            }
        }
    }

    pub fn client(&self) -> Client {
        Client::new(self.store.clone())
    }

    /// Readies a store the user runs for writes, once, never inside a
    /// timed loop: takes the dataset directory's lock (no `drop` or export
    /// of it meanwhile), refuses a bucket that keeps every version unless
    /// `--s3-versioned-ok`, and reads the marker, which must still name
    /// this export (a dataset dropped, or being dropped, gets no PUT). A
    /// throwaway server's dataset needs none of it.
    pub fn check_writable(&self) -> Result<()> {
        if self.desc.local() {
            return Ok(());
        }
        let verdict = self.writable.get_or_init(|| self.ready_for_writes().map_err(|e| e.to_string()));
        verdict.clone().map_err(Error::invalid)
    }

    fn ready_for_writes(&self) -> Result<()> {
        *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = DatasetLock::take(&self.dir, Holding::Writes)?;
        let client = self.client();
        check_versioning(&client, self.versioned_ok)?;
        let marker = self.desc.marker();
        let gone = |why: String| {
            Err(Error::bad_input(
                &self.dir,
                format!("{why}: its objects were dropped, or are being; nothing was written (export it again)"),
            ))
        };
        match client.get_small(&marker, None)? {
            None => gone(format!("its marker {marker} is gone")),
            Some(text) => match Marker::parse(text.as_bytes()) {
                None => gone(format!("{marker} is not a blobbench marker")),
                Some(m) => match m.mismatch(&self.desc.prefix, Expect::Export(self.desc.id.as_deref())) {
                    Some(why) => gone(format!("the marker of {} is not this dataset's ({why})", self.desc.prefix)),
                    None => Ok(()),
                },
            },
        }
    }

    /// Every blob of the dataset and its size, by listing its prefix
    /// (anything else under it, such as the marker, is skipped).
    pub fn list_blobs(&self, client: &Client) -> Result<HashMap<u32, u64>> {
        let mut sizes = HashMap::new();
        client.list(&self.desc.prefix, &mut |object| {
            if let Some(key) = self.desc.key_of(&object.key) {
                sizes.insert(key, object.size);
            }
            Ok(())
        })?;
        Ok(sizes)
    }
}

/// The user's store at `endpoint`, reached with `s3`'s CA file,
/// addressing and profile, else those the export kept in `desc`.
fn user_provider(endpoint: &str, desc: &Descriptor, s3: &S3Params) -> UserStore {
    UserStore { endpoint: endpoint.to_string(), s3: desc.reached_with(s3) }
}

/// A store the user runs, with the credentials and region the AWS CLI
/// would use (the environment's, else a profile's: `s3.profile` is the
/// one the dataset was exported with), the environment's proxy, and `s3`'s
/// CA file and addressing.
pub(super) fn user_store(endpoint: &str, bucket: &str, s3: &S3Params) -> Result<Store> {
    let url = super::client::parse_endpoint(endpoint)?;
    let found = credentials::from_environment(s3.profile.as_deref())?;
    let net = Net::for_url(&url, s3.ca.as_deref())?;
    let store = Store::new(endpoint, bucket, &found.region, found.credentials, false, net, s3.addressing)?;
    Ok(store.with_source(found.source))
}

/// A store the user runs (`--s3 URL`), with the credentials the AWS CLI
/// would use.
pub(super) struct UserStore {
    pub endpoint: String,
    /// Its CA file and addressing.
    pub s3: S3Params,
}

impl Provider for UserStore {
    fn store(&self, bucket: &str) -> Result<Store> {
        user_store(&self.endpoint, bucket, &self.s3)
    }

    fn product(&self) -> (String, String) {
        ("S3".into(), String::new())
    }

    fn place(&self) -> ServerPlace {
        ServerPlace::Remote
    }

    fn settings(&self) -> Vec<ServerSetting> {
        vec![setting("endpoint", &self.endpoint)]
    }

    fn data_dir(&self) -> Option<PathBuf> {
        None
    }

    /// A store the user runs is left alone.
    fn drop_caches(&self) -> Result<()> {
        Ok(())
    }

    fn stop(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(dir: &Path, incomplete: bool) -> Descriptor {
        let d = Descriptor::new_export(dir, "bkt", Some("https://127.0.0.1:1"), None);
        let d = Descriptor { ca: Some(dir.join("no-such-ca.pem")), incomplete, ..d };
        d.write(dir).unwrap();
        d
    }

    /// Issue 43, killed export: `run` and `stat` refuse an export that did
    /// not finish, in one line, before any request.
    #[test]
    fn an_unfinished_export_is_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        users(dir.path(), true);
        let e = Reach::for_dataset(dir.path(), &S3Params::default()).err().unwrap().to_string();
        assert!(e.contains("is an export that did not finish") && e.contains("blobbench drop DIR"), "{e}");
        assert!(!e.contains('\n'));
    }

    /// Issue 43, item 11: `run` and `stat` reach the store with the CA file
    /// and addressing the export kept, unless the run gives its own.
    #[test]
    fn runs_reach_the_store_with_the_exports_ca_and_addressing() {
        use crate::records::Addressing;
        let dir = tempfile::tempdir().unwrap();
        let d = Descriptor { addressing: Some(Addressing::Path), ..users(dir.path(), false) };
        let endpoint = d.endpoint.clone().unwrap();
        let kept = user_provider(&endpoint, &d, &S3Params::default()).s3;
        assert_eq!((kept.ca, kept.addressing), (d.ca.clone(), Addressing::Path));
        let given = S3Params { ca: Some("/run/ca.pem".into()), addressing: Addressing::Virtual, ..S3Params::default() };
        let told = user_provider(&endpoint, &d, &given).s3;
        assert_eq!((told.ca, told.addressing), (given.ca, Addressing::Virtual));
    }
}
