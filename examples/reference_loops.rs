//! Independent reference loops (issue 28's checks): each store read and
//! written through its own crate or C API (rusqlite, heed, redb, fjall,
//! libc, the `postgres` crate), never through blobbench's engine or session
//! code, so that blobbench's figures can be checked against them. Run by
//! `bench/reference-loops.sh`, which alternates them with `blobbench run`:
//!
//!   reference_loops read  STORE PATH COUNT [SESSIONS]
//!   reference_loops write STORE PATH COUNT [SESSIONS]
//!   reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]
//!   reference_loops open STORE PATH N WINDOW_MS RATE [threads|processes] [READ:WRITE]
//!   reference_loops standby URL N WINDOW_MS [threads|processes]
//!   reference_loops flush DIR [TRIALS]
//!
//! `clients` (N clients over one window, issue 42) and `open` (the same at
//! a rate, an open loop, issue 49) are in [`clients`]; `standby` (durable
//! writes on a PostgreSQL whose commits wait for a synchronous standby,
//! issue 48) in [`standby`];
//! `flush` (what one flush costs on DIR's disk) in [`flush`]. What
//! follows is about `read` and `write`.
//!
//! STORE: sqlite, sqlite-blob (blob API, 1 GB mmap), lmdb, redb, fjall,
//! files (a flat kvtest directory), files-replace and files-inplace
//! (writes), postgres (PATH is a `postgresql://` URL; table `kv`, or
//! `PG_TABLE`).
//!
//! A read loop is a long-running reader: the store opens once, then one
//! untimed warm-up session and SESSIONS (default 5) timed ones, each a read
//! transaction of COUNT reads of kvtest's random keys (its fixed-seed
//! generator, from key 1), each value copied into a reused buffer. A write
//! loop makes COUNT durable commits per session, one overwrite (same size,
//! new content) per transaction, after one untimed warm-up session.
//! Only the loop is timed. Output: one line per session, then
//! `per_op_us MEDIAN` (the median timed session's loop time per operation),
//! `cpu_us_per_op MEDIAN` (its CPU time, user + system, per operation: on
//! a busy machine, the figure other processes disturb least) and `open_ms`
//! (the one-off open).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "reference_loops/clients.rs"]
mod clients;
#[path = "reference_loops/flush.rs"]
mod flush;
#[path = "reference_loops/open_loop.rs"]
mod open_loop;
#[path = "reference_loops/pg_store.rs"]
mod pg_store;
#[path = "reference_loops/standby.rs"]
mod standby;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: reference_loops read|write STORE PATH COUNT [SESSIONS]\n       \
    reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]\n       \
    reference_loops open STORE PATH N WINDOW_MS RATE [threads|processes] [READ:WRITE]\n       \
    reference_loops standby URL N WINDOW_MS [threads|processes]\n       \
    reference_loops flush DIR [TRIALS]";

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("clients") => return clients::main(&args[1..]),
        Some("open") => return clients::main_open(&args[1..]),
        Some("standby") => return standby::main(&args[1..]),
        // A client process of `clients ... processes`.
        Some("client") => return clients::child(&args[1..]),
        Some("flush") => return flush::main(&args[1..]),
        _ => {}
    }
    let [what, store, path, count, rest @ ..] = args.as_slice() else { return Err(USAGE.into()) };
    let count: u64 = count.parse().map_err(|_| USAGE)?;
    let sessions: usize = rest.first().map_or(Ok(5), |s| s.parse()).map_err(|_| USAGE)?;
    if count == 0 || sessions == 0 {
        return Err(USAGE.into());
    }
    let path = PathBuf::from(path);
    let opened = Instant::now();
    let mut store = open(store, &path, what == "write")?;
    let open_ms = opened.elapsed().as_secs_f64() * 1e3;
    let max_key = store.max_key()?;
    let mut content = Content::new(u64::from(std::process::id()));
    let (mut per_op, mut cpu_per_op) = (Vec::new(), Vec::new());
    for session in 0..=sessions {
        let mut keys = Keys::new(max_key);
        let before = usage();
        let ns = match what.as_str() {
            "read" => store.read_session(&mut keys, count)?,
            "write" => store.write_session(&mut keys, count, &mut content)?,
            _ => return Err(USAGE.into()),
        };
        let after = usage();
        let us = ns as f64 / 1e3 / count as f64;
        let cpu_us = (after.0 - before.0) as f64 / count as f64;
        let warm_up = if session == 0 { " (warm-up)" } else { "" };
        println!(
            "session {session}{warm_up}: {us:.3} us per op, {cpu_us:.3} us of CPU per op, {} minor page faults",
            after.1 - before.1
        );
        if session > 0 {
            per_op.push(us);
            cpu_per_op.push(cpu_us);
        }
    }
    println!("per_op_us {:.3}", median(&mut per_op));
    println!("cpu_us_per_op {:.3}", median(&mut cpu_per_op));
    println!("open_ms {open_ms:.3}");
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// This process's CPU time (user + system, microseconds) and minor page
/// faults so far (getrusage).
fn usage() -> (i64, i64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    (us(u.ru_utime) + us(u.ru_stime), u.ru_minflt)
}

