use super::*;
use crate::report::fixtures::{exp_mut, experiment_runs, full_suite, round_set};
use crate::report::study::concurrency::question::under_threads;
use crate::report::study::crashtest::question::after_power_cut;
use crate::report::study::suite::questions::{cold_reads, disk_space, durable_writes, fast_writes, warm_reads};

fn answer(files: &[ResultFile], q: Question) -> Answer {
    q(files, 0).expect("answered")
}

#[test]
fn the_full_suite_answers_four_questions_with_known_factors() {
    let files = [full_suite("host-a")];
    let reads = answer(&files, warm_reads);
    assert_eq!(reads.question, "10 KB reads");
    assert_eq!(
        (reads.winner.as_str(), reads.loser.as_str()),
        ("SQLite, blob API + mmap", "files, one directory (open/read)")
    );
    assert!((reads.factor.value - 13.0 / 5.0).abs() < 1e-9, "{reads:?}");
    assert_eq!(reads.chart_id, "fair-read-blob-mmap");
    assert_eq!(reads.outcome(), "SQLite, blob API + mmap: 2.60x faster");
    assert_eq!(reads.factor.describe(), "2.60-2.60 (min-max, unpaired, 3 runs each)");

    let fast = answer(&files, fast_writes);
    assert_eq!(
        (fast.winner.as_str(), fast.chart_id.as_str()),
        ("SQLite, journal OFF + synchronous OFF", "fair-write-unsafe")
    );
    assert!((fast.factor.value - 90.0 / 50.0).abs() < 1e-9);
    let durable = answer(&files, durable_writes);
    assert!((durable.factor.value - 2400.0 / 300.0).abs() < 1e-9);
    assert_eq!(durable.chart_id, "durable-write");
    let disk = answer(&files, disk_space);
    assert_eq!((disk.winner.as_str(), disk.better), ("SQLite database", "smaller"));
    assert!((disk.factor.value - 12_288_000.0 / 10_245_120.0).abs() < 1e-9);
    assert_eq!(disk.factor.describe(), "exact (one deterministic measurement)");

    assert_eq!(cold_reads(&files, 0), None, "warm runs do not answer the cold question");
    assert_eq!(under_threads(&files, 0), None);
    assert_eq!(answers(&files, &crate::report::questions()).len(), 4);
}

#[test]
fn runs_that_overlap_give_no_clear_winner() {
    let mut f = full_suite("host-a");
    *exp_mut(&mut f, "read/db-blob-mmap") = experiment_runs("read/db-blob-mmap", &[10.0, 12.0, 16.0]);
    *exp_mut(&mut f, "read/flat-posix") = experiment_runs("read/flat-posix", &[11.0, 13.0, 9.0]);
    for id in ["read/db-sql", "read/db-blob", "read/flat-stdio", "read/tree-stdio", "read/tree-posix"] {
        exp_mut(&mut f, id).summary.per_op_us.median = 100.0;
    }
    let reads = answer(&[f], warm_reads);
    assert!(reads.factor.spans_one(), "{:?}", reads.factor);
    assert_eq!(reads.outcome(), "no clear winner (the interval spans 1.0)");
    assert!(reads.factor.describe().contains("(min-max, unpaired, 3 runs each)"));
}

#[test]
fn five_runs_each_give_a_bootstrap_interval_and_files_can_win() {
    let mut f = full_suite("host-a");
    *exp_mut(&mut f, "write/db-off") = experiment_runs("write/db-off", &[100.0, 104.0, 98.0, 101.0, 99.0]);
    *exp_mut(&mut f, "write/db-wal-normal") = experiment_runs("write/db-wal-normal", &[200.0; 5]);
    *exp_mut(&mut f, "write/flat-inplace") = experiment_runs("write/flat-inplace", &[50.0, 51.0, 49.0, 52.0, 50.5]);
    let fast = answer(&[f], fast_writes);
    assert_eq!(fast.winner, "files, overwrite in place");
    assert!((fast.factor.value - 100.0 / 50.5).abs() < 1e-9, "{:?}", fast.factor);
    assert!(fast.factor.describe().ends_with("(95% bootstrap, unpaired, 5 runs each)"), "{}", fast.factor.describe());
    assert!(fast.factor.low > 1.8 && fast.factor.high < 2.2, "{:?}", fast.factor);
}

