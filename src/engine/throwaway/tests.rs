//! The sharing of a throwaway server, its owner file and its reaping.

use super::users::{users, Place, Seen};
use super::*;
use crate::records::EngineKind;

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
}

/// Another live "blobbench process" using the server in `dir`.
fn other_user(dir: &Path) -> std::process::Child {
    let child = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let pid = child.id() as i32;
    list_user(dir, User { pid, started: start_time(pid), place: Some(Place::here().clone()) });
    child
}

fn list_user(dir: &Path, user: User) {
    let mut list = users(dir);
    list.push(user);
    write_users(dir, &list).unwrap();
}

/// The pids of the users `dir`'s owner file lists that live, this process
/// left out.
fn live_others(dir: &Path) -> Vec<i32> {
    Others::of(dir).live.iter().map(|u| u.pid).collect()
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
    assert!(refused.contains(&format!("while blobbench process {} uses it", other.id())), "{refused}");
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
    let held = DirLock::take(tmp.path(), LOCK_WAIT, AtCtrlC::GiveUp).unwrap();
    let err = DirLock::take(tmp.path(), Duration::ZERO, AtCtrlC::GiveUp).err().expect("the lock is held").to_string();
    let me = std::process::id();
    assert!(err.contains(LOCK) && err.contains(&format!("blobbench process {me} held it")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    drop(held);
    // Not `Duration::ZERO`: a lock of `flock` belongs to the open file,
    // and a process another test spawns shares this one's open files from
    // its fork to its exec (the descriptor closes on exec). Under load that
    // window is long enough for a single try to find the lock still held,
    // so the take waits, boundedly, for the spawn to reach its exec.
    let again = DirLock::take(tmp.path(), Duration::from_secs(30), AtCtrlC::GiveUp);
    assert!(again.is_ok(), "free once let go of: {:?}", again.err());
}

/// The user done first, whoever started the server, leaves it to the
/// other at once: no wait for the other, no stop under it.
#[test]
fn a_user_done_first_leaves_the_server_to_the_others_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let server = Fake::start(d).unwrap();
    register(d).unwrap();
    let mut other = other_user(d);
    release(d, server).unwrap();
    assert_eq!(Fake::events(d), ["start", "leave"], "left running for the other");
    assert_eq!(live_others(d), [other.id() as i32], "the other stays listed, this process does not");
    assert!(users(d).iter().all(|u| !u.is_me()));
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn a_recycled_pid_is_not_taken_for_a_user() {
    let me = User::me();
    assert_eq!(me.seen(None), Seen::Live);
    let later = User { started: me.started.map(|s| s + 1), ..me.clone() };
    assert_eq!(later.seen(None), Seen::Dead, "the pid of another process now");
}

/// An older blobbench's line has no start time: a pid that started after
/// the line was written is another process's; one that started before
/// cannot be told from the one listed, and is named, not guessed.
#[test]
fn a_line_without_a_start_time_is_judged_by_when_it_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut other = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(d.join(OWNER), format!("{}\n", other.id())).unwrap();
    let old = Others::of(d);
    assert!(old.live.is_empty() && old.unconfirmed.len() == 1, "{old:?}");
    let e = check_not_in_use(d, d).unwrap_err().to_string();
    assert!(e.contains(&format!("blobbench process {}", other.id())) && e.contains("without a start time"), "{e}");
    // Written before the process started: its pid was recycled since.
    let file = std::fs::File::options().write(true).open(d.join(OWNER)).unwrap();
    file.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(86_400)).unwrap();
    assert!(!Others::of(d).any(), "a recycled pid keeps nothing alive");
    other.kill().unwrap();
    other.wait().unwrap();
}

