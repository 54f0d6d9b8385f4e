//! The study's table (an integer key and three columns of random data), the
//! databases each run starts from, the checks after a run, and the random
//! keys and values the threads use, all made before any timer starts.

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rusqlite::{Connection, OpenFlags};

use super::options::Journal;
use crate::{Error, Result};

pub const SELECT: &CStr = c"SELECT id, a, b, c FROM t WHERE id=?1";
pub const INSERT: &CStr = c"INSERT INTO t(a, b, c) VALUES(?1, ?2, ?3)";
/// Characters of the text column.
const TEXT_LEN: usize = 16;
/// Keys and rows of values a thread cycles through (powers of two, so the
/// next index is a mask, not a division).
pub const KEY_POOL: usize = 1 << 16;
pub const VALUE_POOL: usize = 1 << 12;

/// Template databases, made once per journal mode and table state, copied
/// for every run so that each run starts from the same file.
pub struct Templates {
    dir: PathBuf,
    rows: u32,
    seed: u64,
    made: Vec<(Journal, bool, PathBuf)>,
}

impl Templates {
    pub fn new(dir: &Path, rows: u32, seed: u64) -> Self {
        Templates { dir: dir.to_path_buf(), rows, seed, made: Vec::new() }
    }

    /// Makes `dest` a fresh copy of the table in `journal` mode, filled with
    /// the study's rows or empty. Returns the rows it holds.
    pub fn fresh(&mut self, journal: Journal, filled: bool, dest: &Path) -> Result<u64> {
        let template = match self.made.iter().find(|(j, f, _)| *j == journal && *f == filled) {
            Some((_, _, p)) => p.clone(),
            None => {
                let p =
                    self.dir.join(format!("template-{}-{}.db", journal.name(), if filled { "full" } else { "empty" }));
                build(&p, journal, if filled { self.rows } else { 0 }, self.seed)?;
                self.made.push((journal, filled, p.clone()));
                p
            }
        };
        remove_db(dest)?;
        std::fs::copy(&template, dest).map_err(|e| Error::io(dest, "cannot copy the template database", e))?;
        Ok(if filled { u64::from(self.rows) } else { 0 })
    }
}

fn build(path: &Path, journal: Journal, rows: u32, seed: u64) -> Result<()> {
    remove_db(path)?;
    let what = "cannot build the table";
    let conn = Connection::open(path).map_err(|e| Error::sqlite(path, what, e))?;
    // With the OS cause of an I/O error: a full disk says so.
    let err = |e| crate::engine::dataset::conn_error(&conn, path, what, e);
    conn.query_row(&format!("PRAGMA journal_mode={journal}"), [], |r| r.get::<_, String>(0)).map_err(err)?;
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b REAL, c TEXT); BEGIN;").map_err(err)?;
    {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut text = String::with_capacity(TEXT_LEN);
        let mut insert = conn.prepare("INSERT INTO t(id, a, b, c) VALUES(?1, ?2, ?3, ?4)").map_err(err)?;
        for id in 1..=rows {
            random_text(&mut rng, &mut text);
            insert.execute(rusqlite::params![id, rng.gen::<i64>(), rng.gen::<f64>() * 1e6, text]).map_err(err)?;
        }
    }
    conn.execute_batch("COMMIT").map_err(err)?;
    conn.close().map_err(|(c, e)| crate::engine::dataset::conn_error(&c, path, what, e))
}

fn random_text(rng: &mut impl Rng, out: &mut String) {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    out.clear();
    for _ in 0..TEXT_LEN {
        out.push(CHARS[rng.gen_range(0..CHARS.len())] as char);
    }
}

/// Removes a database and whatever journal, WAL or shm it left.
pub fn remove_db(path: &Path) -> Result<()> {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(Path::new(&p), "cannot remove", e)),
        }
    }
    Ok(())
}

/// Rows in the table and `PRAGMA integrity_check`'s verdict ("ok" or the
/// problems, joined), read after every connection of a run has closed.
pub fn check(path: &Path) -> Result<(u64, String)> {
    let err = |e| Error::sqlite(path, "cannot check the table", e);
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(err)?;
    let rows: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).map_err(err)?;
    let mut stmt = conn.prepare("PRAGMA integrity_check").map_err(err)?;
    let lines = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(err)?;
    let lines = lines.collect::<std::result::Result<Vec<_>, _>>().map_err(err)?;
    Ok((rows.max(0) as u64, lines.join("; ")))
}

/// Random keys in 1..=rows for one reader thread.
pub fn keys(seed: u64, thread: u32, rows: u32) -> Vec<u32> {
    let mut rng =
        rand::rngs::SmallRng::seed_from_u64(seed ^ (u64::from(thread) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (0..KEY_POOL).map(|_| rng.gen_range(1..=rows)).collect()
}

/// Random rows for one writer thread to insert.
pub struct Values {
    a: Vec<i64>,
    b: Vec<f64>,
    text: String,
}

impl Values {
    pub fn new(seed: u64, thread: u32) -> Self {
        let mut rng =
            rand::rngs::SmallRng::seed_from_u64(!seed ^ (u64::from(thread) + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
        let mut text = String::with_capacity(VALUE_POOL * TEXT_LEN);
        let mut one = String::new();
        for _ in 0..VALUE_POOL {
            random_text(&mut rng, &mut one);
            text.push_str(&one);
        }
        Values {
            a: (0..VALUE_POOL).map(|_| rng.gen()).collect(),
            b: (0..VALUE_POOL).map(|_| rng.gen::<f64>() * 1e6).collect(),
            text,
        }
    }

    /// Row `i` of the pool (wrapping).
    #[inline]
    pub fn get(&self, i: usize) -> (i64, f64, &str) {
        let i = i & (VALUE_POOL - 1);
        (self.a[i], self.b[i], &self.text[i * TEXT_LEN..(i + 1) * TEXT_LEN])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_copy_the_right_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Templates::new(dir.path(), 500, 7);
        let db = dir.path().join("run.db");
        assert_eq!(t.fresh(Journal::Wal, true, &db).unwrap(), 500);
        assert_eq!(check(&db).unwrap(), (500, "ok".to_string()));
        let mode: String = Connection::open(&db).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        assert_eq!(t.fresh(Journal::Delete, false, &db).unwrap(), 0);
        assert_eq!(check(&db).unwrap().0, 0);
    }

    #[test]
    fn pools_are_in_range_and_differ_per_thread() {
        let k = keys(1, 0, 10);
        assert!(k.iter().all(|&x| (1..=10).contains(&x)));
        assert_ne!(keys(1, 0, 1000)[..20], keys(1, 1, 1000)[..20]);
        let v = Values::new(1, 0);
        assert_eq!(v.get(3).2.len(), TEXT_LEN);
        assert_eq!(v.get(3), v.get(3 + VALUE_POOL));
    }
}