/// kvtest's key order: key 1, then `randInt() % max + 1` from its
/// fixed-seed generator (kvtest.c), the same keys in every session.
struct Keys {
    x: u32,
    y: u32,
    key: u32,
    max: u32,
}

impl Keys {
    fn new(max: u32) -> Keys {
        Keys { x: 0x333a_13cd, y: 0xecb2_adea, key: 1, max }
    }

    fn next(&mut self) -> u32 {
        let key = self.key;
        self.x = (self.x >> 1) ^ (1u32.wrapping_add(!(self.x & 1)) & 0xd000_0001);
        self.y = self.y.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        self.key = (self.x ^ self.y) % self.max + 1;
        key
    }
}

/// New content for each write: a window into random bytes that moves by a
/// prime step, so no write stores what the last one did.
struct Content {
    bytes: Vec<u8>,
    at: usize,
}

impl Content {
    const WINDOW: usize = 64 * 1024;

    fn new(seed: u64) -> Content {
        let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ seed;
        let bytes = (0..Self::WINDOW + 4 * 1024 * 1024)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect();
        Content { bytes, at: 0 }
    }

    fn next(&mut self, len: usize) -> &[u8] {
        self.at = (self.at + 4099) % Self::WINDOW;
        &self.bytes[self.at..self.at + len]
    }
}

/// One store opened once; sessions run on it.
trait Store {
    fn max_key(&mut self) -> Res<u32>;
    /// One read transaction of `count` reads; the loop's nanoseconds.
    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64>;
    /// `count` overwrites, each its own durable transaction; the loop's
    /// nanoseconds.
    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64>;
}

fn open(store: &str, path: &Path, write: bool) -> Res<Box<dyn Store>> {
    Ok(match store {
        "sqlite" => Box::new(Sqlite::open(path, false, write)?),
        "sqlite-blob" => Box::new(Sqlite::open(path, true, write)?),
        "lmdb" => Box::new(Lmdb::open(path)?),
        "redb" => Box::new(Redb::open(path, write)?),
        "fjall" => Box::new(Fjall::open(path)?),
        "files" | "files-replace" => Box::new(Files::open(path, true)?),
        "files-inplace" => Box::new(Files::open(path, false)?),
        "postgres" => Box::new(pg_store::Pg::open(path)?),
        other => return Err(format!("unknown store {other}").into()),
    })
}

/// Times `count` calls of `op` on successive keys; a call returns the
/// bytes it moved (0 for a missing key, an error: the dataset has gaps).
fn timed(keys: &mut Keys, count: u64, mut op: impl FnMut(u32) -> Res<usize>) -> Res<u64> {
    let start = Instant::now();
    for _ in 0..count {
        let key = keys.next();
        if op(key)? == 0 {
            return Err(format!("key {key} has no blob; the reference loops want keys 1..=max").into());
        }
    }
    Ok(start.elapsed().as_nanos() as u64)
}

fn copy_out(buf: &mut Vec<u8>, v: &[u8]) -> usize {
    if buf.len() < v.len() {
        buf.resize(v.len(), 0);
    }
    buf[..v.len()].copy_from_slice(v);
    std::hint::black_box(&buf[..v.len()]);
    v.len()
}

