//! The credentials and region for a store the user runs, found as the AWS
//! CLI finds them:
//! 1. the environment: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`
//!    (and `AWS_SESSION_TOKEN`);
//! 2. else a profile: `AWS_PROFILE` (or `AWS_DEFAULT_PROFILE`), else the
//!    one the dataset was exported with, else `default`; its keys in the
//!    shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//!    `~/.aws/credentials`, section `[NAME]`), else in the config file
//!    (`AWS_CONFIG_FILE`, else `~/.aws/config`, section `[profile NAME]`,
//!    `[default]` for the default).
//!
//! The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`
//! in the config file, else us-east-1. What is not read ([`NOT_READ`]):
//! SSO, `credential_process`, assumed roles and instance metadata, which
//! need the AWS SDK's machinery; the AWS CLI hands their keys over.
//!
//! The files are read with `rust-ini` (a line it cannot read is named),
//! only when the environment leaves something to find. What a dataset and
//! a result file keep is [`Source`]: a profile's name, never a key.

use std::path::{Path, PathBuf};

use rusty_s3::Credentials;

use crate::{Error, Result};

/// What blobbench does not read, and how to hand it over.
pub const NOT_READ: &str = "SSO, credential_process, assumed roles and instance metadata are not read: \
    export their keys first, eval \"$(aws configure export-credentials --format env)\"";

/// The region when nothing names one.
const DEFAULT_REGION: &str = "us-east-1";

/// Settings of a profile that get its keys from somewhere blobbench does
/// not look.
const ELSEWHERE: [&str; 6] =
    ["sso_session", "sso_start_url", "credential_process", "role_arn", "web_identity_token_file", "credential_source"];

/// Where the credentials came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Environment,
    /// A profile of the shared files, by name.
    Profile(String),
}

impl Source {
    /// What a result file records (never a key).
    pub fn label(&self) -> String {
        match self {
            Source::Environment => "environment (AWS_ACCESS_KEY_ID)".into(),
            Source::Profile(name) => format!("profile {name}"),
        }
    }

    /// What a refused key tells the user to check.
    pub fn check(&self) -> String {
        match self {
            Source::Environment => "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN".into(),
            Source::Profile(name) => format!("profile {name}'s keys in the shared credentials or config file"),
        }
    }

    /// The profile's name, for the descriptor.
    pub fn profile(&self) -> Option<String> {
        match self {
            Source::Environment => None,
            Source::Profile(name) => Some(name.clone()),
        }
    }
}

/// Credentials, region and where they came from.
pub struct Found {
    pub credentials: Credentials,
    pub region: String,
    pub source: Source,
}

/// Finds the credentials and region, `env` reading a variable and
/// `recorded` the profile a dataset was exported with (the environment's
/// `AWS_PROFILE` wins over it).
pub fn find(env: &dyn Fn(&str) -> Option<String>, recorded: Option<&str>) -> Result<Found> {
    let var = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let files = Files::of(&var);
    let named = var("AWS_PROFILE").or_else(|| var("AWS_DEFAULT_PROFILE")).or_else(|| recorded.map(str::to_string));
    let profile = named.clone().unwrap_or_else(|| "default".into());
    let (credentials, source) = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => (keys(key, secret, var("AWS_SESSION_TOKEN")), Source::Environment),
        (Some(_), None) => return Err(Error::invalid("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")),
        (None, Some(_)) => return Err(Error::invalid("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")),
        (None, None) => (files.profile_keys(&profile, named.is_some())?, Source::Profile(profile.clone())),
    };
    let region = match var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
        Some(r) => r,
        None => files.config_value(&profile, "region")?.unwrap_or_else(|| DEFAULT_REGION.into()),
    };
    Ok(Found { credentials, region, source })
}

fn keys(key: String, secret: String, token: Option<String>) -> Credentials {
    match token {
        Some(token) => Credentials::new_with_token(key, secret, token),
        None => Credentials::new(key, secret),
    }
}

/// The shared credentials and config files, where the environment says
/// or in `~/.aws`.
struct Files {
    credentials: Option<PathBuf>,
    config: Option<PathBuf>,
}

