//! What an S3 dataset holds and occupies: its objects' count and sizes as
//! the store's listing gives them, and for the throwaway cluster the
//! blocks its data directory takes on disk (every replica, and the
//! databases of its listings).

use std::path::Path;

use super::reach::Reach;
use crate::engine::report::{LocalBlocks, ServerStat, SizeLine};
use crate::records::S3Params;
use crate::Result;

/// `stat` of the dataset in `dir` (its cluster is started for it).
pub fn stat(dir: &Path, s3: &S3Params) -> Result<ServerStat> {
    let reach = Reach::for_dataset(dir, s3)?;
    let client = reach.client();
    let sizes = reach.list_blobs(&client)?;
    let content: u64 = sizes.values().sum();
    let local = match reach.provider.data_dir() {
        Some(data) => {
            let (_, allocated_bytes) = crate::engine::kv::usage(&data)?;
            let replicas = reach.desc.replicas.unwrap_or(1);
            Some(LocalBlocks {
                allocated_bytes,
                covers: format!(
                    "the server's data directory's blocks: {replicas} replica(s) of each object, with its listings' databases"
                ),
            })
        }
        None => None,
    };
    Ok(ServerStat {
        engine: super::kind::KIND,
        blobs_in: blobs_in(&reach),
        entries: sizes.len() as u64,
        min_size: sizes.values().copied().min().unwrap_or(0),
        max_size: sizes.values().copied().max().unwrap_or(0),
        content_bytes: content,
        sizes: vec![SizeLine {
            name: "Listed bytes".into(),
            bytes: content,
            how: "the sizes the bucket's listing gives under the prefix".into(),
        }],
        stored_bytes: content,
        local,
    })
}

/// Where the blobs are: bucket, prefix and, for a store the user runs, its
/// endpoint and the proxy in between.
pub(super) fn blobs_in(reach: &Reach) -> String {
    let through = reach.store.net.proxy.as_ref().map(|(_, p)| format!(" through proxy {p}")).unwrap_or_default();
    let place = reach.desc.endpoint.as_deref().map(|e| format!(" at {e}{through}")).unwrap_or_default();
    format!("bucket {}{place}, prefix {}", reach.desc.bucket, reach.desc.prefix)
}