#[test]
fn cold_runs_answer_only_the_cold_question() {
    let mut f = full_suite("host-a");
    for e in f.experiments.iter_mut().filter(|e| e.id.starts_with("read/")) {
        e.params.plan.cold = true;
    }
    let files = [f];
    assert_eq!(warm_reads(&files, 0), None);
    assert_eq!(answer(&files, cold_reads).question, "10 KB reads, cold cache");
}

#[test]
fn the_section_has_one_row_per_question_and_file_and_links_charts() {
    let files = [full_suite("host-a"), full_suite("host-b")];
    let s = section(&files, &crate::report::questions());
    let Block::Verdict(Verdict { rows, .. }) = &s[0].blocks[0] else { panic!("verdict first") };
    assert_eq!(rows.len(), 8);
    assert_eq!((rows[0].result.as_str(), rows[1].result.as_str()), ("host-a", "host-b"));
    assert_eq!(rows[0].chart_title, "Reads by the blob API + mmap vs open/read");
    assert!(rows.iter().all(|r| !r.unclear));
    assert!(section(&[ResultFile::new("run", Default::default())], &crate::report::questions()).is_empty());
}

#[test]
fn a_file_without_suite_results_answers_nothing() {
    let mut f = full_suite("host-a");
    f.command = "matrix".into();
    f.experiments.clear();
    f.disk_usage.clear();
    assert!(answers(&[f], &crate::report::questions()).is_empty());
}

#[test]
fn power_cut_row_counts_what_was_kept_and_lost() {
    use crate::studies::crashtest::{PowerCutMethodResult, PowerCutSection};
    let mut f = ResultFile::new("crashtest", crate::measure::envinfo::Environment::default());
    let method = |name: &str, lost: u64| PowerCutMethodResult {
        method: name.into(),
        acknowledges_durability: true,
        cuts: 5,
        lost_after_ack: lost,
        ..Default::default()
    };
    f.power_cut = Some(PowerCutSection {
        model: "strict".into(),
        cuts_per_method: 5,
        methods: vec![method("db-wal-full", 0), method("db-delete", 3)],
        ..Default::default()
    });
    let a = after_power_cut(&[f], 0).expect("a row");
    assert_eq!(a.question, "after a power cut (strict model)");
    let (text, basis) = a.statement.unwrap();
    assert!(text.contains("kept every acknowledged write: db-wal-full"), "{text}");
    assert!(text.contains("db-delete (3 acknowledged writes lost"), "{text}");
    assert_eq!(basis, "exact counts over 5 cuts per method");
}

/// A suite file whose reads ran in rounds: `mmap` and `posix` are the
/// per-round times of the two winners, `control` the A/A twin's against
/// db-blob's (`blob`); every other read arm is slower than both.
fn with_read_rounds(mmap: &[f64], posix: &[f64], blob: &[f64], control: &[f64]) -> ResultFile {
    use crate::measure::busy::Load;
    let mut f = full_suite("host-a");
    let mut arms: Vec<(&str, Vec<f64>)> = vec![
        ("read/db-blob-mmap", mmap.to_vec()),
        ("read/flat-posix", posix.to_vec()),
        ("read/db-blob", blob.to_vec()),
    ];
    arms.push(("control/db-blob", control.to_vec()));
    for id in ["read/db-sql", "read/flat-stdio", "read/tree-stdio", "read/tree-posix"] {
        arms.push((id, vec![1000.0; mmap.len()]));
    }
    for (id, times) in &arms {
        let e = experiment_runs(id, times);
        match f.experiments.iter_mut().find(|x| x.id == *id) {
            Some(x) => *x = e,
            None => f.experiments.push(e),
        }
    }
    let rounds = (0..mmap.len())
        .map(|r| {
            let load = Load { other_cpu_pct: Some(if r == 0 { 90.0 } else { 1.0 }), ..Load::default() };
            (arms.iter().map(|(_, t)| t[r]).collect(), load)
        })
        .collect();
    let ids: Vec<&str> = arms.iter().map(|(id, _)| *id).collect();
    f.rounds.push(round_set("suite/reads", &ids, rounds));
    f
}

