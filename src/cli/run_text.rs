//! What `run` prints: kvtest's own lines for the median run (SQLite's
//! statistics, the flags, the total time and rate), then blobbench's
//! summary (what the timer covers, the commits, the phases, the figures
//! over the timed runs, the latencies, the OS counters, the warnings).

use std::fmt::Write as _;

use blobbench::drivers::run::{RunOptions, RunReport};
use blobbench::measure::{Experiment, RunSample, Stat, Summary};
use blobbench::records::{DbAccess, Journal, SyncLevel};
use blobbench::report::{table_text, Table};
use blobbench::util::units::plural;

/// kvtest's lines for the median run, then blobbench's summary.
pub fn text(report: &RunReport, opts: &RunOptions) -> String {
    let mut o = String::new();
    let e = &report.experiment;
    let r = report.median_run();
    let verb = match opts.mix {
        Some(_) => "op",
        None if opts.update => "write",
        // A round trip with no work (SELECT 1), the floor under each read.
        None if opts.round_trip => "round trip",
        None => "read",
    };
    kvtest_lines(&mut o, report, opts, r, verb);
    summary_lines(&mut o, report, opts);
    figures_table(&mut o, &e.summary, verb);
    latency_table(&mut o, e, verb);
    closing_lines(&mut o, report, opts, r);
    o
}

/// Whether the run was SQLite's (kvtest's database lines apply).
fn is_db(report: &RunReport) -> bool {
    report.layout == blobbench::engine::sqlite::KIND
}

/// kvtest's lines: SQLite's memory and page-cache statistics with the
/// I/O counters, the misses, SQLite's version and integrity check, the
/// flags, the total time and the rate of the median run `r`.
fn kvtest_lines(o: &mut String, report: &RunReport, opts: &RunOptions, r: &RunSample, verb: &str) {
    let db = is_db(report);
    if let Some(s) = &report.sqlite_stats {
        let _ = writeln!(o, "\nMemory Used:                         {} (max {}) bytes", s.memory_used, s.memory_max);
        let _ = writeln!(o, "Number of Outstanding Allocations:   {} (max {})", s.allocations, s.allocations_max);
        let _ =
            writeln!(o, "Number of Pcache Pages Used:         {} (max {}) pages", s.pcache_pages, s.pcache_pages_max);
        let _ = writeln!(
            o,
            "Number of Pcache Overflow Bytes:     {} (max {}) bytes",
            s.pcache_overflow, s.pcache_overflow_max
        );
        let _ = writeln!(o, "Largest Allocation:                  {} bytes", s.largest_allocation);
        let _ = writeln!(o, "Largest Pcache Allocation:           {} bytes", s.largest_pcache_allocation);
        let _ = writeln!(o, "Pager Heap Usage:                    {} bytes", s.pager_heap);
        let _ = writeln!(o, "Page cache hits:                     {}", s.cache_hits);
        let _ = writeln!(o, "Page cache misses:                   {}", s.cache_misses);
        let _ = writeln!(o, "Page cache writes:                   {}", s.cache_writes);
        let io = &r.os;
        let _ = writeln!(o, "{:<36} {}", "Bytes received by read():", io.read_call_bytes);
        let _ = writeln!(o, "{:<36} {}", "Bytes sent to write():", io.write_call_bytes);
        let _ = writeln!(o, "{:<36} {}", "Read() system calls:", io.read_syscalls);
        let _ = writeln!(o, "{:<36} {}", "Write() system calls:", io.write_syscalls);
        let _ = writeln!(o, "{:<36} {}", "Bytes read from storage:", io.storage_read_bytes);
        let _ = writeln!(o, "{:<36} {}", "Bytes written to storage:", io.storage_write_bytes);
        let _ = writeln!(o, "{:<36} {}", "Cancelled write bytes:", io.cancelled_write_bytes);
    }
    if r.misses > 0 {
        let _ = writeln!(o, "{} cycles due to {} misses", r.ops + r.misses, r.misses);
    }
    if db {
        let _ = writeln!(o, "SQLite version: {}", rusqlite::version());
        for line in &report.integrity {
            let _ = writeln!(o, "integrity-check: {line}");
        }
    }
    let keys = opts.zipf.map_or_else(|| opts.order.flag().to_string(), |t| format!("--keys zipf:{t}"));
    let mix = opts.mix.map(|m| format!(" --mix {}:{}", m.read, m.write)).unwrap_or_default();
    let _ = writeln!(o, "--count {} --max-id {} {keys}{mix}", r.ops, report.max_id);
    if db {
        let _ = writeln!(
            o,
            "--cache-size {} --jmode {}",
            report.cache_size.unwrap_or(0),
            report.journal_mode.map_or("???", Journal::name)
        );
        let _ = writeln!(
            o,
            "--mmap {}{}",
            opts.settings.db.mmap_bytes,
            if opts.settings.db.access == DbAccess::BlobApi { " --blob-api" } else { "" }
        );
        if opts.settings.db.sync == Some(SyncLevel::Off) {
            let _ = writeln!(o, "--nosync");
        }
        if let Some(ps) = report.page_size {
            let _ = writeln!(o, "Database page size: {ps}");
        }
    }
    let _ = writeln!(o, "Total elapsed time: {:.3}", r.phases.kvtest_total_ns as f64 / 1e9);
    let _ = writeln!(o, "Microseconds per BLOB {verb}: {:.3}", r.per_op_us);
    let _ = writeln!(o, "Content {verb} rate: {:.1} MB/s", r.mb_per_s);
}

