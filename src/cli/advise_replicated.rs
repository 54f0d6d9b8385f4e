//! `advise --durability replicated`: which candidates can keep a write
//! through the loss of a machine, judged by machine losses of their
//! throwaway replicated layouts (`crashtest --machine-loss`'s), the
//! asynchronous standby beside them as the negative control. Only those
//! that kept every acknowledged write are ranked; the rest are listed
//! with their reasons.

use std::time::Duration;

use blobbench::report;
use blobbench::results::ResultFile;
use blobbench::studies::advise::replicated::{self, Standing};
use blobbench::studies::advise::{Store, ALWAYS};
use blobbench::studies::context::StudyContext;
use blobbench::studies::crashtest::{self, loss};

/// What `advise --durability replicated` is asked beyond its context.
pub struct Asked<'a> {
    pub out: &'a std::path::Path,
    pub force: bool,
    pub quick: bool,
    /// `--pg URL`: the user's server, whose replication is read.
    pub pg: Option<String>,
    pub label: &'a super::output::LabelArg,
}

pub fn run(args: &Asked, ctx: &StudyContext) -> anyhow::Result<()> {
    let mut ctx = ctx.clone();
    ctx.settings.pg.url.clone_from(&args.pg);
    let ctx = &ctx;
    let stores: Vec<Store> = ALWAYS.into_iter().chain(ctx.engines.iter().map(|&k| Store::Engine(k))).collect();
    let pg = replicated::read_users_postgres(&stores, &ctx.settings)?;
    let standings = replicated::gate(&stores, pg.as_ref())?;
    super::output::prepare_report_dir(args.out, args.force)?;
    let mut methods: Vec<_> = standings
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Layout(m) => Some(*m),
            _ => None,
        })
        .collect();
    methods.extend(replicated::controls(&standings));
    let (report, interrupted) = if methods.is_empty() {
        (None, false)
    } else {
        let opts = loss::LossOptions {
            methods,
            losses: if args.quick { replicated::QUICK_LOSSES } else { replicated::LOSSES },
            count: crashtest::QUICK_COUNT,
            max_delay: Duration::from_millis(200),
        };
        let r = loss::machine_loss_test(ctx, &opts)?;
        let interrupted = r.interrupted;
        (Some(r), interrupted)
    };
    let mut results = match &report {
        Some(r) => ResultFile::from_machine_loss(r, &ctx.workdir),
        None => ResultFile::new("crashtest", blobbench::measure::envinfo::collect(&ctx.workdir)),
    };
    let verdicts = replicated::verdicts(&standings, report.as_ref().map(|r| &r.section));
    let ranked: Vec<&str> = verdicts.iter().filter(|v| v.excluded.is_none()).map(|v| v.name.as_str()).collect();
    results.notes.push(format!(
        "advise --durability replicated (a write that returned survives a power cut of every machine and the loss of \
         any one): {}",
        if ranked.is_empty() {
            "no candidate meets it".to_string()
        } else {
            format!("meets it: {}", ranked.join(", "))
        }
    ));
    for (store, s) in &standings {
        if let Standing::UsersServer(how) = s {
            results.notes.push(format!("{store}: {how} (the server's settings, not measured)"));
        }
    }
    for v in verdicts.iter().filter_map(|v| v.excluded.as_ref().map(|why| format!("{}: excluded, {why}", v.name))) {
        results.notes.push(v);
    }
    results.notes.push(
        "The replicated write's cost per write against the same store alone is not measured by this advice yet; on \
         one machine the link between hosts is a veth or loopback link, so any such cost here is a floor (--pg URL \
         gives the real figure)."
            .into(),
    );
    args.label.apply(&mut results);
    super::output::write_report(args.out, std::slice::from_ref(&results), args.force)?;
    print!("{}", report::terminal(&results, false));
    for note in &results.notes {
        println!("{note}");
    }
    println!("page in {} (open {})", args.out.display(), args.out.join("index.html").display());
    if interrupted {
        anyhow::bail!("interrupted: the page holds what was measured before the stop");
    }
    if ranked.is_empty() {
        anyhow::bail!("--durability replicated: no candidate kept every acknowledged write through a machine loss");
    }
    Ok(())
}
