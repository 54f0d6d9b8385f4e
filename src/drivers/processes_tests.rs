use super::*;
use crate::drivers::clients::{outcome_of, window_outcome};
use crate::measure::LatencySink;
use crate::records::{DatasetSpec, SyncLevel};
use crate::util::progress::Silent;

/// A tiny SQLite dataset, and settings its clients write it with.
fn dataset(dir: &std::path::Path) -> (PathBuf, EngineSettings) {
    let db = dir.join("kv.db");
    let spec = DatasetSpec { count: 100, size: 1000, variance: 500, ..DatasetSpec::default() };
    crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
    let mut settings = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
    settings.db.journal_mode = Some(crate::records::Journal::Wal);
    settings.db.sync = Some(SyncLevel::Normal);
    (db, settings)
}

fn job(path: PathBuf, settings: EngineSettings, blob_max: u32, max_id: u32) -> ClientJob {
    ClientJob {
        path,
        settings,
        client: 0,
        clients: 1,
        mix: Mix { read: 50, write: 50 },
        blob_max,
        max_id,
        seed: 11,
        rate: None,
    }
}

#[test]
fn jobs_orders_and_reports_read_back_as_written() {
    let mut settings = EngineSettings { commit_every: Some(3), ..EngineSettings::default() };
    settings.pg.url = Some("postgres://127.0.0.1/x".into());
    settings.s3.ca = Some("/ca.pem".into());
    let j = ClientJob { rate: Some(5000.0), ..job("/d/kv.db".into(), settings, 12_000, 100) };
    let back: ClientJob = serde_json::from_str(&serde_json::to_string(&j).unwrap()).unwrap();
    assert_eq!(back, j);
    let o = ClientOrder { round: 3, timed: true };
    assert_eq!(serde_json::from_str::<ClientOrder>(&serde_json::to_string(&o).unwrap()).unwrap(), o);
    let mut l = Latency::new();
    l.record(1500);
    let span = ClientSpan {
        ops: 1,
        misses: 0,
        bytes: 10,
        opened_from_ns: 1,
        loop_start_ns: 2,
        loop_end_ns: 3,
        committed_ns: 4,
        closed_ns: 5,
        close_checkpoints: false,
        close_finishes_writes: true,
        opened_handle: true,
        straddled_ns: Some((3, 4)),
        due: crate::drivers::session::DueCounts { due: 2, judged: 1, unstarted: 1, ..Default::default() },
        writes: true,
    };
    let r =
        ClientReport { span, busy_waits: 2, classes: vec![l.to_base64(), String::new(), String::new(), String::new()] };
    let back: ClientReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    // Empty text is no histogram: a class the client did not run.
    let one = back.done().unwrap().classes;
    assert_eq!((one.held(), one.get(0).map(Latency::count)), (1, Some(1)));
    let three = ClientReport { classes: vec![l.to_base64(); 3], ..r.clone() };
    assert!(three.done().is_err(), "a report carries all four classes");
    let garbled = ClientReport { classes: vec!["not base64!".to_string(); 4], ..r.clone() };
    assert!(garbled.done().is_err());
    let four = ClientReport { classes: vec![l.to_base64(); 4], ..r };
    let four = four.done().unwrap().classes;
    assert_eq!((0..4).filter_map(|c| four.get(c).map(Latency::count)).sum::<u64>(), 4);
}

/// The run of several clients is the loop from the first start to the
/// last end, on whatever clock their spans share.
#[test]
fn clients_runs_join_from_the_first_start_to_the_last_end() {
    let span = |start: u64, end: u64, ops: u64| ClientSpan {
        ops,
        misses: 1,
        bytes: ops * 10,
        opened_from_ns: start - 100,
        loop_start_ns: start,
        loop_end_ns: end,
        committed_ns: end + 10,
        closed_ns: end + 40,
        close_checkpoints: true,
        close_finishes_writes: false,
        opened_handle: false,
        straddled_ns: None,
        due: Default::default(),
        writes: false,
    };
    let base = 7_000_000_000_000;
    let out = outcome_of(&[span(base + 1000, base + 5000, 4), span(base + 1500, base + 9000, 6)], false).unwrap();
    assert_eq!((out.ops, out.misses, out.bytes), (10, 2, 100));
    assert_eq!(out.phases.loop_ns, 8000);
    assert_eq!(out.phases.setup_ns, 100);
    assert_eq!((out.phases.commit_ns, out.phases.close_ns, out.phases.deferred_ns), (10, 30, 0));
    assert_eq!(out.phases.kvtest_total_ns, 9040 - 900);
    let apart = outcome_of(&[span(base + 1000, base + 5000, 4)], true).unwrap();
    assert_eq!((apart.phases.close_ns, apart.phases.checkpoint_ns), (0, 30));
    assert_eq!(apart.phases.kvtest_total_ns, 4010 + 100);
    assert!(outcome_of(&[], false).is_err());
    assert!(parse_go("go 5 9").unwrap() == (5, 9) && parse_go("go 9 5").is_err() && parse_go("went 1 2").is_err());
}

