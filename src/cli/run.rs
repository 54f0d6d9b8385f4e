//! `run`: kvtest's options and output lines, then blobbench's summary.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};

use blobbench::drivers::run::RunOptions;
use blobbench::records::keys::Order;
use blobbench::records::mix::parse_mix;
use blobbench::records::zipf::parse_zipf;
use blobbench::records::{DbAccess, DbParams, FileParams, FileRead, FileWrite, KvParams, KvSync, SyncLevel};
use blobbench::records::{EngineSettings, Journal, Mix, Plan};
use blobbench::results::{self, ResultFile};
use blobbench::util::units;

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
    super::servers::warn_in_clear(args.servers.s3.as_deref(), Some(&args.path));
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
        Format::Text => print!("{}", super::run_text::text(&report, &opts)),
    }
    Ok(())
}
