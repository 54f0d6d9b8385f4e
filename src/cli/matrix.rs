//! `matrix`: SQLite's internal-vs-external blob study, by blob size and
//! page size, printed like the study's table and saved as a result file.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use blobbench::records::sizes::parse_size_dist;
use blobbench::records::{SizeDist, SizeSource};
use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::context::StudyContext;
use blobbench::studies::matrix::{self, MatrixOptions};
use blobbench::util::units;

use super::progress;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Blob sizes, comma-separated [default: 10k,20k,50k,100k,200k,500k,1m].
    #[arg(long, value_name = "LIST", value_parser = size_list)]
    pub sizes: Option<List>,
    /// Your data: one more cell per page size with blobs of this size
    /// distribution (random content): uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA,
    /// list:A,B,... or file:PATH. --sizes stays the fixed-size axis.
    #[arg(long, value_name = "DIST", value_parser = parse_size_dist, conflicts_with = "from")]
    pub size_dist: Option<SizeDist>,
    /// Your data: one more cell per page size holding your files under DIR
    /// (their content; an evenly spaced sample when they hold more than
    /// --total). DIR is only read.
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Page sizes, comma-separated [default: 1024,2048,...,65536].
    #[arg(long, value_name = "LIST", value_parser = page_size_list)]
    pub pagesizes: Option<List>,
    /// Blob content per cell; each cell holds TOTAL / size blobs [default: 100M].
    #[arg(long, value_name = "BYTES", value_parser = units::positive_u64)]
    pub total: Option<u64>,
    /// SQLite page cache per database; cache_size = BYTES / page size [default: 2000 pages of 1024].
    #[arg(long, value_name = "BYTES", value_parser = units::positive_u64)]
    pub cache: Option<u64>,
    /// Rounds of each cell's three reads, and timed runs of each write
    /// (--rounds, alias --repeat); --budget is per cell [default: 20s, or 2s with --quick].
    #[command(flatten)]
    pub rounds: super::rounds::RoundsArgs,
    /// Evict the datasets from the page cache before each timed run.
    #[arg(long)]
    pub cold: bool,
    /// A smaller matrix (10k,50k,200k,1m x 1024,4096,16384,65536, 20M per cell, 3 runs); flags above override it.
    #[arg(long)]
    pub quick: bool,
    /// Measure reads only (no write, durable write or grow/shrink experiments).
    #[arg(long)]
    pub reads_only: bool,
    #[arg(long, value_parser = super::engines::key_value_list, default_value = "", help = super::engines::key_value_help("Engines and servers measured beside the files, by blob size, in the cells of the page size nearest 4096"))]
    pub engines: super::engines::EngineList,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
    /// Where to build each cell's datasets [default: the system temporary directory, or . if it is in memory].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Directory for results.json, the charts and index.html.
    #[arg(long, value_name = "DIR", default_value = "blobbench-matrix")]
    pub out: PathBuf,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Refused: matrix's writes are not committed as a workload states
    /// (see the error).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true)]
    pub commit_every: Option<String>,
}

/// A comma-separated list given as one argument.
#[derive(Debug, Clone)]
pub struct List(Vec<u32>);

fn size_list(s: &str) -> Result<List, units::UnitError> {
    units::parse_list(s, units::positive_u32).map(List)
}

fn page_size_list(s: &str) -> Result<List, units::UnitError> {
    units::parse_list(s, units::page_size).map(List)
}

impl MatrixArgs {
    /// The context: the work directory, the servers' settings, the
    /// engines, the rounds and `--quick`.
    pub fn context(&self) -> StudyContext {
        let workdir = self.workdir.clone().unwrap_or_else(matrix::default_workdir);
        StudyContext {
            engines: self.engines.0.clone(),
            rounds: self.rounds.asked(),
            quick: self.quick,
            observer: progress::for_terminal(),
            ..self.servers.context(&workdir)
        }
    }

    pub fn options(&self) -> MatrixOptions {
        let mut o = if self.quick { MatrixOptions::quick() } else { MatrixOptions::default() };
        if let Some(List(v)) = &self.sizes {
            o.sizes.clone_from(v);
        }
        if let Some(List(v)) = &self.pagesizes {
            o.page_sizes.clone_from(v);
        }
        o.total_bytes = self.total.unwrap_or(o.total_bytes);
        o.cache_bytes = self.cache.unwrap_or(o.cache_bytes);
        o.plan.repeat = self.rounds.rounds.unwrap_or(o.plan.repeat);
        o.plan.cold = self.cold;
        if self.cold {
            // Each timed run starts from an evicted cache; a warm-up would be wasted.
            o.plan.warmup = 0;
        }
        o.writes = !self.reads_only;
        o.yours = match (&self.from, &self.size_dist) {
            (Some(dir), _) => Some(SizeSource::Files(dir.clone())),
            (None, Some(dist)) => Some(SizeSource::Dist(dist.clone())),
            (None, None) => None,
        };
        o
    }
}

pub fn run(args: MatrixArgs) -> anyhow::Result<()> {
    if args.commit_every.is_some() {
        anyhow::bail!("--commit-every does not apply to matrix: its write arms commit every write by design, to compare one blob's durable write in SQLite, files and each engine (advise, suite and run take it)");
    }
    let (ctx, opts) = (args.context(), args.options());
    // Everything that can be wrong is found before any dataset is built.
    matrix::validate(&ctx, &opts)?;
    super::output::prepare_report_dir(&args.out, args.force)?;
    let cells = opts.cell_count();
    // On stdout: a failure must leave exactly one line, the error, on stderr.
    println!(
        "matrix: {cells} cells, {} of blobs each, built one at a time under {}",
        report::fmt_size(opts.total_bytes as f64).to_uppercase() + "B",
        ctx.workdir.display()
    );
    if let Some(from) = opts.sizes_from()? {
        println!("your data: {}", from.describe());
    }

    let done = matrix::run(&ctx, &opts)?;
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let measured = done.section.cells.len();
    let (interrupted, elapsed_ns) = (done.interrupted, done.elapsed_ns);
    let mut file = ResultFile::from_matrix(done, &ctx.workdir);
    args.label.apply(&mut file);
    let table = report::terminal(&file, colour);
    // The report (results.json, charts, index.html); the terminal gets the
    // study-shaped table below instead of the report's generic summary.
    let written =
        report::render(std::slice::from_ref(&file), &args.out, &report::Options { force: args.force, baseline: None })?;

    print!("{table}");
    println!();
    if interrupted {
        println!("warning: interrupted; {} of {cells} cells were measured", measured);
    }
    println!("SQLite {}; wall time {:.1} s", rusqlite::version(), elapsed_ns as f64 / 1e9);
    println!(
        "results and {} charts in {} (open {})",
        written.charts,
        args.out.display(),
        args.out.join("index.html").display()
    );
    Ok(())
}