/// SQLite through rusqlite: one connection; reads by SQL (the value read,
/// not copied, as kvtest's `sqlite3_column_bytes`) or by the blob API into
/// a buffer with a 1 GB mmap; writes in WAL mode with synchronous=FULL, one
/// autocommitted UPDATE per write.
struct Sqlite {
    conn: rusqlite::Connection,
    blob_api: bool,
    buf: Vec<u8>,
    sizes: Vec<usize>,
}

impl Sqlite {
    fn open(path: &Path, blob_api: bool, write: bool) -> Res<Sqlite> {
        let conn = rusqlite::Connection::open(path)?;
        if blob_api {
            conn.execute_batch("PRAGMA mmap_size=1000000000")?;
        }
        let mut sizes = Vec::new();
        if write {
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(format!("journal mode stayed {mode}").into());
            }
            conn.execute_batch("PRAGMA synchronous=FULL")?;
            let mut st = conn.prepare("SELECT k, length(v) FROM kv")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                let (k, n): (i64, i64) = (r.get(0)?, r.get(1)?);
                let (k, n) = (usize::try_from(k)?, usize::try_from(n)?);
                if k >= sizes.len() {
                    sizes.resize(k + 1, 0);
                }
                sizes[k] = n;
            }
        }
        Ok(Sqlite { conn, blob_api, buf: vec![0; 64 * 1024], sizes })
    }
}

impl Store for Sqlite {
    fn max_key(&mut self) -> Res<u32> {
        Ok(self.conn.query_row("SELECT max(k) FROM kv", [], |r| r.get(0))?)
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        let Sqlite { conn, buf, .. } = self;
        conn.execute_batch("BEGIN")?;
        let ns =
            if self.blob_api {
                let mut blob = conn.blob_open(rusqlite::MAIN_DB, "kv", "v", 1, true)?;
                timed(keys, count, |k| {
                    blob.reopen(i64::from(k))?;
                    let n = blob.len();
                    blob.read_at_exact(&mut buf[..n], 0)?;
                    std::hint::black_box(&buf[..n]);
                    Ok(n)
                })?
            } else {
                let mut st = conn.prepare_cached("SELECT v FROM kv WHERE k=?1")?;
                timed(keys, count, |k| {
                    Ok(st.query_row([k], |r| Ok(std::hint::black_box(r.get_ref(0)?.as_blob()?.len())))?)
                })?
            };
        conn.execute_batch("COMMIT")?;
        Ok(ns)
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        let Sqlite { conn, sizes, .. } = self;
        let mut st = conn.prepare_cached("UPDATE kv SET v=?2 WHERE k=?1")?;
        timed(keys, count, |k| {
            let n = sizes.get(k as usize).copied().unwrap_or(0);
            let changed = st.execute(rusqlite::params![k, content.next(n)])?;
            Ok(if changed == 1 { n.max(1) } else { 0 })
        })
    }
}

/// LMDB through heed: one environment (default flags: every commit
/// synced); a write is get (for the size) and put in its own transaction.
struct Lmdb {
    env: heed::Env<heed::WithoutTls>,
    db: heed::Database<'static, heed::types::Bytes, heed::types::Bytes>,
    buf: Vec<u8>,
}

impl Lmdb {
    fn open(dir: &Path) -> Res<Lmdb> {
        let len = std::fs::metadata(dir.join("data.mdb"))?.len() as usize;
        let mut opts = heed::EnvOpenOptions::new().read_txn_without_tls();
        opts.map_size(2 * len + (1 << 30)).max_dbs(0);
        // SAFETY: nothing else maps this environment while the loop runs.
        let env = unsafe { opts.open(dir)? };
        let txn = env.read_txn()?;
        let db = env
            .open_databases_and_commit(txn, |opener, txn| {
                opener.open_database(txn, None).map(heed::CommitOrAbort::<_, ()>::Commit)
            })?
            .unwrap_commit()
            .ok_or("no unnamed database")?;
        Ok(Lmdb { env, db, buf: Vec::new() })
    }
}

