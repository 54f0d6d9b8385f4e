//! Building a PostgreSQL dataset from a kvtest database: bytea rows by
//! `COPY ... FROM STDIN (FORMAT binary)`, large objects by one prepared
//! `lo_from_bytea` insert per row, each in one transaction.
//!
//! A throwaway cluster is built under a temporary name beside the target
//! and renamed into place once stopped, so an interrupted build never looks
//! complete. On a user's server (`--pg URL`) the table is named after the
//! target's directory and dropped again when the build fails (a full disk,
//! Ctrl-C), so nothing of the user's changes.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use postgres::Client;

use super::conn::{self, marker, pg_error, LOCAL_DB};
use super::descriptor::{self, plain_name, Descriptor};
use super::server::{self, Cluster};
use crate::engine::kv;
use crate::engine::kvtest_db::copy_rows;
use crate::engine::report::ExportReport;
use crate::records::{EngineKind, PgParams};
use crate::util::fsutil;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// The table a build with `--pg` makes: `blobbench_` and the target's
/// name, lower-cased, other characters as `_` (shown before the build).
pub fn remote_table_name(target: &Path) -> String {
    let stem = target.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    let clean: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let mut name = format!("blobbench_{clean}");
    name.truncate(63);
    name
}

/// Builds `kind`'s dataset at `target` from the kvtest database `db`.
pub fn build(
    kind: EngineKind,
    db: &Path,
    target: &Path,
    force: bool,
    pg: &PgParams,
    progress: &dyn Progress,
) -> Result<ExportReport> {
    match &pg.url {
        Some(url) => build_remote(kind, db, target, force, pg, url, progress),
        None => build_local(kind, db, target, force, pg, progress),
    }
}

fn build_local(
    kind: EngineKind,
    db: &Path,
    target: &Path,
    force: bool,
    pg: &PgParams,
    progress: &dyn Progress,
) -> Result<ExportReport> {
    let started = Instant::now();
    reap_killed_builds(target, kind)?;
    let staging = kv::stage(kind, target, force, is_dataset(kind))?;
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    Cluster::init(&staging.path)?;
    let counts = {
        // Declared after `staging`, so dropped (stopped) before it is removed.
        let cluster = Cluster::start(&staging.path)?;
        let label = staging.path.clone();
        let mut admin = conn::connect(&conn::local_config(&cluster.socket_dir(), "postgres"), &label)?;
        admin
            .batch_execute(&format!("CREATE DATABASE {LOCAL_DB}"))
            .map_err(|e| pg_error(&label, "cannot create the database", e))?;
        drop(admin);
        let mut client = conn::connect(&conn::local_config(&cluster.socket_dir(), LOCAL_DB), &label)?;
        let counts = fill(&mut client, &label, kind, "kv", pg, db, progress)?;
        client.batch_execute("CHECKPOINT").map_err(|e| pg_error(&label, "cannot checkpoint", e))?;
        drop(client);
        cluster.stop()?;
        counts
    };
    let desc = Descriptor { engine: kind, table: "kv".into(), storage: pg.storage, remote: false };
    write_descriptor(&staging.path, &desc)?;
    if target.exists() {
        server::stop_any(target)?;
    }
    staging.finish()?;
    Ok(kv::report(kind, counts, started))
}

/// A killed build leaves `.NAME.KIND-PID` beside the target with its
/// server running: stop it and remove the directory.
fn reap_killed_builds(target: &Path, kind: EngineKind) -> Result<()> {
    for dir in crate::engine::throwaway::killed_builds(target, kind) {
        server::stop_any(&dir)?;
        std::fs::remove_dir_all(&dir).map_err(|err| Error::io(&dir, "cannot remove a killed build", err))?;
    }
    Ok(())
}

/// The check that a target replaced with --force is a dataset of `kind`.
fn is_dataset(kind: EngineKind) -> fn(&Path) -> bool {
    match kind {
        EngineKind::PostgresLo => |p| descriptor::detect(p) == Some(EngineKind::PostgresLo),
        _ => |p| descriptor::detect(p) == Some(EngineKind::Postgres),
    }
}

