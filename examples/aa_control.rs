//! The A/A control of issue 21: one read path measured as two identical
//! arms, in interleaved rounds, COMPARISONS times. A 95% interval should
//! span 1.0 ("no clear winner") in about 19 of 20 comparisons; the bench
//! asks for at least 18 of 20. Run by `bench/aa-control.sh`, which builds
//! the dataset first:
//!
//!   cargo run --release --example aa_control -- DB [COMPARISONS] [ROUNDS]

use blobbench::drivers::run::{RunArm, RunOptions};
use blobbench::measure::rounds::{run_rounds, Arm, RoundsPlan};
use blobbench::records::keys::Order;
use blobbench::records::{DbAccess, Plan};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> blobbench::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = || blobbench::Error::invalid("usage: aa_control DB [COMPARISONS] [ROUNDS]");
    let db = args.next().ok_or_else(usage)?;
    let number = |a: Option<String>, default: u32| a.map_or(Ok(default), |s| s.parse().map_err(|_| usage()));
    let comparisons = number(args.next(), 20)?;
    let rounds = number(args.next(), 10)?;
    let mut opts = RunOptions::new(&db);
    opts.count = 2000;
    opts.order = Order::Random;
    opts.settings.db.access = DbAccess::BlobApi;
    opts.plan = Plan { repeat: 1, warmup: 1, cold: false, latency: false };
    let mut clear = 0;
    for c in 0..comparisons {
        let mut arms = Vec::new();
        for _ in 0..2 {
            arms.push(RunArm::prepare(blobbench::engine::open(&opts.path, &opts.settings)?, &opts)?);
        }
        let mut dyn_arms: Vec<&mut dyn Arm> = arms.iter_mut().map(|a| a as &mut dyn Arm).collect();
        let plan = RoundsPlan { seed: u64::from(c) + 1, latency: false, ..RoundsPlan::new(rounds, None) };
        let ids = ["a".to_string(), "b".to_string()];
        // No pair given to the stop rule: every comparison runs all its rounds.
        let out = run_rounds("aa", &ids, &mut dyn_arms, &plan, &[], &mut |_, _| {})?;
        let r = out.set.ratio("a", "b").ok_or_else(usage)?;
        let verdict = if r.spans_one() { "no clear winner" } else { "a winner (false)" };
        if r.spans_one() {
            clear += 1;
        }
        println!(
            "comparison {:>2}: {:.3} ({:.3}-{:.3}, {} rounds): {verdict}",
            c + 1,
            r.value,
            r.low,
            r.high,
            r.rounds
        );
    }
    println!("A/A: no clear winner in {clear} of {comparisons} comparisons (want at least 90%)");
    Ok(())
}
