//! The engines on a real throwaway cluster (PostgreSQL must be installed:
//! `.ci/run` installs it; these tests fail, never skip, without it).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;
use crate::engine::kv::test_support::{build_tiny, round_trip_built, tiny_kv};
use crate::records::{KvSync, PgStorage, ServerPlace};
use crate::util::progress::Silent;

/// A scratch directory the `postgres` user can enter (tests run as root).
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn engine(kind: EngineKind) -> fn(&Path, KvParams, CommitEvery) -> Box<dyn Engine> {
    match kind {
        EngineKind::Postgres => |p, kv, commit_every| {
            Box::new(PgEngine::new(EngineKind::Postgres, p, &EngineSettings { kv, commit_every, ..Default::default() }))
        },
        _ => |p, kv, commit_every| {
            let settings = EngineSettings { kv, commit_every, ..Default::default() };
            Box::new(PgEngine::new(EngineKind::PostgresLo, p, &settings))
        },
    }
}

/// The round trip's three engines (a commit granularity each) join the
/// server a fourth engine keeps up, as a study's engines on one dataset
/// do: one start for the three, not one each.
#[test]
fn every_byte_round_trips_through_bytea_and_large_objects() {
    for kind in [EngineKind::Postgres, EngineKind::PostgresLo] {
        let dir = scratch();
        let target = dir.path().join("pg");
        let rows = build_tiny(kind, &target);
        let mut keeper = engine(kind)(&target, KvParams { sync: KvSync::Durable }, None);
        keeper.survey(false).unwrap();
        round_trip_built(kind, &target, &rows, engine(kind));
        // On the server the keeper holds, rather than a start of its own.
        let st = stat(&target, &PgParams::default()).unwrap();
        drop(keeper);
        assert_eq!(st.entries, rows.len() as u64, "{kind:?}");
        assert_eq!(st.content_bytes, rows.iter().map(|r| r.1.len() as u64).sum::<u64>(), "{kind:?}");
        assert!(st.total_bytes > 0 && st.cluster_allocated_bytes.unwrap() > st.total_bytes, "{st:?}");
        assert!(!target.join(server::DATA_DIR).join("postmaster.pid").exists(), "{kind:?}: the server was stopped");
    }
}

#[test]
fn the_round_trip_floor_and_the_server_settings_are_reported() {
    let dir = scratch();
    let (db, _) = tiny_kv(dir.path(), 5);
    let target = dir.path().join("pg");
    build(EngineKind::Postgres, &db, &target, false, &PgParams { storage: PgStorage::External, url: None }, &Silent)
        .unwrap();
    let mut e = engine(EngineKind::Postgres)(&target, KvParams { sync: KvSync::Fast }, Some(1));
    e.survey(false).unwrap();
    let info = e.server_info().unwrap();
    let setting = |name| info.setting(name).unwrap_or_default();
    assert!(setting("server_version_num").parse::<u32>().unwrap() >= MIN_VERSION_NUM, "{info:?}");
    assert_eq!((setting("synchronous_commit"), info.place, setting("fsync")), ("off", ServerPlace::Local, "on"));
    assert_eq!(setting("shared_buffers"), server::SHARED_BUFFERS);
    assert_eq!((info.product.as_str(), info.blobs_in.as_str()), ("PostgreSQL", "table kv"));
    let mut s = e.open(OpenMode::READ).unwrap();
    assert_eq!(s.round_trip().unwrap(), Some(4), "one int4");
    s.close().unwrap();
}

/// A fast and a durable writer on one dataset (as the suite's and the
/// matrix's write rounds open them) share one server: the second does not
/// stop the first's to start its own, and the last one out stops it.
#[test]
fn engines_on_one_dataset_share_its_server() {
    let dir = scratch();
    let (db, _) = tiny_kv(dir.path(), 5);
    let target = dir.path().join("pg");
    build(EngineKind::Postgres, &db, &target, false, &PgParams::default(), &Silent).unwrap();
    let log = target.join(server::DATA_DIR).join("server.log");
    let starts = || std::fs::read_to_string(&log).unwrap().matches("ready to accept connections").count();
    let before = starts();
    let open = |sync| {
        let mut e = engine(EngineKind::Postgres)(&target, KvParams { sync }, Some(1));
        e.survey(true).unwrap();
        e
    };
    let (fast, durable) = (open(KvSync::Fast), open(KvSync::Durable));
    assert_eq!(starts() - before, 1, "one server for both engines");
    drop(fast);
    let mut s = durable.open(OpenMode::READ).unwrap();
    assert!(s.read(1).unwrap() > 0, "the server outlives the first engine");
    s.close().unwrap();
    drop(durable);
    assert!(!target.join(server::DATA_DIR).join("postmaster.pid").exists(), "the last engine stopped it");
}
