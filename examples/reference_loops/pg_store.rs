//! `read` and `write` on PostgreSQL (STORE `postgres`, PATH its URL).

use std::path::Path;

use crate::{copy_out, timed, Content, Keys, Res, Store};

/// PostgreSQL through the `postgres` crate: one connection; reads of
/// `SELECT v`, each its own statement (as pgbench's), the value copied; writes one
/// autocommitted UPDATE each (synchronous_commit on: the commit waits for
/// the WAL's fsync).
pub struct Pg {
    client: postgres::Client,
    table: String,
    buf: Vec<u8>,
    sizes: Vec<usize>,
}

impl Pg {
    pub fn open(url: &Path) -> Res<Pg> {
        let url = url.to_str().ok_or("the URL is not UTF-8")?;
        let mut client = postgres::Client::connect(url, postgres::NoTls)?;
        client.batch_execute("SET synchronous_commit = on")?;
        let table = std::env::var("PG_TABLE").unwrap_or_else(|_| "kv".into());
        if !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err("PG_TABLE must be a plain name".into());
        }
        let mut sizes = Vec::new();
        for r in client.query(&format!("SELECT k, octet_length(v)::int8 FROM {table}"), &[])? {
            let (k, n): (i64, i64) = (r.get(0), r.get(1));
            if k as usize >= sizes.len() {
                sizes.resize(k as usize + 1, 0);
            }
            sizes[k as usize] = n as usize;
        }
        Ok(Pg { client, table, buf: Vec::new(), sizes })
    }
}

impl Store for Pg {
    fn max_key(&mut self) -> Res<u32> {
        let max: i64 = self.client.query_one(&format!("SELECT max(k)::int8 FROM {}", self.table), &[])?.get(0);
        Ok(u32::try_from(max)?)
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        let st = self.client.prepare(&format!("SELECT v FROM {} WHERE k = $1", self.table))?;
        let (client, buf) = (&mut self.client, &mut self.buf);
        timed(keys, count, |k| {
            Ok(client.query_opt(&st, &[&i64::from(k)])?.map_or(0, |r| copy_out(buf, r.get::<_, &[u8]>(0))))
        })
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        let st = self.client.prepare(&format!("UPDATE {} SET v = $2 WHERE k = $1", self.table))?;
        let (client, sizes) = (&mut self.client, &self.sizes);
        timed(keys, count, |k| {
            let n = sizes.get(k as usize).copied().unwrap_or(0);
            let changed = client.execute(&st, &[&i64::from(k), &content.next(n)])?;
            Ok(if changed == 1 { n.max(1) } else { 0 })
        })
    }
}
