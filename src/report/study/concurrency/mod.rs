//! The `concurrency` section: throughput against threads, one line per
//! configuration and one chart per workload (mixed has two: its reads and
//! its inserts), the blob readers, and the study's conclusions as judged
//! on each machine.

pub mod question;
mod terminal;
mod writers;

use crate::measure::paired::MIN_ROUNDS_95;
use crate::measure::rounds::RoundSet;
use crate::report::format::doc::{Block, Chart, Figure, Section, Table};
use crate::report::format::fmt::{machine_labels, micros, percent, thousands};
use crate::report::format::svg::{LineChart, Series};
use crate::report::interval::Ratio;
use crate::report::study::StudyReport;
use crate::results::ResultFile;
use crate::studies::concurrency::{
    BlobReaders, Conclusion, ConcurrencySection, Point, StoreId, Verdict, Workload, ERRORS_DOMINATE_PCT,
};
use crate::util::units::plural;

/// The concurrency study's part of the report.
pub const REPORT: StudyReport = StudyReport {
    sections,
    questions: &[question::under_threads],
    terminal: Some(terminal::terminal),
    redraws: None,
    leads: false,
};

pub fn sections(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let with: Vec<(usize, &String, &ResultFile)> = files
        .iter()
        .zip(&labels)
        .enumerate()
        .filter(|(_, (f, _))| f.concurrency.is_some())
        .map(|(i, (f, l))| (i, l, f))
        .collect();
    let several = with.len() > 1;
    with.into_iter()
        .filter_map(|(i, label, f)| {
            Some(section(f.concurrency.as_ref()?, &f.rounds, label, &figure_suffix(files, i), several))
        })
        .collect()
}

/// The id of `files[index]`'s chart of the blob readers.
pub fn blobs_chart_id(files: &[ResultFile], index: usize) -> String {
    blobs_id(&figure_suffix(files, index))
}

fn blobs_id(suffix: &str) -> String {
    format!("concurrency-blobs{suffix}")
}

/// What the ids of `files[index]`'s concurrency figures end with: "-N"
/// (the file's place among all files) when several files hold a
/// concurrency section, nothing otherwise.
fn figure_suffix(files: &[ResultFile], index: usize) -> String {
    if files.iter().filter(|f| f.concurrency.is_some()).count() > 1 {
        format!("-{}", index + 1)
    } else {
        String::new()
    }
}

fn section(c: &ConcurrencySection, rounds: &[RoundSet], label: &str, suffix: &str, several: bool) -> Section {
    let mut blocks = intro(c);
    for (w, writes, what) in [
        (Workload::Read, false, "Reads: rows/s"),
        (Workload::Write, true, "Inserts: rows/s"),
        (Workload::Mixed, false, "Mixed, readers: rows read/s"),
        (Workload::Mixed, true, "Mixed, writers: rows inserted/s"),
    ] {
        if let Some(f) = figure(c, (w, writes, what), label, suffix, several) {
            blocks.push(Block::Figure(f));
        }
    }
    blocks.extend(distrusted(c));
    if let Some(b) = &c.blob_readers {
        blocks.push(Block::Figure(blob_readers_figure(c, b, rounds, (label, several), suffix)));
    }
    if let Some(w) = &c.writers {
        blocks.extend(writers::blocks(w, rounds, format!("concurrency-writers{suffix}"), &on(label, several)));
    }
    blocks.push(Block::Heading("Every point".into()));
    blocks.push(Block::Table(points_table(c)));
    blocks.extend(conclusions(c));
    if c.interrupted {
        blocks.push(Block::Note("Interrupted: only the points that finished are shown.".into()));
    }
    Section {
        id: format!("concurrency{suffix}"),
        title: format!("Concurrency: shared connection or one per thread{}", on(label, several)),
        in_summary: true,
        blocks,
    }
}

/// What the points are and what their throughput counts.
fn intro(c: &ConcurrencySection) -> Vec<Block> {
    let s = &c.settings;
    vec![
        Block::Paragraph(format!(
            "{} points (workload x configuration x threads); each run lasts {} s and the median of {} run{} is \
             shown; {} cores; SQLite {}; busy timeout {} ms; {} insert{} per write transaction.",
            c.points.len(),
            s.duration_s,
            s.repeat,
            plural(s.repeat),
            s.cores,
            s.sqlite_version,
            s.busy_timeout_ms,
            s.batch,
            plural(s.batch),
        )),
        Block::Note(
            "Throughput is successful operations (rows read, or rows inserted and committed) over the run's wall \
             time, all threads together. For mixed, \"threads\" is the number of readers, running beside as many \
             writers. Failed operations (SQLITE_BUSY or SQLITE_LOCKED after the busy timeout) are not counted as \
             throughput."
                .to_string(),
        ),
    ]
}

