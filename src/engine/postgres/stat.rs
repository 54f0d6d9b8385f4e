//! What a PostgreSQL dataset holds and occupies: its keys and sizes, the
//! table, TOAST and index sizes the server reports (`pg_relation_size`,
//! `pg_table_size`, `pg_indexes_size`, `pg_total_relation_size`), and for a
//! throwaway cluster the blocks its whole data directory takes on disk.

use std::collections::HashMap;
use std::path::Path;

use postgres::Client;

use super::conn::{pg_error, Server};
use super::descriptor::Descriptor;
use super::server::DATA_DIR;
use crate::engine::report::{LocalBlocks, ServerStat, SizeLine};
use crate::records::{EngineKind, PgParams};
use crate::{Error, Result};

/// `stat` of a PostgreSQL dataset, in the server's terms; `stat` reports
/// it as a [`ServerStat`].
#[derive(Debug, Clone, PartialEq)]
pub struct PgStat {
    pub engine: EngineKind,
    pub table: String,
    pub entries: u64,
    pub min_size: u64,
    pub max_size: u64,
    pub content_bytes: u64,
    /// The table's main fork (`pg_relation_size`).
    pub table_bytes: u64,
    /// TOAST, free-space and visibility maps (`pg_table_size` less the main
    /// fork); for large objects, `pg_largeobject`'s total instead (every
    /// large object of the database).
    pub toast_bytes: u64,
    /// `pg_indexes_size`.
    pub index_bytes: u64,
    /// `pg_total_relation_size` (plus `pg_largeobject`'s for large objects).
    pub total_bytes: u64,
    /// Blocks allocated to the whole throwaway cluster (WAL, catalogs and
    /// all), as `du` counts them; None on a user's server.
    pub cluster_allocated_bytes: Option<u64>,
}

impl From<PgStat> for ServerStat {
    fn from(s: PgStat) -> ServerStat {
        let line = |name: &str, bytes, how: &str| SizeLine { name: name.into(), bytes, how: how.into() };
        ServerStat {
            engine: s.engine,
            blobs_in: format!("table {}", s.table),
            entries: s.entries,
            min_size: s.min_size,
            max_size: s.max_size,
            content_bytes: s.content_bytes,
            sizes: vec![
                line("Table bytes", s.table_bytes, "main fork, pg_relation_size"),
                line("TOAST bytes", s.toast_bytes, "TOAST and maps; pg_largeobject for large objects"),
                line("Index bytes", s.index_bytes, "pg_indexes_size"),
                line("Total bytes", s.total_bytes, "pg_total_relation_size"),
            ],
            stored_bytes: s.total_bytes,
            local: s.cluster_allocated_bytes.map(|allocated_bytes| LocalBlocks {
                allocated_bytes,
                covers: "the whole cluster's blocks, WAL included".into(),
            }),
        }
    }
}

/// The value sizes' SQL for `kind`'s table.
fn size_sql(kind: EngineKind, t: &str) -> String {
    match kind {
        // lo_open's INV_READ (0x40000); descriptors close with the statement's transaction.
        EngineKind::PostgresLo => format!("SELECT k, lo_lseek64(lo_open(o, 262144), 0, 2) FROM {t}"),
        _ => format!("SELECT k, octet_length(v)::int8 FROM {t}"),
    }
}

/// The largest key.
pub(super) fn max_key(client: &mut Client, server: &Server) -> Result<Option<u32>> {
    let err = |e| pg_error(&server.label, "cannot survey the table", e);
    let max_key: Option<i64> =
        client.query_one(&format!("SELECT max(k) FROM {}", server.table()), &[]).map_err(err)?.get(0);
    Ok(max_key.and_then(|k| u32::try_from(k).ok()))
}

/// Every blob's size by key (one scan of the table, outside every timer).
pub(super) fn sizes(client: &mut Client, server: &Server) -> Result<HashMap<u32, u32>> {
    let err = |e| pg_error(&server.label, "cannot survey the table", e);
    let rows = client.query(&size_sql(server.desc.engine, server.table()), &[]).map_err(err)?;
    let mut sizes = HashMap::with_capacity(rows.len());
    for row in rows {
        let (k, n): (i64, i64) = (row.get(0), row.get(1));
        let bad = |what: &str| Error::bad_input(&server.label, format!("table {}: {what}", server.table()));
        let key = u32::try_from(k).map_err(|_| bad(&format!("key {k} is not a kvtest key")))?;
        sizes.insert(key, u32::try_from(n).map_err(|_| bad(&format!("blob {k} is over 4 GB")))?);
    }
    Ok(sizes)
}

/// `stat` of the dataset in `dir` (its cluster is started for it).
pub fn stat(dir: &Path, pg: &PgParams) -> Result<PgStat> {
    let desc = Descriptor::read(dir)?;
    let server = Server::for_dataset(dir, desc, pg.url.as_deref(), None)?;
    let mut client = server.connect()?;
    server.check_table(&mut client)?;
    let (t, kind) = (server.table().to_string(), server.desc.engine);
    let err = |e| pg_error(&server.label, "cannot read the table's sizes", e);
    let row = client
        .query_one(
            &format!(
                "SELECT count(*), coalesce(min(s), 0)::int8, coalesce(max(s), 0)::int8, coalesce(sum(s), 0)::int8 \
                 FROM ({}) AS x(k, s)",
                size_sql(kind, &t)
            ),
            &[],
        )
        .map_err(err)?;
    let (entries, min, max, content): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    let lo = if kind == EngineKind::PostgresLo { "pg_total_relation_size('pg_largeobject')" } else { "0" };
    let sizes = client
        .query_one(
            &format!(
                "SELECT pg_relation_size('{t}'), pg_table_size('{t}') - pg_relation_size('{t}') + {lo}, \
                 pg_indexes_size('{t}'), pg_total_relation_size('{t}') + {lo}"
            ),
            &[],
        )
        .map_err(err)?;
    let cluster_allocated_bytes = if server.local() {
        let (_, allocated) = crate::engine::kv::usage(&dir.join(DATA_DIR))?;
        Some(allocated)
    } else {
        None
    };
    Ok(PgStat {
        engine: kind,
        table: t,
        entries: entries as u64,
        min_size: min as u64,
        max_size: max as u64,
        content_bytes: content as u64,
        table_bytes: sizes.get::<_, i64>(0) as u64,
        toast_bytes: sizes.get::<_, i64>(1) as u64,
        index_bytes: sizes.get::<_, i64>(2) as u64,
        total_bytes: sizes.get::<_, i64>(3) as u64,
        cluster_allocated_bytes,
    })
}
