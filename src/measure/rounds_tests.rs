use super::*;
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
            phases: Phases { loop_ns: total, kvtest_total_ns: total, ..Phases::default() },
        })
    }
}

fn plan(max_rounds: u32) -> RoundsPlan {
    RoundsPlan { warmup: true, max_rounds, budget: None, target: DEFAULT_TARGET, seed: 7, latency: false }
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

#[test]
fn bad_plans_are_refused() {
    assert!(plan(0).validate().unwrap_err().to_string().contains("--rounds"));
    let zero = RoundsPlan { budget: Some(Duration::ZERO), ..plan(5) };
    assert!(zero.validate().unwrap_err().to_string().contains("--budget"));
}

#[test]
fn inconsistent_round_sets_give_no_ratio() {
    let round = |order: Vec<u32>, f: Vec<f64>| Round {
        order,
        steady_per_op_us: f.clone(),
        per_op_us: f,
        elapsed_ms: 1.0,
        load: Load::default(),
    };
    let mut set = RoundSet {
        id: "t".into(),
        arms: vec!["a".into(), "b".into()],
        seed: 1,
        warmup: true,
        target_pct: 5.0,
        budget_s: None,
        max_rounds: 3,
        stop: StopReason::MaxRounds,
        rounds: vec![round(vec![0, 1], vec![2.0, 1.0]), round(vec![1, 0], vec![2.2, 1.1])],
        warnings: vec![],
    };
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

/// Rounds pair the steady-state figures; kvtest's totals pair only when
/// asked (the article's charts), and an older set pairs kvtest's.
#[test]
fn rounds_pair_the_steady_figures() {
    let round = |steady: Vec<f64>, kvtest: Vec<f64>| Round {
        order: vec![0, 1],
        steady_per_op_us: steady,
        per_op_us: kvtest,
        elapsed_ms: 1.0,
        load: Load::default(),
    };
    let mut set = RoundSet {
        id: "t".into(),
        arms: vec!["a".into(), "b".into()],
        seed: 1,
        warmup: true,
        target_pct: 5.0,
        budget_s: None,
        max_rounds: 3,
        stop: StopReason::MaxRounds,
        rounds: (0..3).map(|_| round(vec![4.0, 2.0], vec![1.0, 2.0])).collect(),
        warnings: vec![],
    };
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