/// The points whose failures dominate or whose rows do not add up, and
/// why (nothing when none).
fn distrusted(c: &ConcurrencySection) -> Vec<Block> {
    let troubled: Vec<String> = c
        .points
        .iter()
        .filter(|p| p.errors_dominate || !p.consistent)
        .map(|p| {
            let mut why = Vec::new();
            for side in p.reads.iter().chain(p.writes.iter()).filter(|s| s.error_pct > ERRORS_DOMINATE_PCT) {
                why.push(format!("{} of attempts failed (busy/locked)", percent(side.error_pct)));
            }
            if !p.consistent {
                why.push("rows found differ from rows inserted, or integrity_check failed".to_string());
            }
            format!("{}: {}", p.id, why.join("; "))
        })
        .collect();
    if troubled.is_empty() {
        return Vec::new();
    }
    vec![Block::Heading("Points to distrust".into()), Block::List(troubled)]
}

/// The kvtest blobs read by parallel readers: reads per second against
/// threads, a line per store, with the database-over-files leads.
fn blob_readers_figure(
    c: &ConcurrencySection,
    b: &BlobReaders,
    rounds: &[RoundSet],
    (label, several): (&str, bool),
    suffix: &str,
) -> Figure {
    let x: Vec<f64> = crate::studies::concurrency::BLOB_THREADS.iter().map(|&t| f64::from(t)).collect();
    let series = StoreId::READERS
        .into_iter()
        .map(|store| Series {
            intervals: Vec::new(),
            name: b.points.iter().find(|p| p.store == store).map_or(store.to_string(), |p| p.label.clone()),
            values: x
                .iter()
                .map(|&t| {
                    b.points.iter().find(|p| p.store == store && f64::from(p.threads) == t).map(|p| p.reads_per_s)
                })
                .collect(),
        })
        .collect();
    let chart = LineChart {
        title: format!("kvtest blobs, parallel readers: reads/s{}", on(label, several)),
        x_label: "reader threads".into(),
        y_label: "blobs read per second".into(),
        x_log: false,
        y_log: false,
        x,
        series,
        reference: None,
        note: format!("median of {} timed run{} per point", c.settings.repeat, plural(c.settings.repeat)),
    };
    let caption = vec![format!(
        "{} blobs of {} bytes, {} random reads per run (all threads together), median over runs; \
         each thread has its own connection or file handles.",
        thousands(u64::from(b.blobs)),
        thousands(u64::from(b.blob_size)),
        thousands(b.reads_per_run)
    )];
    Figure { id: blobs_id(suffix), chart: Chart::Lines(chart), caption, findings: blob_findings(b, rounds) }
}

/// Each thread count's lead of the database over the files, alone and
/// beside one writer.
fn blob_findings(b: &BlobReaders, rounds: &[RoundSet]) -> Vec<String> {
    let leads = b.leads(rounds).into_iter().map(|l| {
        let cpu = |store: &str| {
            b.points
                .iter()
                .find(|p| p.store.name() == store && p.threads == l.threads)
                .map_or(f64::NAN, |p| p.cpu_us_per_read)
        };
        format!(
            "{} thread{}: {} / files = {:.2}x in reads per second ({}); CPU time per read {} us vs {} us.",
            l.threads,
            plural(l.threads),
            l.a,
            l.ratio,
            lead_interval(&l),
            micros(cpu(&l.a)),
            micros(cpu("files"))
        )
    });
    let beside_writer = b.writer_leads(rounds).into_iter().map(|l| {
        format!(
            "{} thread{}, each store beside one writer: SQLite WAL / files = {:.2}x in reads per second ({}).",
            l.threads,
            plural(l.threads),
            l.ratio,
            lead_interval(&l)
        )
    });
    leads.chain(beside_writer).collect()
}

/// The study's claims as this machine answers them, and how they are
/// tested.
fn conclusions(c: &ConcurrencySection) -> Vec<Block> {
    vec![
        Block::Heading("The study's conclusions on this machine".into()),
        Block::Note(format!(
            "Each conclusion is tested by throughput ratios between points that differ in one parameter only; a \
             ratio within {:.0}% of 1 counts as no difference. {} Factor: geometric mean of the ratios (smallest to \
             largest). Interval: from the lowest to the highest bound of the ratios' paired intervals (their \
             coverage and rounds shown); \"firm\" counts the ratios whose whole interval confirms the claim.",
            c.settings.tie_pct,
            pairing(c)
        )),
        Block::Table(conclusions_table(c)),
    ]
}

