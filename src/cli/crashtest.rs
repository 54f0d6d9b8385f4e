//! `crashtest` (process kills, or power cuts with `--power-cut`) and its
//! hidden child, `crash-writer`: arguments, the run, the table, the verdict.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use blobbench::powercut::Model;
use blobbench::records::{ConfigId, EngineSettings};
use blobbench::report;
use blobbench::results::{self, ResultFile};
use blobbench::studies::context::StudyContext;
use blobbench::studies::crashtest::{self, CrashOptions, WriterSpec};
use blobbench::util::units;

use super::progress;

/// A parsed `--method` list, kept whole (clap would split a `Vec`).
#[derive(Debug, Clone)]
pub struct Methods(Vec<ConfigId>);

fn methods(text: &str) -> Result<Methods, units::UnitError> {
    crashtest::method::parse_list(text).map(Methods)
}

/// `--settings`: the parent's engine settings, as JSON ("{}" for the
/// defaults).
fn engine_settings(text: &str) -> Result<EngineSettings, String> {
    if text.trim() == "{}" {
        return Ok(EngineSettings::default());
    }
    serde_json::from_str(text).map_err(|e| format!("--settings: {e}"))
}

/// `--method`'s help: every method the registry's engines declare, and
/// the groups.
fn method_help() -> String {
    let names: Vec<&str> = ConfigId::methods().into_iter().map(ConfigId::name).collect();
    let replicated: Vec<&str> = ConfigId::replicated_methods().into_iter().map(ConfigId::name).collect();
    format!(
        "Write methods, comma-separated: {}, or the groups db, files, kv, server (a server's processes are killed \
         too, seconds per kill), all [default: db,files,kv]. With --machine-loss, the replicated layouts: {} (the \
         group replicated, the default)",
        names.join(", "),
        replicated.join(", ")
    )
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
    #[arg(long, value_parser = methods, help = method_help())]
    pub method: Option<Methods>,
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
    #[arg(long, conflicts_with = "machine_loss")]
    pub power_cut: bool,
    /// Lose a whole machine of a replicated store instead: writers write, one host of its throwaway cluster is
    /// lost for good (its processes SIGKILLed, its disk moved away, its link down), the store fails over, and
    /// every acknowledged write is read back (docs/replication.md). Network namespaces as root, else loopback.
    #[arg(long, conflicts_with = "kills")]
    pub machine_loss: bool,
    /// Losses per replicated layout [default: 20, or 3 with --quick].
    #[arg(long, requires = "machine_loss", value_parser = count)]
    pub losses: Option<u32>,
    /// Power-cut model: strict, torn-512, torn-4k (docs/crash-safety.md) [default: strict].
    #[arg(long, value_name = "NAME", requires = "power_cut", value_parser = model)]
    pub model: Option<Model>,
    /// Writes per commit: each writer's write returns once N writes have
    /// been committed (SQLite and the engines commit every N writes; files
    /// are each written and fsynced, their directory fsynced every N with
    /// replace-fsync-dir).
    #[arg(long, value_name = "N", default_value = "1", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: u32,
    #[command(flatten)]
    pub servers: super::servers::StudyServers,
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
    let default_methods = if args.machine_loss { "replicated" } else { "db,files,kv" };
    opts.methods = match &args.method {
        Some(m) => m.0.clone(),
        None => crashtest::method::parse_list(default_methods)?,
    };
    let (kills, count) = if args.quick {
        (crashtest::QUICK_KILLS, crashtest::QUICK_COUNT)
    } else {
        (crashtest::DEFAULT_KILLS, crashtest::DEFAULT_COUNT)
    };
    opts.kills = args.kills.unwrap_or(kills);
    opts.count = args.count.unwrap_or(count);
    let workdir = args.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let ctx = StudyContext {
        seed: args.seed,
        quick: args.quick,
        commit_every: Some(args.commit_every),
        observer: progress::for_terminal(),
        ..args.servers.context(&workdir)
    };
    if args.machine_loss {
        return machine_losses(&args, &ctx, &opts);
    }
    if let Some(m) = opts.methods.iter().find(|m| m.replica().is_some()) {
        bail!("--method {m}: a replicated layout is tested by losing a machine: add --machine-loss");
    }
    if args.power_cut {
        return power_cuts(&args, &ctx, &opts);
    }
    let report = crashtest::crashtest(&ctx, &opts)?;
    let results = save(&args, ResultFile::from_crashtest(&report, &ctx.workdir))?;
    print!("{}", report::terminal(&results, false));
    let broken: Vec<String> = report
        .section
        .broken_promises()
        .map(|m| {
            format!(
                "{} ({} integrity failures, {} torn, {} missing, {} lost, {} undone)",
                m.method,
                m.checks.integrity_failures,
                m.checks.torn,
                m.checks.missing,
                m.checks.unexpected_version,
                m.undone
            )
        })
        .collect();
    if !broken.is_empty() {
        bail!("a method that promises atomic or durable commits was damaged by a kill: {}", broken.join("; "));
    }
    Ok(())
}

