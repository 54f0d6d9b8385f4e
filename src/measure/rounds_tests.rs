use super::*;
use crate::measure::clock::FakeClock;
use crate::measure::Phases;

/// An arm whose run takes `per_op_ns` per op, times a load factor that the
/// test changes between rounds; records the order it ran in.
struct Fake {
    per_op_ns: u64,
    load: std::rc::Rc<std::cell::Cell<u64>>,
    log: std::rc::Rc<std::cell::RefCell<Vec<(usize, bool)>>>,
    me: usize,
}

impl Arm for Fake {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        self.log.borrow_mut().push((self.me, ctx.timed));
        let total = self.per_op_ns * 100 * self.load.get();
        Ok(RunOutcome {
            ops: 100,
            misses: 0,
            bytes: 100,
            phases: Phases {
                setup_ns: 500 * (self.me as u64 + 1),
                loop_ns: total,
                kvtest_total_ns: total,
                ..Phases::default()
            },
            // The warm-up opens the engine's handle; the timed runs find it open.
            opened_handle: !ctx.timed,
        })
    }
}

fn plan(max_rounds: u32) -> RoundsPlan {
    RoundsPlan { seed: 7, latency: false, ..RoundsPlan::new(max_rounds, None) }
}

#[test]
fn every_round_runs_every_arm_once_in_a_recorded_shuffled_order() {
    let load = std::rc::Rc::new(std::cell::Cell::new(1));
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut fakes: Vec<Fake> =
        (0..3).map(|me| Fake { per_op_ns: 1000 * (me as u64 + 1), load: load.clone(), log: log.clone(), me }).collect();
    let mut arms: Vec<&mut dyn Arm> = fakes.iter_mut().map(|f| f as &mut dyn Arm).collect();
    let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let out = run_rounds("t", &ids, &mut arms, &plan(8), &[], &mut |_, _| {}).unwrap();
    let log = log.borrow();
    assert_eq!(log.iter().filter(|(_, timed)| !timed).count(), 3, "one warm-up per arm");
    assert!(log[..3].iter().all(|(_, t)| !t), "warm-ups come first");
    assert_eq!(out.set.rounds.len(), 8);
    assert_eq!(out.set.stop, StopReason::MaxRounds, "no comparison: runs to --rounds");
    assert!(out.set.consistent());
    let timed: Vec<usize> = log.iter().filter(|(_, t)| *t).map(|(i, _)| *i).collect();
    let recorded: Vec<usize> = out.set.rounds.iter().flat_map(|r| r.order.iter().map(|&i| i as usize)).collect();
    assert_eq!(timed, recorded, "the recorded order is the order run");
    let orders: std::collections::HashSet<&Vec<u32>> = out.set.rounds.iter().map(|r| &r.order).collect();
    assert!(orders.len() > 1, "orders are shuffled per round");
    assert_eq!(out.measured[1].runs.len(), 8);
    assert!((out.set.ratio("c", "a").unwrap().value - 3.0).abs() < 1e-9);
    let opens: Vec<Option<u64>> = out.measured.iter().map(|m| m.handle_open_ns).collect();
    assert_eq!(opens, [Some(500), Some(1000), Some(1500)], "each arm's one-off open, from its warm-up");
}

#[test]
fn the_same_seed_gives_the_same_orders() {
    let orders = || {
        let load = std::rc::Rc::new(std::cell::Cell::new(1));
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut fakes: Vec<Fake> =
            (0..4).map(|me| Fake { per_op_ns: 1000, load: load.clone(), log: log.clone(), me }).collect();
        let mut arms: Vec<&mut dyn Arm> = fakes.iter_mut().map(|f| f as &mut dyn Arm).collect();
        let ids: Vec<String> = (0..4).map(|i| i.to_string()).collect();
        let out = run_rounds("t", &ids, &mut arms, &plan(5), &[], &mut |_, _| {}).unwrap();
        out.set.rounds.into_iter().map(|r| r.order).collect::<Vec<_>>()
    };
    assert_eq!(orders(), orders());
}

