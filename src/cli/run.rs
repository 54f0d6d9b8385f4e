//! `run`: kvtest's options and output lines, then blobbench's summary.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

use blobbench::drivers::run::{RunOptions, RunReport};
use blobbench::measure::Stat;
use blobbench::records::keys::Order;
use blobbench::records::mix::parse_mix;
use blobbench::records::zipf::parse_zipf;
use blobbench::records::{DbAccess, DbParams, FileParams, FileRead, FileWrite, KvParams, KvSync, SyncLevel};
use blobbench::records::{EngineSettings, Journal, Mix, Plan};
use blobbench::report::{table_text, Table};
use blobbench::results::{self, ResultFile};
use blobbench::util::units;
use blobbench::util::units::plural;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RunArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// A database, a flat directory or a tree (as made by init/export).
    pub path: PathBuf,
    /// Blobs to read or write (misses add cycles, as in kvtest).
    #[arg(long, default_value = "1000", value_parser = units::positive_u64)]
    pub count: u64,
    /// Largest key to use [default: the largest key present].
    #[arg(long, value_parser = units::positive_u32)]
    pub max_id: Option<u32>,
    /// First key.
    #[arg(long, default_value = "1", value_parser = units::positive_u32)]
    pub start: u32,
    /// Keys in ascending order (the default).
    #[arg(long, overrides_with_all = ["desc", "random"])]
    pub asc: bool,
    /// Keys in descending order.
    #[arg(long, overrides_with_all = ["asc", "random"])]
    pub desc: bool,
    /// Keys in kvtest's fixed pseudo-random order.
    #[arg(long, overrides_with_all = ["asc", "desc"])]
    pub random: bool,
    /// Hot keys: zipf:THETA draws key of rank r with probability ~ 1/r^THETA
    /// (e.g. zipf:0.99), ranks scattered over the keys; replaces --asc/--desc/--random.
    #[arg(long, value_name = "DIST", value_parser = parse_zipf)]
    pub keys: Option<f64>,
    /// Overwrite blobs (same size, new random content) instead of reading.
    #[arg(long, conflicts_with = "mix")]
    pub update: bool,
    /// Mix reads and same-size overwrites in this ratio, e.g. 95:5; latency
    /// percentiles are given per class.
    #[arg(long, value_name = "READ:WRITE", value_parser = parse_mix)]
    pub mix: Option<Mix>,
    /// Database: use sqlite3_blob_read/write instead of SQL.
    #[arg(long)]
    pub blob_api: bool,
    /// Database: PRAGMA cache_size (pages, or -KiB).
    #[arg(long, default_value = "1000", value_parser = units::parse_int, allow_hyphen_values = true)]
    pub cache_size: i64,
    /// Database: PRAGMA mmap_size in bytes.
    #[arg(long, default_value = "0", value_parser = units::non_negative_i64)]
    pub mmap: i64,
    /// Database: PRAGMA journal_mode.
    #[arg(long, value_parser = journal_mode(), ignore_case = true)]
    pub jmode: Option<Journal>,
    /// Database: PRAGMA synchronous.
    #[arg(long, value_enum)]
    pub sync: Option<SyncArg>,
    /// Database: synchronous OFF (same as --sync off).
    #[arg(long, conflicts_with = "sync")]
    pub nosync: bool,
    /// kvtest's flag: each operation in its own transaction (for writes,
    /// the same as --commit-every 1).
    #[arg(long, conflicts_with = "commit_every")]
    pub multitrans: bool,
    /// Writes: a write returns once N writes have been committed (durably,
    /// or made visible when durability is relaxed): SQLite and the
    /// key-value engines commit every N writes, files fsync their directory
    /// every N writes with --fsync-dir [default: one transaction per run,
    /// as kvtest].
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: Option<u32>,
    /// Database: stop the timer before the closing checkpoint (timed apart).
    #[arg(long)]
    pub nocheckpoint: bool,
    /// Database: run PRAGMA integrity_check after the runs.
    #[arg(long)]
    pub integrity_check: bool,
    /// Database: print SQLite's memory and cache counters.
    #[arg(long)]
    pub stats: bool,
    /// Files: stdio is kvtest's fopen/fread; posix is open/fstat/read/close.
    #[arg(long, value_enum, default_value = "stdio")]
    pub file_read: FileReadArg,
    /// Files: truncate is kvtest's fopen("wb"); inplace overwrites; replace renames a new file over the old.
    #[arg(long, value_enum, default_value = "truncate")]
    pub file_write: FileWriteArg,
    /// Files: fsync each file after writing it.
    #[arg(long)]
    pub fsync: bool,
    /// Files: fsync the directory too, once per commit (every
    /// --commit-every N writes, or at the end of the run): what makes a
    /// rename or a new file durable.
    #[arg(long)]
    pub fsync_dir: bool,
    /// Key-value engines: durable commits wait for the disk; fast ones do not
    /// (LMDB MDB_NOSYNC, redb Durability::None, fjall buffered journal).
    #[arg(long, value_enum, default_value = "durable")]
    pub kv_sync: KvSyncArg,
    #[command(flatten)]
    pub servers: super::servers::ServerArgs,
    /// Server engines: time a round trip with no work per op (PostgreSQL: a
    /// prepared SELECT 1) on the same connection instead of a read (the
    /// protocol and socket floor under each read).
    #[arg(long, conflicts_with_all = ["update", "mix", "threads"])]
    pub round_trip: bool,
    /// Timed runs (the kvtest lines show the median one).
    #[arg(long, default_value = "5", value_parser = repeat_count)]
    pub repeat: u32,
    /// Untimed runs before the timed ones [default: 1, or 0 with --cold].
    #[arg(long, value_parser = warmup_count)]
    pub warmup: Option<u32>,
    /// Evict the dataset from the page cache before each timed run.
    #[arg(long)]
    pub cold: bool,
    /// Do not time each operation (no percentiles; no clock reads in the loop).
    #[arg(long)]
    pub no_latency: bool,
    /// Seed of the random content written by --update [default: a new one
    /// each time, recorded in the results]. SQLite skips pages whose bytes do
    /// not change, so rewriting what the last run wrote would be nearly free.
    #[arg(long, value_parser = units::non_negative_u64)]
    pub seed: Option<u64>,
    /// Write the results (schema in docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per timed run to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    // --threads (concurrency): T readers at once, each with its own connection or file handles.
    /// Read with this many threads at once, each with its own connection or files (reads only).
    #[arg(long, value_parser = thread_count)]
    pub threads: Option<u32>,
    /// Run the mix (or --update's writes, or reads) with N clients at once, each with its own
    /// connection or handle, every run one window shared by all clients: ops/s over all clients,
    /// as advise --clients measures each candidate.
    #[arg(long, value_name = "N", value_parser = super::args::clients_count, conflicts_with_all = ["threads", "round_trip", "cold", "start_at", "json", "csv", "format"])]
    pub clients: Option<u32>,
    /// With --clients: threads of one process, or processes of this binary.
    #[arg(long, value_enum, default_value = "threads", requires = "clients")]
    pub clients_are: super::args::ClientsAreArg,
    /// With --clients: each run's window, e.g. 500ms, 3s [default: 1s].
    #[arg(long, value_name = "DURATION", requires = "clients", value_parser = units::duration)]
    pub window: Option<std::time::Duration>,
    /// With --clients: an open loop at R operations per second over all clients.
    #[arg(long, value_name = "R", requires = "clients", allow_hyphen_values = true, value_parser = super::args::rate)]
    pub rate: Option<f64>,
    /// Database with --clients: one of SQLite's ways of writing with several clients.
    #[arg(long, value_enum, value_name = "HOW", requires = "clients")]
    pub sqlite_writers: Option<super::args::SqliteWritersArg>,
    /// Begin the timed runs at this wall-clock time (RFC 3339, e.g.
    /// 2026-11-27T19:00:00Z, or unix seconds), after the open and the
    /// warm-ups: clients on several hosts started at once, merged with
    /// `report --merge` (docs/several-hosts.md).
    #[arg(long, value_name = "TIME", value_parser = super::start_at::parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
}

