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
            assert_eq!(out.phases.loop_ns, WINDOW.as_nanos() as u64, "the run is its window, whoever ends last");
            assert_eq!(out.ops, count.ops);
            assert!(count.slowest <= count.median && count.median <= count.ops);
            assert_eq!(out.phases.steady_ns(), out.phases.loop_ns, "nothing after the deadline in the figure");
        }
        assert_eq!(tally.ops, outs.iter().map(|o| o.ops).sum::<u64>());
        // Each op timed once, in its class: those in the windows, and at
        // most one per client and run under way at the deadline.
        let timed = tally.all().count();
        assert!(timed >= tally.ops && timed <= tally.ops + 2 * 4, "{timed} {}", tally.ops);
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
/// every millisecond, the second half a millisecond after the first, so a
/// 40 ms window holds 80 due operations and no client runs ahead of them.
#[test]
fn an_open_loop_spreads_the_clients_due_times_and_never_runs_ahead() {
    let pace = |i| pace_of(i, 2, Some(2000.0)).unwrap();
    assert_eq!((pace(0).offset, pace(1).offset), (Duration::ZERO, Duration::from_micros(500)));
    assert_eq!(pace(1).interval, Duration::from_millis(1));
    assert_eq!((due_in(WINDOW, pace(0)), due_in(WINDOW, pace(1))), (40, 40));
    assert_eq!(due_in(Duration::from_micros(400), pace(1)), 0, "its first op is due after the window");
    assert_eq!(pace_of(0, 2, None), None, "closed loop");
    let d = tempfile::tempdir().unwrap();
    let (db, _) = dataset(d.path());
    let settings = EngineSettings { commit_every: Some(1), ..EngineSettings::default() };
    let engine = crate::engine::open(&db, &settings).unwrap();
    let mut arm = ClientsArm::prepare(engine, 2, Mix { read: 1, write: 0 }, WINDOW, 7, Some(2000.0)).unwrap();
    assert_eq!(arm.due_per_run(), Some(80));
    let (_, outs) = runs(&mut arm);
    for (out, count) in outs.iter().zip(&arm.tally().runs) {
        assert_eq!(count.due, Some(80));
        assert!(out.ops <= 80, "never more than were due: {}", out.ops);
    }
}

#[test]
fn bad_client_counts_and_rates_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let (db, _) = dataset(d.path());
    let mix = Mix { read: 1, write: 1 };
    for n in [0, MAX_CLIENTS + 1] {
        let engine = crate::engine::open(&db, &EngineSettings::default()).unwrap();
        assert!(ClientsArm::prepare(engine, n, mix, WINDOW, 1, None).is_err(), "{n}");
    }
    for rate in [0.0, -5.0, f64::NAN] {
        let e = check_rate(Some(rate), 2, 2).unwrap_err().to_string();
        assert!(e.contains("--rate") && e.contains("above 0"), "{e}");
    }
    // Ten million a second: more than two cores can pace, and one client
    // can never start an operation every 0.1 µs.
    let e = check_rate(Some(1e7), 16, 2).unwrap_err().to_string();
    assert!(e.contains("more than this machine can pace") && e.contains("200000 on these 2 cores"), "{e}");
    assert!(check_rate(Some(150_000.0), 1, 64).unwrap_err().to_string().contains("every 6667 ns"));
    assert!(check_rate(Some(150_000.0), 16, 2).is_ok());
    assert!(check_rate(None, 1024, 1).is_ok());
}

/// A store that starves one client: client 0's first operation takes
/// twice the window; the others' take no time. The run still ends at the
/// deadline, its throughput counts only the others' operations in the
/// window, the starved client shows as the slowest (0 operations) and its
/// operation in the tail.
#[test]
fn a_starved_client_shows_in_the_spread_and_the_tail_never_in_the_runs_length() {
    let window = Duration::from_millis(200);
    let mut arm =
        ClientsArm::prepare(Box::new(Starving { starve: window * 2 }), 4, Mix { read: 1, write: 0 }, window, 3, None)
            .unwrap();
    let mut all = Latency::new();
    let out = arm.run(measure::RunContext { latency: Some(&mut all), timed: true }).unwrap();
    assert_eq!(out.phases.loop_ns, window.as_nanos() as u64, "the run is the window");
    let count = arm.tally().runs[0];
    assert_eq!(count.slowest, 0, "the starved client made nothing in the window");
    assert!(count.median > 0, "the others did: {count:?}");
    assert_eq!(out.ops, count.ops);
    assert!(all.summary().max_us >= (window * 2).as_micros() as f64, "its wait is in the tail");
    assert!(out.phases.close_ns >= window.as_nanos() as u64, "and its overrun is a one-off, apart");
}

/// A store whose client 0 waits `starve` on its first read.
struct Starving {
    starve: Duration,
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
        Ok(Box::new(StarvingSession { starve: (mode.client == Some(0)).then_some(self.starve) }))
    }
    fn cache_files(&self) -> Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

struct StarvingSession {
    starve: Option<Duration>,
}

impl Session for StarvingSession {
    /// In process: no server to reach.
    fn round_trip(&mut self) -> crate::Result<Option<u64>> {
        Ok(None)
    }

    fn read(&mut self, _: u32) -> Result<u64> {
        if let Some(d) = self.starve.take() {
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