fn build_remote(
    kind: EngineKind,
    db: &Path,
    target: &Path,
    force: bool,
    pg: &PgParams,
    url: &str,
    progress: &dyn Progress,
) -> Result<ExportReport> {
    let started = Instant::now();
    let config = conn::parse_url(url)?;
    let label: std::path::PathBuf = conn::redact(url).into();
    let table = remote_table_name(target);
    if !plain_name(&table) {
        return Err(Error::bad_input(target, "needs a name that makes a plain table name (letters, digits, _)"));
    }
    let staging = kv::stage(kind, target, force, is_dataset(kind))?;
    let mut client = conn::connect(&config, &label)?;
    let existing = existing_marker(&mut client, &label, &table)?;
    match existing {
        None => {}
        Some(m) if m.as_deref() == Some(marker(kind).as_str()) && force => {
            drop_table(&mut client, &label, kind, &table)?
        }
        Some(m) if m.as_deref() == Some(marker(kind).as_str()) => {
            return Err(Error::bad_input(&label, format!("table {table} exists (use --force to replace it)")))
        }
        Some(_) => {
            return Err(Error::bad_input(
                &label,
                format!("table {table} exists and is not blobbench's; refusing to touch it"),
            ))
        }
    }
    let counts = match fill(&mut client, &label, kind, &table, pg, db, progress) {
        Ok(c) => c,
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK");
            let _ = drop_table(&mut client, &label, kind, &table);
            return Err(e);
        }
    };
    std::fs::create_dir(&staging.path).map_err(|e| Error::io(&staging.path, "cannot create", e))?;
    write_descriptor(&staging.path, &Descriptor { engine: kind, table, storage: pg.storage, remote: true })?;
    staging.finish()?;
    Ok(kv::report(kind, counts, started))
}

/// The comment on `table` when it exists (Some(None): without one).
fn existing_marker(client: &mut Client, label: &Path, table: &str) -> Result<Option<Option<String>>> {
    let row = client
        .query_opt(
            "SELECT obj_description(c.oid, 'pg_class') FROM pg_class c \
             WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace",
            &[&table],
        )
        .map_err(|e| pg_error(label, "cannot look up the table", e))?;
    Ok(row.map(|r| r.get(0)))
}

/// Drops blobbench's `table` (and, for large objects, the objects first).
fn drop_table(client: &mut Client, label: &Path, kind: EngineKind, table: &str) -> Result<()> {
    let unlink =
        if kind == EngineKind::PostgresLo { format!("SELECT lo_unlink(o) FROM {table}; ") } else { String::new() };
    client
        .batch_execute(&format!("BEGIN; {unlink}DROP TABLE {table}; COMMIT"))
        .map_err(|e| pg_error(label, "cannot drop the partial table", e))
}

/// Creates the table and copies every row of `db` into it, in one
/// transaction; returns the entries and bytes copied.
fn fill(
    client: &mut Client,
    label: &Path,
    kind: EngineKind,
    table: &str,
    pg: &PgParams,
    db: &Path,
    progress: &dyn Progress,
) -> Result<(u64, u64)> {
    let err = |what: &'static str| move |e| pg_error(label, what, e);
    let columns = match kind {
        EngineKind::PostgresLo => "k bigint PRIMARY KEY, o oid NOT NULL".to_string(),
        _ => "k bigint PRIMARY KEY, v bytea NOT NULL".to_string(),
    };
    let mut ddl = format!("CREATE TABLE {table} ({columns}); COMMENT ON TABLE {table} IS '{}'; ", marker(kind));
    if kind == EngineKind::Postgres {
        ddl += &format!("ALTER TABLE {table} ALTER COLUMN v SET STORAGE {}; ", pg.storage.sql());
    }
    client.batch_execute(&ddl).map_err(err("cannot create the table"))?;
    client.batch_execute("BEGIN").map_err(err("cannot begin"))?;
    let counts = if kind == EngineKind::PostgresLo {
        let insert = client
            .prepare(&format!("INSERT INTO {table}(k, o) VALUES ($1, lo_from_bytea(0, $2))"))
            .map_err(err("cannot prepare the insert"))?;
        copy_rows(db, progress, &mut |k, v| {
            client.execute(&insert, &[&i64::from(k), &v]).map(drop).map_err(err("cannot insert"))
        })?
    } else {
        copy_binary(client, label, table, db, progress)?
    };
    client.batch_execute(&format!("COMMIT; ANALYZE {table}")).map_err(err("cannot commit"))?;
    Ok(counts)
}

