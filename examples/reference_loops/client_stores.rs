//! Each store as an application with N clients would use it, through its
//! own crate or C API: what one process holds for all its clients
//! ([`Process`]), and what each client opens for itself ([`with_client`]).
//! A client reads a key (the value copied into a reused buffer) or
//! overwrites it with the bytes given, each write its own durable commit.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::{copy_out, os_err, Fjall, Lmdb, Res, REDB_TABLE};

/// SQLite's busy timeout (sqlite3_busy_timeout: SQLite's own handler,
/// which sleeps 1, 2, 5, 10 ... ms between tries).
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A flat kvtest directory; a write is a temporary file (one name per
    /// client) written, fsynced, renamed over the blob, then the
    /// directory fsynced.
    Files,
    /// WAL + synchronous FULL, a connection per client; writes
    /// `BEGIN IMMEDIATE; UPDATE; COMMIT` under the busy timeout.
    SqlitePerConn,
    /// WAL + synchronous FULL, a read connection per client; every write
    /// through one connection behind a mutex, an autocommitted UPDATE.
    SqliteOneWriter,
    /// One environment per process (default flags: every commit synced);
    /// a read transaction per read, a write transaction per write.
    Lmdb,
    /// The same, but each write first reads the old value's length in its
    /// write transaction, as blobbench's overwrite does (to keep the size
    /// and to find a missing key): what that read costs, paired with `lmdb`.
    LmdbSizeFirst,
    /// A connection per client (synchronous_commit on); prepared SELECT,
    /// autocommitted UPDATE.
    Postgres,
    /// One `Database` per process (redb locks its file); a read
    /// transaction per read, a write transaction per write with
    /// `Durability::Immediate`.
    Redb,
    /// The same, each write first reading the old value's length in its
    /// write transaction, as blobbench's redb overwrite does.
    RedbSizeFirst,
    /// One `Database` per process (fjall locks its directory), keyspace
    /// `blobs`; `Keyspace::get` per read, `insert` then
    /// `persist(SyncAll)` per write.
    Fjall,
    /// The same, each write first asking the old value's size
    /// (`Keyspace::size_of`), as blobbench's fjall overwrite does.
    FjallSizeFirst,
}

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Files,
        Kind::SqlitePerConn,
        Kind::SqliteOneWriter,
        Kind::Lmdb,
        Kind::LmdbSizeFirst,
        Kind::Postgres,
        Kind::Redb,
        Kind::RedbSizeFirst,
        Kind::Fjall,
        Kind::FjallSizeFirst,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Files => "files",
            Kind::SqlitePerConn => "sqlite-per-conn",
            Kind::SqliteOneWriter => "sqlite-one-writer",
            Kind::Lmdb => "lmdb",
            Kind::LmdbSizeFirst => "lmdb-size-first",
            Kind::Postgres => "postgres",
            Kind::Redb => "redb",
            Kind::RedbSizeFirst => "redb-size-first",
            Kind::Fjall => "fjall",
            Kind::FjallSizeFirst => "fjall-size-first",
        }
    }

    pub fn parse(s: &str) -> Res<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            format!("unknown store {s} (one of {})", names.join(", ")).into()
        })
    }

    /// Why the store cannot run as processes, if it cannot.
    pub fn not_as_processes(self) -> Option<&'static str> {
        match self {
            Kind::SqliteOneWriter => {
                Some("one writer connection behind a mutex exists only inside one process: use threads")
            }
            Kind::Redb | Kind::RedbSizeFirst | Kind::Fjall | Kind::FjallSizeFirst => {
                Some("it locks its database for one process: use threads")
            }
            _ => None,
        }
    }
}

/// What every client of one process shares: the dataset's shape (its
/// largest key and each blob's size, so that an overwrite keeps the size)
/// and the handle a configuration shares.
pub struct Process {
    kind: Kind,
    path: PathBuf,
    pub max_key: u32,
    sizes: Vec<usize>,
    shared: Shared,
}

enum Shared {
    Nothing,
    /// heed allows one environment per process.
    Lmdb(Lmdb),
    /// The one write connection.
    Writer(Mutex<rusqlite::Connection>),
    Redb(redb::Database),
    Fjall(Fjall),
}