/// blobbench's summary lines: the runs, what the timer covers, how the
/// writes were committed, the handle's one-off open, several threads'
/// figures and the median run's phases.
fn summary_lines(o: &mut String, report: &RunReport, opts: &RunOptions) {
    let (e, db) = (&report.experiment, is_db(report));
    let s = &e.summary;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "blobbench: {} timed run{} after {} warm-up{}; kvtest's lines above show the median run",
        s.runs,
        plural(s.runs),
        e.warmup_runs,
        plural(e.warmup_runs)
    );
    let timer = blobbench::engine::backend(report.layout).timer_covers(&opts.settings);
    let _ = writeln!(o, "timer (kvtest's total): {timer}");
    let commits = match opts.settings.commit_every {
        Some(1) if opts.update || opts.mix.is_some() => "a commit per write".to_string(),
        Some(n) if opts.update || opts.mix.is_some() => format!("a commit every {n} writes"),
        Some(_) => "each read in its own transaction (--multitrans)".to_string(),
        None => "one transaction per run (kvtest's way)".to_string(),
    };
    let _ = writeln!(
        o,
        "commits: {commits}; steady: the loop with its commits and the writes' deferred work, per op; one-off: open and close, per session"
    );
    if let Some(line) = handle_open_line(e) {
        let _ = writeln!(o, "{line}");
    }
    // --threads (concurrency): say what a per-op figure means with several readers.
    if e.params.threads > 1 {
        let _ = writeln!(
            o,
            "{} threads, each with its own {}: per-op figures are wall time / all threads' reads (total throughput)",
            e.params.threads,
            if db { "connection" } else { "file handles" }
        );
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let p = &report.median_run().phases;
    if db {
        let _ = writeln!(
            o,
            "phases of the median run: setup {:.3} ms, loop {:.3} ms, commit {:.3} ms, close {:.3} ms, checkpoint (excluded) {:.3} ms",
            ms(p.setup_ns),
            ms(p.loop_ns),
            ms(p.commit_ns),
            ms(p.close_ns),
            ms(p.checkpoint_ns)
        );
    }
}

/// The figures over the timed runs: kvtest's, the loop's, the steady
/// state's per op, the one-off per run, the rate.
fn figures_table(o: &mut String, s: &Summary, verb: &str) {
    let steady = s.steady_per_op_us.unwrap_or_default();
    let one_off = s.one_off_us.map(|st| Stat {
        mean: st.mean / 1000.0,
        median: st.median / 1000.0,
        min: st.min / 1000.0,
        max: st.max / 1000.0,
        ..st
    });
    let rows = [
        (format!("us per {verb} (kvtest)"), &s.per_op_us),
        (format!("us per {verb} (loop)"), &s.loop_per_op_us),
        (format!("us per {verb} (steady)"), &steady),
        ("ms one-off per run".to_string(), &one_off.unwrap_or_default()),
        ("MB/s (kvtest)".to_string(), &s.mb_per_s),
    ];
    let rows = rows.map(|(name, st)| {
        let figures = [st.median, st.mean, st.min, st.max].map(|v| format!("{v:.3}"));
        std::iter::once(name).chain(figures).chain([format!("{:.1}%", st.cv_pct)]).collect()
    });
    o.push_str(&table_text(&Table::new(&["", "median", "mean", "min", "max", "cv"], rows.to_vec()), false));
}