/// One window of two clients: the loop is the window, less the share
/// that the operations under way at the deadline did not finish in it
/// (each counts for its part in the window), so no client loses the time
/// it spent on its last operation; under a rate too. The commit of the
/// writes left open and the work a close finishes for them are the
/// slowest client's of each, in the figure; the rest after the deadline
/// is a one-off. No operation in the window is an error naming the window
/// and the rate.
#[test]
fn a_window_counts_the_operation_under_way_at_the_deadline_for_its_part_in_it() {
    let base = 7_000_000_000_000;
    let w = (base + 1000, base + 11_000);
    let span = |ops: u64, straddled: (u64, u64), commit: u64, close: u64, finishes: bool| ClientSpan {
        ops,
        misses: 0,
        bytes: ops,
        opened_from_ns: base,
        loop_start_ns: base + 1000,
        loop_end_ns: base + 13_000,
        committed_ns: base + 13_000 + commit,
        closed_ns: base + 13_000 + commit + close,
        close_checkpoints: false,
        close_finishes_writes: finishes,
        opened_handle: false,
        straddled_ns: Some((base + straddled.0, base + straddled.1)),
        due: Default::default(),
        writes: true,
    };
    // Each client's last operation lay half in the window: 17 done and
    // one more in halves, in the 10 µs window.
    let spans = [span(8, (9000, 13_000), 10, 50, false), span(9, (10_000, 12_000), 20, 30, true)];
    for rate in [None, Some(100.0)] {
        let out = window_outcome(&spans, w, rate).unwrap();
        assert_eq!((out.ops, out.phases.loop_ns, out.phases.setup_ns), (17, 9444, 1000), "{rate:?}");
        assert_eq!((out.phases.commit_ns, out.phases.deferred_ns), (20, 30));
        assert_eq!(out.phases.steady_ns(), 9444 + 20 + 30);
        assert_eq!(out.phases.close_ns, 13_000 + 10 + 50 - 11_000 - 20, "after the deadline, less the commit");
    }
    let none = [ClientSpan { ops: 0, ..spans[0] }];
    let e = window_outcome(&none, w, Some(100.0)).unwrap_err().to_string();
    assert!(e.contains("no operation of 1 client(s) ended in the window of 0.000 s at 100 ops/s"), "{e}");
    assert!(window_outcome(&[], w, None).is_err());
}

/// A client process's body, fed its job, one order and its window as
/// lines, opens, says it is ready, runs over the window and reports: its
/// operations in the window, each op timed once in its class (at most one
/// more, under way at the deadline), its phases in order around the window.
#[test]
fn a_client_process_runs_over_the_window_it_is_sent() {
    let d = tempfile::tempdir().unwrap();
    let (db, settings) = dataset(d.path());
    let survey = crate::engine::open(&db, &settings).unwrap().survey(true).unwrap();
    let j = job(db.clone(), settings, survey.blob_max, 100);
    let order = ClientOrder { round: 1, timed: true };
    let start = monotonic_ns() + 20_000_000;
    let deadline = start + 30_000_000;
    let input = format!(
        "{}\n{}\n{GO} {start} {deadline}\n",
        serde_json::to_string(&j).unwrap(),
        serde_json::to_string(&order).unwrap()
    );
    let mut out = Vec::new();
    serve(&mut input.as_bytes(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], [OPENED, READY]);
    let report: ClientReport = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(lines.len(), 3);
    let done = report.done().unwrap();
    let timed: u64 = (0..4).filter_map(|c| done.classes.get(c).map(Latency::count)).sum();
    assert!(timed >= done.span.ops && timed <= done.span.ops + 1, "{timed} {}", done.span.ops);
    let s = done.span;
    // Its clock is the machine's: its loop began (its first operation, or
    // on a machine so busy that its open ended after the window, the
    // deadline) within the window, as far as two readings of two clocks
    // agree; the shared window does not move for one client.
    let agree = 1_000_000;
    assert!(s.loop_start_ns + agree >= start && s.loop_start_ns <= deadline + agree, "{s:?} {start}");
    assert!(s.opened_from_ns <= s.loop_end_ns && s.loop_start_ns <= s.loop_end_ns, "{s:?}");
    assert!(s.loop_end_ns <= s.committed_ns && s.committed_ns <= s.closed_ns, "{s:?}");
}

fn shell(script: &str) -> Launcher {
    Launcher { exe: "/bin/sh".into(), args: vec!["-c".into(), script.into()] }
}

/// A client that fails gives its own one-line error; one that says
/// nonsense is named; neither is left running.
#[test]
fn a_failing_client_is_named_with_its_own_error() {
    let d = tempfile::tempdir().unwrap();
    let j = job(d.path().join("x"), EngineSettings::default(), 1, 1);
    let e = ClientProcesses::start(&shell("read job; echo 'error: the store is gone' >&2; exit 1"), vec![j.clone()])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("client process 1 of 1") && e.ends_with("ended while opening its store: the store is gone"),
        "{e}"
    );
    let e = ClientProcesses::start(&shell("read job; echo nonsense; sleep 30"), vec![j.clone(), j])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("said \"nonsense\" while opening its store"), "{e}");
    assert!(!e.contains('\n'));
}

/// Clients that open and then fail in a run: the run's error names the
/// first, and every client is stopped.
#[test]
fn a_client_failing_in_a_run_stops_them_all() {
    let d = tempfile::tempdir().unwrap();
    let j = job(d.path().join("x"), EngineSettings::default(), 1, 1);
    let launcher = shell("read job; echo opened; read order; echo ready; read go; echo 'error: disk full' >&2; exit 1");
    let mut p = ClientProcesses::start(&launcher, vec![j.clone(), j]).unwrap();
    let e = p.run(ClientOrder { round: 0, timed: false }, Duration::from_millis(5)).err().unwrap().to_string();
    assert!(e.ends_with("ended during its run: disk full"), "{e}");
    assert!(p.procs.iter_mut().all(|c| c.child.try_wait().unwrap().is_some()), "all reaped");
}
