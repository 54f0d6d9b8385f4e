//! `advise`: where should these blobs live, and why. One command, one page.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use blobbench::measure::clock::Clock;
use blobbench::records::sizes::parse_size_dist;
use blobbench::records::{DatasetSpec, SizeDist};
use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::advise::clients::{ClientsAre, ClientsPlan, SqliteWriters};
use blobbench::studies::advise::{self, rules, AdviseOptions, Durability};
use blobbench::studies::context::StudyContext;
use blobbench::util::units;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DurabilityArg {
    /// A write that returned must survive a power cut.
    Required,
    /// The last writes may be lost in a power cut; stored blobs must stay whole.
    Relaxed,
    /// A write that returned must survive a power cut of every machine and the loss of any one machine
    /// (docs/replication.md): only replicated stores, judged by machine losses.
    Replicated,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub label: super::output::LabelArg,
    /// Your own files: every regular file under DIR becomes one blob (DIR is only read).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["count", "sizes"])]
    pub from: Option<PathBuf>,
    /// Blob sizes: uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH [default: uniform:10k:2k].
    #[arg(long, value_name = "DIST", value_parser = parse_size_dist)]
    pub sizes: Option<SizeDist>,
    /// Number of blobs.
    #[arg(long, default_value = "10k", value_parser = units::positive_u32)]
    pub count: u32,
    /// Reads to writes, in operations, e.g. 90:10.
    #[arg(long, default_value = "90:10", value_name = "R:W", value_parser = parse_mix)]
    pub mix: (u32, u32),
    /// Whether a write that returned must survive a power cut.
    #[arg(long, value_enum, default_value = "required")]
    pub durability: DurabilityArg,
    /// Writes your application groups per commit: a write returns once N
    /// writes have been committed (1: each write committed before it
    /// returns). Every candidate is measured at this N, its power cuts and
    /// its aging pass too.
    #[arg(long, value_name = "N", default_value = "1", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: u32,
    #[arg(long, value_parser = super::engines::key_value_list, help = super::engines::key_value_help(&format!("Key-value engines considered beside SQLite and files [default: {}]", super::engines::names(&blobbench::studies::advise::rules::default_engines()))))]
    pub engines: Option<super::engines::EngineList>,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
    /// Under --durability replicated: your PostgreSQL (postgresql://user@host:port/db), whose replication
    /// settings and pg_stat_replication say whether a commit waits for a standby (read only; the user needs
    /// pg_monitor).
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
    /// Under --durability replicated: your S3 endpoint (https://host), whose replication cannot be read
    /// through S3: its provider's documented promise is given where one exists, marked documented.
    #[arg(long, value_name = "URL")]
    pub s3: Option<String>,
    /// Time the whole command may take, e.g. 90s, 5m [default: 270s, 60s with --quick, or the least the data needs when more].
    #[arg(long, allow_hyphen_values = true, value_parser = units::duration, value_name = "DURATION")]
    pub budget: Option<std::time::Duration>,
    /// A shorter budget and fewer power cuts: about two minutes on 10k blobs.
    #[arg(long)]
    pub quick: bool,
    /// Use the documented crash table instead of a quick power-cut run.
    #[arg(long)]
    pub no_power_cut: bool,
    /// Where to build the datasets (a temporary subdirectory is made inside).
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workdir: PathBuf,
    /// Directory for the page (index.html, summary.md), its charts and results.json.
    #[arg(long, default_value = "blobbench-advice", value_name = "DIR")]
    pub out: PathBuf,
    /// Replace --out even when it is a non-empty directory that is not a previous report.
    #[arg(long)]
    pub force: bool,
    /// Clients at once, each with its own connection or handle, each running the mix
    /// (1 to 1024): every candidate then also runs at 1, 2, 4 ... N clients and is ranked at N
    /// by throughput.
    #[arg(long, value_name = "N", default_value = "1", allow_hyphen_values = true, value_parser = super::args::clients_count)]
    pub clients: u32,
    /// What the clients are: threads of one process (each with its own session), or processes.
    #[arg(long, value_enum, default_value = "threads")]
    pub clients_are: super::args::ClientsAreArg,
    /// Exclude a candidate whose write p99 at --clients exceeds this, e.g. 20ms.
    #[arg(long, allow_hyphen_values = true, value_parser = units::duration, value_name = "DURATION")]
    pub p99_write: Option<std::time::Duration>,
    /// An open loop at R operations per second over all clients (at one client too), each
    /// operation's latency counted from when it was due (a service with a known load): a
    /// candidate is then ranked by whether it keeps up, then by its p99 [default: closed loop].
    #[arg(long, value_name = "R", allow_hyphen_values = true, value_parser = super::args::rate)]
    pub rate: Option<f64>,
    /// SQLite's ways of writing with several clients: one writer connection shared by the
    /// process's threads, a connection per client (BEGIN IMMEDIATE, busy waits), or both, each
    /// ranked [default: both with threads, per-client with processes].
    #[arg(long, value_enum, value_name = "HOW")]
    pub sqlite_writers: Option<super::args::SqliteWritersArg>,
}