/// The latencies over the timed runs, all ops and each kind, and what the
/// clock read per op costs (nothing without latencies).
fn latency_table(o: &mut String, e: &Experiment, verb: &str) {
    let Some(l) = &e.latency else { return };
    let classes = e.class_latency.iter().map(|c| (c.class.clone(), &c.latency));
    let rows = std::iter::once(("all, over the timed runs".to_string(), l)).chain(classes).map(|(name, l)| {
        let figures = [l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us].map(|v| format!("{v:.2}"));
        [name, l.count.to_string()].into_iter().chain(figures).collect()
    });
    let first = format!("latency per {verb} (us)");
    let headers = [first.as_str(), "ops", "p50", "p90", "p99", "p99.9", "max"];
    o.push_str(&table_text(&Table::new(&headers, rows.collect()), false));
    let _ = writeln!(
        o,
        "harness: one clock read per op costs {:.0} ns = {:.2}% of the loop's mean per-op time",
        e.clock_cost_ns, e.clock_overhead_pct
    );
}

/// The OS counters of the median run `r`, then what a reader should know:
/// the cold cache, an interruption, a proxy's hop, the warnings.
fn closing_lines(o: &mut String, report: &RunReport, opts: &RunOptions, r: &RunSample) {
    let e = &report.experiment;
    let os = &r.os;
    let _ = writeln!(
        o,
        "OS, median run: {} read() calls for {:.1} MB, {} write() calls for {:.1} MB, {:.1} MB read from storage, {:.1} MB written to it; CPU user {:.0} ms, system {:.0} ms; {} major faults; peak RSS {:.0} MB",
        os.read_syscalls,
        os.read_call_bytes as f64 / 1e6,
        os.write_syscalls,
        os.write_call_bytes as f64 / 1e6,
        os.storage_read_bytes as f64 / 1e6,
        os.storage_write_bytes as f64 / 1e6,
        os.user_cpu_us as f64 / 1e3,
        os.system_cpu_us as f64 / 1e3,
        os.major_faults,
        os.peak_rss_kib as f64 / 1024.0
    );
    let colds: Vec<f64> = e.runs.iter().filter_map(|r| r.cold.as_ref().map(|c| c.resident_pct)).collect();
    if !colds.is_empty() {
        let worst = colds.iter().cloned().fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "cold: page cache evicted before each timed run (not timed); at most {worst:.1}% of sampled pages still resident"
        );
    }
    if report.interrupted {
        let _ =
            writeln!(o, "warning: interrupted; only {} of {} timed runs were made", e.summary.runs, opts.plan.repeat);
    }
    // A proxy's hop is in every timing: say so (the result file records it).
    if let Some(proxy) = e.params.server_info.as_ref().and_then(|i| i.setting("proxy")).filter(|p| *p != "none") {
        let _ = writeln!(o, "Through proxy {proxy}: every request's time includes its hop");
    }
    for w in &e.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
}

/// Where the engine's handle was opened, a one-off: in the warm-up (then
/// the timed runs read through it, kept open) or in timed runs' setups.
fn handle_open_line(e: &Experiment) -> Option<String> {
    let ms = e.handle_open_ns? as f64 / 1e6;
    let timed = e.runs.iter().filter(|r| r.opened_handle).count();
    Some(if timed == 0 {
        format!(
            "one-off, in no figure here: the engine's handle opened in {ms:.3} ms in the warm-up and stayed open; \
             the timed runs' setup only began their transaction on it"
        )
    } else {
        format!(
            "the engine's handle opened in the setup of {timed} timed run{} ({ms:.3} ms the first time)",
            plural(timed as u32)
        )
    })
}
