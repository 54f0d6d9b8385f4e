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
    assert!(e.contains("--profile sso"), "the remedy names the profile: {e}");
    let none = home(None, None);
    let e = found(none.path(), &[], None).err().unwrap().to_string();
    assert!(e.contains("no credentials: set AWS_ACCESS_KEY_ID") && e.contains("SSO, credential_process"), "{e}");
    let e = found(none.path(), &[], Some("gone")).err().unwrap().to_string();
    assert!(e.contains("the dataset's profile (it was exported with it), profile gone is in neither"), "{e}");
    let broken = home(
        Some("[bench]\naws_access_key_id = AKIA\nthis-is-not-ini s3cret/leaked\naws_secret_access_key = s\n"),
        None,
    );
    let e = found(broken.path(), &[("AWS_PROFILE", "bench")], None).err().unwrap().to_string();
    assert!(e.contains(".aws/credentials") && e.contains("line 3 cannot be read"), "{e}");
    assert!(!e.contains("s3cret") && !e.contains('\n'), "the line is named, not quoted: {e}");
}

/// Issue 50: a profile that assumes a role, uses SSO or web identity or a
/// credential process is refused in one line naming the setting, even
/// with static keys beside it in either file (the AWS CLI would use the
/// role, and sign as another principal than the keys'); so are the web
/// identity and container variables, as the AWS CLI would use them.
#[test]
fn a_profile_that_gets_its_keys_elsewhere_is_refused_even_beside_static_keys() {
    let creds = "[scoped]\naws_access_key_id = AKIABROAD\naws_secret_access_key = broad\n\n\
        [proc]\naws_access_key_id = AKIAP\naws_secret_access_key = p\ncredential_process = /bin/get-keys\n";
    let config = "[profile scoped]\nrole_arn = arn:aws:iam::1:role/scoped\nsource_profile = default\n\n\
        [profile web]\nweb_identity_token_file = /t\nrole_arn = arn:aws:iam::1:role/w\n\n\
        [profile plain]\naws_access_key_id = AKIAPLAIN\naws_secret_access_key = plain\n";
    let h = home(Some(creds), Some(config));
    for (profile, setting, file) in [
        ("scoped", "role_arn", ".aws/config"),
        ("proc", "credential_process", ".aws/credentials"),
        ("web", "role_arn", ".aws/config"),
    ] {
        let e = found(h.path(), &[("AWS_PROFILE", profile)], None).err().unwrap().to_string();
        assert!(e.contains(&format!("profile {profile} gets its keys through {setting}")), "{profile}: {e}");
        assert!(e.contains(file) && e.contains("export-credentials --profile") && !e.contains('\n'), "{e}");
        assert!(!e.contains("broad") && !e.contains("AKIA"), "no key in the error: {e}");
    }
    let token = [("AWS_PROFILE", "plain"), ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token")];
    let e = found(h.path(), &token, None).err().unwrap().to_string();
    assert!(e.contains("AWS_WEB_IDENTITY_TOKEN_FILE is set") && e.contains("export-credentials"), "{e}");
    let none = home(None, None);
    let e = found(none.path(), &[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/x")], None).err().unwrap();
    assert!(e.to_string().contains("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is set"), "{e}");
    // The environment's keys come first, as the AWS CLI's do.
    let env = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "e"), ("AWS_PROFILE", "scoped")];
    assert_eq!(found(h.path(), &env, None).unwrap().credentials.key(), "AKIAENV");
}

/// Issue 50: a profile AWS_PROFILE names must exist even when the keys
/// come from the environment ("The config profile (x) could not be
/// found"); one the dataset recorded need not then.
#[test]
fn a_missing_profile_is_refused_with_keys_in_the_environment() {
    let h = home(Some(CREDENTIALS), Some(CONFIG));
    let keys = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "e")];
    for var in ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"] {
        let e = found(h.path(), &[&keys[..], &[(var, "nope")]].concat(), None).err().unwrap().to_string();
        assert!(e.contains("profile nope is in neither") && !e.contains('\n'), "{var}: {e}");
    }
    assert!(found(h.path(), &keys, Some("gone")).is_ok(), "the environment's keys, the dataset's profile unread");
}

/// Issue 50, minor: `~` in the files' variables is expanded, and the
/// legacy `aws_security_token` and `AWS_SECURITY_TOKEN` are read.
#[test]
fn tilde_is_expanded_and_the_legacy_token_names_are_read() {
    let h = home(None, None);
    std::fs::write(
        h.path().join("mine"),
        "[t]\naws_access_key_id = AKIAT\naws_secret_access_key = t\naws_security_token = old\n",
    )
    .unwrap();
    let f = found(h.path(), &[("AWS_SHARED_CREDENTIALS_FILE", "~/mine"), ("AWS_PROFILE", "t")], None).unwrap();
    assert_eq!((f.credentials.key(), f.credentials.token()), ("AKIAT", Some("old")));
    let env = [("AWS_ACCESS_KEY_ID", "AKIAENV"), ("AWS_SECRET_ACCESS_KEY", "e"), ("AWS_SECURITY_TOKEN", "tok")];
    assert_eq!(found(h.path(), &env, None).unwrap().credentials.token(), Some("tok"));
}
