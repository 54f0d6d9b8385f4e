//! `crashtest` and its hidden child, `crash-writer`: arguments, the table,
//! and what a process kill can and cannot show.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use blobbench::powercut::Model;
use blobbench::results::{self, ResultFile};
use blobbench::studies::crashtest::{self, CrashOptions, CrashReport, Method, WriterSpec};
use blobbench::util::units;

use super::progress;

/// A parsed `--method` list, kept whole (clap would split a `Vec`).
#[derive(Debug, Clone)]
pub struct Methods(Vec<Method>);

fn methods(text: &str) -> Result<Methods, units::UnitError> {
    Method::parse_list(text).map(Methods)
}

fn count(text: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(text, 1, "value")?;
    if v > 100_000 {
        return Err(units::UnitError::from(format!("{text} is too large (at most 100000)")));
    }
    Ok(v)
}

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct CrashtestArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Write methods, comma-separated: db-wal-normal, db-wal-full, db-delete, db-delete-extra, db-off,
    /// truncate[-fsync], inplace[-fsync], replace[-fsync], replace-fsync-dir, lmdb-durable, lmdb-fast,
    /// redb-durable, redb-fast, fjall-durable, fjall-fast, or the groups all, db, files, kv.
    #[arg(long, default_value = "all", value_parser = methods)]
    pub method: Methods,
    /// Kills per method [default: 50, or 6 with --quick].
    #[arg(long, value_parser = count)]
    pub kills: Option<u32>,
    /// Blobs in each dataset [default: 100, or 40 with --quick].
    #[arg(long, value_parser = count)]
    pub count: Option<u32>,
    /// Directory to make the datasets in (a temporary directory inside it, removed after) [default: the system's
    /// temporary directory]. Use the filesystem you care about.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// A few kills per method on small datasets: a check that fits in CI.
    #[arg(long)]
    pub quick: bool,
    /// Seed of the kill schedule and of the blob sizes (same seed, same schedule).
    #[arg(long, default_value = "1", value_parser = units::non_negative_u64)]
    pub seed: u64,
    /// Write the results (schema in docs/results-schema.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Cut the power instead of killing the writer: the datasets live on a FUSE layer that drops what was not
    /// fsync'd (needs /dev/fuse, and root or fusermount3 from Debian's fuse3).
    #[arg(long)]
    pub power_cut: bool,
    /// Power-cut model: strict, torn-512, torn-4k (docs/crash-safety.md) [default: strict].
    #[arg(long, value_name = "NAME", requires = "power_cut", value_parser = model)]
    pub model: Option<Model>,
}

fn model(text: &str) -> Result<Model, String> {
    Model::parse(text)
}

pub fn crashtest(args: CrashtestArgs) -> anyhow::Result<()> {
    if let Some(p) = &args.json {
        blobbench::util::fsutil::check_writable_output(p)?;
    }
    let writer = std::env::current_exe()?;
    let mut opts = CrashOptions::new(writer);
    opts.methods = args.method.0.clone();
    let (kills, count) = if args.quick {
        (crashtest::QUICK_KILLS, crashtest::QUICK_COUNT)
    } else {
        (crashtest::DEFAULT_KILLS, crashtest::DEFAULT_COUNT)
    };
    opts.kills = args.kills.unwrap_or(kills);
    opts.count = args.count.unwrap_or(count);
    if let Some(w) = &args.workdir {
        opts.workdir = w.clone();
    }
    opts.seed = args.seed;
    if args.power_cut {
        return super::powercut::run(&opts, args.model.unwrap_or(Model::Strict), args.json.as_deref());
    }
    let progress = progress::for_terminal();
    let report = crashtest::crashtest(&opts, progress.as_ref())?;
    let mut results = ResultFile::from_crashtest(&report, &opts.workdir);
    args.label.apply(&mut results);
    if let Some(p) = &args.json {
        results::write(p, &results)?;
    }
    let fs = results.environment.storage.as_ref().map(|s| s.fs_type.as_str()).unwrap_or("unknown filesystem");
    print!("{}", table(&report, fs));
    let broken: Vec<String> = report
        .section
        .broken_promises()
        .map(|m| {
            format!(
                "{} ({} integrity failures, {} torn, {} missing, {} lost)",
                m.method, m.integrity_failures, m.torn, m.missing, m.unexpected_version
            )
        })
        .collect();
    if !broken.is_empty() {
        bail!("a journaled SQLite method was damaged by a process kill: {}", broken.join("; "));
    }
    Ok(())
}

fn table(report: &CrashReport, fs: &str) -> String {
    let s = &report.section;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "crashtest: {} kill{} per method (SIGKILL after 0..{} ms of writing, seed {}); {} blobs of {}..{} bytes each",
        s.kills_per_method,
        if s.kills_per_method == 1 { "" } else { "s" },
        s.max_delay_us / 1000,
        s.seed,
        s.blobs,
        s.blob_min_bytes,
        s.blob_max_bytes
    );
    let _ = writeln!(
        o,
        "datasets in {} ({fs}); one write = one blob, one transaction for SQLite and the key-value engines\n",
        s.workdir
    );
    let _ = writeln!(
        o,
        "{:<16}{:>6}{:>11}{:>7}{:>9}{:>6}{:>7}{:>9}{:>11}{:>11}",
        "method", "kills", "integrity", "torn", "missing", "lost", "stray", "damaged", "whole old", "whole new"
    );
    for m in &s.methods {
        let _ = writeln!(
            o,
            "{:<16}{:>6}{:>11}{:>7}{:>9}{:>6}{:>7}{:>9}{:>11}{:>11}",
            m.method,
            m.kills,
            m.integrity_failures,
            m.torn,
            m.missing,
            m.unexpected_version,
            m.stray_files,
            m.damaged_kills,
            m.intact_old,
            m.intact_new
        );
    }
    o.push_str(crashtest::LEGEND);
    let _ = writeln!(o, "\n{}", crashtest::LIMITS);
    if report.interrupted {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer kills than asked");
    }
    o
}

#[derive(Debug, Args)]
pub struct CrashWriterArgs {
    #[arg(long, value_parser = methods)]
    pub method: Methods,
    #[arg(long, value_parser = count)]
    pub count: u32,
    #[arg(long, value_parser = units::non_negative_u64)]
    pub seed: u64,
    #[arg(long, value_parser = units::non_negative_u64)]
    pub base: u64,
    #[arg(long)]
    pub acks: Option<PathBuf>,
    pub path: PathBuf,
}

/// The child: writes until the parent kills it.
pub fn crash_writer(args: CrashWriterArgs) -> anyhow::Result<()> {
    let [method] = args.method.0[..] else {
        bail!("crash-writer takes exactly one write method");
    };
    let spec =
        WriterSpec { method, path: args.path, count: args.count, seed: args.seed, base: args.base, acks: args.acks };
    let ready = || {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", crashtest::READY);
        let _ = out.flush();
    };
    match crashtest::write_until_killed(&spec, ready)? {}
}