#[test]
fn precise_pairs_stop_after_the_minimum_rounds() {
    let load = std::rc::Rc::new(std::cell::Cell::new(1));
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut fakes: Vec<Fake> =
        (0..2).map(|me| Fake { per_op_ns: 1000 * (me as u64 + 1), load: load.clone(), log: log.clone(), me }).collect();
    let mut arms: Vec<&mut dyn Arm> = fakes.iter_mut().map(|f| f as &mut dyn Arm).collect();
    let ids: Vec<String> = ["a", "b"].map(String::from).to_vec();
    let c = Comparison { a: vec![0], b: vec![1] };
    let out = run_rounds("t", &ids, &mut arms, &plan(50), &[c], &mut |_, _| {}).unwrap();
    assert_eq!(out.set.stop, StopReason::Precise);
    assert_eq!(out.set.rounds.len(), MIN_ROUNDS_95);
}

#[test]
fn stop_rule_precision_budget_and_cap() {
    let mut p = plan(20);
    let s = Duration::from_secs;
    // Precise, but not before the minimum rounds.
    assert_eq!(stop_after(3, s(3), s(3), &p, Some(0.01)), None);
    assert_eq!(stop_after(6, s(6), s(6), &p, Some(0.01)), Some(StopReason::Precise));
    // Wide intervals keep going; a pair without an interval keeps going.
    assert_eq!(stop_after(6, s(6), s(6), &p, Some(0.2)), None);
    assert_eq!(stop_after(6, s(6), s(6), &p, None), None);
    // A "significant" difference is never a reason to stop.
    assert_eq!(stop_after(10, s(10), s(10), &p, Some(0.06)), None);
    assert_eq!(stop_after(20, s(20), s(20), &p, Some(0.5)), Some(StopReason::MaxRounds));
    // The budget: stop when another round would not fit.
    p.budget = Some(s(10));
    assert_eq!(stop_after(4, s(8), s(8), &p, Some(0.5)), None, "8 s + 2 s fits in 10 s");
    let late = Duration::from_millis(8100);
    assert_eq!(stop_after(4, late, late, &p, Some(0.5)), Some(StopReason::Budget));
    // A round's cost is judged without the warm-up: 3 s of warm-up and one
    // 2 s round leave room for another in 10 s.
    assert_eq!(stop_after(1, s(5), s(2), &p, Some(0.5)), None);
    assert_eq!(stop_after(1, s(9), s(2), &p, Some(0.5)), Some(StopReason::Budget));
    // Fewer rounds than a 95% interval needs: --rounds 3 runs 3.
    assert_eq!(plan(3).min_rounds(), 3);
}

/// An arm that takes `seconds` of a fake clock per run.
struct Slow {
    clock: &'static FakeClock,
    seconds: u64,
}

impl Arm for Slow {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, _: RunContext<'_>) -> Result<RunOutcome> {
        self.clock.advance(Duration::from_secs(self.seconds));
        let ns = self.seconds * 1_000_000_000;
        Ok(RunOutcome {
            ops: 1,
            misses: 0,
            bytes: 1,
            phases: Phases { loop_ns: ns, kvtest_total_ns: ns, ..Phases::default() },
            opened_handle: false,
        })
    }
}

/// On a fake clock, whatever the machine's speed: two arms of 1 s each
/// (a 2 s warm-up, then 2 s rounds) in a 10 s budget run 4 rounds, the
/// last of which ends at the budget, and stop for the budget.
#[test]
fn the_budget_is_obeyed() {
    let fake = FakeClock::new();
    let mut slow: Vec<Slow> = (0..2).map(|_| Slow { clock: fake, seconds: 1 }).collect();
    let mut arms: Vec<&mut dyn Arm> = slow.iter_mut().map(|a| a as &mut dyn Arm).collect();
    let ids: Vec<String> = ["a", "b"].map(String::from).to_vec();
    let p = RoundsPlan { budget: Some(Duration::from_secs(10)), clock: fake.clock(), ..plan(50) };
    let start = fake.clock().now();
    let out = run_rounds("t", &ids, &mut arms, &p, &[], &mut |_, _| {}).unwrap();
    assert_eq!(out.set.rounds.len(), 4);
    assert_eq!(out.set.stop, StopReason::Budget);
    assert_eq!(fake.clock().since(start), Duration::from_secs(10), "within the budget");
    assert!(out.set.rounds.iter().all(|r| r.elapsed_ms == 2000.0), "rounds timed on the same clock");
    let warning = out.set.warnings.join("; ");
    assert!(warning.contains("--budget 10s allowed only 4 round(s) (one takes about 2.0s)"), "{warning}");
}

