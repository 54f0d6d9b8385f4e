//! The sharing of a throwaway server, its owner file and its reaping.

use super::*;

/// A server that is a file: `running` while it runs, `events` what
/// was done to it.
struct Fake {
    dir: PathBuf,
}

impl Fake {
    fn log(dir: &Path, event: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("events")).unwrap();
        writeln!(f, "{event}").unwrap();
    }
    fn events(dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("events")).unwrap_or_default().lines().map(String::from).collect()
    }
}

impl Server for Fake {
    fn start(dir: &Path) -> Result<Fake> {
        if dir.join("fail").exists() {
            return Err(Error::invalid("no"));
        }
        Fake::log(dir, "start");
        std::fs::write(dir.join("running"), "").unwrap();
        Ok(Fake { dir: dir.to_path_buf() })
    }
    fn join(dir: &Path) -> Result<Fake> {
        assert!(dir.join("running").exists(), "joined a server that does not run");
        Fake::log(dir, "join");
        Ok(Fake { dir: dir.to_path_buf() })
    }
    fn stop(self) -> Result<()> {
        Fake::log(&self.dir, "stop");
        std::fs::remove_file(self.dir.join("running")).unwrap();
        Ok(())
    }
    fn leave(self) {
        Fake::log(&self.dir, "leave");
    }
    /// As Swift's and SeaweedFS's servers, when the test says so.
    fn ends_with_this_process(&self) -> bool {
        self.dir.join("dies-with-us").exists()
    }
}

/// Another live "blobbench process" using the server in `dir`.
fn other_user(dir: &Path) -> std::process::Child {
    let child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id() as i32;
    let mut list = users(dir);
    list.push(User { pid, started: start_time(pid) });
    write_users(dir, &list).unwrap();
    child
}

#[test]
fn a_shared_server_is_started_once_and_stopped_by_its_last_user() {
    static SERVERS: Shared<Fake> = Shared::new();
    let tmp = tempfile::tempdir().unwrap();
    let (d, e) = (tmp.path().join("d"), tmp.path().join("e"));
    for x in [&d, &e] {
        std::fs::create_dir(x).unwrap();
    }
    let a = SERVERS.get_or_start(&d).unwrap();
    let b = SERVERS.get_or_start(&d).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "one server per dataset in a process");
    assert_eq!(users(&d), [User::me()], "this process is its user");
    let other = SERVERS.get_or_start(&e).unwrap();
    assert_eq!(Fake::events(&e), ["start"], "another dataset, another server");
    drop((a, b, other));
    assert_eq!(Fake::events(&d), ["start", "stop"], "stopped with its last user");
    assert!(!d.join(OWNER).exists(), "no user left listed");
    std::fs::write(d.join("fail"), "").unwrap();
    assert!(SERVERS.get_or_start(&d).is_err());
    assert!(!d.join(OWNER).exists(), "a failed start lists no user");
}

#[test]
fn a_server_another_process_uses_is_joined_left_to_it_and_restarted_once_it_died() {
    static SERVERS: Shared<Fake> = Shared::new();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let first = SERVERS.get_or_start(d).unwrap();
    let mut other = other_user(d);
    drop(first);
    assert_eq!(Fake::events(d), ["start", "leave"], "left running for the other process");
    assert_eq!(users(d).iter().map(|u| u.pid).collect::<Vec<_>>(), [other.id() as i32]);
    let joined = SERVERS.get_or_start(d).unwrap();
    assert_eq!(Fake::events(d).last().unwrap(), "join");
    assert_eq!(users(d).len(), 2, "both listed");
    let refused = Arc::try_unwrap(joined).unwrap().stop().unwrap_err().to_string();
    assert!(refused.contains(&format!("blobbench process {} uses it", other.id())), "{refused}");
    assert_eq!(Fake::events(d).last().unwrap(), "leave", "a refused stop leaves it running");
    assert!(check_not_in_use(d, d).is_err());
    // A killed user keeps nothing running for ever: it is skipped.
    other.kill().unwrap();
    other.wait().unwrap();
    assert!(check_not_in_use(d, d).is_ok());
    let last = SERVERS.get_or_start(d).unwrap();
    assert_eq!(Fake::events(d).last().unwrap(), "start", "its users all dead: a start, which ends what they left");
    drop(last);
    assert_eq!(Fake::events(d).last().unwrap(), "stop");
}