impl Store for Lmdb {
    fn max_key(&mut self) -> Res<u32> {
        let txn = self.env.read_txn()?;
        let (k, _) = self.db.last(&txn)?.ok_or("empty")?;
        Ok(u32::from_be_bytes(k.try_into()?))
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        let txn = self.env.read_txn()?;
        let (db, buf) = (self.db, &mut self.buf);
        timed(keys, count, |k| Ok(db.get(&txn, &k.to_be_bytes())?.map_or(0, |v| copy_out(buf, v))))
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        let (env, db) = (&self.env, self.db);
        timed(keys, count, |k| {
            let mut txn = env.write_txn()?;
            let Some(n) = db.get(&txn, &k.to_be_bytes())?.map(<[u8]>::len) else { return Ok(0) };
            db.put(&mut txn, &k.to_be_bytes(), content.next(n))?;
            txn.commit()?;
            Ok(n.max(1))
        })
    }
}

const REDB_TABLE: redb::TableDefinition<[u8; 4], &[u8]> = redb::TableDefinition::new("blobs");

/// redb: reads through a `ReadOnlyDatabase` (default cache), writes
/// through a `Database`, each in its own transaction with
/// `Durability::Immediate`.
enum Redb {
    Read(redb::ReadOnlyDatabase, Vec<u8>),
    Write(redb::Database),
}

impl Redb {
    fn open(path: &Path, write: bool) -> Res<Redb> {
        Ok(if write {
            Redb::Write(redb::Database::open(path)?)
        } else {
            Redb::Read(redb::ReadOnlyDatabase::open(path)?, Vec::new())
        })
    }

    fn begin_read(&self) -> Res<redb::ReadTransaction> {
        use redb::ReadableDatabase;
        Ok(match self {
            Redb::Read(db, _) => db.begin_read()?,
            Redb::Write(db) => db.begin_read()?,
        })
    }
}

impl Store for Redb {
    fn max_key(&mut self) -> Res<u32> {
        use redb::ReadableTable;
        let txn = self.begin_read()?;
        let table = txn.open_table(REDB_TABLE)?;
        let (k, _) = table.last()?.ok_or("empty")?;
        Ok(u32::from_be_bytes(k.value()))
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        use redb::ReadableDatabase;
        let Redb::Read(db, buf) = self else { return Err("opened for writes".into()) };
        let txn = db.begin_read()?;
        let table = txn.open_table(REDB_TABLE)?;
        timed(keys, count, |k| Ok(table.get(k.to_be_bytes())?.map_or(0, |v| copy_out(buf, v.value()))))
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        use redb::ReadableTable;
        let Redb::Write(db) = self else { return Err("opened for reads".into()) };
        timed(keys, count, |k| {
            let mut txn = db.begin_write()?;
            txn.set_durability(redb::Durability::Immediate)?;
            let n = {
                let mut table = txn.open_table(REDB_TABLE)?;
                let Some(n) = table.get(k.to_be_bytes())?.map(|v| v.value().len()) else { return Ok(0) };
                table.insert(k.to_be_bytes(), content.next(n))?;
                n
            };
            txn.commit()?;
            Ok(n.max(1))
        })
    }
}

/// fjall: keyspace `blobs` with key-value separation (as blobbench builds
/// it); reads in one snapshot per session, writes `insert` then
/// `persist(SyncAll)`.
struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
    buf: Vec<u8>,
}

impl Fjall {
    fn open(dir: &Path) -> Res<Fjall> {
        let db = fjall::Database::builder(dir).open()?;
        let ks = db.keyspace("blobs", || {
            fjall::KeyspaceCreateOptions::default().with_kv_separation(Some(fjall::KvSeparationOptions::default()))
        })?;
        Ok(Fjall { db, ks, buf: Vec::new() })
    }
}

impl Store for Fjall {
    fn max_key(&mut self) -> Res<u32> {
        let kv = self.ks.last_key_value().ok_or("empty")?;
        Ok(u32::from_be_bytes(kv.key()?.as_ref().try_into()?))
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        use fjall::Readable;
        let snapshot = self.db.snapshot();
        let (ks, buf) = (&self.ks, &mut self.buf);
        timed(keys, count, |k| Ok(snapshot.get(ks, k.to_be_bytes())?.map_or(0, |v| copy_out(buf, &v))))
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        let (db, ks) = (&self.db, &self.ks);
        timed(keys, count, |k| {
            let Some(n) = ks.size_of(k.to_be_bytes())? else { return Ok(0) };
            ks.insert(k.to_be_bytes(), content.next(n as usize))?;
            db.persist(fjall::PersistMode::SyncAll)?;
            Ok((n as usize).max(1))
        })
    }
}