impl Process {
    /// Opens what the process shares and reads the blobs' sizes; checks
    /// that every key from 1 to the largest holds a blob. An error names
    /// the store and its path (a store's crate often names neither).
    pub fn open(kind: Kind, path: &Path) -> Res<Process> {
        Process::open_at(kind, path).map_err(|e| format!("{} at {}: {e}", kind.name(), path.display()).into())
    }

    fn open_at(kind: Kind, path: &Path) -> Res<Process> {
        let (sizes, shared) = match kind {
            Kind::Files => (file_sizes(path)?, Shared::Nothing),
            Kind::SqlitePerConn | Kind::SqliteOneWriter => {
                let conn = sqlite_wal_connection(path)?;
                let sizes = pairs_to_sizes(
                    conn.prepare("SELECT k, length(v) FROM kv")?
                        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?
                        .collect::<Result<Vec<_>, _>>()?,
                )?;
                let shared =
                    if kind == Kind::SqliteOneWriter { Shared::Writer(Mutex::new(conn)) } else { Shared::Nothing };
                (sizes, shared)
            }
            Kind::Lmdb | Kind::LmdbSizeFirst => {
                let lmdb = Lmdb::open(path)?;
                let txn = lmdb.env.read_txn()?;
                let mut pairs = Vec::new();
                for kv in lmdb.db.iter(&txn)? {
                    let (k, v) = kv?;
                    pairs.push((i64::from(u32::from_be_bytes(k.try_into()?)), v.len() as i64));
                }
                drop(txn);
                (pairs_to_sizes(pairs)?, Shared::Lmdb(lmdb))
            }
            Kind::Redb | Kind::RedbSizeFirst => {
                use redb::{ReadableDatabase, ReadableTable};
                let db = redb::Database::open(path)?;
                let txn = db.begin_read()?;
                let mut pairs = Vec::new();
                for kv in txn.open_table(REDB_TABLE)?.iter()? {
                    let (k, v) = kv?;
                    pairs.push((i64::from(u32::from_be_bytes(k.value())), v.value().len() as i64));
                }
                drop(txn);
                (pairs_to_sizes(pairs)?, Shared::Redb(db))
            }
            Kind::Fjall | Kind::FjallSizeFirst => {
                let fjall = Fjall::open(path)?;
                let mut pairs = Vec::new();
                for kv in fjall.ks.iter() {
                    let (k, v) = kv.into_inner()?;
                    pairs.push((i64::from(u32::from_be_bytes(k.as_ref().try_into()?)), v.len() as i64));
                }
                (pairs_to_sizes(pairs)?, Shared::Fjall(fjall))
            }
            Kind::Postgres => {
                let mut client = postgres::Client::connect(url(path)?, postgres::NoTls)?;
                let rows = client.query(&format!("SELECT k::int8, octet_length(v)::int8 FROM {}", pg_table()?), &[])?;
                (pairs_to_sizes(rows.iter().map(|r| (r.get(0), r.get(1))).collect())?, Shared::Nothing)
            }
        };
        let max_key = u32::try_from(sizes.len() - 1)?;
        Ok(Process { kind, path: path.to_path_buf(), max_key, sizes, shared })
    }

    /// The size of blob `key` (1..=max_key).
    pub fn size(&self, key: u32) -> usize {
        self.sizes[key as usize]
    }
}

/// `sizes[k]` for keys 1..=max from (key, size) pairs; an error for a
/// missing key or an empty blob (nothing to overwrite).
fn pairs_to_sizes(pairs: Vec<(i64, i64)>) -> Res<Vec<usize>> {
    let max = pairs.iter().map(|p| p.0).max().ok_or("the store holds no blobs")?;
    let mut sizes = vec![0; usize::try_from(max)? + 1];
    for (k, n) in pairs {
        if k >= 1 {
            sizes[usize::try_from(k)?] = usize::try_from(n)?;
        }
    }
    match sizes.iter().skip(1).position(|&n| n == 0) {
        Some(i) => Err(format!("key {} has no blob (or an empty one): the loops want keys 1..=max", i + 1).into()),
        None => Ok(sizes),
    }
}

fn file_sizes(dir: &Path) -> Res<Vec<usize>> {
    let mut pairs = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if let Some(k) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
            pairs.push((i64::from(k), e.metadata()?.len() as i64));
        }
    }
    pairs_to_sizes(pairs)
}

