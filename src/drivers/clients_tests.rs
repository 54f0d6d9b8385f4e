use std::path::{Path, PathBuf};

use super::*;
use crate::engine::{Session, Survey};
use crate::records::{DatasetSpec, DbAccess, EngineKind, EngineSettings, FileParams, FileWrite, SyncLevel};
use crate::util::progress::Silent;

/// A tiny dataset as a database and as files.
fn dataset(dir: &Path) -> (PathBuf, PathBuf) {
    let (db, flat) = (dir.join("kv.db"), dir.join("flat"));
    let spec = DatasetSpec { count: 100, size: 1000, ..DatasetSpec::default() };
    crate::engine::dataset::init(&db, &spec, false, &Silent).unwrap();
    crate::engine::dataset::export(&db, &flat, false, false, &Silent).unwrap();
    (db, flat)
}

const WINDOW: Duration = Duration::from_millis(40);

/// One untimed and two timed runs of `clients` clients at 50:50 over
/// [`WINDOW`]: the tally, the rounds' histogram, and each timed run.
fn runs(arm: &mut ClientsArm) -> (Latency, Vec<RunOutcome>) {
    arm.run(measure::RunContext { latency: None, timed: false }).unwrap();
    let mut all = Latency::new();
    let outs = (0..2).map(|_| arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap()).collect();
    (all, outs)
}

#[test]
fn every_clients_operations_in_the_window_are_counted_and_each_op_timed_once() {
    let d = tempfile::tempdir().unwrap();
    let (db, flat) = dataset(d.path());
    let mut sqlite = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
    sqlite.db.journal_mode = Some(crate::records::Journal::Wal);
    sqlite.db.sync = Some(SyncLevel::Full);
    sqlite.db.access = DbAccess::BlobApi;
    let files = EngineSettings {
        files: FileParams { write: FileWrite::Replace, fsync: true, sync_dir: true, ..FileParams::default() },
        commit_every: Some(1),
        ..EngineSettings::default()
    };
    for (path, settings) in [(&db, &sqlite), (&flat, &files)] {
        let engine = crate::engine::open(path, settings).unwrap();
        let mut arm = ClientsArm::prepare(engine, 4, Mix { read: 50, write: 50 }, WINDOW, 7, None).unwrap();
        let (all, outs) = runs(&mut arm);
        let tally = arm.tally();
        for (out, count) in outs.iter().zip(&tally.runs) {
            // The arm's window: WINDOW, or longer when a write behind a
            // busy disk outlasted it and the arm doubled it.
            assert!(out.phases.loop_ns <= arm.window().as_nanos() as u64, "the loop is the window at most");
            assert_eq!(out.ops, count.ops);
            assert!(count.slowest <= count.median && count.median <= count.ops);
            assert_eq!(count.due, None, "a closed loop has no due times");
            let after = out.phases.commit_ns + out.phases.deferred_ns;
            assert_eq!(out.phases.steady_ns(), out.phases.loop_ns + after, "only the writes' work after it");
        }
        assert_eq!(tally.ops, outs.iter().map(|o| o.ops).sum::<u64>());
        // Each op timed once, in its class: those in the windows, and per
        // client and run at most one under way at the deadline and one
        // that came due but had not started.
        let timed = tally.all().count();
        assert!(timed >= tally.ops && timed <= tally.ops + 2 * 4 * 2, "{timed} {}", tally.ops);
        assert_eq!(all.count(), timed, "the rounds' histogram holds them all");
    }
    // Four writers that each took the lock left a sound database, and no
    // temporary file is left beside the blobs.
    let kv = crate::engine::dataset::open_kv(&db, false).unwrap();
    let ok: String = kv.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let tmp =
        std::fs::read_dir(&flat).unwrap().filter(|e| e.as_ref().unwrap().path().to_string_lossy().ends_with(".tmp"));
    assert_eq!(tmp.count(), 0);
}

