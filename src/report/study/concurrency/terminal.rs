//! The concurrency study at the terminal: the tables `blobbench
//! concurrency` prints after a run, from the result file it wrote.

use std::fmt::Write as _;

use super::{factor_text, lead_interval, verdict_text};
use crate::measure::rounds::RoundSet;
use crate::results::ResultFile;
use crate::studies::concurrency::{self, ConcurrencySection, Point, Workload};
use crate::util::units::plural;

/// Readers while one writer overwrites blobs: their p50/p99 latency and
/// reads/s beside the same readers alone, the writer's rate, and the
/// database over the files with a writer (paired by round when they ran in
/// rounds).
fn blob_writer_lines(o: &mut String, b: &concurrency::BlobReaders, rounds: &[RoundSet]) {
    if !b.points.iter().any(|p| p.writes_per_s.is_some()) {
        return;
    }
    let _ = writeln!(
        o,
        "  readers while one writer overwrites random blobs (latency us p50 / p99; reads/s; writer's writes/s):"
    );
    for (alone, busy) in [("db", "db-wal-writer"), ("files", "files-writer")] {
        for t in concurrency::BLOB_THREADS {
            let find = |s: &str| b.points.iter().find(|p| p.store == s && p.threads == t);
            let (Some(a), Some(w)) = (find(alone), find(busy)) else { continue };
            let lat = |p: &concurrency::BlobPoint| {
                p.latency.map_or("-".into(), |l| format!("{:.1} / {:.1}", l.p50_us, l.p99_us))
            };
            let _ = writeln!(
                o,
                "    {:<48} {t} thr: alone {:>14}, with writer {:>14}; {} vs {} reads/s; {:.0} writes/s",
                w.label,
                lat(a),
                lat(w),
                rate(a.reads_per_s),
                rate(w.reads_per_s),
                w.writes_per_s.unwrap_or(0.0)
            );
        }
    }
    for l in b.writer_leads(rounds) {
        let _ = writeln!(
            o,
            "    database / files, both beside a writer, {} thr: {:.2}x in reads/s ({})",
            l.threads,
            l.ratio,
            lead_interval(&l)
        );
    }
}

/// 1234 -> "1.23k", 1234567 -> "1.23M".
/// Each server's reads/s by client count, and over its one client's.
fn server_lines(o: &mut String, sc: &concurrency::ServerClients) {
    let _ = writeln!(
        o,
        "\nserver stores under parallel clients: {} blobs of {} bytes, {} random reads per run (all clients together), reads/s (median)",
        sc.blobs, sc.blob_size, sc.reads_per_run
    );
    let _ = write!(o, "  {:<44}", "");
    for c in concurrency::SERVER_CLIENTS {
        let _ = write!(o, "{:>12}", format!("{c} cl"));
    }
    let _ = writeln!(o);
    for store in sc.stores() {
        let name = sc.points.iter().find(|p| p.store == store).map_or(store, |p| p.label.as_str());
        let _ = write!(o, "  {name:<44}");
        for c in concurrency::SERVER_CLIENTS {
            let cell = sc.points.iter().find(|p| p.store == store && p.threads == c);
            let _ = write!(o, "{:>12}", cell.map_or("-".into(), |p| rate(p.reads_per_s)));
        }
        let _ = writeln!(o);
        let _ = write!(o, "    {:<42}", format!("{store}: over one client"));
        for c in concurrency::SERVER_CLIENTS {
            let _ = write!(o, "{:>12}", sc.scaling(store, c).map_or("-".into(), |x| format!("{x:.2}x")));
        }
        let _ = writeln!(o);
    }
}

