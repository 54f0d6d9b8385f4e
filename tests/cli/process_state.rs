//! Every engine's timed sessions start from the same kind of process
//! state: what a survey allocated and freed is not kept resident (glibc
//! keeps freed heap, so a session after redb's survey, which reads every
//! page through redb's in-heap cache, would find its memory already faulted
//! in; a fresh process, and the other engines, pay those faults). The test
//! re-runs this test binary for itself alone, so that no other test (they
//! share this binary's process) moves the resident set it measures.

use std::cell::Cell;
use std::process::Command;

use blobbench::drivers::session::{timed_session, SessionSpec, Work};
use blobbench::engine::{dataset, registry, OpenMode};
use blobbench::records::keys::KeySequence;
use blobbench::records::{DatasetSpec, EngineSettings, Order};
use blobbench::util::heap::{release_free_memory, resident_bytes};
use blobbench::util::progress::Silent;

/// The resident set may grow by this much over a survey: the engines' own
/// long-lived state, far below the 24 MB the redb survey read.
const SLACK: u64 = 6 << 20;

/// Set in the child process, which does the survey; the parent only runs it.
const CHILD: &str = "BLOBBENCH_PROCESS_STATE_CHILD";

#[test]
fn a_survey_leaves_no_freed_heap_resident_for_any_engine() {
    if std::env::var_os(CHILD).is_some() {
        return survey_each_engine();
    }
    let name = "process_state::a_survey_leaves_no_freed_heap_resident_for_any_engine";
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads", "1", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "the child failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    // A renamed test would match nothing and pass without running.
    assert!(stdout.contains("test result: ok. 1 passed"), "the child ran no survey: {stdout}");
}

/// The test's work, in a process of its own.
fn survey_each_engine() {
    let dir = tempfile::tempdir().unwrap();
    // PostgreSQL's throwaway cluster runs as `postgres` when tests run as root.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let db = dir.path().join("kv.db");
    let spec = DatasetSpec { count: 3000, size: 8000, ..DatasetSpec::default() };
    dataset::init(&db, &spec, false, &Silent).unwrap();
    let mut settings = EngineSettings::default();
    // One copy of each object: the throwaway Swift cluster's export is the
    // slowest step here, and replicas do not touch this process's heap.
    settings.s3.replicas = 1;
    let mut figures = Vec::new();
    for b in registry::BACKENDS {
        let kind = b.kind();
        let path = dir.path().join(kind.name());
        let path = if b.build(&db, &path, false, &settings, &Silent).is_ok() { path } else { db.clone() };
        assert_eq!(registry::detect(&path).unwrap(), kind);
        release_free_memory();
        let before = resident_bytes().unwrap();
        let mut engine = b.open(&path, &settings);
        engine.survey(false).unwrap();
        let surveyed = resident_bytes().unwrap();
        // The resident set when the first session has opened (its `ready`).
        let opened = Cell::new(0u64);
        let spec = SessionSpec {
            mode: OpenMode::READ,
            max_id: Some(3000),
            keys: |max| KeySequence::new(Order::Asc, 1, max),
            count: 10,
            work: Work::Read,
        };
        timed_session(engine.as_ref(), spec, None, &|| opened.set(resident_bytes().unwrap()), &mut |_| {}).unwrap();
        let released = opened.get();
        drop(engine);
        let mb = |r: u64| r.saturating_sub(before) as f64 / 1e6;
        figures.push(format!(
            "{}: +{:.1} MB after the survey, +{:.1} MB when the first session has opened",
            kind.name(),
            mb(surveyed),
            mb(released)
        ));
        assert!(released.saturating_sub(before) < SLACK, "{}", figures.join("; "));
    }
    println!("{}", figures.join("\n"));
}