#[test]
fn rounds_give_paired_factors_and_old_files_stay_unpaired() {
    // Load hits rounds 1 and 4 on both arms: paired, the ratio is 2.0 throughout.
    let mmap = [5.0, 10.0, 5.0, 5.0, 15.0, 5.0, 5.0, 5.0];
    let posix: Vec<f64> = mmap.iter().map(|t| t * 2.0).collect();
    let blob = [8.0, 8.1, 7.9, 8.0, 8.2, 7.8, 8.0, 8.05];
    let control = [8.1, 8.0, 8.0, 7.9, 8.1, 7.9, 8.05, 8.0];
    let f = with_read_rounds(&mmap, &posix, &blob, &control);
    let reads = answer(std::slice::from_ref(&f), warm_reads);
    assert_eq!(reads.factor.method, crate::report::interval::Method::Paired);
    assert_eq!((reads.factor.low, reads.factor.value, reads.factor.high), (2.0, 2.0, 2.0));
    assert_eq!(reads.factor.describe(), "2.00-2.00 (95% paired, 8 rounds)");
    // The old file answers the same question by the old method, marked so.
    let old = answer(&[full_suite("host-a")], warm_reads);
    assert!(old.factor.describe().contains("unpaired"), "{}", old.factor.describe());
    // The verdict shows the noise floor and the busy round.
    let s = section(std::slice::from_ref(&f), &crate::report::questions());
    let text = format!("{:?}", s[0].blocks);
    assert!(text.contains("noise floor (A/A"), "{text}");
    assert!(text.contains("1 of 8 rounds ran on a busy machine (other processes up to 90%"), "{text}");
}

#[test]
fn a_factor_inside_the_noise_floor_is_within_noise() {
    // mmap and posix differ by 2%; the A/A twins by up to 5%.
    let mmap = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0];
    let posix = [10.2, 10.3, 10.1, 10.2, 10.25, 10.15, 10.2, 10.2];
    let blob = [12.0; 8];
    let control = [12.6, 11.4, 12.45, 11.55, 12.3, 11.7, 12.15, 11.85];
    let f = with_read_rounds(&mmap, &posix, &blob, &control);
    let reads = answer(std::slice::from_ref(&f), warm_reads);
    assert!(!reads.factor.spans_one(), "{:?}", reads.factor);
    let floor = crate::report::rounds::noise_floor(&f).expect("a floor");
    assert_eq!(reads.outcome_over(Some(&floor)), "within noise (1.02x is inside the A/A noise floor)");
    assert_eq!(reads.outcome(), "SQLite, blob API + mmap: 1.02x faster", "without a floor, the winner");
    let s = section(std::slice::from_ref(&f), &crate::report::questions());
    let Block::Verdict(Verdict { rows, .. }) = &s[0].blocks[0] else { panic!("verdict first") };
    assert!(rows[0].unclear && rows[0].outcome.starts_with("within noise"), "{:?}", rows[0]);
}