/// "90:10" into (90, 10).
fn parse_mix(s: &str) -> Result<(u32, u32), String> {
    let (r, w) = s.split_once(':').ok_or_else(|| format!("--mix {s}: expected R:W, e.g. 90:10"))?;
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("--mix {s}: {t:?} is not a whole number"));
    let (r, w) = (num(r)?, num(w)?);
    if r == 0 && w == 0 {
        return Err("--mix 0:0 has neither reads nor writes (give R:W, e.g. 90:10)".into());
    }
    if r > 1_000_000 || w > 1_000_000 {
        return Err(format!("--mix {s}: at most 1000000 on either side"));
    }
    Ok((r, w))
}

/// Whether `inner` is `outer` or lies under it (compared canonically, as
/// far as the paths exist).
fn inside(inner: &Path, outer: &Path) -> bool {
    let canon = |p: &Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        // The deepest existing ancestor, canonicalised, plus the rest.
        let mut base = abs.as_path();
        let mut rest = Vec::new();
        while !base.exists() {
            match (base.parent(), base.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    base = parent;
                }
                _ => break,
            }
        }
        let mut c = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
        c.extend(rest.iter().rev());
        c
    };
    canon(inner).starts_with(canon(outer))
}

impl AdviseArgs {
    /// The context: the work directory, the servers' settings, the
    /// engines considered (the embedded key-value engines by default),
    /// `--quick`, `--commit-every`, `clock` and the suite's lines.
    fn context(&self, clock: Clock) -> StudyContext {
        StudyContext {
            engines: self.engines.as_ref().map_or_else(rules::default_engines, |e| e.0.clone()),
            quick: self.quick,
            commit_every: Some(self.commit_every),
            clock,
            observer: Arc::new(super::suite::Lines::new(std::io::stderr().is_terminal())),
            ..self.servers.context(&self.workdir)
        }
    }

    fn options(&self) -> anyhow::Result<AdviseOptions> {
        if let Some(from) = &self.from {
            for (what, dir) in [("--out", &self.out), ("--workdir", &self.workdir)] {
                if inside(dir, from) {
                    anyhow::bail!(
                        "{what} {} is inside --from {}: advise never writes into your files",
                        dir.display(),
                        from.display()
                    );
                }
            }
        }
        let mut spec = DatasetSpec { count: self.count, size: 10_000, variance: 2_000, ..DatasetSpec::default() };
        spec.sizes.clone_from(&self.sizes);
        let writer = (!self.no_power_cut).then(std::env::current_exe).transpose()?;
        let are = match self.clients_are {
            super::args::ClientsAreArg::Threads => ClientsAre::Threads,
            super::args::ClientsAreArg::Processes => ClientsAre::Processes,
        };
        let launcher = (are == ClientsAre::Processes).then(super::args::launcher).transpose()?;
        Ok(AdviseOptions {
            spec,
            from: self.from.clone(),
            mix_reads: self.mix.0,
            mix_writes: self.mix.1,
            durability: match self.durability {
                DurabilityArg::Required => Durability::Required,
                DurabilityArg::Relaxed => Durability::Relaxed,
                DurabilityArg::Replicated => anyhow::bail!("--durability replicated is advised by machine losses"),
            },
            budget: self.budget,
            writer,
            clients: ClientsPlan {
                clients: self.clients,
                are,
                p99_write: self.p99_write,
                rate: self.rate,
                launcher,
                sqlite_writers: self.sqlite_writers.map(|w| w.0.map_or(SqliteWriters::Both, SqliteWriters::Only)),
            },
        })
    }
}

pub fn run(args: AdviseArgs) -> anyhow::Result<()> {
    run_on(args, Clock::REAL)
}