/// `--power-cut`: the same, with the datasets on the power-cut layer.
fn power_cuts(args: &CrashtestArgs, ctx: &StudyContext, opts: &CrashOptions) -> anyhow::Result<()> {
    let report = crashtest::power_cut_test(ctx, opts, args.model.unwrap_or(Model::Strict))?;
    for m in &report.cleaned_mounts {
        eprintln!("note: unmounted a power-cut layer left by a killed run: {}", m.display());
    }
    let results = save(args, ResultFile::from_power_cut(&report, &ctx.workdir))?;
    print!("{}", report::terminal(&results, false));
    let broken: Vec<String> = report
        .section
        .broken_promises()
        .map(|m| {
            format!(
                "{} ({} lost after acknowledgement, {} integrity failures)",
                m.method, m.lost_after_ack, m.checks.integrity_failures
            )
        })
        .collect();
    if !broken.is_empty() {
        bail!("a method that promised durability lost acknowledged writes in a power cut: {}", broken.join("; "));
    }
    Ok(())
}

/// `--machine-loss`: the replicated layouts, a host lost at each round.
fn machine_losses(args: &CrashtestArgs, ctx: &StudyContext, opts: &CrashOptions) -> anyhow::Result<()> {
    let (losses, count) = if args.quick {
        (crashtest::loss::QUICK_LOSSES, crashtest::QUICK_COUNT)
    } else {
        (crashtest::loss::DEFAULT_LOSSES, crashtest::DEFAULT_COUNT)
    };
    let lopts = crashtest::loss::LossOptions {
        methods: opts.methods.clone(),
        losses: args.losses.unwrap_or(losses),
        count: args.count.unwrap_or(count),
        max_delay: std::time::Duration::from_millis(200),
        at_once: false,
        keep: Vec::new(),
    };
    let report = crashtest::loss::machine_loss_test(ctx, &lopts)?;
    let results = save(args, ResultFile::from_machine_loss(&report, &ctx.workdir))?;
    print!("{}", report::terminal(&results, false));
    let broken: Vec<String> = report
        .section
        .broken_promises()
        .map(|m| format!("{} ({} acknowledged writes lost over {} losses)", m.method, m.lost_acknowledged, m.losses))
        .collect();
    let mut errors: Vec<String> = report
        .section
        .failed()
        .map(|m| format!("--method {} failed after {} of {} losses: {}", m.method, m.losses, lopts.losses, failure(m)))
        .collect();
    if !broken.is_empty() {
        errors.push(format!(
            "a layout that keeps each write on two machines lost acknowledged writes: {}",
            broken.join("; ")
        ));
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("; "));
    }
    Ok(())
}

/// Why a method stopped, as its row says.
fn failure(m: &crashtest::loss::MachineLossMethodResult) -> &str {
    m.failed.as_deref().unwrap_or_default()
}

/// Labels the result file and writes it where `--json` asks.
fn save(args: &CrashtestArgs, mut results: ResultFile) -> anyhow::Result<ResultFile> {
    args.label.apply(&mut results);
    if let Some(p) = &args.json {
        results::write(p, &results)?;
    }
    Ok(results)
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
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = super::args::commit_every)]
    pub commit_every: u32,
    /// The study's engine settings, as JSON (its servers' parts).
    #[arg(long, value_parser = engine_settings, default_value = "{}")]
    pub settings: EngineSettings,
    pub path: PathBuf,
}

/// The child: writes until the parent kills it.
pub fn crash_writer(args: CrashWriterArgs) -> anyhow::Result<()> {
    let [method] = args.method.0[..] else {
        bail!("crash-writer takes exactly one write method");
    };
    let spec = WriterSpec {
        method,
        path: args.path,
        count: args.count,
        seed: args.seed,
        base: args.base,
        acks: args.acks,
        commit_every: args.commit_every,
        settings: args.settings,
    };
    let signal = |s: crashtest::Signal| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", s.line());
        let _ = out.flush();
    };
    match crashtest::write_until_killed(&spec, signal)? {}
}