/// `COPY table (k, v) FROM STDIN (FORMAT binary)`: PostgreSQL's binary copy
/// format, a header, one tuple per row (field count, then each field's
/// length and big-endian bytes), and the -1 trailer.
///
/// A reader thread encodes the rows out of SQLite into 1 MiB chunks while
/// this thread sends the previous ones (one CopyData message each), so
/// reading the source and feeding the server overlap; the chunks go back
/// to the reader for reuse.
fn copy_binary(
    client: &mut Client,
    label: &Path,
    table: &str,
    db: &Path,
    progress: &dyn Progress,
) -> Result<(u64, u64)> {
    const CHUNK: usize = 1 << 20;
    let err = |e| pg_error(label, "cannot copy the rows", e);
    let io_err = |e: std::io::Error| Error::bad_input(label, format!("cannot copy the rows: {e}"));
    let mut copy = client.copy_in(&format!("COPY {table} (k, v) FROM STDIN (FORMAT binary)")).map_err(err)?;
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let counts = std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let gone = || Error::invalid("the COPY stopped");
            let mut chunk = Vec::with_capacity(CHUNK);
            chunk.extend_from_slice(b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0");
            let counts = copy_rows(db, progress, &mut |k, v| {
                let len = i32::try_from(v.len()).map_err(|_| Error::bad_input(db, format!("blob {k} is over 2 GB")))?;
                chunk.extend_from_slice(&2i16.to_be_bytes());
                chunk.extend_from_slice(&8i32.to_be_bytes());
                chunk.extend_from_slice(&i64::from(k).to_be_bytes());
                chunk.extend_from_slice(&len.to_be_bytes());
                chunk.extend_from_slice(v);
                if chunk.len() >= CHUNK {
                    let mut next = empty_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
                    next.clear();
                    full_tx.send(std::mem::replace(&mut chunk, next)).map_err(|_| gone())?;
                }
                Ok(())
            })?;
            chunk.extend_from_slice(&(-1i16).to_be_bytes());
            full_tx.send(chunk).map_err(|_| gone())?;
            Ok::<_, Error>(counts)
        });
        let mut sent = Ok(());
        for chunk in full_rx {
            sent = copy.write_all(&chunk).map_err(io_err);
            if sent.is_err() {
                break; // dropping the receiver stops the reader
            }
            let _ = empty_tx.send(chunk);
        }
        let read = reader.join().unwrap_or_else(|_| Err(Error::invalid("the COPY's reader thread panicked")));
        // The server's error first: the reader then only saw the COPY stop.
        sent.and(read)
    })?;
    copy.finish().map_err(err)?;
    Ok(counts)
}

fn write_descriptor(dir: &Path, desc: &Descriptor) -> Result<()> {
    let text =
        serde_json::to_string_pretty(desc).map_err(|e| Error::invalid(format!("cannot encode the descriptor: {e}")))?;
    fsutil::write_atomic(&dir.join(descriptor::DESCRIPTOR), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_table_names_are_plain_identifiers_from_the_target() {
        assert_eq!(remote_table_name(Path::new("/x/My Data.pg")), "blobbench_my_data_pg");
        assert!(plain_name(&remote_table_name(Path::new(&"z".repeat(200)))));
    }
}