/// [`run`] with the budget read on `clock` (a fake one in tests).
fn run_on(args: AdviseArgs, clock: Clock) -> anyhow::Result<()> {
    if matches!(args.durability, DurabilityArg::Replicated) {
        let asked = super::advise_replicated::Asked {
            out: &args.out,
            force: args.force,
            quick: args.quick,
            pg: args.pg.clone(),
            s3: args.s3.clone(),
            no_power_cut: args.no_power_cut,
            clients: args.clients,
            label: &args.label,
        };
        return super::advise_replicated::run(&asked, &args.context(clock));
    }
    if args.s3.is_some() {
        anyhow::bail!(
            "--s3 URL is read under --durability replicated only (its provider's documented replication); the other \
             classes measure a throwaway S3 server (--engines s3)"
        );
    }
    if args.pg.is_some() {
        anyhow::bail!(
            "--pg URL is read under --durability replicated only (whether its commits wait for a standby); the other \
             classes measure a throwaway PostgreSQL (--engines postgres)"
        );
    }
    let (ctx, opts) = (args.context(clock), args.options()?);
    // What is wrong with the clients is said before anything is written.
    let study = advise::in_context(&ctx, &opts);
    opts.clients.validate(&study.stores(), study.quick())?;
    super::output::prepare_report_dir(&args.out, args.force)?;
    let started = clock.now();
    let mut results = ResultFile::from_advise(advise::run(&ctx, &opts)?);
    args.label.apply(&mut results);
    super::output::write_report(&args.out, std::slice::from_ref(&results), args.force)?;
    print!("{}", report::advice(&results, false));
    println!(
        "advise took {:.0} s (budget {:.0} s); page in {} (open {})",
        clock.since(started).as_secs_f64(),
        results.advise.as_ref().map_or(0.0, |a| a.budget_s),
        args.out.display(),
        args.out.join("index.html").display()
    );
    if !results.complete {
        anyhow::bail!("interrupted: the page holds what was measured before the stop");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_and_refuses_nothing_at_all() {
        assert_eq!(parse_mix("90:10").unwrap(), (90, 10));
        assert_eq!(parse_mix("0:1").unwrap(), (0, 1));
        assert!(parse_mix("0:0").unwrap_err().contains("neither"));
        assert!(parse_mix("90").is_err());
        assert!(parse_mix("a:1").is_err());
    }

    /// A machine so slow that the set-up (the size matrix, the aging pass,
    /// the datasets) takes the whole budget: one round of each arm, the
    /// over-budget note on the terminal and the page, and success (exit 0).
    /// Every stage runs, on as little work as it takes: 20 blobs of 100 KB,
    /// whose size matrix holds a few large blobs per cell (its per-blob cost
    /// at 2.5 KB was most of the test's time) and whose aging sample is 20.
    #[test]
    fn a_budget_spent_before_the_rounds_gives_one_round_a_note_and_success() {
        use blobbench::measure::clock::FakeClock;
        use blobbench::measure::rounds::StopReason;
        use blobbench::studies::advise::Stage;
        use clap::Parser;

        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            advise: AdviseArgs,
        }
        let d = tempfile::tempdir().unwrap();
        let (work, out) = (d.path().join("work"), d.path().join("page"));
        let args = Cli::parse_from(
            [
                "advise",
                "--quick",
                "--no-power-cut",
                "--count",
                "20",
                "--sizes",
                "uniform:100k",
                "--engines",
                "lmdb",
                "--budget",
                "60s",
            ]
            .into_iter()
            .map(Into::into)
            .chain([
                "--workdir".into(),
                work.into_os_string(),
                "--out".into(),
                out.clone().into_os_string(),
            ]),
        );
        // Each reading of the clock is a minute after the one before.
        let clock = FakeClock::ticking(std::time::Duration::from_secs(60)).clock();
        run_on(args.advise, clock).expect("over budget is not an error");
        let results = blobbench::results::read(&out.join("results.json")).unwrap();
        assert!(results.complete);
        let suite_sets: Vec<_> = results.rounds.iter().filter(|r| r.id.starts_with("suite/")).collect();
        assert!(!suite_sets.is_empty());
        for set in suite_sets {
            assert_eq!(set.rounds.len(), 1, "{}: one round of each arm", set.id);
            assert!(set.consistent(), "{}: every arm ran", set.id);
            assert_eq!(set.stop, StopReason::Budget, "{}", set.id);
        }
        let over = results.advise.as_ref().unwrap().over_budget.as_ref().expect("recorded in the result");
        assert!(
            over[Stage::Setup] > 60.0
                && over[Stage::SizeMatrix] > 0.0
                && over[Stage::Aging] > 0.0
                && over[Stage::Datasets] > 0.0
        );
        let note = "over budget: the set-up took";
        assert!(report::advice(&results, false).contains(note), "the terminal says so");
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(page.contains(note), "the page says so");
        // Every part is timed on the injected clock, and the page says what the budget covered.
        let t = results.advise.as_ref().unwrap().stages.clone().expect("the parts recorded");
        let at_least_a_minute = [Stage::SizeMatrix, Stage::Aging, Stage::Datasets, Stage::Rounds].map(|s| t[s] >= 60.0);
        assert!(at_least_a_minute.iter().all(|&x| x), "{t:?}");
        assert_eq!(t[Stage::Clients], 0.0, "no clients' stage");
        assert!(page.contains("Budget: 60 s for the whole command"), "the page says what the budget covered");
    }

    #[test]
    fn a_directory_inside_another_is_seen() {
        let d = tempfile::tempdir().unwrap();
        assert!(inside(&d.path().join("x/y"), d.path()));
        assert!(inside(d.path(), d.path()));
        assert!(!inside(Path::new("/"), d.path()));
    }
}
