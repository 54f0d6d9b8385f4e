//! `concurrency`: the shared-connection vs connection-per-thread study on
//! this machine, printed as tables and written as a report (results.json,
//! line charts, index.html).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::concurrency::{self, Concurrency, ConcurrencyOptions, Modes, Workload, MAX_THREADS};
use blobbench::studies::context::StudyContext;
use blobbench::util::units::{self, UnitError};

use super::progress;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct ConcurrencyArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Thread counts, comma-separated [default: 1,2,4,8,16,20; --quick: 1,2,4]. Mixed runs this many readers plus as many writers.
    #[arg(long, value_name = "LIST", value_parser = thread_list)]
    pub threads: Option<ThreadList>,
    /// Seconds per timed run of each point [default: 30, as the study; --quick: 0.2].
    #[arg(long, value_name = "SECS", value_parser = units::seconds)]
    pub duration: Option<f64>,
    /// --rounds: timed runs per point, run in rounds, the median shown
    /// [default: 3; --quick: 6]; and the most rounds of the blob readers
    /// at each thread count and of the writers [default: 20; --quick: 12].
    /// --budget: time those rounds may take once 6 have run, per thread
    /// count and for the writers [default: 60s; --quick: 4s].
    #[command(flatten)]
    pub rounds: super::rounds::RoundsArgs,
    /// Rows in the table that read and mixed runs read from.
    #[arg(long, default_value = "50000", value_parser = units::positive_u32)]
    pub rows: u32,
    /// Which workload to run (blobs: kvtest blobs under 1, 2 and 4 parallel readers; writers: durable blob
    /// writers with as many readers beside them, on every engine).
    #[arg(long, value_enum, default_value = "all")]
    pub workload: WorkloadArg,
    /// Durable blob writers at once, comma-separated [default: 1,2,4,8,16; --quick: 1,2,4]; as many readers run
    /// beside them.
    #[arg(long, value_name = "LIST", value_parser = thread_list)]
    pub writers: Option<ThreadList>,
    /// Values of the parameters to combine, comma-separated: shared, per-thread, wal, delete, private-cache,
    /// shared-cache, rw, ro, sync-off, sync-normal, sync-full, sync-extra. A parameter none of whose values is
    /// named keeps all of them (synchronous: FULL only).
    #[arg(long, value_name = "LIST", value_parser = modes)]
    pub modes: Option<Modes>,
    /// Inserts per write transaction (1: each insert is its own transaction, as the study).
    #[arg(long, default_value = "1", value_parser = batch_size)]
    pub batch: u32,
    /// Milliseconds a connection waits for a lock before SQLITE_BUSY (counted as an error).
    #[arg(long, value_name = "MS", default_value = "5000", value_parser = busy_timeout)]
    pub busy_timeout: u32,
    /// Short points in 6 rounds, one parameter varied at a time, threads and writers 1,2,4: about two minutes.
    #[arg(long)]
    pub quick: bool,
    #[arg(long, value_parser = super::engines::key_value_list, default_value = "", help = super::engines::key_value_help("Engines written by the durable writers besides SQLite, files and LMDB; the servers among them are also read by 1, 2, 4, 8 and 16 clients at once (a connection each)"))]
    pub engines: super::engines::EngineList,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
    /// Where to make the databases (a temporary subdirectory is made inside and removed).
    #[arg(long, default_value = ".")]
    pub workdir: PathBuf,
    /// Directory for results.json, the charts and index.html.
    #[arg(long, default_value = "blobbench-concurrency")]
    pub out: PathBuf,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Seed of the table's content and of the keys and values the threads use.
    #[arg(long, default_value = "1", value_parser = units::non_negative_u64)]
    pub seed: u64,
    /// Refused: concurrency's writes are not committed as a workload states
    /// (see the error).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true)]
    pub commit_every: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ThreadList(Vec<u32>);

fn thread_list(s: &str) -> Result<ThreadList, UnitError> {
    let list = units::parse_list(s, |t| {
        let v: u32 = units::parse_at_least(t, 1, "a thread count")?;
        if v > MAX_THREADS {
            return Err(UnitError::from(format!("{v} threads is absurd (at most {MAX_THREADS})")));
        }
        Ok(v)
    })?;
    Ok(ThreadList(list))
}