/// One file per blob in a flat kvtest directory (`%06d`), through libc:
/// reads are open, fstat, read, close into a reused buffer; writes either
/// replace (a temporary file written and fsynced, renamed over the blob;
/// the directory is not fsynced, as in blobbench's `--file-write replace
/// --fsync`) or overwrite in place (pwrite, fsync).
struct Files {
    dir: PathBuf,
    replace: bool,
    buf: Vec<u8>,
}

impl Files {
    fn open(dir: &Path, replace: bool) -> Res<Files> {
        Ok(Files { dir: dir.to_path_buf(), replace, buf: vec![0; 64 * 1024] })
    }

    fn name(&self, key: u32, suffix: &str) -> CString {
        CString::new(self.dir.join(format!("{key:06}{suffix}")).as_os_str().as_bytes()).expect("no NUL in paths")
    }
}

fn os_err(what: &str) -> Box<dyn std::error::Error> {
    format!("{what}: {}", std::io::Error::last_os_error()).into()
}

impl Store for Files {
    fn max_key(&mut self) -> Res<u32> {
        let mut max = 0;
        for e in std::fs::read_dir(&self.dir)? {
            if let Some(k) = e?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                max = max.max(k);
            }
        }
        Ok(max)
    }

    fn read_session(&mut self, keys: &mut Keys, count: u64) -> Res<u64> {
        // The names are made before the loop, as blobbench rewrites its
        // path buffer outside any allocation.
        let names: Vec<CString> = (0..=keys.max).map(|k| self.name(k, "")).collect();
        let buf = &mut self.buf;
        timed(keys, count, |k| {
            // SAFETY: a NUL-terminated path; reads stay within `buf`; the
            // descriptor is closed before returning.
            unsafe {
                let fd = libc::open(names[k as usize].as_ptr(), libc::O_RDONLY);
                if fd < 0 {
                    return Err(os_err("open"));
                }
                let mut st: libc::stat = std::mem::zeroed();
                libc::fstat(fd, &mut st);
                let n = st.st_size as usize;
                if buf.len() < n {
                    buf.resize(n, 0);
                }
                let got = libc::read(fd, buf.as_mut_ptr().cast(), n);
                libc::close(fd);
                if got != n as isize {
                    return Err(os_err("read"));
                }
                Ok(n)
            }
        })
    }

    fn write_session(&mut self, keys: &mut Keys, count: u64, content: &mut Content) -> Res<u64> {
        let names: Vec<(CString, CString)> = (0..=keys.max).map(|k| (self.name(k, ""), self.name(k, ".tmp"))).collect();
        let sizes: Vec<usize> = (0..=keys.max)
            .map(|k| std::fs::metadata(self.dir.join(format!("{k:06}"))).map_or(0, |m| m.len() as usize))
            .collect();
        let replace = self.replace;
        timed(keys, count, |k| {
            let (name, tmp) = &names[k as usize];
            let data = content.next(sizes[k as usize]);
            // SAFETY: NUL-terminated paths; the written range is `data`;
            // every descriptor opened here is closed before returning.
            unsafe {
                let (path, flags) = if replace {
                    (tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)
                } else {
                    (name, libc::O_WRONLY)
                };
                let fd = libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint);
                if fd < 0 {
                    return Err(os_err("open"));
                }
                let ok = libc::pwrite(fd, data.as_ptr().cast(), data.len(), 0) == data.len() as isize
                    && libc::fsync(fd) == 0;
                if libc::close(fd) != 0 || !ok {
                    return Err(os_err("write"));
                }
                if replace && libc::rename(tmp.as_ptr(), name.as_ptr()) != 0 {
                    return Err(os_err("rename"));
                }
            }
            Ok(data.len().max(1))
        })
    }
}