/// A user on another host, or in another pid namespace, may run where
/// this process cannot look: no server is started beside it (a second
/// server on the same data) nor stopped under it; the error names it.
#[test]
fn a_user_elsewhere_is_named_and_never_taken_for_dead() {
    static SERVERS: Shared<Fake> = Shared::new();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let here = Place::here().clone();
    // A pid past the kernel's limit: dead, were it on this machine.
    let elsewhere = Place { host: format!("{}-b", here.host), boot: "another-boot".into(), ..here.clone() };
    list_user(d, User { pid: 2147483646, started: Some(1), place: Some(elsewhere) });
    let e = SERVERS.get_or_start(d).unwrap_err().to_string();
    assert!(
        e.contains(&format!("blobbench process 2147483646 is listed as using it from host {}-b", here.host)),
        "{e}"
    );
    assert!(e.contains("cannot be confirmed from here") && e.contains(OWNER) && !e.contains('\n'), "{e}");
    assert!(Fake::events(d).is_empty(), "no second server started");
    let other_ns = Place { pidns: "1".into(), ..here.clone() };
    write_users(d, &[User { pid: 2147483646, started: Some(1), place: Some(other_ns) }]).unwrap();
    let e = check_not_in_use(d, d).unwrap_err().to_string();
    assert!(e.contains("from another pid namespace"), "{e}");
    // The same host before its last boot: dead.
    let before_boot = Place { boot: "another-boot".into(), ..here };
    write_users(d, &[User { pid: std::process::id() as i32 + 1, started: Some(1), place: Some(before_boot) }]).unwrap();
    assert!(!Others::of(d).any());
}

/// A dataset is removed only when no one uses its server, and only the
/// files blobbench made in it go.
#[test]
fn a_dataset_in_use_is_not_removed_and_other_files_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("t.s3");
    std::fs::create_dir_all(d.join("server/data")).unwrap();
    std::fs::write(d.join("desc.json"), "{}").unwrap();
    let mut other = other_user(&d);
    let e = remove_dataset(&d, &["desc.json", "server"], |_| Ok(())).unwrap_err().to_string();
    assert!(e.contains(&format!("while blobbench process {} uses it", other.id())), "{e}");
    assert!(d.join("server/data").is_dir() && d.join("desc.json").is_file(), "nothing removed");
    other.kill().unwrap();
    other.wait().unwrap();
    std::fs::write(d.join("notes.txt"), "the user's").unwrap();
    let mut stopped = false;
    assert!(
        !remove_dataset(&d, &["desc.json", "server"], |_| {
            stopped = true;
            Ok(())
        })
        .unwrap(),
        "notes.txt keeps it"
    );
    assert!(stopped, "what a killed run left was stopped");
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["notes.txt"]);
    std::fs::remove_file(d.join("notes.txt")).unwrap();
    std::fs::create_dir(d.join("server")).unwrap();
    assert!(remove_dataset(&d, &["desc.json", "server"], |_| Ok(())).unwrap());
    assert!(!d.exists());
}

#[test]
fn a_server_keeps_the_users_aws_secret_out_of_its_environment() {
    let mut cmd = std::process::Command::new("env");
    cmd.env("AWS_ACCESS_KEY_ID", "its-own");
    let inherited = ["AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "AWS_PROFILE", "HOME"];
    without_aws_variables(&mut cmd, inherited.map(OsString::from));
    let envs: Vec<(String, Option<String>)> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned())))
        .collect();
    let removed = |name: &str| envs.iter().any(|(k, v)| k == name && v.is_none());
    assert!(removed("AWS_SECRET_ACCESS_KEY") && removed("AWS_SESSION_TOKEN") && removed("AWS_PROFILE"), "{envs:?}");
    assert!(envs.contains(&("AWS_ACCESS_KEY_ID".into(), Some("its-own".into()))), "its own kept: {envs:?}");
    assert!(!envs.iter().any(|(k, _)| k == "HOME"), "others inherited as they are");
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
    assert_eq!(users(dir.path()), [User::me()]);
    release_owner(dir.path());
    assert!(!dir.path().join(OWNER).exists(), "no user left: no owner file");

    record_owner(dir.path()).unwrap();
    let mut other = other_user(dir.path());
    release_owner(dir.path());
    assert_eq!(live_others(dir.path()), [other.id() as i32], "the other user is kept");
    other.kill().unwrap();
    other.wait().unwrap();
}