fn modes(s: &str) -> Result<Modes, String> {
    Modes::parse(s).map_err(|e| e.to_string())
}

fn batch_size(s: &str) -> Result<u32, UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--batch")?;
    if v > 1_000_000 {
        return Err(UnitError::from(format!("--batch {v} is absurd (at most 1000000)")));
    }
    Ok(v)
}

fn busy_timeout(s: &str) -> Result<u32, UnitError> {
    let v: u32 = units::parse_at_least(s, 0, "--busy-timeout")?;
    if v > 600_000 {
        return Err(UnitError::from(format!("--busy-timeout {v} ms is absurd (at most 600000)")));
    }
    Ok(v)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WorkloadArg {
    Read,
    Write,
    Mixed,
    Blobs,
    Writers,
    All,
}

impl ConcurrencyArgs {
    /// The context: the work directory, the servers' settings, the
    /// engines (the servers read by clients, the stores written), the
    /// rounds, the seed and `--quick`.
    fn context(&self) -> StudyContext {
        StudyContext {
            engines: self.engines.0.clone(),
            rounds: self.rounds.asked(),
            seed: self.seed,
            quick: self.quick,
            observer: progress::for_terminal(),
            ..self.servers.context(&self.workdir)
        }
    }

    fn options(&self) -> ConcurrencyOptions {
        let mut o = if self.quick { ConcurrencyOptions::quick() } else { ConcurrencyOptions::new() };
        if let Some(t) = &self.threads {
            o.threads = t.0.clone();
        }
        if let Some(d) = self.duration {
            o.duration = Duration::from_secs_f64(d);
        }
        o.repeat = self.rounds.rounds.unwrap_or(o.repeat);
        o.rows = self.rows;
        o.workloads = match self.workload {
            WorkloadArg::Read => vec![Workload::Read],
            WorkloadArg::Write => vec![Workload::Write],
            WorkloadArg::Mixed => vec![Workload::Mixed],
            WorkloadArg::Blobs => vec![Workload::Blobs],
            WorkloadArg::Writers => vec![Workload::Writers],
            WorkloadArg::All => Workload::ALL.to_vec(),
        };
        if let Some(m) = &self.modes {
            o.modes = m.clone();
        }
        o.batch = self.batch;
        o.busy_timeout_ms = self.busy_timeout;
        if let Some(w) = &self.writers {
            o.writer_counts = w.0.clone();
        }
        o
    }
}

pub fn run(args: ConcurrencyArgs) -> anyhow::Result<()> {
    if args.commit_every.is_some() {
        anyhow::bail!("--commit-every does not apply to concurrency: its writers commit every write durably by design (advise, suite and run take it)");
    }
    super::output::prepare_report_dir(&args.out, args.force)?;
    let (ctx, opts) = (args.context(), args.options());
    opts.validate()?;
    let study = Concurrency::new(&ctx, &opts, concurrency::default_rounds(ctx.quick));
    let points = opts.plan(ctx.quick).len() * opts.threads.len();
    // On stdout: a failure must leave exactly one line, the error, on stderr.
    println!(
        "concurrency: {points} points x {} run(s) x {:.1} s, plus setup and checks{}",
        opts.repeat,
        opts.duration.as_secs_f64(),
        if opts.workloads.contains(&Workload::Blobs) { ", plus the blob readers" } else { "" }
    );
    if opts.workloads.contains(&Workload::Writers) {
        let names: Vec<&str> = study.writer_engines().iter().map(|k| k.name()).collect();
        println!("  and durable writers on {} at {:?} writers, readers beside", names.join(", "), opts.writer_counts);
    }
    if !study.servers().is_empty() {
        let names: Vec<&str> = study.servers().iter().map(|k| k.name()).collect();
        println!("  and {} read by {:?} clients", names.join(", "), concurrency::SERVER_CLIENTS);
    }
    let measured = concurrency::run(&ctx, &opts)?;
    let mut results = ResultFile::from_concurrency(measured, &ctx, &opts);
    args.label.apply(&mut results);
    print!("{}", report::terminal(&results, false));
    super::output::write_report(&args.out, &[results], args.force)?;
    println!("report in {}: results.json, charts/*.svg, index.html", args.out.display());
    Ok(())
}
