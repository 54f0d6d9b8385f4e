//! The concurrency study at the terminal: the tables `blobbench
//! concurrency` prints after a run, from the result file it wrote.

use std::fmt::Write as _;

use super::{factor_text, interval_text, lead_interval, verdict_text};
use crate::measure::rounds::RoundSet;
use crate::report::format::doc::{ColumnKind, Table};
use crate::report::format::fmt::rate;
use crate::report::format::text::table_text;
use crate::results::ResultFile;
use crate::studies::concurrency::{self, BlobPoint, BlobReaders, ConcurrencySection, Point, StoreId, Workload};
use crate::util::units::plural;

/// A table whose first column names the row and whose others are figures.
fn figures(headers: impl Iterator<Item = String>, rows: Vec<Vec<String>>) -> Table {
    let headers: Vec<String> = headers.collect();
    let kinds = [ColumnKind::Text].into_iter().chain(headers.iter().skip(1).map(|_| ColumnKind::Figure)).collect();
    Table { headers, rows, kinds, ..Table::default() }
}

/// Readers while one writer overwrites blobs: their p50/p99 latency and
/// reads/s beside the same readers alone, the writer's rate, and the
/// database over the files with a writer (paired by round when they ran in
/// rounds).
fn blob_writer_lines(o: &mut String, b: &BlobReaders, rounds: &[RoundSet]) {
    if !b.points.iter().any(|p| p.writes_per_s.is_some()) {
        return;
    }
    let mut rows = Vec::new();
    for busy in StoreId::WITH_WRITER {
        for t in concurrency::BLOB_THREADS {
            let find = |s: Option<StoreId>| b.points.iter().find(|p| Some(p.store) == s && p.threads == t);
            let (Some(a), Some(w)) = (find(busy.alone()), find(Some(busy))) else { continue };
            let cells = |p: &BlobPoint| {
                let latency = p.latency.map(|l| [l.p50_us, l.p99_us].map(|v| format!("{v:.1}")));
                latency.unwrap_or(["-".into(), "-".into()]).into_iter().chain([rate(p.reads_per_s)])
            };
            let mut row = vec![w.label.clone(), t.to_string()];
            row.extend(cells(a).chain(cells(w)).chain([format!("{:.0}", w.writes_per_s.unwrap_or(0.0))]));
            rows.push(row);
        }
    }
    let headers = ["readers", "threads", "p50 us", "p99 us", "reads/s", "p50 us", "p99 us", "reads/s", "writes/s"];
    let leads = b.writer_leads(rounds).into_iter().map(|l| {
        let (t, ratio, interval) = (l.threads, l.ratio, lead_interval(&l));
        format!("database / files, both beside a writer, {t} thr: {ratio:.2}x in reads/s ({interval})")
    });
    let table = figures(headers.into_iter().map(String::from), rows)
        .with_group("alone", 2, 3)
        .with_group("beside the writer", 5, 4)
        .with_notes(leads.collect());
    let _ = writeln!(o, "readers while one writer overwrites random blobs (latency per read, medians):");
    o.push_str(&table_text(&table, false));
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
        let name = sc.points.iter().find(|p| p.store == store).map_or_else(|| store.name(), |p| p.label.clone());
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
         X = rows lost or integrity_check failed\n"
    );
    for (w, title) in [
        (Workload::Read, "read: rows read/s"),
        (Workload::Write, "write: rows inserted/s"),
        (Workload::Mixed, "mixed (T readers + T writers): rows read/s and rows inserted/s"),
    ] {
        table(&mut o, c, w, title);
    }
    if let Some(b) = &c.blob_readers {
        blob_readers_table(&mut o, b, rounds);
        blob_writer_lines(&mut o, b, rounds);
    }
    if let Some(sc) = &c.server_clients {
        server_lines(&mut o, sc);
    }
    if let Some(w) = &c.writers {
        let _ = writeln!(
            o,
            "\ndurable writers, as many readers beside them: {} blobs of {} bytes, runs of about {} s; \
             writes/s median [interval over the rounds], latency per committed write",
            w.blobs, w.blob_size, w.run_time_s
        );
        o.push_str(&table_text(&super::writers::table(w), false));
        let _ = writeln!(o, "({})", super::writers::WRITE_LATENCY_COVERS);
        let answers = super::writers::connection_lines(w, rounds);
        if !answers.is_empty() {
            let _ = writeln!(o, "\nSQLite, writing blobs: {}", super::writers::CONNECTION_QUESTION.to_lowercase());
            for line in answers {
                let _ = writeln!(o, "  {line}");
            }
            o.push('\n');
        }
    }
    let _ = writeln!(
        o,
        "the study's conclusions on this machine (ratios of points differing in one parameter; within {:.0}% of 1 = no difference)\n{}\n",
        s.tie_pct,
        super::pairing(c)
    );
    let rows = c
        .conclusions
        .iter()
        .map(|k| vec![k.claim.clone(), verdict_text(k), factor_text(k), interval_text(k)])
        .collect();
    let headers = ["conclusion", "verdict (firm: whole interval)", "factor (geometric mean, range)", "interval"];
    o.push_str(&table_text(&Table::new(&headers, rows), false));
    if c.interrupted {
        let _ = writeln!(o, "warning: interrupted; only the points that finished are shown");
    }
    o
}