fn url(path: &Path) -> Res<&str> {
    Ok(path.to_str().ok_or("the URL is not UTF-8")?)
}

fn pg_table() -> Res<String> {
    let table = std::env::var("PG_TABLE").unwrap_or_else(|_| "kv".into());
    if !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("PG_TABLE must be a plain name".into());
    }
    Ok(table)
}

/// Makes what the clients share before any of them opens: a SQLite
/// database in WAL mode, as blobbench's `--jmode wal` sets it before its
/// clients start. Client processes that each switch a database in
/// another journal mode at once fail with "database is locked": the
/// switch needs the database alone.
pub fn prepare(kind: Kind, path: &Path) -> Res<()> {
    match kind {
        Kind::SqlitePerConn | Kind::SqliteOneWriter => sqlite_wal_connection(path).map(drop),
        _ => Ok(()),
    }
    .map_err(|e| format!("{} at {}: {e}", kind.name(), path.display()).into())
}

/// A connection ([`sqlite_connection`]) to a database in WAL mode,
/// switched to it here if it is not.
fn sqlite_wal_connection(path: &Path) -> Res<rusqlite::Connection> {
    let conn = sqlite_connection(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("journal mode stayed {mode}").into());
    }
    Ok(conn)
}

/// A connection with synchronous FULL and SQLite's own busy handler, to
/// a database that exists (a wrong path is an error, not a new file).
fn sqlite_connection(path: &Path) -> Res<rusqlite::Connection> {
    let flags = rusqlite::OpenFlags::default() - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
    let conn = rusqlite::Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    if sync != 2 {
        return Err(format!("synchronous is {sync}, not FULL (2)").into());
    }
    Ok(conn)
}

/// One client of a store.
pub trait Client {
    /// Reads blob `key` into the client's buffer.
    fn read(&mut self, key: u32) -> Res<()>;
    /// Overwrites blob `key` with `data`, one durable commit.
    fn write(&mut self, key: u32, data: &[u8]) -> Res<()>;
}

/// Opens client `index` of the process's store and hands it to `body`
/// (the client's connection and statements live on this frame). Nothing
/// opened here is timed.
pub fn with_client<T>(p: &Process, index: u32, body: impl FnOnce(&mut dyn Client) -> Res<T>) -> Res<T> {
    match (p.kind, &p.shared) {
        (Kind::Files, _) => body(&mut FilesClient::open(p, index)?),
        (Kind::SqlitePerConn | Kind::SqliteOneWriter, shared) => {
            let conn = sqlite_connection(&p.path)?;
            let writer = match shared {
                Shared::Writer(w) => Some(w),
                _ => None,
            };
            let mut client = SqliteClient {
                select: conn.prepare("SELECT v FROM kv WHERE k=?1")?,
                begin: conn.prepare("BEGIN IMMEDIATE")?,
                update: conn.prepare("UPDATE kv SET v=?2 WHERE k=?1")?,
                commit: conn.prepare("COMMIT")?,
                writer,
                buf: Vec::new(),
            };
            body(&mut client)
        }
        (Kind::Lmdb | Kind::LmdbSizeFirst, Shared::Lmdb(lmdb)) => {
            body(&mut LmdbClient { lmdb, buf: Vec::new(), size_first: p.kind == Kind::LmdbSizeFirst })
        }
        (Kind::Postgres, _) => {
            let mut client = postgres::Client::connect(url(&p.path)?, postgres::NoTls)?;
            client.batch_execute("SET synchronous_commit = on")?;
            let table = pg_table()?;
            let select = client.prepare(&format!("SELECT v FROM {table} WHERE k = $1"))?;
            let update = client.prepare(&format!("UPDATE {table} SET v = $2 WHERE k = $1"))?;
            body(&mut PgClient { client, select, update, buf: Vec::new() })
        }
        (Kind::Redb | Kind::RedbSizeFirst, Shared::Redb(db)) => {
            body(&mut RedbClient { db, buf: Vec::new(), size_first: p.kind == Kind::RedbSizeFirst })
        }
        (Kind::Fjall | Kind::FjallSizeFirst, Shared::Fjall(fjall)) => {
            body(&mut FjallClient { fjall, buf: Vec::new(), size_first: p.kind == Kind::FjallSizeFirst })
        }
        (
            Kind::Lmdb | Kind::LmdbSizeFirst | Kind::Redb | Kind::RedbSizeFirst | Kind::Fjall | Kind::FjallSizeFirst,
            _,
        ) => Err(format!("{}'s database was not opened", p.kind.name()).into()),
    }
}