#[test]
fn bad_plans_are_refused() {
    assert!(plan(0).validate().unwrap_err().to_string().contains("--rounds"));
    let zero = RoundsPlan { budget: Some(Duration::ZERO), ..plan(5) };
    assert!(zero.validate().unwrap_err().to_string().contains("--budget"));
}

#[test]
fn inconsistent_round_sets_give_no_ratio() {
    let round = |order: Vec<u32>, f: Vec<f64>| round_of(order, f.clone(), f);
    let mut set = two_arm_set(vec![round(vec![0, 1], vec![2.0, 1.0]), round(vec![1, 0], vec![2.2, 1.1])]);
    assert!(set.ratio("a", "b").is_some());
    set.rounds.push(round(vec![0], vec![2.0]));
    assert!(!set.consistent(), "an arm missing from a round");
    assert_eq!(set.ratio("a", "b"), None);
    set.rounds[2] = round(vec![0, 0], vec![2.0, 1.0]);
    assert!(!set.consistent(), "an order that runs one arm twice");
    set.rounds[2] = round(vec![0, 1], vec![2.0, 1.0, 3.0]);
    assert!(!set.consistent(), "rounds of different lengths");
    assert_eq!(set.ratio("a", "zzz"), None);
}

#[test]
fn a_burst_of_load_on_some_rounds_leaves_the_paired_ratio() {
    let load = std::rc::Rc::new(std::cell::Cell::new(1));
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut fakes: Vec<Fake> =
        (0..2).map(|me| Fake { per_op_ns: 1000 * (me as u64 + 1), load: load.clone(), log: log.clone(), me }).collect();
    let l2 = load.clone();
    let mut arms: Vec<&mut dyn Arm> = fakes.iter_mut().map(|f| f as &mut dyn Arm).collect();
    let ids: Vec<String> = ["a", "b"].map(String::from).to_vec();
    let mut runs = 0;
    let out = run_rounds("t", &ids, &mut arms, &plan(10), &[], &mut |_, _| {
        runs += 1;
        // Load comes and goes whole rounds at a time (after each 2 runs).
        if runs % 2 == 0 {
            l2.set(if runs % 6 == 0 { 5 } else { 1 });
        }
    })
    .unwrap();
    let r = out.set.ratio("b", "a").unwrap();
    assert!((r.value - 2.0).abs() < 1e-9 && (r.low - 2.0).abs() < 1e-9, "{r:?}");
}

/// An arm whose runs can be sized: each op "takes" `per_op_ns` in its
/// loop (ten times that in its first run, as a first session's writes
/// may) and each run `one_off_ns` besides; it may skip its warm-up.
struct Sizable {
    ops: u64,
    per_op_ns: u64,
    one_off_ns: u64,
    warms_up: bool,
    runs: Vec<(bool, u64)>,
}

impl Arm for Sizable {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        None
    }
    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let first = self.runs.is_empty();
        self.runs.push((ctx.timed, self.ops));
        let loop_ns = self.per_op_ns * self.ops * if first { 10 } else { 1 };
        let (setup_ns, kvtest_total_ns) = (self.one_off_ns, loop_ns + self.one_off_ns);
        let phases = Phases { setup_ns, loop_ns, kvtest_total_ns, ..Phases::default() };
        Ok(RunOutcome { ops: self.ops, misses: 0, bytes: self.ops, phases, opened_handle: false })
    }
    fn warms_up(&self) -> bool {
        self.warms_up
    }
    fn ops_per_run(&self) -> Option<u64> {
        Some(self.ops)
    }
    fn set_ops_per_run(&mut self, ops: u64) {
        self.ops = ops;
    }
}

