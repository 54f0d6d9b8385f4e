//! Issue 14 from the command line: the user's own files (`--from`), size
//! distributions by name, mixed reads and writes, hot keys.

use crate::common;

use std::path::Path;

use common::{blobbench, kvtest_db, ok};
use rusqlite::Connection;

fn blobs(db: &Path) -> Vec<(i64, Vec<u8>)> {
    let c = Connection::open(db).unwrap();
    let mut s = c.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn from_copies_every_regular_file_in_path_order_with_a_manifest() {
    let src = tempfile::tempdir().unwrap();
    let s = src.path();
    std::fs::create_dir_all(s.join("b/deep")).unwrap();
    std::fs::write(s.join("b/deep/z.bin"), b"zzz").unwrap();
    std::fs::write(s.join("a.txt"), b"first").unwrap();
    std::fs::write(s.join("empty"), b"").unwrap();
    std::os::unix::fs::symlink("a.txt", s.join("link")).unwrap();
    nix_mkfifo(&s.join("fifo"));
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("mine.db");
    let stdout = ok(&["init", db.to_str().unwrap(), "--from", s.to_str().unwrap()]);
    assert!(stdout.contains("skipped 1 symbolic links"), "{stdout}");
    assert!(stdout.contains("skipped 1 special files"), "{stdout}");
    assert!(stdout.contains("skipped 1 empty files"), "{stdout}");
    assert_eq!(blobs(&db), [(1, b"first".to_vec()), (2, b"zzz".to_vec())]);
    let manifest = std::fs::read_to_string(out.path().join("mine.db.manifest.tsv")).unwrap();
    assert!(manifest.contains("1\t5\ta.txt\n2\t3\tb/deep/z.bin\n"), "{manifest}");
    // A second build gives the same keys: runs are repeatable.
    let again = out.path().join("again.db");
    ok(&["init", again.to_str().unwrap(), "--from", s.to_str().unwrap()]);
    assert_eq!(blobs(&again), blobs(&db));
}

fn nix_mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn from_skips_a_file_over_the_blob_limit() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("small"), b"x").unwrap();
    // Sparse: a billion and one bytes cost no disk.
    std::fs::File::create(src.path().join("huge")).unwrap().set_len(1_000_000_001).unwrap();
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("d.db");
    let stdout = ok(&["init", db.to_str().unwrap(), "--from", src.path().to_str().unwrap()]);
    assert!(stdout.contains("skipped 1 files larger than SQLite's blob limit"), "{stdout}");
    assert_eq!(blobs(&db).len(), 1);
}

#[test]
fn a_file_rewritten_during_the_copy_is_skipped_or_copied_whole() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..300 {
        std::fs::write(src.path().join(format!("f{i:03}")), vec![i as u8; 20_000]).unwrap();
    }
    let hot = src.path().join("f150");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, hot) = (stop.clone(), hot.clone());
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                std::fs::write(&hot, vec![7u8; 1 + n % 40_000]).unwrap();
            }
        })
    };
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("d.db");
    let run =
        blobbench().args(["init", db.to_str().unwrap(), "--from", src.path().to_str().unwrap()]).output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // Whatever was copied matches the manifest, byte count for byte count.
    let manifest = std::fs::read_to_string(out.path().join("d.db.manifest.tsv")).unwrap();
    let listed: Vec<(i64, usize)> = manifest
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap())
        })
        .collect();
    let stored: Vec<(i64, usize)> = blobs(&db).into_iter().map(|(k, v)| (k, v.len())).collect();
    assert_eq!(listed, stored);
    assert!(stored.len() >= 299);
}

#[test]
fn sizes_follow_the_named_distribution() {
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("l.db");
    ok(&["init", db.to_str().unwrap(), "--count", "50", "--sizes", "list:100,3000"]);
    let sizes: Vec<usize> = blobs(&db).iter().map(|(_, v)| v.len()).collect();
    assert!(sizes.iter().all(|&s| s == 100 || s == 3000), "{sizes:?}");
    assert!(sizes.contains(&100) && sizes.contains(&3000));
    let hist = out.path().join("hist");
    std::fs::write(&hist, "# size count\n700 1\n").unwrap();
    let h = out.path().join("h.db");
    ok(&["init", h.to_str().unwrap(), "--count", "5", "--sizes", &format!("file:{}", hist.display())]);
    assert!(blobs(&h).iter().all(|(_, v)| v.len() == 700));
    let ln = out.path().join("ln.db");
    ok(&["init", ln.to_str().unwrap(), "--count", "400", "--sizes", "lognormal:2000:0.5"]);
    let mut s: Vec<usize> = blobs(&ln).iter().map(|(_, v)| v.len()).collect();
    s.sort_unstable();
    assert!((1600..2400).contains(&s[200]), "median {}", s[200]);
    assert!(s[0] != s[399], "sizes vary");
}