fn rate(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// What `blobbench concurrency` prints: one table per workload (median
/// throughput per configuration and thread count), the blob readers, the
/// conclusions (empty without a concurrency section in `file`).
pub fn terminal(file: &ResultFile, _colour: bool) -> String {
    file.concurrency.as_ref().map_or_else(String::new, |c| text(c, &file.rounds))
}

fn text(c: &ConcurrencySection, rounds: &[RoundSet]) -> String {
    let mut o = String::new();
    let s = &c.settings;
    let _ = writeln!(
        o,
        "SQLite {} on {} cores; {} s per run, median of {} run{}; busy timeout {} ms; {} insert{} per transaction",
        s.sqlite_version,
        s.cores,
        s.duration_s,
        s.repeat,
        plural(s.repeat),
        s.busy_timeout_ms,
        s.batch,
        plural(s.batch)
    );
    let _ = writeln!(
        o,
        "throughput = successful operations / run wall time, all threads; ! = over half the attempts failed busy/locked; \
         X = rows lost or integrity_check failed"
    );
    for (w, title) in [
        (Workload::Read, "read: rows read/s"),
        (Workload::Write, "write: rows inserted/s"),
        (Workload::Mixed, "mixed (T readers + T writers): rows read/s | rows inserted/s"),
    ] {
        table(&mut o, c, w, title);
    }
    if let Some(b) = &c.blob_readers {
        let _ = writeln!(
            o,
            "\nblobs under parallel readers: {} blobs of {} bytes, {} random reads per run, reads/s (median)",
            b.blobs, b.blob_size, b.reads_per_run
        );
        let _ = write!(o, "  {:<44}", "");
        for t in concurrency::BLOB_THREADS {
            let _ = write!(o, "{:>12}", format!("{t} thr"));
        }
        let _ = writeln!(o);
        for store in ["db", "db-mmap", "files"] {
            let name = b.points.iter().find(|p| p.store == store).map_or(store, |p| p.label.as_str());
            let _ = write!(o, "  {name:<44}");
            for t in concurrency::BLOB_THREADS {
                let cell = b.points.iter().find(|p| p.store == store && p.threads == t);
                let _ = write!(o, "{:>12}", cell.map_or("-".into(), |p| rate(p.reads_per_s)));
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o, "  CPU time per read (us, median; independent of the share of cores obtained):");
        for store in ["db", "db-mmap", "files"] {
            let _ = write!(o, "    {store:<42}");
            for t in concurrency::BLOB_THREADS {
                let cell = b.points.iter().find(|p| p.store == store && p.threads == t);
                let _ = write!(o, "{:>12}", cell.map_or("-".into(), |p| format!("{:.2}", p.cpu_us_per_read)));
            }
            let _ = writeln!(o);
        }
        let _ = write!(o, "  {:<44}", "best database / files (reads/s)");
        for l in b.leads(rounds) {
            let _ = write!(o, "{:>12}", format!("{:.2}x", l.ratio));
        }
        let _ = writeln!(o);
        blob_writer_lines(&mut o, b, rounds);
    }
    if let Some(sc) = &c.server_clients {
        server_lines(&mut o, sc);
    }
    let _ = writeln!(
        o,
        "\nthe study's conclusions on this machine (ratios of points differing in one parameter; within {:.0}% of 1 = no difference)\n  {}",
        s.tie_pct,
        super::pairing(c)
    );
    let _ = writeln!(o, "  {:<70} {:<22} factor (geometric mean, range)", "conclusion", "verdict");
    for k in &c.conclusions {
        let _ = writeln!(o, "  {:<70} {:<22} {}", k.claim, verdict_text(k), factor_text(k));
    }
    if c.interrupted {
        let _ = writeln!(o, "warning: interrupted; only the points that finished are shown");
    }
    o
}

fn table(o: &mut String, c: &ConcurrencySection, w: Workload, title: &str) {
    let points: Vec<&Point> = c.points.iter().filter(|p| p.workload == w).collect();
    if points.is_empty() {
        return;
    }
    let mut threads: Vec<u32> = points.iter().map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let width = if w == Workload::Mixed { 18 } else { 10 };
    let _ = write!(o, "\n{title}\n  {:<44}", "");
    for t in &threads {
        let _ = write!(o, "{:>width$}", format!("{t} thr"));
    }
    let _ = writeln!(o);
    let mut seen = Vec::new();
    for p in &points {
        if seen.contains(&p.config) {
            continue;
        }
        seen.push(p.config);
        let _ = write!(o, "  {:<44}", p.label);
        for t in &threads {
            let cell = points.iter().find(|q| q.config == p.config && q.threads == *t).map_or("-".to_string(), |q| {
                let r = |writes: bool| q.side(writes).map_or("-".to_string(), |s| rate(s.ops_per_s.median));
                let mark = if !q.consistent {
                    "X"
                } else if q.errors_dominate {
                    "!"
                } else {
                    ""
                };
                match w {
                    Workload::Mixed => format!("{} | {}{mark}", r(false), r(true)),
                    _ => format!("{}{mark}", r(w == Workload::Write)),
                }
            });
            let _ = write!(o, "{cell:>width$}");
        }
        let _ = writeln!(o);
    }
    // How many cores the machine really gave this process: on a shared
    // machine, fewer than the threads could use, which caps throughput.
    let _ = write!(o, "  {:<44}", "cores used (CPU time / wall, median)");
    for t in &threads {
        let mut used: Vec<f64> = points.iter().filter(|p| p.threads == *t).map(|p| p.cores_used.median).collect();
        used.sort_by(f64::total_cmp);
        let cell = used.get(used.len() / 2).map_or("-".to_string(), |u| format!("{u:.2}"));
        let _ = write!(o, "{cell:>width$}");
    }
    let _ = writeln!(o);
    for p in points.iter().filter(|p| p.reads.iter().chain(p.writes.iter()).any(|s| s.failed_ops > 0)) {
        let sides = p.reads.iter().map(|s| ("readers", s)).chain(p.writes.iter().map(|s| ("writers", s)));
        for (who, s) in sides.filter(|(_, s)| s.failed_ops > 0) {
            let _ = writeln!(
                o,
                "  errors: {} {} thr, {who}: {} busy, {} locked calls; {:.1}% of attempts failed",
                p.label, p.threads, s.busy_errors, s.locked_errors, s.error_pct
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rounds::synthetic;

    fn point(store: &str, threads: u32, reads_per_s: f64) -> concurrency::BlobPoint {
        concurrency::BlobPoint {
            store: store.into(),
            label: store.into(),
            threads,
            experiment_id: format!("blobs/{store}/t{threads}"),
            mb_per_s: 1.0,
            reads_per_s,
            latency: None,
            noisy: false,
            cpu_us_per_read: 1.0,
            cores_used: 1.0,
            writes_per_s: store.ends_with("-writer").then_some(500.0),
        }
    }

    /// At 1 thread: the database with a writer at 200k reads/s by its
    /// median, files at 100k; round by round the files took 3x as long.
    fn readers() -> concurrency::BlobReaders {
        let points = vec![
            point("db", 1, 300e3),
            point("files", 1, 150e3),
            point("db-wal-writer", 1, 200e3),
            point("files-writer", 1, 100e3),
        ];
        concurrency::BlobReaders { blobs: 10, blob_size: 10_000, reads_per_run: 100, points }
    }

    #[test]
    fn readers_beside_a_writer_are_stated_paired_or_for_older_files_unpaired() {
        let rows: Vec<Vec<f64>> = [1.0, 2.0, 1.0, 1.0, 3.0, 1.0].iter().map(|l| vec![5.0 * l, 15.0 * l]).collect();
        let set = synthetic("concurrency/blobs-writer/t1", &["blobs/db-wal-writer/t1", "blobs/files-writer/t1"], &rows);
        let mut o = String::new();
        blob_writer_lines(&mut o, &readers(), std::slice::from_ref(&set));
        assert!(
            o.contains(
                "database / files, both beside a writer, 1 thr: 3.00x in reads/s (3.00-3.00 (95% paired, 6 rounds))"
            ),
            "{o}"
        );
        let mut old = String::new();
        blob_writer_lines(&mut old, &readers(), &[]);
        assert!(
            old.contains(
                "database / files, both beside a writer, 1 thr: 2.00x in reads/s (unpaired, ratio of medians)"
            ),
            "{old}"
        );
    }
}