#[test]
fn runs_sized_by_time_are_sized_once_from_the_warm_up() {
    // A durable writer (1 ms per op, 4 ms of open and close) that skips its
    // warm-up, and a fast one (10 µs per op): each judged from a 20-op
    // untimed run after its warm-up (whose ops took ten times as long),
    // then fixed for every round and recorded.
    let mut slow = Sizable { ops: 20, per_op_ns: 1_000_000, one_off_ns: 4_000_000, warms_up: false, runs: vec![] };
    let mut fast = Sizable { ops: 20, per_op_ns: 10_000, one_off_ns: 0, warms_up: true, runs: vec![] };
    let mut arms: Vec<&mut dyn Arm> = vec![&mut slow, &mut fast];
    let ids: Vec<String> = ["slow", "fast"].map(String::from).to_vec();
    let p = RoundsPlan { run_time: Some(Duration::from_millis(100)), ..plan(4) };
    let out = run_rounds("t", &ids, &mut arms, &p, &[], &mut |_, _| {}).unwrap();
    // (100 ms - 4 ms) / 1 ms and 100 ms / 10 µs.
    assert_eq!(out.set.ops_per_run, [96, 10_000]);
    assert_eq!(out.set.run_time_s, Some(0.1));
    assert_eq!(slow.runs[..2], [(false, 20), (false, 20)], "a warm-up it would have skipped, then one to size");
    assert!(slow.runs[2..].iter().all(|&r| r == (true, 96)) && slow.runs.len() == 6, "{:?}", slow.runs);
    assert_eq!(fast.runs[..2], [(false, 20), (false, 20)]);
    assert!(fast.runs[2..].iter().all(|&r| r == (true, 10_000)) && fast.runs.len() == 6, "{:?}", fast.runs);
    // Without a run time the arms keep their counts, and skip as they ask.
    let mut slow = Sizable { runs: vec![], ..slow };
    let mut arms: Vec<&mut dyn Arm> = vec![&mut slow];
    let out = run_rounds("t", &ids[..1], &mut arms, &plan(2), &[], &mut |_, _| {}).unwrap();
    assert_eq!(out.set.ops_per_run, [96]);
    assert_eq!(slow.runs, [(true, 96), (true, 96)]);
}

/// A cold [`Sizable`]: it evicts before each run the rounds time, and
/// logs each eviction between its runs.
struct ColdSizable {
    inner: Sizable,
    log: Vec<&'static str>,
}

impl Arm for ColdSizable {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        self.log.push("evict");
        Some(Ok(EvictionReport { effective: true, ..EvictionReport::default() }))
    }
    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        self.log.push(if ctx.timed { "timed" } else { "untimed" });
        self.inner.run(ctx)
    }
    fn warms_up(&self) -> bool {
        false
    }
    fn ops_per_run(&self) -> Option<u64> {
        self.inner.ops_per_run()
    }
    fn set_ops_per_run(&mut self, ops: u64) {
        self.inner.set_ops_per_run(ops);
    }
}

#[test]
fn a_cold_arm_is_sized_from_a_cold_run() {
    // A cold read at 1 ms per op: sized from a run the cache was emptied
    // before, as before each timed one, so its runs take the time asked
    // and not the warm cache's.
    let inner = Sizable { ops: 50, per_op_ns: 1_000_000, one_off_ns: 0, warms_up: false, runs: vec![] };
    let mut cold = ColdSizable { inner, log: vec![] };
    let mut arms: Vec<&mut dyn Arm> = vec![&mut cold];
    let p = RoundsPlan { run_time: Some(Duration::from_millis(100)), ..plan(2) };
    let out = run_rounds("t", &["cold".to_string()], &mut arms, &p, &[], &mut |_, _| {}).unwrap();
    // Its warm-up, taken as every sized arm's, then the cold run it is
    // sized from.
    assert_eq!(cold.log, ["untimed", "evict", "untimed", "evict", "timed", "evict", "timed"]);
    // 100 ms / 1 ms per op.
    assert_eq!(out.set.ops_per_run, [100]);
}

