//! Reaching a dataset's objects: blobbench's throwaway Swift cluster,
//! started (or shared) for the run, or a store the user runs, with the
//! credentials of the environment; and the blobs' sizes as the store's
//! listing gives them.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rusty_s3::Credentials;

use super::client::{env_credentials, Client, Store};
use super::descriptor::Descriptor;
use super::swift::{self, Cluster};
use crate::engine::throwaway::Lease;
use crate::{Error, Result};

/// A dataset's store, ready for requests.
pub(super) struct Reach {
    /// Held for its drop: the last holder's stops the throwaway cluster.
    cluster: Option<Arc<Lease<Cluster>>>,
    pub store: Arc<Store>,
    pub desc: Descriptor,
}

impl Reach {
    /// The store of the dataset in `dir`: its throwaway cluster, started
    /// now (or shared with the run's other engines), or the user's store.
    /// `url`, a run's `--s3`, must name the descriptor's endpoint (the
    /// descriptor alone is enough).
    pub fn for_dataset(dir: &Path, url: Option<&str>) -> Result<Reach> {
        let desc = Descriptor::read(dir)?;
        match (url.map(|u| u.trim_end_matches('/')), desc.endpoint.as_deref()) {
            (Some(_), None) => {
                return Err(Error::bad_input(dir, "holds its own throwaway Swift cluster; run it without --s3"))
            }
            (Some(u), Some(e)) if u != e => {
                return Err(Error::bad_input(dir, format!("its objects are at {e}, not at the --s3 given ({u})")))
            }
            _ => {}
        }
        match &desc.endpoint {
            None => {
                let cluster = Cluster::shared(dir)?;
                let store = Arc::new(local_store(&cluster.endpoint(), &desc.bucket)?);
                Ok(Reach { cluster: Some(cluster), store, desc })
            }
            Some(endpoint) => {
                let store = Arc::new(user_store(endpoint, &desc.bucket)?);
                // Fails fast, in one line, on a silent endpoint, bad
                // credentials or a missing bucket.
                Client::new(store.clone()).any_under(&desc.prefix)?;
                Ok(Reach { cluster: None, store, desc })
            }
        }
    }

    pub fn client(&self) -> Client {
        Client::new(self.store.clone())
    }

    pub fn cluster(&self) -> Option<&Arc<Lease<Cluster>>> {
        self.cluster.as_ref()
    }

    /// Every blob of the dataset and its size, by listing its prefix
    /// (anything else under it, such as the marker, is skipped).
    pub fn list_blobs(&self, client: &Client) -> Result<HashMap<u32, u32>> {
        let mut sizes = HashMap::new();
        client.list(&self.desc.prefix, &mut |object, size| {
            if let Some(key) = self.desc.key_of(object) {
                let size = u32::try_from(size)
                    .map_err(|_| Error::bad_input(&self.store.label, format!("object {object} is over 4 GB")))?;
                sizes.insert(key, size);
            }
            Ok(())
        })?;
        Ok(sizes)
    }
}

/// blobbench's throwaway cluster at `endpoint`, with tempauth's test user.
pub(super) fn local_store(endpoint: &str, bucket: &str) -> Result<Store> {
    let credentials = Credentials::new(format!("{}:{}", swift::ACCOUNT, swift::USER), swift::SECRET);
    Store::new(endpoint, bucket, swift::REGION, credentials, true)
}

/// A store the user runs, with the environment's credentials and region.
pub(super) fn user_store(endpoint: &str, bucket: &str) -> Result<Store> {
    super::client::parse_endpoint(endpoint)?;
    let (credentials, region) = env_credentials(Path::new(endpoint))?;
    Store::new(endpoint, bucket, &region, credentials, false)
}