fn on(label: &str, several: bool) -> String {
    if several {
        format!(" ({label})")
    } else {
        String::new()
    }
}

fn rate(p: &Point, writes: bool) -> Option<f64> {
    p.side(writes).map(|s| s.ops_per_s.median)
}

/// Throughput against threads, one line per configuration: workload
/// `w`'s reads or `writes`, titled `what`.
fn figure(
    c: &ConcurrencySection,
    (w, writes, what): (Workload, bool, &str),
    label: &str,
    suffix: &str,
    several: bool,
) -> Option<Figure> {
    let points: Vec<&Point> = c.points.iter().filter(|p| p.workload == w && p.side(writes).is_some()).collect();
    if points.is_empty() {
        return None;
    }
    let mut x: Vec<u32> = points.iter().map(|p| p.threads).collect();
    x.sort_unstable();
    x.dedup();
    let mut configs: Vec<&Point> = Vec::new();
    for p in &points {
        if !configs.iter().any(|q| q.config == p.config) {
            configs.push(p);
        }
    }
    let series = configs
        .iter()
        .map(|cfg| Series {
            intervals: Vec::new(),
            name: cfg.label.clone(),
            values: x
                .iter()
                .map(|&t| {
                    points.iter().find(|p| p.config == cfg.config && p.threads == t).and_then(|p| rate(p, writes))
                })
                .collect(),
        })
        .collect();
    let slug = match (w, writes) {
        (Workload::Mixed, false) => "mixed-reads".to_string(),
        (Workload::Mixed, true) => "mixed-writes".to_string(),
        _ => w.name().to_string(),
    };
    Some(Figure {
        id: format!("concurrency-{slug}{suffix}"),
        chart: Chart::Lines(LineChart {
            title: format!("{what}{}", on(label, several)),
            x_label: if w == Workload::Mixed { "reader threads (plus as many writers)" } else { "threads" }.into(),
            y_label: if writes { "rows inserted per second" } else { "rows read per second" }.into(),
            x_log: false,
            y_log: false,
            x: x.iter().map(|&t| f64::from(t)).collect(),
            series,
            reference: None,
            note: format!("median of {} timed run{} per point", c.settings.repeat, plural(c.settings.repeat)),
        }),
        caption: vec![format!("Median over {} run(s) of {} s each.", c.settings.repeat, c.settings.duration_s)],
        findings: fastest(&points, &x, writes),
    })
}