/// Reads/s and CPU time per read of each store by thread count, and the
/// best database over the files.
fn blob_readers_table(o: &mut String, b: &BlobReaders, rounds: &[RoundSet]) {
    let _ = writeln!(
        o,
        "blobs under parallel readers: {} blobs of {} bytes, {} random reads per run (medians)",
        b.blobs, b.blob_size, b.reads_per_run
    );
    let threads = concurrency::BLOB_THREADS;
    let mut rows: Vec<Vec<String>> = StoreId::READERS
        .into_iter()
        .map(|store| {
            let at = |t| b.points.iter().find(|p| p.store == store && p.threads == t);
            let reads = threads.map(|t| at(t).map_or("-".into(), |p| rate(p.reads_per_s)));
            let cpu = threads.map(|t| at(t).map_or("-".into(), |p| format!("{:.2}", p.cpu_us_per_read)));
            let name = b.points.iter().find(|p| p.store == store).map_or_else(|| store.name(), |p| p.label.clone());
            std::iter::once(name).chain(reads).chain(cpu).collect()
        })
        .collect();
    let leads = b.leads(rounds).into_iter().map(|l| format!("{:.2}x", l.ratio));
    rows.push(std::iter::once("best database / files (reads/s)".to_string()).chain(leads).collect());
    let headers =
        std::iter::once("store".to_string()).chain([threads, threads].concat().into_iter().map(|t| format!("{t} thr")));
    let table = figures(headers, rows)
        .with_group("reads/s", 1, threads.len())
        .with_group("CPU us per read", 1 + threads.len(), threads.len())
        .with_notes(vec!["CPU time per read does not depend on the share of the cores the machine gave".into()]);
    o.push_str(&table_text(&table, false));
}

/// One workload's throughput by configuration (rows) and thread count
/// (columns; a reader and a writer column each for the mixed workload),
/// with the cores the machine gave and the failed attempts under it.
fn table(o: &mut String, c: &ConcurrencySection, w: Workload, title: &str) {
    let points: Vec<&Point> = c.points.iter().filter(|p| p.workload == w).collect();
    let mut threads: Vec<u32> = points.iter().map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let sides: &[bool] = match w {
        Workload::Write => &[true],
        Workload::Mixed => &[false, true],
        _ => &[false],
    };
    let mut configs: Vec<&Point> = Vec::new();
    for p in &points {
        if !configs.iter().any(|q| q.config == p.config) {
            configs.push(p);
        }
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for p in configs {
        let cells = threads.iter().flat_map(|t| {
            let q = points.iter().find(|q| q.config == p.config && q.threads == *t);
            sides.iter().map(move |&writes| {
                let Some(q) = q else { return "-".to_string() };
                let r = q.side(writes).map_or("-".to_string(), |s| rate(s.ops_per_s.median));
                // The point's mark follows its last figure.
                let last = writes == sides[sides.len() - 1];
                let mark = match (last, q.consistent, q.errors_dominate) {
                    (true, false, _) => "X",
                    (true, true, true) => "!",
                    _ => "",
                };
                format!("{r}{mark}")
            })
        });
        rows.push(std::iter::once(p.label.clone()).chain(cells).collect());
    }
    if rows.is_empty() {
        return;
    }
    // How many cores the machine really gave this process: on a shared
    // machine, fewer than the threads could use, which caps throughput.
    let cores = threads.iter().flat_map(|t| {
        let mut used: Vec<f64> = points.iter().filter(|p| p.threads == *t).map(|p| p.cores_used.median).collect();
        used.sort_by(f64::total_cmp);
        let median = used.get(used.len() / 2).map_or("-".to_string(), |u| format!("{u:.2}"));
        std::iter::once(median).chain(sides[1..].iter().map(|_| String::new()))
    });
    rows.push(std::iter::once("cores used (CPU time / wall, median)".to_string()).chain(cores).collect());
    let mut errors = Vec::new();
    for p in &points {
        let sides = p.reads.iter().map(|s| ("readers", s)).chain(p.writes.iter().map(|s| ("writers", s)));
        for (who, s) in sides.filter(|(_, s)| s.failed_ops > 0) {
            errors.push(format!(
                "errors: {} {} thr, {who}: {} busy, {} locked calls; {:.1}% of attempts failed",
                p.label, p.threads, s.busy_errors, s.locked_errors, s.error_pct
            ));
        }
    }
    let headers = threads.iter().flat_map(|t| match w {
        Workload::Mixed => vec!["read/s".to_string(), "inserted/s".to_string()],
        _ => vec![format!("{t} thr")],
    });
    let mut table = figures(std::iter::once(String::new()).chain(headers), rows).with_notes(errors);
    for (i, t) in threads.iter().enumerate().filter(|_| w == Workload::Mixed) {
        table = table.with_group(&format!("{t} thr"), 1 + 2 * i, 2);
    }
    let _ = writeln!(o, "{title}");
    o.push_str(&table_text(&table, false));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rounds::synthetic;

    fn point(store: StoreId, threads: u32, reads_per_s: f64) -> BlobPoint {
        BlobPoint {
            store,
            label: store.to_string(),
            threads,
            experiment_id: concurrency::ids::reader_experiment(store, threads),
            mb_per_s: 1.0,
            reads_per_s,
            latency: None,
            noisy: false,
            cpu_us_per_read: 1.0,
            cores_used: 1.0,
            writes_per_s: store.alone().map(|_| 500.0),
        }
    }

    /// At 1 thread: the database with a writer at 200k reads/s by its
    /// median, files at 100k; round by round the files took 3x as long.
    fn readers() -> BlobReaders {
        let points = vec![
            point(StoreId::Db, 1, 300e3),
            point(StoreId::Files, 1, 150e3),
            point(StoreId::DbWalWriter, 1, 200e3),
            point(StoreId::FilesWriter, 1, 100e3),
        ];
        BlobReaders { blobs: 10, blob_size: 10_000, reads_per_run: 100, points }
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
