//! Reaching a dataset's objects through its [`Provider`]: blobbench's
//! throwaway server, started (or shared) for the run, or a store the user
//! runs, with the credentials the AWS CLI would use; and the blobs' sizes as
//! the store's listing gives them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::client::{Client, Store};
use super::credentials;
use super::descriptor::Descriptor;
use super::net::Net;
use super::provider::{Provider, Server, UserStore};
use crate::records::S3Params;
use crate::{Error, Result};

/// A dataset's store, ready for requests.
pub(super) struct Reach {
    /// Also held for its drop: the last holder's stops a throwaway server.
    pub provider: Arc<dyn Provider>,
    pub store: Arc<Store>,
    pub desc: Descriptor,
}

impl Reach {
    /// The store of the dataset in `dir`: its throwaway server, started
    /// now (or shared with the run's other engines), or the user's store.
    /// A run's `--s3` must name the descriptor's endpoint (the descriptor
    /// alone is enough); its `--s3-ca` and `--s3-addressing` apply.
    pub fn for_dataset(dir: &Path, s3: &S3Params) -> Result<Reach> {
        let desc = Descriptor::read(dir)?;
        match (s3.url.as_deref().map(|u| u.trim_end_matches('/')), desc.endpoint.as_deref()) {
            (Some(_), None) => {
                return Err(Error::bad_input(dir, "holds its own throwaway S3 server; run it without --s3"))
            }
            (Some(u), Some(e)) if u != e => {
                return Err(Error::bad_input(dir, format!("its objects are at {e}, not at the --s3 given ({u})")))
            }
            _ => {}
        }
        match &desc.endpoint {
            None => {
                let server = Server::of_dataset(dir)
                    .ok_or_else(|| Error::bad_input(dir, "holds no throwaway S3 server's directory"))?;
                let provider = server.shared(dir)?;
                let store = Arc::new(provider.store(&desc.bucket)?);
                Ok(Reach { provider, store, desc })
            }
            Some(endpoint) => {
                // The profile it was exported with, unless the environment names one.
                let s3 = S3Params { profile: s3.profile.clone().or_else(|| desc.profile.clone()), ..s3.clone() };
                let provider: Arc<dyn Provider> = Arc::new(UserStore { endpoint: endpoint.clone(), s3 });
                let store = Arc::new(provider.store(&desc.bucket)?);
                // Fails fast, in one line, on a silent endpoint, bad
                // credentials or a missing bucket.
                Client::new(store.clone()).any_under(&desc.prefix)?;
                Ok(Reach { provider, store, desc })
            }
        }
    }

    pub fn client(&self) -> Client {
        Client::new(self.store.clone())
    }

    /// Every blob of the dataset and its size, by listing its prefix
    /// (anything else under it, such as the marker, is skipped).
    pub fn list_blobs(&self, client: &Client) -> Result<HashMap<u32, u64>> {
        let mut sizes = HashMap::new();
        client.list(&self.desc.prefix, &mut |object, size| {
            if let Some(key) = self.desc.key_of(object) {
                sizes.insert(key, size);
            }
            Ok(())
        })?;
        Ok(sizes)
    }
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