#[test]
fn inconsistent_rounds_render_unpaired_never_a_wrong_ratio() {
    let mmap = [5.0, 10.0, 5.0, 5.0, 15.0, 5.0];
    let posix: Vec<f64> = mmap.iter().map(|t| t * 2.0).collect();
    let mut f = with_read_rounds(&mmap, &posix, &[8.0; 6], &[8.0; 6]);
    f.rounds[0].rounds[3].per_op_us.pop();
    let reads = answer(std::slice::from_ref(&f), warm_reads);
    assert_ne!(reads.factor.method, crate::report::interval::Method::Paired);
    assert!(reads.factor.describe().contains("unpaired"), "{}", reads.factor.describe());
    let text = format!("{:?}", section(std::slice::from_ref(&f), &crate::report::questions())[0].blocks);
    assert!(text.contains("rounds inconsistent"), "{text}");
}

#[test]
fn noisy_arms_of_rounds_are_summed_up_once_not_warned_one_by_one() {
    // Every arm slowed alike in rounds 1 and 4: each arm's runs vary by far
    // more than 10%, but the paired ratios do not.
    let mmap = [5.0, 10.0, 5.0, 5.0, 15.0, 5.0, 5.0, 5.0];
    let posix: Vec<f64> = mmap.iter().map(|t| t * 2.0).collect();
    let blob: Vec<f64> = mmap.iter().map(|t| t * 1.6).collect();
    let f = with_read_rounds(&mmap, &posix, &blob, &blob);
    let text = format!("{:?}", crate::report::details::latency(std::slice::from_ref(&f)));
    assert_eq!(text.matches("varied by more than 10%").count(), 1, "{text}");
    assert!(text.contains("the runs of 4 of the arms measured in rounds varied by more than 10%"), "{text}");
    let page = format!("{:?}", (crate::report::study::suite::REPORT.sections)(std::slice::from_ref(&f)));
    assert!(!page.contains("Runs varied by up to"), "paired ratios need no per-chart spread warning: {page}");
    // An old file (no rounds) keeps the per-chart warning.
    let mut old = full_suite("host-a");
    *exp_mut(&mut old, "read/db-blob-mmap") = experiment_runs("read/db-blob-mmap", &mmap);
    let page = format!("{:?}", (crate::report::study::suite::REPORT.sections)(std::slice::from_ref(&old)));
    assert!(page.contains("Runs varied by up to"), "{page}");
}

/// The durable writes row compares each write committed (the `commit/...`
/// arms, by their steady-state figure) and the page says how far that
/// moves the article's one-transaction claim.
#[test]
fn durable_writes_compare_writes_each_committed() {
    let mut f = full_suite("host-a");
    let committed =
        [("commit/db-wal-full", 434.0), ("commit/flat-truncate-fsync", 900.0), ("commit/flat-inplace-fsync", 250.0)];
    f.experiments.extend(committed.iter().map(|(id, us)| crate::report::fixtures::experiment(id, *us)));
    f.experiments.push(crate::report::fixtures::experiment("commit/flat-replace-fsync", 800.0));
    let d = answer(std::slice::from_ref(&f), durable_writes);
    assert_eq!(d.question, "durable writes (fsync, each committed)");
    assert_eq!((d.chart_id.as_str(), d.winner.as_str()), ("durable-write-committed", "files, in place + fsync"));
    assert!((d.factor.value - 434.0 / 250.0).abs() < 1e-9, "{d:?}");
    let page = format!("{:?}", (crate::report::study::suite::REPORT.sections)(std::slice::from_ref(&f)));
    assert!(
        page.contains(
            "How far the article's claim moves: On this machine the fastest durable file method takes 8.00x \
             SQLite's time per write when all of a run's writes are one transaction (the article's way), and 0.58x \
             with each write committed on its own."
        ),
        "{page}"
    );
    assert!(page.contains("one transaction of 100 writes per run"), "the article's chart names K");
    assert!(page.contains("a commit per write"), "the committed chart names N");
    let mut older = full_suite("host-a");
    crate::report::fixtures::as_older(&mut older);
    assert_eq!(answer(&[older], durable_writes).question, "durable writes (fsync, one commit per run: older file)");
}