/// An overwrite keeps the blob's size, as blobbench's does.
fn same_size(key: u32, old: usize, new: usize) -> Res<()> {
    if old == new {
        Ok(())
    } else {
        Err(format!("key {key} holds {old} bytes, not {new}").into())
    }
}

fn one_row(changed: u64, key: u32) -> Res<()> {
    if changed == 1 {
        Ok(())
    } else {
        Err(format!("the update of key {key} changed {changed} rows").into())
    }
}

struct FilesClient {
    names: Vec<CString>,
    /// Each key's temporary name for this client (`000042.c3.tmp`), as
    /// blobbench names it: a new name per key puts each write's temporary
    /// entry in another block of the directory, where one fixed name
    /// would reuse one block (about 10% on the p99 of files at 4 clients).
    tmps: Vec<CString>,
    dir: libc::c_int,
    buf: Vec<u8>,
}

impl FilesClient {
    fn open(p: &Process, index: u32) -> Res<FilesClient> {
        let c = |path: PathBuf| CString::new(path.as_os_str().as_bytes()).map_err(|_| "a NUL in the path");
        let names = (0..=p.max_key).map(|k| c(p.path.join(format!("{k:06}")))).collect::<Result<_, _>>()?;
        let tmps = (0..=p.max_key).map(|k| c(p.path.join(format!("{k:06}.c{index}.tmp")))).collect::<Result<_, _>>()?;
        // SAFETY: a NUL-terminated path; the descriptor is closed on drop.
        let dir = unsafe { libc::open(c(p.path.clone())?.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        if dir < 0 {
            return Err(os_err("open the directory"));
        }
        Ok(FilesClient { names, tmps, dir, buf: vec![0; 64 * 1024] })
    }
}

impl Drop for FilesClient {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.dir) };
    }
}

impl Client for FilesClient {
    fn read(&mut self, key: u32) -> Res<()> {
        // SAFETY: a NUL-terminated path; reads stay within `buf`; the
        // descriptor is closed before returning.
        unsafe {
            let fd = libc::open(self.names[key as usize].as_ptr(), libc::O_RDONLY);
            if fd < 0 {
                return Err(os_err("open"));
            }
            let mut st: libc::stat = std::mem::zeroed();
            libc::fstat(fd, &mut st);
            let n = st.st_size as usize;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            let got = libc::read(fd, self.buf.as_mut_ptr().cast(), n);
            libc::close(fd);
            if got != n as isize || n == 0 {
                return Err(os_err("read"));
            }
        }
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        // SAFETY: NUL-terminated paths; the written range is `data`; the
        // file opened here is closed before returning.
        unsafe {
            let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
            let tmp = &self.tmps[key as usize];
            let fd = libc::open(tmp.as_ptr(), flags, 0o644 as libc::c_uint);
            if fd < 0 {
                return Err(os_err("open"));
            }
            let ok =
                libc::pwrite(fd, data.as_ptr().cast(), data.len(), 0) == data.len() as isize && libc::fsync(fd) == 0;
            if libc::close(fd) != 0 || !ok {
                return Err(os_err("write"));
            }
            if libc::rename(tmp.as_ptr(), self.names[key as usize].as_ptr()) != 0 {
                return Err(os_err("rename"));
            }
            if libc::fsync(self.dir) != 0 {
                return Err(os_err("fsync the directory"));
            }
        }
        Ok(())
    }
}

/// Reads on the client's own connection, a prepared SELECT reset after
/// each read (rusqlite resets it when the row is dropped), so no read
/// holds a WAL snapshot past its own read. Writes on the same connection
/// (`BEGIN IMMEDIATE` waits under the busy handler), or through the one
/// writer.
struct SqliteClient<'c> {
    select: rusqlite::Statement<'c>,
    begin: rusqlite::Statement<'c>,
    update: rusqlite::Statement<'c>,
    commit: rusqlite::Statement<'c>,
    writer: Option<&'c Mutex<rusqlite::Connection>>,
    buf: Vec<u8>,
}

