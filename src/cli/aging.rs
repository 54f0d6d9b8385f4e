//! `aging`: rewrites blobs age after age and reports read time, disk usage
//! and fragmentation, then writes a report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

use blobbench::records::SizeSource;
use blobbench::results::ResultFile;
use blobbench::studies::aging::{self, AgePoint, AgingOptions, SizeSetting};
use blobbench::studies::context::{Observer, StudyContext};
use blobbench::util::units;

#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct AgingArgs {
    /// Where to build the datasets (a temporary subdirectory is made inside).
    #[arg(long, default_value = ".")]
    pub workdir: PathBuf,
    /// Small datasets, ages 0,1,2, up to 4 rounds of reads per age: about half a minute.
    #[arg(long)]
    pub quick: bool,
    /// Storage ages: rewrites of every blob, strictly increasing [default: 0,1,2,4,8, or 0,1,2 with --quick].
    #[arg(long, value_parser = ages)]
    pub ages: Option<Ages>,
    #[arg(long, value_parser = super::engines::key_value_list, default_value = "", help = super::engines::key_value_help("Key-value engines to age beside SQLite and files"))]
    pub engines: super::engines::EngineList,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
    /// Blobs per size setting [default: 10k article-sized, 500 large, about 100 MB of a distribution or your files; a tenth with --quick].
    #[arg(long, value_parser = units::positive_u32)]
    pub count: Option<u32>,
    /// Size settings, comma-separated: article (10 KB +/- 2 KB), large (100 KB
    /// to 1 MB), uniform:MIN..MAX, or a distribution (--sizes DIST, as suite's):
    /// uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH.
    #[arg(long, visible_alias = "sizes", default_value = "article,large", value_parser = size_dists)]
    pub size_dist: SizeSettings,
    /// Your own files instead of the size settings: their content is the
    /// first blobs, their sizes what each rewrite draws (an evenly spaced
    /// sample of --count of them, or about 100 MB, 10 MB with --quick). DIR is only read.
    #[arg(long, value_name = "DIR", conflicts_with = "size_dist")]
    pub from: Option<PathBuf>,
    /// Percent of the blobs deleted and inserted again at each age step (0: no churn).
    #[arg(long, default_value = "0", value_parser = churn_pct)]
    pub churn: f64,
    /// Rounds of every comparison's reads, warm and cold: the layouts at each
    /// age, each size band, the remedies beside the aged layouts (--rounds,
    /// alias --repeat) [default: 12, or 4 with --quick]; --budget is per set
    /// of rounds [default: 20s, or 2s with --quick].
    #[command(flatten)]
    pub rounds: super::rounds::RoundsArgs,
    /// Directory for results.json, the charts and index.html.
    #[arg(long, default_value = "blobbench-aging")]
    pub out: PathBuf,
    /// Keep the datasets in the work directory.
    #[arg(long)]
    pub keep: bool,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Rewrite passes commit every N writes [default: one transaction per
    /// pass]; advise ages each candidate with the workload's N.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: Option<u32>,
}

/// A parsed `--ages` list.
#[derive(Debug, Clone)]
pub struct Ages(Vec<u32>);

/// A parsed `--size-dist` list (one small parser, to be swapped for issue 14's).
#[derive(Debug, Clone)]
pub struct SizeSettings(Vec<SizeSetting>);

fn ages(s: &str) -> Result<Ages, String> {
    aging::parse_ages(s).map(Ages)
}

fn size_dists(s: &str) -> Result<SizeSettings, String> {
    aging::parse_size_dists(s).map(SizeSettings)
}

fn churn_pct(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("invalid percentage {s:?}"))?;
    if !(0.0..100.0).contains(&v) {
        return Err(format!("--churn must be from 0 to less than 100 percent, got {s}"));
    }
    Ok(v)
}

impl AgingArgs {
    /// The context: the work directory, the servers' settings, the
    /// engines, the rounds, `--quick` and `--commit-every`.
    fn context(&self) -> StudyContext {
        StudyContext {
            engines: self.engines.0.clone(),
            rounds: self.rounds.asked(),
            quick: self.quick,
            commit_every: self.commit_every,
            observer: Arc::new(Lines { terminal: std::io::stderr().is_terminal() }),
            ..self.servers.context(&self.workdir)
        }
    }

    fn options(&self) -> AgingOptions {
        let mut o = AgingOptions::new(self.quick);
        if let Some(ages) = &self.ages {
            o.ages = ages.0.clone();
        }
        o.sizes = self.size_dist.0.clone();
        if let Some(dir) = &self.from {
            o.sizes.clear();
            o.yours = Some(SizeSource::Files(dir.clone()));
        }
        o.count = self.count;
        o.churn_pct = self.churn;
        o.keep = self.keep;
        o
    }
}

/// Progress on stderr when it is a terminal: the step under way, then each
/// measured point's figures (the summary's table has them all at the end).
struct Lines {
    terminal: bool,
}

impl Observer for Lines {
    /// A step starts.
    fn begin(&self, what: &str, _units: u64) {
        if self.terminal {
            eprint!("\r\x1b[K{what}");
        }
    }

    fn advance(&self, _done: u64) {}

    fn point(&self, sizes: &SizeSetting, p: &AgePoint) {
        if !self.terminal {
            return;
        }
        let us = |r: Option<aging::ReadFigures>| r.map_or_else(|| "-".into(), |r| format!("{:.1}", r.per_op_us));
        let what = p.remedy.as_ref().map_or_else(|| format!("age {}", p.age), |r| format!("after {r}"));
        let extents = match p.fragmentation.extents_per_file() {
            Some(e) => format!("{e:.2} extents/file"),
            None => "extents not measured".to_string(),
        };
        eprintln!(
            "\r\x1b[K{}, {}, {what}: read {} us warm, {} us cold; {:.1} MB allocated for {:.1} MB; {extents}",
            sizes.name,
            p.layout,
            us(p.read_warm),
            us(p.read_cold),
            p.usage.allocated_bytes as f64 / 1e6,
            p.usage.content_bytes as f64 / 1e6,
        );
    }
}

pub fn run(args: AgingArgs) -> anyhow::Result<()> {
    let (ctx, opts) = (args.context(), args.options());
    // Everything that can be wrong is found before any dataset is built.
    aging::validate(&ctx, &opts)?;
    super::output::prepare_report_dir(&args.out, args.force)?;
    let started = Instant::now();
    let outcome = aging::run_aging(&ctx, &opts)?;
    for s in outcome.section.settings.iter().filter(|s| s.sizes.from.is_some()) {
        println!("{}: {}", s.sizes.name, s.sizes.from.as_ref().map(|f| f.describe()).unwrap_or_default());
    }
    let results = ResultFile::from_aging(outcome);
    let summary = super::output::write_report(&args.out, std::slice::from_ref(&results), args.force)?;
    print!("{summary}");
    println!(
        "aging took {:.0} s{}; report in {} (open {})",
        started.elapsed().as_secs_f64(),
        if results.complete { "" } else { " (incomplete: see the notes)" },
        args.out.display(),
        args.out.join("index.html").display()
    );
    Ok(())
}
