//! `suite`: the whole article on this machine, then a report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Args;
use indicatif::ProgressBar;

use blobbench::engine::dataset::from_dir;
use blobbench::measure::Experiment;
use blobbench::records::sizes::parse_size_dist;
use blobbench::records::zipf::parse_zipf;
use blobbench::records::SizeDist;
use blobbench::records::{EngineKind, Plan};
use blobbench::results::ResultFile;
use blobbench::studies::context::{Observer, StudyContext};
use blobbench::studies::suite::{self, SuiteOptions};
use blobbench::util::units;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct SuiteArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Where to build the datasets (a temporary subdirectory is made inside).
    /// Give it several times to run the suite once per directory (say, one
    /// per filesystem), each result labelled by its filesystem, in one report.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workdir: Vec<PathBuf>,
    /// Number of blobs [default: 100k, or 10k with --quick].
    #[arg(long, value_parser = units::positive_u32)]
    pub count: Option<u32>,
    /// Mean blob size in bytes.
    #[arg(long, default_value = "10k", value_parser = units::positive_u32)]
    pub size: u32,
    /// Blob sizes vary uniformly by this much around --size.
    #[arg(long, default_value = "2k", value_parser = non_negative_u32)]
    pub variance: u32,
    /// Database page size.
    #[arg(long, default_value = "4096", value_parser = units::page_size)]
    pub pagesize: u32,
    /// A small dataset (10k blobs) and an 80 s budget for the rounds: under two minutes.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub rounds: super::rounds::RoundsArgs,
    /// Evict the page cache before each timed read run.
    #[arg(long)]
    pub cold: bool,
    /// Directory for results.json, the charts and index.html.
    #[arg(long, default_value = "blobbench-report")]
    pub out: PathBuf,
    /// Keep the datasets in the work directory.
    #[arg(long)]
    pub keep: bool,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Blob sizes from a named distribution instead of --size/--variance:
    /// uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH.
    #[arg(long, value_name = "DIST", value_parser = parse_size_dist, conflicts_with_all = ["size", "variance"])]
    pub sizes: Option<SizeDist>,
    /// Your own files: every regular file under DIR becomes one blob.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["count", "size", "variance", "sizes", "sizes_from"])]
    pub from: Option<PathBuf>,
    /// Random content with the sizes of the files under DIR.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["size", "variance", "sizes"])]
    pub sizes_from: Option<PathBuf>,
    /// Hot keys: zipf:THETA instead of kvtest's random order.
    #[arg(long, value_name = "DIST", value_parser = parse_zipf)]
    pub keys: Option<f64>,
    #[arg(long, value_parser = super::engines::key_value_list, default_value = "", help = super::engines::key_value_help("Key-value engines to measure beside SQLite and files"))]
    pub engines: super::engines::EngineList,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
    /// The durable writes also measured committed as an application commits
    /// them (`commit/...`, beside the article's one transaction per run):
    /// a commit every N writes.
    #[arg(long, value_name = "N", default_value = "1", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: u32,
}

fn non_negative_u32(s: &str) -> Result<u32, units::UnitError> {
    units::parse_at_least(s, 0, "value")
}

impl SuiteArgs {
    /// The context in `workdir`: the servers' settings, the engines, the
    /// rounds, `--quick`, the committed arms' `--commit-every` and
    /// `observer`.
    fn context(&self, workdir: &Path, observer: Arc<dyn Observer>) -> StudyContext {
        StudyContext {
            engines: self.engines.0.clone(),
            rounds: self.rounds.asked(),
            quick: self.quick,
            commit_every: Some(self.commit_every),
            observer,
            ..self.servers.context(workdir)
        }
    }

    fn options(&self) -> anyhow::Result<SuiteOptions> {
        let mut o = SuiteOptions::new(self.quick);
        if let Some(c) = self.count {
            o.spec.count = c;
        }
        o.spec.size = self.size;
        o.spec.variance = self.variance;
        o.spec.page_size = self.pagesize;
        o.plan = Plan { cold: self.cold, ..o.plan };
        o.keep = self.keep;
        o.spec.sizes.clone_from(&self.sizes);
        if let Some(dir) = &self.sizes_from {
            let scan = from_dir::scan(dir)?;
            super::dataset::print_skipped(&scan.skipped);
            o.spec.sizes = Some(scan.size_dist());
        }
        o.from.clone_from(&self.from);
        o.zipf = self.keys;
        Ok(o)
    }
}

