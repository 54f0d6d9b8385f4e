//! `init`, `export` and `stat`: kvtest's dataset commands.

use std::path::PathBuf;

use clap::Args;

use blobbench::engine::dataset::{self, from_dir, StatReport};
use blobbench::records::sizes::parse_size_dist;
use blobbench::records::{DatasetSpec, SizeDist};
use blobbench::records::{EngineKind, PgStorage};
use blobbench::report::{table_text, ColumnKind, Table};
use blobbench::studies::context::AsProgress;
use blobbench::util::units;

use super::progress;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct InitArgs {
    /// The database file to create.
    pub db: PathBuf,
    /// Number of blobs (keys 1..N).
    #[arg(long, default_value = "1000", value_parser = units::positive_u32)]
    pub count: u32,
    /// Mean blob size in bytes (K, M, KiB, MiB... suffixes work).
    #[arg(long, default_value = "10000", value_parser = units::positive_u32)]
    pub size: u32,
    /// Each blob's size is uniform in [size-variance, size+variance].
    #[arg(long, default_value = "0", value_parser = non_negative_u32)]
    pub variance: u32,
    /// Database page size: a power of two from 512 to 65536.
    #[arg(long, default_value = "4096", value_parser = units::page_size)]
    pub pagesize: u32,
    /// Seed of the random sizes and content.
    #[arg(long, default_value = "1", value_parser = units::non_negative_u64)]
    pub seed: u64,
    /// Blob sizes drawn from a named distribution instead of --size/--variance:
    /// uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH
    /// (lines of SIZE COUNT).
    #[arg(long, value_name = "DIST", value_parser = parse_size_dist, conflicts_with_all = ["size", "variance"])]
    pub sizes: Option<SizeDist>,
    /// Every regular file under DIR becomes one blob (content and size as
    /// they are); a manifest DB.manifest.tsv lists key, size and path.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["count", "size", "variance", "sizes", "sizes_from", "seed"])]
    pub from: Option<PathBuf>,
    /// Random content whose sizes follow the files under DIR (nothing copied).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["size", "variance", "sizes"])]
    pub sizes_from: Option<PathBuf>,
    /// Replace DB if it exists.
    #[arg(long)]
    pub force: bool,
}

fn non_negative_u32(s: &str) -> Result<u32, units::UnitError> {
    units::parse_at_least(s, 0, "value")
}

impl InitArgs {
    /// The dataset to make; `--sizes-from` scans its directory here.
    pub fn spec(&self) -> anyhow::Result<DatasetSpec> {
        let sizes = match &self.sizes_from {
            Some(dir) => {
                let scan = from_dir::scan(dir)?;
                print_skipped(&scan.skipped);
                Some(scan.size_dist())
            }
            None => self.sizes.clone(),
        };
        Ok(DatasetSpec {
            count: self.count,
            size: self.size,
            variance: self.variance,
            page_size: self.pagesize,
            seed: self.seed,
            sizes,
            ..DatasetSpec::default()
        })
    }
}

/// One line per reason something under --from/--sizes-from was skipped.
pub fn print_skipped(skipped: &from_dir::Skipped) {
    for (why, n) in &skipped.0 {
        println!("skipped {n} {}", why.describe());
    }
}