/// An open loop at 2,000 ops/s over 2 clients: each client has an op due
/// every millisecond, so a 40 ms window holds 80 due operations, and every
/// one is timed exactly once, from its due time: ended in the window,
/// under way at the deadline, or not started by it (at its lateness).
#[test]
fn an_open_loop_times_every_due_operation_once_and_never_runs_ahead() {
    let d = tempfile::tempdir().unwrap();
    let (db, _) = dataset(d.path());
    let settings = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
    let engine = crate::engine::open(&db, &settings).unwrap();
    let mut arm = ClientsArm::prepare(engine, 2, Mix { read: 1, write: 0 }, WINDOW, 7, Some(2000.0)).unwrap();
    assert_eq!(arm.due_per_run(), Some(80));
    let (all, outs) = runs(&mut arm);
    for (out, count) in outs.iter().zip(&arm.tally().runs) {
        assert_eq!(count.due, Some(80));
        assert!(out.ops <= 80, "never more than were due: {}", out.ops);
        let behind = count.furthest_behind.expect("under a rate");
        assert!(
            behind.judged >= 39,
            "a client's due ops but those due less than an interval before the end: {behind:?}"
        );
        assert!(count.unstarted.is_some() && count.latest_start_ns.is_some());
    }
    assert_eq!(all.count(), 2 * 80, "every due operation of the two timed runs, once");
    assert_eq!(arm.tally().due.due, 2 * 80);
    // Each timed run keeps its own p99 (what a rate's ranking pairs by
    // round): the two runs pooled have theirs between them.
    let each: Vec<u64> = arm.tally().runs.iter().map(|r| r.p99_ns.expect("a timed run's p99")).collect();
    let pooled = all.quantile_ns(0.99);
    assert!(each.len() == 2 && each[0].min(each[1]) <= pooled && pooled <= each[0].max(each[1]), "{each:?} {pooled}");
}

#[test]
fn bad_client_counts_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let (db, _) = dataset(d.path());
    let mix = Mix { read: 1, write: 1 };
    for n in [0, MAX_CLIENTS + 1] {
        let engine = crate::engine::open(&db, &EngineSettings::default()).unwrap();
        assert!(ClientsArm::prepare(engine, n, mix, WINDOW, 1, None).is_err(), "{n}");
    }
}

/// A store that starves one client: client 0's first operation takes
/// twice the window; the others' take no time. The run still ends at the
/// deadline, its throughput counts only the others' operations, the
/// starved client shows as the slowest (0 operations) and its operation in
/// the tail, timed from the window's start.
#[test]
fn a_starved_client_shows_in_the_spread_and_the_tail_never_in_the_runs_length() {
    let window = Duration::from_millis(200);
    let store = Box::new(Starving { client: 0, at_read: 1, pause: window * 2 });
    let mut arm = ClientsArm::prepare(store, 4, Mix { read: 1, write: 0 }, window, 3, None).unwrap();
    let mut all = Latency::new();
    let out = arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap();
    assert!(out.phases.loop_ns <= window.as_nanos() as u64, "the run is the window at most");
    let count = arm.tally().runs[0];
    assert_eq!(count.slowest, 0, "the starved client made nothing in the window");
    assert!(count.median > 0, "the others did: {count:?}");
    assert_eq!(out.ops, count.ops);
    assert!(all.summary().max_us >= (window * 2).as_micros() as f64, "its wait is in the tail");
    assert!(out.phases.close_ns >= window.as_nanos() as u64, "and its overrun is a one-off, apart: {:?}", out.phases);
}

/// A closed loop whose first operation outlasts the planned window (a
/// durable write behind a loaded disk) ends no operation in it: the arm
/// doubles its window until one ends, rather than ending advise, and its
/// figure is of the window that held it.
#[test]
fn a_closed_loop_whose_operation_outlasts_its_window_lengthens_the_window() {
    let window = Duration::from_millis(20);
    let pause = window * 3;
    let store = Box::new(Starving { client: 0, at_read: 1, pause });
    let mut arm = ClientsArm::prepare(store, 1, Mix { read: 1, write: 0 }, window, 3, None).unwrap();
    let out = arm.run(measure::RunContext { latency: None, timed: true }).unwrap();
    assert!(out.ops >= 1, "an operation ended in the lengthened window");
    assert!(arm.window() > pause, "the window grew past the operation: {:?}", arm.window());
    assert!(arm.window() <= LONGEST_WINDOW);
}

