//! Credentials and region found as the AWS CLI finds them, from a fake
//! environment and shared files in a temporary HOME.

use super::*;

/// A HOME with `~/.aws/credentials` and `~/.aws/config` as given (None:
/// no such file).
fn home(credentials: Option<&str>, config: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".aws")).unwrap();
    for (name, text) in [("credentials", credentials), ("config", config)] {
        if let Some(text) = text {
            std::fs::write(dir.path().join(".aws").join(name), text).unwrap();
        }
    }
    dir
}

fn found(home: &Path, vars: &[(&str, &str)], recorded: Option<&str>) -> Result<Found> {
    let home = home.to_string_lossy().into_owned();
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let env = move |name: &str| match name {
        "HOME" => Some(home.clone()),
        _ => vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
    };
    find(&env, recorded)
}

const CREDENTIALS: &str = "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = s3cret/default+\n\n\
    # the bench account\n[bench]\nAWS_ACCESS_KEY_ID=AKIABENCH\naws_secret_access_key=s3cret/bench\naws_session_token = tok\n";
const CONFIG: &str =
    "[default]\nregion = eu-west-3\n\n[profile bench]\nregion = ap-south-1\ns3 =\n    addressing_style = path\n\n\
    [profile only-config]\naws_access_key_id = AKIACONFIG\naws_secret_access_key = s3cret/config\n\n\
    [profile sso]\nsso_session = corp\nsso_account_id = 1\n";

#[test]
fn the_environments_keys_come_first_and_its_region_before_the_profiles() {
    let h = home(Some(CREDENTIALS), Some(CONFIG));
    let keys = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "envs3cret"), ("AWS_PROFILE", "bench")];
    let f = found(h.path(), &keys, None).unwrap();
    assert_eq!((f.credentials.key(), f.source.clone()), ("AKIAENV", Source::Environment));
    assert_eq!(f.region, "ap-south-1", "the profile's region, none in the environment");
    let f = found(h.path(), &[&keys[..], &[("AWS_DEFAULT_REGION", "us-west-2")]].concat(), None).unwrap();
    assert_eq!(f.region, "us-west-2");
    let e = found(h.path(), &keys[..1], None).err().unwrap().to_string();
    assert!(e.contains("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"), "{e}");
}

#[test]
fn a_profile_is_read_from_the_shared_files_by_name() {
    let h = home(Some(CREDENTIALS), Some(CONFIG));
    let f = found(h.path(), &[("AWS_PROFILE", "bench")], None).unwrap();
    assert_eq!((f.credentials.key(), f.credentials.secret()), ("AKIABENCH", "s3cret/bench"), "keys in any case");
    assert_eq!((f.credentials.token(), f.region.as_str()), (Some("tok"), "ap-south-1"));
    assert_eq!(f.source, Source::Profile("bench".into()));
    assert_eq!((f.source.label(), f.source.profile()), ("profile bench".to_string(), Some("bench".to_string())));
    let f = found(h.path(), &[], None).unwrap();
    assert_eq!((f.credentials.key(), f.region.as_str()), ("AKIADEFAULT", "eu-west-3"), "the default profile");
    let f = found(h.path(), &[], Some("bench")).unwrap();
    assert_eq!(f.credentials.key(), "AKIABENCH", "the profile the dataset was exported with");
    let f = found(h.path(), &[("AWS_PROFILE", "only-config")], Some("bench")).unwrap();
    assert_eq!(f.credentials.key(), "AKIACONFIG", "AWS_PROFILE wins; keys in the config file");
    let elsewhere = tempfile::tempdir().unwrap();
    let file = elsewhere.path().join("creds");
    std::fs::write(&file, "[x]\naws_access_key_id=AKIAX\naws_secret_access_key=sx\n").unwrap();
    let f = found(h.path(), &[("AWS_SHARED_CREDENTIALS_FILE", file.to_str().unwrap()), ("AWS_PROFILE", "x")], None);
    assert_eq!(f.unwrap().credentials.key(), "AKIAX");
}

#[test]
fn a_missing_profile_or_unreadable_file_is_one_line_naming_it() {
    let h = home(Some(CREDENTIALS), Some(CONFIG));
    let e = found(h.path(), &[("AWS_PROFILE", "nope")], None).err().unwrap().to_string();
    assert!(
        e.contains("profile nope is in neither") && e.contains(".aws/credentials") && e.contains(".aws/config"),
        "{e}"
    );
    let e = found(h.path(), &[("AWS_PROFILE", "sso")], None).err().unwrap().to_string();
    assert!(e.contains("profile sso gets its keys through sso_session") && e.contains("export-credentials"), "{e}");
    let none = home(None, None);
    let e = found(none.path(), &[], None).err().unwrap().to_string();
    assert!(e.contains("no credentials: set AWS_ACCESS_KEY_ID") && e.contains("SSO, credential_process"), "{e}");
    let broken = home(
        Some("[bench]\naws_access_key_id = AKIA\nthis-is-not-ini s3cret/leaked\naws_secret_access_key = s\n"),
        None,
    );
    let e = found(broken.path(), &[("AWS_PROFILE", "bench")], None).err().unwrap().to_string();
    assert!(e.contains(".aws/credentials") && e.contains("line 3 cannot be read"), "{e}");
    assert!(!e.contains("s3cret") && !e.contains('\n'), "the line is named, not quoted: {e}");
}