#[test]
fn sizes_from_takes_the_sizes_not_the_content() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("a"), vec![b'a'; 1234]).unwrap();
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("s.db");
    ok(&["init", db.to_str().unwrap(), "--count", "3", "--sizes-from", src.path().to_str().unwrap()]);
    for (_, v) in blobs(&db) {
        assert_eq!(v.len(), 1234);
        assert_ne!(v, vec![b'a'; 1234], "random content, not the file's");
    }
}

#[test]
fn mix_reports_each_class_and_keeps_every_value_a_blob() {
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("m.db");
    kvtest_db(&db, 200, 2000);
    let json = out.path().join("r.json");
    let text = ok(&[
        "run",
        db.to_str().unwrap(),
        "--mix",
        "90:10",
        "--random",
        "--count",
        "1000",
        "--repeat",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(text.contains("  read "), "{text}");
    assert!(text.contains("  overwrite "), "{text}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let e = &r["experiments"][0];
    assert_eq!(e["params"]["mix"]["read"], 90);
    let classes = e["class_latency"].as_array().unwrap();
    let count = |name: &str| classes.iter().find(|c| c["class"] == name).unwrap()["count"].as_u64().unwrap();
    assert_eq!(count("read") + count("overwrite"), 2000);
    assert!((150..=250).contains(&count("overwrite")), "{}", count("overwrite"));
    let c = Connection::open(&db).unwrap();
    let non_blobs: i64 = c.query_row("SELECT count(*) FROM kv WHERE typeof(v) != 'blob'", [], |r| r.get(0)).unwrap();
    assert_eq!(non_blobs, 0);
    // Files take the same mix.
    let flat = out.path().join("flat");
    ok(&["export", db.to_str().unwrap(), flat.to_str().unwrap()]);
    let text = ok(&["run", flat.to_str().unwrap(), "--mix", "1:1", "--count", "200", "--repeat", "1"]);
    assert!(text.contains("  overwrite "), "{text}");
}

#[test]
fn hot_keys_hit_the_cache_more_than_random_keys() {
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("z.db");
    kvtest_db(&db, 2000, 4000);
    let hits = |keys: &[&str]| -> f64 {
        let mut args = vec!["run", db.to_str().unwrap(), "--count", "4000", "--repeat", "1", "--stats"];
        args.extend_from_slice(keys);
        let text = ok(&args);
        let num = |label: &str| -> f64 {
            let line = text.lines().find(|l| l.starts_with(label)).unwrap();
            line.split_whitespace().last().unwrap().parse().unwrap()
        };
        num("Page cache hits:") / (num("Page cache hits:") + num("Page cache misses:"))
    };
    let zipf = hits(&["--keys", "zipf:1.2"]);
    let random = hits(&["--random"]);
    assert!(zipf > random, "zipf hit ratio {zipf} vs random {random}");
}

#[test]
fn suite_from_a_tree_records_where_the_blobs_came_from() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..40 {
        std::fs::write(src.path().join(format!("{i:02}.bin")), vec![i as u8; 500 + 100 * i]).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let rep = work.path().join("rep");
    let stdout = ok(&[
        "suite",
        "--from",
        src.path().to_str().unwrap(),
        "--repeat",
        "1",
        "--workdir",
        work.path().to_str().unwrap(),
        "--out",
        rep.to_str().unwrap(),
        "--keys",
        "zipf:0.9",
    ]);
    assert!(stdout.contains("init: 40 blobs"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["dataset"]["count"], 40);
    assert_eq!(r["dataset"]["from_dir"], src.path().to_str().unwrap());
    let bins: u64 =
        r["dataset"]["size_histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(bins, 40);
    assert_eq!(r["experiments"][0]["params"]["zipf_theta"], 0.9);
}