pub fn init(args: InitArgs) -> anyhow::Result<()> {
    let bar = progress::for_terminal();
    let progress = AsProgress::new(bar.as_ref());
    let r = match &args.from {
        Some(dir) => {
            let scan = from_dir::scan(dir)?;
            let made = from_dir::init_from(&args.db, &scan, args.pagesize, args.force, &progress)?;
            print_skipped(&made.skipped);
            println!("manifest: {}", made.manifest.display());
            made.init
        }
        None => dataset::init(&args.db, &args.spec()?, args.force, &progress)?,
    };
    let secs = r.elapsed_ns as f64 / 1e9;
    println!(
        "Created {}: {} blobs, {} bytes of content, file {} bytes, in {:.3} s ({:.1} MB/s)",
        args.db.display(),
        r.count,
        r.content_bytes,
        r.file_bytes,
        secs,
        r.content_bytes as f64 / secs / 1e6
    );
    Ok(())
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ExportArgs {
    /// The database to read.
    pub db: PathBuf,
    /// What to create: a directory of files (one per blob) or an engine's dataset.
    pub dir: PathBuf,
    /// Names like 00/00/01 instead of 000001, at most 100 entries per directory.
    #[arg(long, conflicts_with = "engine")]
    pub tree: bool,
    /// Build this engine's dataset instead of flat files (external: names
    /// in SQLite, files beside them).
    #[arg(long, value_parser = super::engines::buildable())]
    pub engine: Option<EngineKind>,
    /// Replace DIR if it already holds a previous export.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub servers: super::servers::ServerArgs,
    /// PostgreSQL bytea column storage: extended (compressed, PostgreSQL's
    /// default) or external (out of line, never compressed).
    #[arg(long, value_enum, default_value = "extended")]
    pub pg_storage: PgStorageArg,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PgStorageArg {
    Extended,
    External,
}

pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    let bar = progress::for_terminal();
    let progress = AsProgress::new(bar.as_ref());
    let r = match args.engine {
        Some(kind) => {
            let storage = match args.pg_storage {
                PgStorageArg::Extended => PgStorage::Extended,
                PgStorageArg::External => PgStorage::External,
            };
            if let Some(notice) = args.servers.export_notice(&args.dir)? {
                println!("{notice}");
            }
            super::servers::warn_in_clear(args.servers.s3.as_deref(), args.force.then_some(args.dir.as_path()));
            let mut settings = args.servers.settings();
            settings.pg.storage = storage;
            dataset::build_with(kind, &args.db, &args.dir, args.force, &settings, &progress)?
        }
        None => dataset::export(&args.db, &args.dir, args.tree, args.force, &progress)?,
    };
    let secs = r.elapsed_ns as f64 / 1e9;
    println!(
        "Exported {} blobs ({} bytes) to {} ({} layout) in {:.3} s ({:.1} MB/s, {:.1} blobs/s)",
        r.files,
        r.bytes,
        args.dir.display(),
        r.layout.name(),
        secs,
        r.bytes as f64 / secs / 1e6,
        r.files as f64 / secs
    );
    if let Some(location) = &r.location {
        println!("Objects in {location}");
    }
    if r.multipart_blobs > 0 {
        println!(
            "{} blob{} at or above the multipart threshold went up by multipart upload",
            r.multipart_blobs,
            units::plural(r.multipart_blobs)
        );
    }
    if r.busy_retries > 0 {
        println!(
            "The store answered busy (5xx) or a connection broke {} time{}; each of those requests was tried again after a pause, within the time above",
            r.busy_retries,
            if r.busy_retries == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct StatArgs {
    /// A database, a flat directory or a tree (none, with --s3 URL and
    /// --s3-bucket: list the blobbench datasets in that bucket).
    pub path: Option<PathBuf>,
    /// Rebuild the database first (VACUUM); rewrites the file.
    #[arg(long)]
    pub vacuum: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub servers: super::servers::ServerArgs,
}

pub fn stat(args: StatArgs) -> anyhow::Result<()> {
    let settings = args.servers.settings();
    let Some(path) = &args.path else {
        return super::drop::list(&args.servers, args.json);
    };
    super::servers::warn_in_clear(args.servers.s3.as_deref(), Some(path));
    let report = dataset::stat_with(path, args.vacuum, &settings)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    // kvtest's lines first, in kvtest's format; then blobbench's, as a table.
    let facts = match &report {
        StatReport::Db(s) => {
            print_sizes(s.entries, s.avg_size, s.min_size, s.max_size);
            println!("Page-size:          {:8}", s.page_size);
            println!("Page-count:         {:8}", s.page_count);
            println!("Freelist-count:     {:8}", s.freelist_count);
            for line in &s.integrity {
                println!("Integrity-check:    {line}");
            }
            vec![
                fact("Journal mode:", &s.journal_mode, ""),
                fact("Content bytes:", s.content_bytes, ""),
                fact("File bytes:", s.file_bytes + s.wal_bytes, ""),
                fact("Allocated bytes:", s.allocated_bytes, DU),
            ]
        }
        StatReport::Dir(s) => {
            print_sizes(s.entries, s.avg_size, s.min_size, s.max_size);
            vec![
                fact("Layout:", s.layout.name(), ""),
                fact("Directories:", s.directories, ""),
                fact("Content bytes:", s.content_bytes, ""),
                fact("Apparent bytes:", s.apparent_bytes, "(files and directories, as ls shows them)"),
                fact("Allocated bytes:", s.allocated_bytes, DU),
            ]
        }
        StatReport::Server(s) => {
            let avg = if s.entries > 0 { s.content_bytes as f64 / s.entries as f64 } else { 0.0 };
            print_sizes(s.entries, avg, s.min_size, s.max_size);
            let mut facts = vec![
                fact("Engine:", s.engine.name(), &format!("({})", s.blobs_in)),
                fact("Content bytes:", s.content_bytes, ""),
            ];
            facts.extend(s.sizes.iter().map(|l| fact(&format!("{}:", l.name), l.bytes, &format!("({})", l.how))));
            let du = s.local.as_ref().map(|l| (l.allocated_bytes, format!("({}, as du counts them)", l.covers)));
            facts.extend(du.map(|(bytes, covers)| fact("Allocated bytes:", bytes, &covers)));
            facts
        }
        StatReport::Kv(s) => {
            print_sizes(s.entries, s.avg_size, s.min_size, s.max_size);
            vec![
                fact("Engine:", s.engine.name(), ""),
                fact("Content bytes:", s.content_bytes, ""),
                fact("File bytes:", s.file_bytes, "(the engine's files, as ls shows them)"),
                fact("Allocated bytes:", s.allocated_bytes, DU),
            ]
        }
    };
    let facts = Table::new(&["", "", ""], facts).with_kinds(&[ColumnKind::Text, ColumnKind::Figure]);
    println!("{}", table_text(&facts, false).trim_end());
    Ok(())
}

const DU: &str = "(blocks on disk, as du counts them)";

/// One row of `stat`'s table: what, how much, and what that counts.
fn fact(label: &str, value: impl std::fmt::Display, note: &str) -> Vec<String> {
    vec![label.to_string(), value.to_string(), note.to_string()]
}

/// kvtest's four size lines, shared by databases and directories.
fn print_sizes(entries: u64, avg: f64, min: u64, max: u64) {
    println!("Number of entries:  {entries:8}");
    println!("Average value size: {:8}", avg as u64);
    println!("Minimum value size: {min:8}");
    println!("Maximum value size: {max:8}");
}