/// On a terminal, a bar with an ETA per experiment, then its figures; on
/// stdout, one line per dataset built.
pub(super) struct Lines {
    bar: Mutex<Option<ProgressBar>>,
    terminal: bool,
}

impl Observer for Lines {
    fn begin(&self, what: &str, units: u64) {
        if !self.terminal {
            return;
        }
        let bar = super::progress::bar(what, units, "{msg:<40} [{bar:30}] {pos}/{len} ETA {eta}");
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, done: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.set_position(done);
            }
        }
    }

    fn built(&self, what: EngineKind, entries: u64, elapsed_ns: u64) {
        let secs = elapsed_ns as f64 / 1e9;
        match what {
            blobbench::engine::sqlite::KIND => self.line(&format!("init: {entries} blobs in {secs:.1} s")),
            kind => self.line(&format!("export ({}): {entries} blobs in {secs:.1} s", kind.name())),
        }
    }

    /// Progress only, on a terminal: the figures are the latency table the
    /// summary draws at the end. The per-op time is the figure comparisons
    /// use (the steady-state loop, when the file has it), so the line's p99
    /// and its per-op time are of the same loop; kvtest's open-to-close
    /// total per op follows when it differs.
    fn measured(&self, e: &Experiment) {
        if !self.terminal {
            return;
        }
        let p99 = e.latency.map(|l| format!(", p99 {:.1} us", l.p99_us)).unwrap_or_default();
        let figure = e.summary.figure();
        let total = match e.summary.steady_per_op_us {
            Some(_) => format!("; open to close {:.2} us per op", e.summary.per_op_us.median),
            None => String::new(),
        };
        self.finish_bar();
        eprintln!(
            "{}: {:.2} us per op (median of {}, cv {:.0}%){p99}{total}",
            e.label, figure.median, e.summary.runs, figure.cv_pct
        );
    }
}

impl Lines {
    pub(super) fn new(terminal: bool) -> Self {
        Lines { bar: Mutex::new(None), terminal }
    }

    /// Ends the bar of what just finished and prints its line.
    fn line(&self, line: &str) {
        self.finish_bar();
        // Results go to stdout; stderr is left for the one error line.
        println!("{line}");
    }

    fn finish_bar(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

pub fn run(args: SuiteArgs) -> anyhow::Result<()> {
    super::output::prepare_report_dir(&args.out, args.force)?;
    distinct_workdirs(&args.workdir)?;
    let started = Instant::now();
    let observer: Arc<dyn Observer> = Arc::new(Lines::new(std::io::stderr().is_terminal()));
    let opts = args.options()?;
    let several = args.workdir.len() > 1;
    let mut all = Vec::new();
    for dir in &args.workdir {
        if several {
            println!("== suite in {}", dir.display());
        }
        let ctx = args.context(dir, Arc::clone(&observer));
        let mut results = match suite::run_suite(&ctx, &opts) {
            Ok(r) => ResultFile::from_suite(r),
            Err(e) if all.is_empty() => return Err(e.into()),
            Err(e) => {
                // What the earlier directories measured is kept.
                super::output::write_report(&args.out, &all, args.force)?;
                anyhow::bail!("{e} (the report in {} has the directories before it)", args.out.display());
            }
        };
        args.label.apply(&mut results);
        if several {
            results.label = format!("{}, {}", results.display_label(), filesystem_name(&results));
        }
        let stopped = !results.complete;
        all.push(results);
        if stopped {
            break;
        }
    }
    let summary = super::output::write_report(&args.out, &all, args.force)?;
    print!("{summary}");
    println!(
        "suite took {:.0} s; report in {} (open {})",
        started.elapsed().as_secs_f64(),
        args.out.display(),
        args.out.join("index.html").display()
    );
    Ok(())
}

/// The same directory twice would measure one filesystem twice under two labels.
fn distinct_workdirs(dirs: &[PathBuf]) -> anyhow::Result<()> {
    for (i, d) in dirs.iter().enumerate() {
        let key = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if dirs[..i].iter().any(|e| key(e) == key(d)) {
            anyhow::bail!("--workdir {} is given twice", d.display());
        }
    }
    Ok(())
}

/// "ext4", or "unknown filesystem" when the mount table said nothing.
fn filesystem_name(results: &blobbench::results::ResultFile) -> String {
    results
        .environment
        .storage
        .as_ref()
        .map(|s| s.fs_type.trim())
        .filter(|t| !t.is_empty())
        .map_or_else(|| "unknown filesystem".to_string(), str::to_string)
}
