//! `advise --durability replicated`: which candidates can keep a write
//! through the loss of a machine, judged by machine losses of their
//! throwaway replicated layouts (`crashtest --machine-loss`'s), the
//! asynchronous standby beside them as the negative control. Only those
//! that kept every acknowledged write are ranked; the rest are listed
//! with their reasons.

use std::time::{Duration, Instant};

use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::advise::replicated::{self, Standing};
use blobbench::studies::advise::replication_cost::{self, CostPlan, ReplicationCost};
use blobbench::studies::advise::{CrashSource, Store, ALWAYS};
use blobbench::studies::context::StudyContext;
use blobbench::studies::crashtest;
use blobbench::studies::crashtest::loss::{self, MachineLossReport};

/// What `advise --durability replicated` is asked beyond its context.
pub struct Asked<'a> {
    pub out: &'a std::path::Path,
    pub force: bool,
    pub quick: bool,
    /// `--pg URL`: the user's server, whose replication is read.
    pub pg: Option<String>,
    /// `--s3 URL`: the user's S3 endpoint, whose replication cannot be read.
    pub s3: Option<String>,
    /// `--no-power-cut`: the documented machine-loss table instead of losses.
    pub no_power_cut: bool,
    /// `--clients N`: the cost of replication also at N clients.
    pub clients: u32,
    pub label: &'a super::output::LabelArg,
}

pub fn run(args: &Asked, ctx: &StudyContext) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut ctx = ctx.clone();
    ctx.settings.pg.url.clone_from(&args.pg);
    let ctx = &ctx;
    let stores: Vec<Store> = ALWAYS.into_iter().chain(ctx.engines.iter().map(|&k| Store::Engine(k))).collect();
    let pg = replicated::read_users_postgres(&stores, &ctx.settings)?;
    let standings = replicated::gate(&stores, pg.as_ref(), args.s3.as_deref())?;
    super::output::prepare_report_dir(args.out, args.force)?;
    let report = if args.no_power_cut { None } else { machine_losses(args, ctx, &standings)? };
    let interrupted = report.as_ref().is_some_and(|r| r.interrupted);
    let mut results = match &report {
        Some(r) => ResultFile::from_machine_loss(r, &ctx.workdir),
        None => ResultFile::new("crashtest", blobbench::measure::envinfo::collect(&ctx.workdir)),
    };
    let verdicts = match &report {
        _ if args.no_power_cut => {
            replicated::verdicts(&standings, Some(&replicated::documented_losses()), CrashSource::Documented)
        }
        r => replicated::verdicts(&standings, r.as_ref().map(|r| &r.section), CrashSource::Measured),
    };
    let mut costs: Vec<ReplicationCost> = Vec::new();
    let mut unmeasured = Vec::new();
    if !interrupted {
        let plan = CostPlan::new(args.quick, args.clients);
        for layout in replicated::ranked_layouts(&standings, &verdicts) {
            match replication_cost::measure(ctx, layout, &plan) {
                Ok((cost, set)) => {
                    costs.push(cost);
                    results.rounds.push(set);
                }
                Err(blobbench::Error::Interrupted) => {
                    anyhow::bail!("interrupted while measuring what replication costs")
                }
                Err(e) => unmeasured.push(format!("{layout}: what replication costs could not be measured ({e})")),
            }
        }
    }
    results.notes.extend(report::replicated_notes(&standings, &verdicts, &costs));
    results.notes.extend(unmeasured);
    let ranked = verdicts.iter().any(|v| v.excluded.is_none());
    args.label.apply(&mut results);
    super::output::write_report(args.out, std::slice::from_ref(&results), args.force)?;
    print!("{}", report::terminal(&results, false));
    for note in &results.notes {
        println!("{note}");
    }
    println!(
        "advise took {:.0} s; page in {} (open {})",
        started.elapsed().as_secs_f64(),
        args.out.display(),
        args.out.join("index.html").display()
    );
    if interrupted {
        anyhow::bail!("interrupted: the page holds what was measured before the stop");
    }
    if !ranked {
        anyhow::bail!("--durability replicated: no candidate kept every acknowledged write through a machine loss");
    }
    Ok(())
}

/// The quick machine-loss run of the candidates' layouts and the
/// controls; None when no candidate has a layout to lose a host of.
fn machine_losses(
    args: &Asked,
    ctx: &StudyContext,
    standings: &[(Store, Standing)],
) -> anyhow::Result<Option<MachineLossReport>> {
    let mut methods: Vec<_> = standings
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Layout(m) => Some(*m),
            _ => None,
        })
        .collect();
    methods.extend(replicated::controls(standings));
    if methods.is_empty() {
        return Ok(None);
    }
    let opts = loss::LossOptions {
        methods,
        losses: if args.quick { replicated::QUICK_LOSSES } else { replicated::LOSSES },
        count: crashtest::QUICK_COUNT,
        max_delay: Duration::from_millis(200),
    };
    Ok(Some(loss::machine_loss_test(ctx, &opts)?))
}