impl Files {
    fn of(var: &dyn Fn(&str) -> Option<String>) -> Files {
        let home = var("HOME").map(|h| PathBuf::from(h).join(".aws"));
        let path =
            |name: &str, file: &str| var(name).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(file)));
        Files {
            credentials: path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            config: path("AWS_CONFIG_FILE", "config"),
        }
    }

    /// Profile `name`'s keys: the credentials file's section, else the
    /// config file's. `named`: the user named it (else it is the default,
    /// and its absence means no credentials at all).
    fn profile_keys(&self, name: &str, named: bool) -> Result<Credentials> {
        let config_section = if name == "default" { "default".to_string() } else { format!("profile {name}") };
        let sections = [(&self.credentials, name.to_string()), (&self.config, config_section)];
        let mut seen_in: Option<&Path> = None;
        for (file, section) in sections {
            let Some(file) = file.as_deref() else { continue };
            let Some(values) = read_section(file, &section)? else { continue };
            seen_in.get_or_insert(file);
            let get = |key: &str| values.iter().find(|(k, v)| k == key && !v.is_empty()).map(|(_, v)| v.clone());
            match (get("aws_access_key_id"), get("aws_secret_access_key")) {
                (Some(key), Some(secret)) => {
                    return Ok(keys(key, secret, get("aws_session_token")));
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(Error::bad_input(
                        file,
                        format!("profile {name} has only one of aws_access_key_id and aws_secret_access_key"),
                    ));
                }
                (None, None) => {
                    if let Some(other) = ELSEWHERE.iter().find(|k| get(k).is_some()) {
                        return Err(Error::bad_input(
                            file,
                            format!("profile {name} gets its keys through {other}, which blobbench does not read; {NOT_READ}"),
                        ));
                    }
                }
            }
        }
        let shown =
            |f: &Option<PathBuf>| f.as_deref().map_or_else(|| "(no HOME)".to_string(), |p| p.display().to_string());
        let (credentials, config) = (shown(&self.credentials), shown(&self.config));
        Err(Error::invalid(match (seen_in, named) {
            (Some(file), _) => format!("profile {name} in {} holds no aws_access_key_id and aws_secret_access_key", file.display()),
            (None, true) => format!("profile {name} is in neither {credentials} nor {config}"),
            (None, false) => format!(
                "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE to a profile in {credentials}; {NOT_READ}"
            ),
        }))
    }

    /// `key` of profile `name` in the config file.
    fn config_value(&self, name: &str, key: &str) -> Result<Option<String>> {
        let Some(file) = self.config.as_deref() else { return Ok(None) };
        let section = if name == "default" { "default".to_string() } else { format!("profile {name}") };
        Ok(read_section(file, &section)?.and_then(|v| v.into_iter().find(|(k, _)| k == key).map(|(_, v)| v)))
    }
}

/// The keys (lower-cased, as the AWS CLI reads them) and values of
/// `section` in the INI file `file`; None when the file or the section is
/// not there. A file that cannot be read as INI is an error naming its
/// line (and never quoting it: it may hold a secret).
fn read_section(file: &Path, section: &str) -> Result<Option<Vec<(String, String)>>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(file, "cannot read", e)),
    };
    let options = || ini::ParseOption { enabled_quote: false, enabled_escape: false, ..ini::ParseOption::default() };
    let unreadable = |line: usize, e: ini::ParseError| {
        Error::bad_input(file, format!("line {line} cannot be read as an INI line ({})", e.msg))
    };
    // Line by line first: over a whole file the parser reads a line without
    // `=` into the next line's key, and names the end of the file.
    for (i, line) in text.lines().enumerate() {
        ini::Ini::load_from_str_opt(line, options()).map_err(|e| unreadable(i + 1, e))?;
    }
    let parsed = ini::Ini::load_from_str_opt(&text, options()).map_err(|e| unreadable(e.line, e))?;
    let found = parsed.iter().find(|(name, _)| name.map(str::trim) == Some(section));
    Ok(found
        .map(|(_, props)| props.iter().map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())).collect()))
}

/// The credentials and region for a store the user runs, read from this
/// process's environment and the shared files.
pub fn from_environment(recorded: Option<&str>) -> Result<Found> {
    find(&|name| std::env::var(name).ok(), recorded)
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;