impl Client for SqliteClient<'_> {
    fn read(&mut self, key: u32) -> Res<()> {
        let buf = &mut self.buf;
        self.select.query_row([key], |r| Ok(copy_out(buf, r.get_ref(0)?.as_blob()?)))?;
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        let changed = match self.writer {
            Some(writer) => {
                let conn = writer.lock().map_err(|_| "a writer panicked")?;
                let mut update = conn.prepare_cached("UPDATE kv SET v=?2 WHERE k=?1")?;
                update.execute(rusqlite::params![key, data])?
            }
            None => {
                // A write still busy after the timeout ends the run: the
                // figures would not be this configuration's.
                self.begin.execute([])?;
                let n = self.update.execute(rusqlite::params![key, data])?;
                self.commit.execute([])?;
                n
            }
        };
        one_row(changed as u64, key)
    }
}

struct LmdbClient<'p> {
    lmdb: &'p Lmdb,
    buf: Vec<u8>,
    /// Read the old value's length first ([`Kind::LmdbSizeFirst`]).
    size_first: bool,
}

impl Client for LmdbClient<'_> {
    fn read(&mut self, key: u32) -> Res<()> {
        let txn = self.lmdb.env.read_txn()?;
        let v = self.lmdb.db.get(&txn, &key.to_be_bytes())?.ok_or("a key has no blob")?;
        copy_out(&mut self.buf, v);
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        let mut txn = self.lmdb.env.write_txn()?;
        if self.size_first {
            let old = self.lmdb.db.get(&txn, &key.to_be_bytes())?.ok_or("a key has no blob")?;
            same_size(key, old.len(), data.len())?;
        }
        self.lmdb.db.put(&mut txn, &key.to_be_bytes(), data)?;
        txn.commit()?;
        Ok(())
    }
}

struct PgClient {
    client: postgres::Client,
    select: postgres::Statement,
    update: postgres::Statement,
    buf: Vec<u8>,
}

impl Client for PgClient {
    fn read(&mut self, key: u32) -> Res<()> {
        let row = self.client.query_opt(&self.select, &[&i64::from(key)])?.ok_or("a key has no blob")?;
        copy_out(&mut self.buf, row.get::<_, &[u8]>(0));
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        let changed = self.client.execute(&self.update, &[&i64::from(key), &data])?;
        one_row(changed, key)
    }
}

struct RedbClient<'p> {
    db: &'p redb::Database,
    buf: Vec<u8>,
    /// Read the old value's length first ([`Kind::RedbSizeFirst`]).
    size_first: bool,
}

impl Client for RedbClient<'_> {
    fn read(&mut self, key: u32) -> Res<()> {
        use redb::ReadableDatabase;
        let txn = self.db.begin_read()?;
        let table = txn.open_table(REDB_TABLE)?;
        let v = table.get(key.to_be_bytes())?.ok_or("a key has no blob")?;
        copy_out(&mut self.buf, v.value());
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        {
            use redb::ReadableTable;
            let mut table = txn.open_table(REDB_TABLE)?;
            if self.size_first {
                let old = table.get(key.to_be_bytes())?.ok_or("a key has no blob")?.value().len();
                same_size(key, old, data.len())?;
            }
            table.insert(key.to_be_bytes(), data)?;
        }
        txn.commit()?;
        Ok(())
    }
}

struct FjallClient<'p> {
    fjall: &'p Fjall,
    buf: Vec<u8>,
    /// Ask the old value's size first ([`Kind::FjallSizeFirst`]).
    size_first: bool,
}

impl Client for FjallClient<'_> {
    fn read(&mut self, key: u32) -> Res<()> {
        let v = self.fjall.ks.get(key.to_be_bytes())?.ok_or("a key has no blob")?;
        copy_out(&mut self.buf, &v);
        Ok(())
    }

    fn write(&mut self, key: u32, data: &[u8]) -> Res<()> {
        if self.size_first {
            let old = self.fjall.ks.size_of(key.to_be_bytes())?.ok_or("a key has no blob")?;
            same_size(key, old as usize, data.len())?;
        }
        self.fjall.ks.insert(key.to_be_bytes(), data)?;
        self.fjall.db.persist(fjall::PersistMode::SyncAll)?;
        Ok(())
    }
}