/// A store that keeps one client from 5% of its due operations: at 2,000
/// ops/s over 2 clients and a 100 ms window each client has 100 due;
/// client 0's 95th operation stalls past the deadline, so its last 5 are
/// never started. Pooled over all clients that is 2.5% of the due
/// operations; the slowest client's 5% fails keeping up. (Slower machines
/// only start fewer.) Each unstarted one is timed at its lateness.
#[test]
fn a_store_that_starves_one_client_of_five_percent_fails_keeping_up() {
    let window = Duration::from_millis(100);
    let store = Box::new(Starving { client: 0, at_read: 95, pause: window / 5 });
    let mut arm = ClientsArm::prepare(store, 2, Mix { read: 1, write: 0 }, window, 3, Some(2000.0)).unwrap();
    let mut all = Latency::new();
    arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap();
    let count = arm.tally().runs[0];
    assert_eq!(count.due, Some(200));
    let behind = count.furthest_behind.unwrap();
    assert!(behind.behind >= 5 && behind.judged >= 99, "{behind:?}");
    assert!(count.unstarted.unwrap() >= 5);
    let kept = kept_up(&arm.tally().runs).unwrap();
    assert!(kept <= 0.95, "{kept}: below KEEP_UP ({KEEP_UP})");
    assert_eq!(all.count(), 200, "every due operation timed, the unstarted ones too");
}

/// Under a rate the share kept is the furthest-behind client's; files
/// without it fall back on the operations done over those due.
#[test]
fn keeping_up_is_judged_on_the_client_furthest_behind() {
    let run = |judged, behind| WindowCount {
        ops: 190,
        due: Some(200),
        furthest_behind: Some(Behind { judged, behind }),
        ..WindowCount::default()
    };
    assert_eq!(kept_up(&[run(100, 0), run(100, 2)]), Some(0.99));
    assert!(kept_up(&[run(100, 5)]).unwrap() < KEEP_UP);
    let older = WindowCount { ops: 198, due: Some(200), ..WindowCount::default() };
    assert_eq!(kept_up(&[older]), Some(0.99));
    assert_eq!(kept_up(&[WindowCount::of(&[3, 4], None)]), None, "closed loop");
}

/// A store whose client `client` pauses `pause` on its `at_read`-th read.
struct Starving {
    client: u32,
    at_read: u32,
    pause: Duration,
}

impl Engine for Starving {
    /// In process: no server.
    fn server_info(&self) -> Option<crate::records::ServerInfo> {
        None
    }

    fn kind(&self) -> EngineKind {
        EngineKind::Flat
    }
    fn path(&self) -> &Path {
        Path::new("starving")
    }
    fn survey(&mut self, _: bool) -> Result<Survey> {
        Ok(Survey { max_key: Some(10), blob_max: 10 })
    }
    fn open(&self, mode: OpenMode) -> Result<Box<dyn Session>> {
        let starved = mode.client == Some(self.client);
        Ok(Box::new(StarvingSession { reads: 0, at_read: self.at_read, pause: starved.then_some(self.pause) }))
    }
    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

struct StarvingSession {
    reads: u32,
    at_read: u32,
    pause: Option<Duration>,
}

impl Session for StarvingSession {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    fn read(&mut self, _: u32) -> Result<u64> {
        self.reads += 1;
        if let Some(d) = self.pause.filter(|_| self.reads == self.at_read) {
            std::thread::sleep(d);
        }
        Ok(10)
    }
    fn overwrite(&mut self, _: u32, _: &[u8]) -> Result<u64> {
        Ok(10)
    }
    fn put(&mut self, _: u32, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn delete(&mut self, _: u32) -> Result<bool> {
        Ok(true)
    }
    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn window_counts_name_the_slowest_and_the_median_client() {
    let c = WindowCount::of(&[5, 0, 9, 7], Some(30));
    assert_eq!((c.ops, c.slowest, c.median, c.due), (21, 0, 6, Some(30)));
    assert_eq!(WindowCount::of(&[4, 2, 8], None).median, 4);
}

/// What an arm keeps between runs does not grow with its clients: each
/// client's histograms are merged into the run's and given up, so an arm
/// holds its four per class at 1 client as at 8 (it held four more per
/// client, about 1 MB each, when every script kept its own).
#[test]
fn the_histograms_an_arm_keeps_do_not_grow_with_its_clients() {
    let d = tempfile::tempdir().unwrap();
    let (_, flat) = dataset(d.path());
    let engine = crate::engine::open(&flat, &EngineSettings::default()).unwrap();
    let one = ClientsArm::prepare(engine, 1, Mix { read: 50, write: 50 }, WINDOW, 7, None).unwrap();
    let mut held = Vec::new();
    for mut arm in [one.at(1, WINDOW, 7).unwrap(), one.at(8, WINDOW, 7).unwrap()] {
        runs(&mut arm);
        assert!(arm.tally().all().count() >= arm.tally().ops, "every op was timed");
        held.push(arm.histograms_held());
    }
    assert_eq!(held, [4, 4]);
}