/// The fastest configuration at the fewest and the most threads, with its
/// p99 latency.
fn fastest(points: &[&Point], x: &[u32], writes: bool) -> Vec<String> {
    let best = |t: u32| {
        points
            .iter()
            .filter(|p| p.threads == t)
            .filter_map(|p| rate(p, writes).map(|r| (r, *p)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    [x.first(), x.last()]
        .into_iter()
        .flatten()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter_map(|&t| best(t))
        .map(|(r, p)| {
            let lat = p.side(writes).map(|s| s.latency.p99_us).unwrap_or(f64::NAN);
            format!(
                "Fastest at {} thread{}: {} ({} per second, p99 latency {} us).",
                p.threads,
                plural(p.threads),
                p.label,
                thousands(r.round() as u64),
                micros(lat)
            )
        })
        .collect()
}

/// The study's claims as this machine answers them.
fn conclusions_table(c: &ConcurrencySection) -> Table {
    let rows = c
        .conclusions
        .iter()
        .map(|k| vec![k.claim.clone(), verdict_text(k), factor_text(k), interval_text(k), k.basis.clone()])
        .collect();
    Table::new(&["conclusion", "verdict", "factor", "interval", "compared"], rows)
}

/// Every point's figures: throughput in total and per thread, latency
/// percentiles, failed attempts, and the consistency check.
fn points_table(c: &ConcurrencySection) -> Table {
    let headers = [
        "workload",
        "configuration",
        "threads",
        "side",
        "rows/s",
        "rows/s per thread",
        "p50 us",
        "p99 us",
        "failed",
        "cores used",
        "CPU us/op",
        "rows and integrity",
    ];
    let mut rows = Vec::new();
    for p in &c.points {
        let sides = p.reads.iter().map(|s| ("readers", s)).chain(p.writes.iter().map(|s| ("writers", s)));
        for (who, s) in sides {
            rows.push(vec![
                p.workload.name().to_string(),
                p.label.clone(),
                p.threads.to_string(),
                who.to_string(),
                thousands(s.ops_per_s.median.round() as u64),
                thousands(s.per_thread_ops_per_s.median.round() as u64),
                micros(s.latency.p50_us),
                micros(s.latency.p99_us),
                percent(s.error_pct),
                format!("{:.2}", p.cores_used.median),
                micros(p.cpu_us_per_op.median),
                match (p.writes.is_some(), p.consistent) {
                    (false, _) => "-".to_string(),
                    (true, true) => "ok".to_string(),
                    (true, false) => "MISMATCH".to_string(),
                },
            ]);
        }
    }
    Table::new(&headers, rows)
}

/// "holds (3 of 3)", or "not measured".
/// How the conclusions' ratios were taken: paired by round, or (older
/// files) of the medians.
pub(super) fn pairing(c: &ConcurrencySection) -> String {
    let all = c.conclusions.iter().flat_map(|k| &k.comparisons);
    if all.clone().next().is_some() && all.clone().all(|x| x.paired.is_some()) {
        let n = c.rounds_order.len();
        format!(
            "Each ratio is paired by round: the points ran in {n} round{} (every point once per round, in a \
             shuffled order), and the ratio is the median of the per-round ratios{}.",
            if n == 1 { "" } else { "s" },
            if n < 2 { " (one round: no interval, --rounds gives more)" } else { "" }
        )
    } else {
        "Ratios of the medians over the runs (unpaired: this file records no rounds).".to_string()
    }
}

/// "1.40-1.60 (95% paired, 12 rounds)", or "unpaired" for older files.
fn lead_interval(l: &crate::studies::concurrency::Comparison) -> String {
    l.paired.as_ref().map_or_else(|| "unpaired, ratio of medians".to_string(), |p| Ratio::paired(p).describe())
}

fn verdict_text(c: &Conclusion) -> String {
    let word = match c.verdict {
        Verdict::Holds => "holds",
        Verdict::Partly => "partly",
        Verdict::DoesNotHold => "does not hold",
        Verdict::NotMeasured => return "not measured".to_string(),
    };
    if c.interval.is_some() {
        format!("{word} ({} of {}; {} firm)", c.confirming, c.comparisons.len(), c.firm)
    } else {
        format!("{word} ({} of {})", c.confirming, c.comparisons.len())
    }
}

/// "1.31x-1.80x (95%, 6 rounds)", "1.31x-1.80x (min-max, 3 rounds)", or
/// "-" when a ratio is unpaired or nothing was compared.
fn interval_text(c: &Conclusion) -> String {
    match c.interval {
        Some(i) if i.rounds >= 2 => {
            let cover = if i.rounds as usize >= MIN_ROUNDS_95 {
                format!("{:.0}%", i.coverage_pct.floor())
            } else {
                "min-max".into()
            };
            format!("{}-{} ({cover}, {} rounds)", times(i.low), times(i.high), i.rounds)
        }
        Some(i) => format!("none ({} round)", i.rounds),
        None => "-".to_string(),
    }
}

/// "3.02x (2.10x to 4.00x)", or "-" when nothing was compared.
fn factor_text(c: &Conclusion) -> String {
    match (c.factor, c.factor_min, c.factor_max) {
        (Some(f), Some(lo), Some(hi)) if c.comparisons.len() > 1 => {
            format!("{} ({} to {})", times(f), times(lo), times(hi))
        }
        (Some(f), _, _) => times(f),
        _ => "-".to_string(),
    }
}

/// A factor with about three significant digits: "0.93x", "12.7x", "2556x".
pub(super) fn times(f: f64) -> String {
    match f {
        f if f >= 100.0 => format!("{f:.0}x"),
        f if f >= 10.0 => format!("{f:.1}x"),
        f => format!("{f:.2}x"),
    }
}

#[cfg(test)]
mod text_tests {
    use super::*;
    use crate::studies::concurrency::{Claim, Comparison};

    fn conclusion(ratios: &[f64]) -> Conclusion {
        let comparisons = ratios
            .iter()
            .map(|&ratio| Comparison {
                workload: Workload::Read,
                threads: 2,
                a: "a".into(),
                b: "b".into(),
                ratio,
                paired: None,
            })
            .collect();
        Conclusion::new("claim", "basis", Claim::Faster, comparisons)
    }

    #[test]
    fn verdicts_and_factors_read_as_the_table_shows_them() {
        let partly = conclusion(&[3.0, 3.0, 1.05]);
        assert_eq!(
            (verdict_text(&partly), factor_text(&partly)),
            ("partly (2 of 3)".into(), "2.11x (1.05x to 3.00x)".into())
        );
        let none = conclusion(&[]);
        assert_eq!((verdict_text(&none), factor_text(&none)), ("not measured".into(), "-".into()));
        let one = conclusion(&[250.0]);
        assert_eq!((verdict_text(&one), factor_text(&one)), ("holds (1 of 1)".into(), "250x".into()));
    }
}