#[test]
fn sized_runs_stay_within_their_bounds() {
    let outcome = |ops: u64, loop_ns: u64, setup_ns: u64| RunOutcome {
        ops,
        misses: 0,
        bytes: 0,
        phases: Phases { setup_ns, loop_ns, kvtest_total_ns: setup_ns + loop_ns, ..Phases::default() },
        opened_handle: false,
    };
    let second = Duration::from_secs(1);
    // An op slower than the whole target still makes the fewest ops.
    assert_eq!(sized_ops(second, &outcome(20, 40_000_000_000, 0)), MIN_SIZED_OPS);
    // A loop that took no measurable time makes the most.
    assert_eq!(sized_ops(second, &outcome(20, 0, 0)), MAX_SIZED_OPS);
    // One-offs longer than the target leave no room: the fewest.
    assert_eq!(sized_ops(second, &outcome(20, 20_000, 2_000_000_000)), MIN_SIZED_OPS);
    // A checkpoint timed apart is a one-off too: (1 s - 0.5 s) / 1 ms.
    let mut o = outcome(20, 20_000_000, 0);
    o.phases.checkpoint_ns = 500_000_000;
    assert_eq!(sized_ops(second, &o), 500);
    // Commits and the work writes defer to the close are each op's: 20
    // writes, 10 ms of loop, 10 ms of commits and 20 ms deferred to a close
    // of 120 ms make 2 ms per write and 100 ms once: (1 s - 0.1 s) / 2 ms.
    let mut o = outcome(20, 10_000_000, 0);
    (o.phases.commit_ns, o.phases.close_ns, o.phases.deferred_ns) = (10_000_000, 120_000_000, 20_000_000);
    assert_eq!(sized_ops(second, &o), 450);
}

#[test]
fn the_least_rounds_run_whatever_the_budget() {
    let s = Duration::from_secs;
    let p = RoundsPlan { budget: Some(s(10)), least_rounds: 6, ..plan(20) };
    // A budget spent before the rounds began does not stop them before 6...
    assert_eq!(stop_after(1, s(30), s(2), &p, None), None);
    assert_eq!(stop_after(5, s(30), s(10), &p, None), None);
    // ...and does once they have run.
    assert_eq!(stop_after(6, s(30), s(12), &p, None), Some(StopReason::Budget));
    // The most rounds asked for still win.
    assert_eq!(stop_after(3, s(30), s(6), &RoundsPlan { max_rounds: 3, ..p }, None), Some(StopReason::MaxRounds));
}

/// Rounds pair the steady-state figures; kvtest's totals pair only when
/// asked (the article's charts), and an older set pairs kvtest's.
#[test]
fn rounds_pair_the_steady_figures() {
    let round = |steady: Vec<f64>, kvtest: Vec<f64>| round_of(vec![0, 1], steady, kvtest);
    let mut set = two_arm_set((0..3).map(|_| round(vec![4.0, 2.0], vec![1.0, 2.0])).collect());
    assert!(set.steady());
    assert_eq!(set.ratio("a", "b").unwrap().value, 2.0);
    assert_eq!(set.kvtest_ratio("a", "b").unwrap().value, 0.5);
    set.rounds[1].steady_per_op_us.pop();
    assert!(!set.consistent(), "a round missing an arm's steady figure");
    for r in &mut set.rounds {
        r.steady_per_op_us.clear();
    }
    assert!(!set.steady() && set.consistent());
    assert_eq!(set.ratio("a", "b").unwrap().value, 0.5, "an older set pairs kvtest's totals");
}

/// A round that ran its arms in `order`, with these steady-state and
/// kvtest per-op figures.
fn round_of(order: Vec<u32>, steady_per_op_us: Vec<f64>, per_op_us: Vec<f64>) -> Round {
    Round { order, steady_per_op_us, per_op_us, elapsed_ms: 1.0, load: Load::default() }
}

/// A finished set of arms "a" and "b" over `rounds`, stopped at 3 rounds.
fn two_arm_set(rounds: Vec<Round>) -> RoundSet {
    RoundSet {
        id: "t".into(),
        arms: vec!["a".into(), "b".into()],
        seed: 1,
        warmup: true,
        target_pct: 5.0,
        budget_s: None,
        max_rounds: 3,
        stop: StopReason::MaxRounds,
        rounds,
        warnings: vec![],
        run_time_s: None,
        ops_per_run: vec![],
    }
}