#[test]
fn a_lock_held_too_long_is_an_error_naming_its_file_and_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let held = DirLock::take(tmp.path(), LOCK_WAIT).unwrap();
    let err = DirLock::take(tmp.path(), Duration::ZERO).err().expect("the lock is held").to_string();
    let me = std::process::id();
    assert!(err.contains(LOCK) && err.contains(&format!("blobbench process {me} held it")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    drop(held);
    assert!(DirLock::take(tmp.path(), Duration::ZERO).is_ok(), "free once let go of");
}

#[test]
fn a_server_that_dies_with_its_starter_waits_for_other_users_within_a_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("dies-with-us"), "").unwrap();
    let server = Fake::start(d).unwrap();
    register(d).unwrap();
    let mut other = other_user(d);
    let err = release(d, server, Duration::ZERO).unwrap_err().to_string();
    assert!(err.contains(LOCK) && err.contains(&format!("blobbench process {} still used", other.id())), "{err}");
    assert_eq!(Fake::events(d), ["start", "stop"], "stopped cleanly once the wait was over");
    assert!(users(d).iter().all(|u| u.pid != std::process::id() as i32), "no longer listed");
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn a_recycled_pid_is_not_taken_for_a_user() {
    let me = User::me();
    assert!(me.live() && User { started: None, ..me }.live());
    assert!(!User { started: me.started.map(|s| s + 1), ..me }.live());
}

#[test]
fn servers_of_dead_owners_are_found_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("blobbench-x/a");
    let deeper = dir.path().join(".blobbench-y/m/kv");
    let live = dir.path().join("blobbench-z/b");
    let foreign = dir.path().join("photos/c");
    for d in [&dead, &deeper, &live, &foreign] {
        std::fs::create_dir_all(d).unwrap();
    }
    // A pid past the kernel's limit is never alive.
    for d in [&dead, &deeper, &foreign] {
        std::fs::write(d.join(OWNER), "2147483646").unwrap();
    }
    record_owner(&live).unwrap();
    let mut found = orphaned(dir.path());
    found.sort();
    assert_eq!(found, [deeper, dead]);
    assert!(check_not_in_use(&live, &live).is_ok(), "this process's own server");
    assert!(alive(std::process::id() as i32) && !alive(0));
}

#[test]
fn a_killed_build_is_found_beside_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pg");
    let killed = dir.path().join(".pg.postgres-2147483646");
    let ours = crate::util::fsutil::temp_sibling(&target, "postgres");
    for d in [&killed, &ours, &dir.path().join(".pg.lmdb-2147483646")] {
        std::fs::create_dir(d).unwrap();
    }
    assert_eq!(killed_builds(&target, EngineKind::Postgres), [killed]);
}

/// A server started and stopped outside `Shared` (a build's, a test's)
/// takes its starter off the owner file, so the next process starts the
/// server instead of joining one that no longer runs; another live user
/// stays listed.
#[test]
fn a_server_stopped_by_its_starter_leaves_no_live_user_behind() {
    let dir = tempfile::tempdir().unwrap();
    record_owner(dir.path()).unwrap();
    assert_eq!(users(dir.path()).len(), 1);
    release_owner(dir.path());
    assert!(!dir.path().join(OWNER).exists(), "no user left: no owner file");

    record_owner(dir.path()).unwrap();
    let mut other = other_user(dir.path());
    release_owner(dir.path());
    assert_eq!(live_others(dir.path()), [other.id() as i32], "the other user is kept");
    other.kill().unwrap();
    other.wait().unwrap();
}
