//! `advise --durability replicated`: which candidates can keep a write
//! through the loss of a machine, judged by machine losses of their
//! throwaway replicated layouts (`crashtest --machine-loss`'s), the
//! asynchronous standby beside them as the negative control. Only those
//! that kept every acknowledged write are ranked; the rest are listed
//! with their reasons. What replication costs is then measured on the
//! clusters the losses ran on, against the same stores alone, built while
//! the losses ran.

use std::time::{Duration, Instant};

use blobbench::records::ConfigId;
use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::advise::replicated::{self, Standing};
use blobbench::studies::advise::replication_cost::{self, CostPlan, CostStore, ReplicationCost};
use blobbench::studies::advise::{CrashSource, Store, ALWAYS};
use blobbench::studies::context::StudyContext;
use blobbench::studies::crashtest;
use blobbench::studies::crashtest::loss::{self, Kept, MachineLossReport};

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
    let layouts = candidate_layouts(&standings);
    let count = crashtest::QUICK_COUNT;
    // The stores alone are built while the losses run: both mostly wait.
    let (losses, alone) = std::thread::scope(|s| {
        let alone = s.spawn(|| {
            let build = |&m: &ConfigId| (m, replication_cost::build_alone(ctx, m, count));
            layouts.iter().map(build).collect::<Vec<_>>()
        });
        let losses = if args.no_power_cut { Ok(None) } else { machine_losses(args, ctx, &standings, count) };
        (losses, alone.join().unwrap_or_default())
    });
    let (report, kept) = losses?.unzip();
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
    let (costs, unmeasured) = match interrupted {
        true => (Vec::new(), Vec::new()),
        false => {
            let plan = CostPlan::new(args.quick, args.clients, count);
            let ranked = replicated::ranked_layouts(&standings, &verdicts);
            measure_costs(ctx, &plan, &ranked, (kept.as_ref(), alone), &mut results)?
        }
    };
    // Its stores ended (their servers and hosts) within the time reported.
    drop(kept);
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

/// The candidates' replicated layouts, to be judged by machine losses.
fn candidate_layouts(standings: &[(Store, Standing)]) -> Vec<ConfigId> {
    standings
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Layout(m) => Some(*m),
            _ => None,
        })
        .collect()
}

/// What replication costs for each ranked layout, on the machine-loss
/// run's `kept` store against the one `alone` built meanwhile (either
/// built now when missing), its rounds added to `results`; and a line for
/// each layout whose cost could not be measured, saying why.
fn measure_costs(
    ctx: &StudyContext,
    plan: &CostPlan,
    ranked: &[ConfigId],
    (kept, mut alone): (Option<&Kept>, Vec<(ConfigId, blobbench::Result<CostStore>)>),
    results: &mut ResultFile,
) -> anyhow::Result<(Vec<ReplicationCost>, Vec<String>)> {
    let (mut costs, mut unmeasured) = (Vec::new(), Vec::new());
    for &layout in ranked {
        let i = alone.iter().position(|(m, _)| *m == layout);
        let alone = i.map(|i| alone.swap_remove(i).1);
        let alone = alone.unwrap_or_else(|| replication_cost::build_alone(ctx, layout, plan.count));
        let stores = replicated_store(kept, ctx, layout, plan.count).and_then(|r| Ok((r, alone?)));
        match stores.and_then(|stores| replication_cost::measure(ctx, layout, stores, plan)) {
            Ok((cost, set)) => {
                costs.push(cost);
                results.rounds.push(set);
            }
            Err(blobbench::Error::Interrupted) => anyhow::bail!("interrupted while measuring what replication costs"),
            Err(e) => unmeasured.push(format!("{layout}: what replication costs could not be measured ({e})")),
        }
    }
    Ok((costs, unmeasured))
}

/// `layout`'s replicated store for its cost: the machine-loss run's,
/// whole again after its losses; else (no losses run: `--no-power-cut`)
/// one built now.
fn replicated_store(
    kept: Option<&Kept>,
    ctx: &StudyContext,
    layout: ConfigId,
    count: u32,
) -> blobbench::Result<CostStore> {
    match kept.and_then(|k| k.take(layout)) {
        Some(engine) => Ok(CostStore::kept(engine)),
        None => replication_cost::build(ctx, layout, count, &ctx.settings),
    }
}

/// The machine-loss run of the candidates' layouts and the controls, all
/// at once, each on a cluster of its own; the candidates' stores kept for
/// the cost. None when no candidate has a layout to lose a host of.
fn machine_losses(
    args: &Asked,
    ctx: &StudyContext,
    standings: &[(Store, Standing)],
    count: u32,
) -> blobbench::Result<Option<(MachineLossReport, Kept)>> {
    let keep = candidate_layouts(standings);
    let mut methods = keep.clone();
    methods.extend(replicated::controls(standings));
    if methods.is_empty() {
        return Ok(None);
    }
    let opts = loss::LossOptions {
        methods,
        losses: if args.quick { replicated::QUICK_LOSSES } else { replicated::LOSSES },
        count,
        max_delay: Duration::from_millis(200),
        at_once: true,
        keep,
    };
    loss::machine_loss_keeping(ctx, &opts).map(Some)
}