fn thread_count(s: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--threads")?;
    if v > 1024 {
        return Err(units::UnitError::from(format!("--threads {v} is absurd (at most 1024)")));
    }
    Ok(v)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SyncArg {
    Off,
    Normal,
    Full,
    Extra,
}

/// `--jmode`: SQLite's journal modes, by their names.
fn journal_mode() -> impl TypedValueParser<Value = Journal> {
    let names = Journal::ALL.map(Journal::name);
    PossibleValuesParser::new(names).map(|name| Journal::parse(&name).expect("one of the modes' names"))
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KvSyncArg {
    Durable,
    Fast,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FileReadArg {
    Stdio,
    Posix,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FileWriteArg {
    Truncate,
    Inplace,
    Replace,
}

fn repeat_count(s: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--repeat")?;
    if v > 10_000 {
        return Err(units::UnitError::from(format!("--repeat {v} is absurd (at most 10000)")));
    }
    Ok(v)
}

fn warmup_count(s: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(s, 0, "--warmup")?;
    if v > 1000 {
        return Err(units::UnitError::from(format!("--warmup {v} is absurd (at most 1000)")));
    }
    Ok(v)
}

impl RunArgs {
    pub fn options(&self) -> RunOptions {
        let order = if self.random {
            Order::Random
        } else if self.desc {
            Order::Desc
        } else {
            Order::Asc
        };
        RunOptions {
            path: self.path.clone(),
            count: self.count,
            max_id: self.max_id,
            start: self.start,
            order,
            update: self.update,
            settings: self.settings(),
            round_trip: self.round_trip,
            integrity_check: self.integrity_check,
            stats: self.stats,
            plan: Plan {
                repeat: self.repeat,
                warmup: self.warmup.unwrap_or(if self.cold { 0 } else { 1 }),
                cold: self.cold,
                latency: !self.no_latency,
            },
            seed: self.seed.unwrap_or_else(blobbench::drivers::run::fresh_seed),
            zipf: self.keys,
            mix: self.mix,
        }
    }

    /// Each engine's options, as the flags give them.
    fn settings(&self) -> EngineSettings {
        let sync = if self.nosync {
            Some(SyncLevel::Off)
        } else {
            self.sync.map(|s| match s {
                SyncArg::Off => SyncLevel::Off,
                SyncArg::Normal => SyncLevel::Normal,
                SyncArg::Full => SyncLevel::Full,
                SyncArg::Extra => SyncLevel::Extra,
            })
        };
        EngineSettings {
            db: DbParams {
                access: if self.blob_api { DbAccess::BlobApi } else { DbAccess::Sql },
                cache_size: self.cache_size,
                mmap_bytes: self.mmap,
                journal_mode: self.jmode,
                sync,
                nocheckpoint: self.nocheckpoint,
                writers: self.sqlite_writers.and_then(|w| w.0).unwrap_or_default(),
            },
            files: FileParams {
                read: match self.file_read {
                    FileReadArg::Stdio => FileRead::Stdio,
                    FileReadArg::Posix => FileRead::Posix,
                },
                write: match self.file_write {
                    FileWriteArg::Truncate => FileWrite::Truncate,
                    FileWriteArg::Inplace => FileWrite::Inplace,
                    FileWriteArg::Replace => FileWrite::Replace,
                },
                fsync: self.fsync,
                sync_dir: self.fsync_dir,
            },
            kv: KvParams {
                sync: match self.kv_sync {
                    KvSyncArg::Durable => KvSync::Durable,
                    KvSyncArg::Fast => KvSync::Fast,
                },
            },
            commit_every: if self.multitrans { Some(1) } else { self.commit_every },
            ..self.servers.settings()
        }
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    // Output paths are checked before measuring, not after an hour of it.
    for p in args.json.iter().chain(args.csv.iter()) {
        blobbench::util::fsutil::check_writable_output(p)?;
    }
    let opts = args.options();
    if args.commit_every.is_some() && !opts.update && opts.mix.is_none_or(|m| m.write == 0) {
        anyhow::bail!(
            "--commit-every applies to writes and this run only reads (give --update or --mix; --multitrans is \
             kvtest's one transaction per read)"
        );
    }
    if args.threads.is_some() && (opts.mix.is_some() || opts.zipf.is_some()) {
        anyhow::bail!("--threads reads with kvtest's orders only; --mix and --keys run in one thread");
    }
    if let Some(clients) = args.clients {
        if let Some(w) = args.sqlite_writers {
            w.one_way()?;
        }
        let c = super::run_clients::ClientsRun {
            clients,
            processes: matches!(args.clients_are, super::args::ClientsAreArg::Processes),
            window: args.window.unwrap_or(super::run_clients::DEFAULT_WINDOW),
            rate: args.rate,
        };
        print!("{}", super::run_clients::run(&opts, &c)?);
        return Ok(());
    }
    // --threads (concurrency): several readers at once, in parallel_read.
    let (report, start, end) = super::start_at::timed(&opts, args.threads, args.start_at)?;
    let mut results = ResultFile::from_run(&report, &args.path);
    args.label.apply(&mut results);
    let host = results.environment.hostname.clone();
    results.run = Some(super::start_at::section(&args.servers, &args.path, &host, (start, end), args.start_at));
    if let Some(p) = &args.json {
        results::write(p, &results)?;
    }
    if let Some(p) = &args.csv {
        blobbench::util::fsutil::write_atomic(p, blobbench::results::csv::runs(&results).as_bytes())?;
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&results)?),
        Format::Text => print!("{}", text(&report, &opts)),
    }
    Ok(())
}

/// kvtest's lines for the median run, then blobbench's summary.
pub fn text(report: &RunReport, opts: &RunOptions) -> String {
    let mut o = String::new();
    let e = &report.experiment;
    let r = report.median_run();
    let db = report.layout == blobbench::engine::sqlite::KIND;
    let verb = match opts.mix {
        Some(_) => "op",
        None if opts.update => "write",
        // A round trip with no work (SELECT 1), the floor under each read.
        None if opts.round_trip => "round trip",
        None => "read",
    };
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
    let p = &r.phases;
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
    if let Some(l) = &e.latency {
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
        let _ = writeln!(o, "warning: interrupted; only {} of {} timed runs were made", s.runs, opts.plan.repeat);
    }
    // A proxy's hop is in every timing: say so (the result file records it).
    if let Some(proxy) = e.params.server_info.as_ref().and_then(|i| i.setting("proxy")).filter(|p| *p != "none") {
        let _ = writeln!(o, "Through proxy {proxy}: every request's time includes its hop");
    }
    for w in &e.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

/// Where the engine's handle was opened, a one-off: in the warm-up (then
/// the timed runs read through it, kept open) or in timed runs' setups.
fn handle_open_line(e: &blobbench::measure::Experiment) -> Option<String> {
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
