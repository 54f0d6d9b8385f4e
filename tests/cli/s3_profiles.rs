//! A store the user runs, reached with a profile of the shared AWS files
//! and no key in the environment, as the AWS CLI would reach it: export,
//! run and drop on a SeaweedFS this test starts; the descriptor and the
//! result file keep the profile's name, never a key; a profile that does
//! not exist, or a credentials file that cannot be read, is one line and
//! touches nothing.

use crate::common;
use crate::common::servers_under;
use crate::s3::{descriptor_prefix, UsersStore};

use std::path::Path;

use blobbench::engine::s3::seaweedfs;
use common::{kvtest_db, quick_error, valid_results};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `args` as the user runs them: no AWS variable but `HOME` (holding
/// `~/.aws`) and those given.
fn with_profile(user: &UsersStore, home: &Path, vars: &[(&str, &str)], args: &[&str]) -> assert_cmd::Command {
    let mut c = user.command(args);
    for name in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
    ] {
        c.env_remove(name);
    }
    c.env("HOME", home);
    for (name, value) in vars {
        c.env(name, value);
    }
    c
}

#[test]
fn a_profile_in_the_shared_files_exports_runs_and_drops_on_seaweedfs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 8, 1500);
    let (store, user) = UsersStore::started(dir.path(), "profile-bucket");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    let keys = format!(
        "[default]\naws_access_key_id = AKIANOTTHIS\naws_secret_access_key = wrong\n\n\
         [bench]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
        seaweedfs::ACCESS_KEY,
        seaweedfs::SECRET
    );
    std::fs::write(home.join(".aws/credentials"), keys).unwrap();
    std::fs::write(home.join(".aws/config"), "[profile bench]\nregion = us-east-1\n").unwrap();
    let bench = [("AWS_PROFILE", "bench")];

    let t = dir.path().join("t.s3");
    let export = ["export", "--engine", "s3", s(&db), s(&t), "--s3", &user.endpoint, "--s3-bucket", "profile-bucket"];
    with_profile(&user, &home, &bench, &export).assert().success();
    let desc = std::fs::read_to_string(t.join("blobbench-s3.json")).unwrap();
    assert!(desc.contains(r#""profile": "bench""#) && !desc.contains(seaweedfs::SECRET), "{desc}");
    let prefix = descriptor_prefix(&t);
    assert!(user.get(&format!("{prefix}0000000008")).is_some());

    // The descriptor's profile, with AWS_PROFILE unset (the default
    // profile's keys would be refused).
    let json = dir.path().join("r.json");
    let run = ["run", s(&t), "--count", "16", "--repeat", "1", "--update", "--json", s(&json)];
    with_profile(&user, &home, &[], &run).assert().success();
    let info = &valid_results(&json)["experiments"][0]["params"]["server_info"];
    assert_eq!(common::server_setting(info, "credentials"), "profile bench", "{info}");
    assert!(!std::fs::read_to_string(&json).unwrap().contains(seaweedfs::SECRET), "no key in the result file");

    // Bad input: one line, nothing touched.
    let x = dir.path().join("x.s3");
    let export_x = ["export", "--engine", "s3", s(&db), s(&x), "--s3", &user.endpoint, "--s3-bucket", "profile-bucket"];
    let err = quick_error(&mut with_profile(&user, &home, &[("AWS_PROFILE", "nope")], &export_x));
    assert!(err.contains("profile nope is in neither") && err.contains(".aws/credentials"), "{err}");
    let broken = dir.path().join("broken");
    std::fs::write(&broken, format!("[bench]\naws_access_key_id = {}\n{}\n", seaweedfs::ACCESS_KEY, seaweedfs::SECRET))
        .unwrap();
    let vars = [("AWS_PROFILE", "bench"), ("AWS_SHARED_CREDENTIALS_FILE", s(&broken))];
    let err = quick_error(&mut with_profile(&user, &home, &vars, &export_x));
    assert!(err.contains("line 3 cannot be read") && !err.contains(seaweedfs::SECRET), "{err}");
    assert!(!x.exists(), "no dataset made");

    let out = with_profile(&user, &home, &[], &["drop", s(&t)]).assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("removed 9 objects"), "8 blobs and the marker: {out}");
    assert!(!t.exists() && user.get(&format!("{prefix}0000000008")).is_none());
    store.stop().unwrap();
    assert!(servers_under(dir.path()).is_empty());
}

/// Issue 50, moderate 2: `export --force` retires the dataset it replaces
/// with that dataset's own profile, not the new export's. Here that
/// profile's keys no longer open the store (it cannot delete), so the
/// retirement fails and the descriptor keeps the replaced dataset, with
/// its store and profile; once the profile is right again, `drop DIR`
/// removes both datasets' objects, each with its own profile.
#[test]
fn a_dataset_retired_with_a_profile_that_cannot_delete_it_is_dropped_later_with_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kv.db");
    kvtest_db(&db, 5, 1000);
    let (store, user) = UsersStore::started(dir.path(), "retire-bucket");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".aws")).unwrap();
    let credentials = |old_secret: &str| {
        let (key, secret) = (seaweedfs::ACCESS_KEY, seaweedfs::SECRET);
        let text = format!(
            "[default]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n\n\
             [old]\naws_access_key_id = {key}\naws_secret_access_key = {old_secret}\n"
        );
        std::fs::write(home.join(".aws/credentials"), text).unwrap();
    };
    credentials(seaweedfs::SECRET);
    let t = dir.path().join("t.s3");
    let export = ["export", "--engine", "s3", s(&db), s(&t), "--s3", &user.endpoint, "--s3-bucket", "retire-bucket"];
    with_profile(&user, &home, &[("AWS_PROFILE", "old")], &export).assert().success();
    let old = descriptor_prefix(&t);

    credentials("no-longer-right");
    let force = [&export[..], &["--force"]].concat();
    let err = quick_error(&mut with_profile(&user, &home, &[], &force));
    assert!(err.contains("holds the new export") && err.contains(&old), "{err}");
    assert!(err.contains("check profile old's keys") && err.contains("AWS_PROFILE=old blobbench drop"), "{err}");
    let desc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("blobbench-s3.json")).unwrap()).unwrap();
    let replaced = &desc["replaces"][0];
    assert_eq!(
        (replaced["prefix"].as_str(), replaced["profile"].as_str()),
        (Some(old.as_str()), Some("old")),
        "{desc}"
    );
    assert_eq!(replaced["endpoint"], user.endpoint.as_str());
    assert_eq!(desc["profile"], "default", "the new export's own profile");
    let new = descriptor_prefix(&t);
    assert!(user.get(&format!("{old}0000000005")).is_some() && user.get(&format!("{new}0000000005")).is_some());

    credentials(seaweedfs::SECRET);
    let out = with_profile(&user, &home, &[], &["drop", s(&t)]).assert().success().get_output().stdout.clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("removed 12 objects"), "both datasets, 5 blobs and a marker each: {out}");
    assert!(user.get(&format!("{old}0000000005")).is_none() && user.get(&format!("{new}0000000005")).is_none());
    assert!(!t.exists());
    store.stop().unwrap();
}
