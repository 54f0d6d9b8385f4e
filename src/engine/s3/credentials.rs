//! The credentials and region for a store the user runs, found as the AWS
//! CLI finds them:
//! 1. the environment: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`
//!    (and `AWS_SESSION_TOKEN`, or the older `AWS_SECURITY_TOKEN`); a
//!    profile `AWS_PROFILE` (or `AWS_DEFAULT_PROFILE`) names must exist
//!    even then, as the AWS CLI refuses "The config profile (x) could not
//!    be found";
//! 2. else a profile: `AWS_PROFILE` (or `AWS_DEFAULT_PROFILE`), else the
//!    one the dataset was exported with, else `default`. In it, in either
//!    file, the settings that get keys elsewhere (an assumed role, SSO, web
//!    identity, `credential_process`) are looked for first, as are
//!    `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN`: blobbench does not
//!    read them ([`NOT_READ`]), so each is refused in one line with the
//!    remedy, rather than signing with the profile's static keys as
//!    another principal than the AWS CLI would;
//! 3. then its static keys: in the shared credentials file
//!    (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`, section
//!    `[NAME]`), else in the config file (`AWS_CONFIG_FILE`, else
//!    `~/.aws/config`, section `[profile NAME]`, `[default]` for the
//!    default), `aws_session_token` (or `aws_security_token`) beside them;
//! 4. nothing found with the container's credential variables set (ECS,
//!    EKS pod identity) is refused as those are; else "no credentials".
//!
//! The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's `region`
//! in the config file, else us-east-1. The files are read with `rust-ini`
//! (a line it cannot read is named, never quoted), a leading `~` in their
//! variables expanded as the AWS CLI does. What a dataset and a result
//! file keep is [`Source`]: a profile's name, never a key.

use std::path::{Path, PathBuf};

use rusty_s3::Credentials;

use crate::{Error, Result};

/// What blobbench does not read, and how to hand it over.
pub const NOT_READ: &str = "SSO, credential_process, assumed roles, web identity and container or instance \
    credentials are not read: export their keys first, eval \"$(aws configure export-credentials --format env)\"";

/// The region when nothing names one.
const DEFAULT_REGION: &str = "us-east-1";

/// Settings of a profile that get its keys from somewhere blobbench does
/// not look (the AWS CLI's assume-role, web identity, SSO and process
/// providers), each refused where the AWS CLI would use it.
const ELSEWHERE: [&str; 8] = [
    "role_arn",
    "credential_source",
    "web_identity_token_file",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "credential_process",
    "login_session",
];

/// Variables with which the AWS CLI fetches keys instead of reading them:
/// web identity (before a profile's static keys) and the container's
/// endpoint (after).
const WEB_IDENTITY: [&str; 2] = ["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"];
const CONTAINER: [&str; 2] = ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"];

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
    let named = var("AWS_PROFILE").or_else(|| var("AWS_DEFAULT_PROFILE"));
    if let Some(name) = &named {
        files.profile(name, Named::ByUser)?;
    }
    let token = || var("AWS_SESSION_TOKEN").or_else(|| var("AWS_SECURITY_TOKEN"));
    let (profile, how) = match (&named, recorded) {
        (Some(name), _) => (name.clone(), Named::ByUser),
        (None, Some(name)) => (name.to_string(), Named::ByDataset),
        (None, None) => ("default".to_string(), Named::Default),
    };
    let (credentials, source) = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => (keys(key, secret, token()), Source::Environment),
        (Some(_), None) => return Err(Error::invalid("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")),
        (None, Some(_)) => return Err(Error::invalid("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")),
        (None, None) => (files.profile_keys(&profile, how, &var)?, Source::Profile(profile.clone())),
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

/// How the profile to read was chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Named {
    /// `AWS_PROFILE` or `AWS_DEFAULT_PROFILE`: it must exist.
    ByUser,
    /// The descriptor's: the profile the dataset was exported with.
    ByDataset,
    /// Nothing named one: `default`, whose absence means no credentials.
    Default,
}

/// A profile's settings in each file: the credentials file's section and
/// the config file's.
struct Profile<'a> {
    sections: Vec<(&'a Path, Vec<(String, String)>)>,
}

impl Profile<'_> {
    fn get(&self, key: &str) -> Option<(&Path, String)> {
        self.sections.iter().find_map(|(file, values)| {
            values.iter().find(|(k, v)| k == key && !v.is_empty()).map(|(_, v)| (*file, v.clone()))
        })
    }
}

/// The shared credentials and config files, where the environment says
/// (a leading `~` expanded) or in `~/.aws`.
struct Files {
    credentials: Option<PathBuf>,
    config: Option<PathBuf>,
}

impl Files {
    fn of(var: &dyn Fn(&str) -> Option<String>) -> Files {
        let home = var("HOME");
        let expand = |value: String| match (value.strip_prefix('~'), &home) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                PathBuf::from(format!("{home}{rest}"))
            }
            _ => PathBuf::from(value),
        };
        let aws = home.as_ref().map(|h| PathBuf::from(h).join(".aws"));
        let path = |name: &str, file: &str| var(name).map(expand).or_else(|| aws.as_ref().map(|h| h.join(file)));
        Files {
            credentials: path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            config: path("AWS_CONFIG_FILE", "config"),
        }
    }

    /// Profile `name`'s sections in the credentials file (`[NAME]`) and
    /// the config file (`[profile NAME]`, `[default]`); one named by the
    /// user or the dataset must be in either.
    fn profile(&self, name: &str, how: Named) -> Result<Profile<'_>> {
        let config_section = if name == "default" { "default".to_string() } else { format!("profile {name}") };
        let mut sections = Vec::new();
        for (file, section) in [(&self.credentials, name.to_string()), (&self.config, config_section)] {
            let Some(file) = file.as_deref() else { continue };
            if let Some(values) = read_section(file, &section)? {
                sections.push((file, values));
            }
        }
        if sections.is_empty() && how != Named::Default {
            let shown =
                |f: &Option<PathBuf>| f.as_deref().map_or_else(|| "(no HOME)".to_string(), |p| p.display().to_string());
            let whose = if how == Named::ByDataset { "the dataset's profile (it was exported with it), " } else { "" };
            return Err(Error::invalid(format!(
                "{whose}profile {name} is in neither {} nor {} (set AWS_PROFILE to one that is)",
                shown(&self.credentials),
                shown(&self.config)
            )));
        }
        Ok(Profile { sections })
    }

    /// Profile `name`'s static keys, once nothing the AWS CLI would use
    /// before them is found (see the module's doc).
    fn profile_keys(&self, name: &str, how: Named, var: &dyn Fn(&str) -> Option<String>) -> Result<Credentials> {
        let profile = self.profile(name, how)?;
        let remedy = format!(
            "export its keys first, eval \"$(aws configure export-credentials --profile {name} --format env)\""
        );
        if let Some((file, setting)) = ELSEWHERE.iter().find_map(|k| profile.get(k).map(|(f, _)| (f, *k))) {
            return Err(Error::bad_input(
                file,
                format!("profile {name} gets its keys through {setting}, which blobbench does not read; {remedy}"),
            ));
        }
        if let Some(v) = WEB_IDENTITY.iter().find(|v| var(v).is_some()) {
            return Err(Error::invalid(format!(
                "{v} is set, so the AWS CLI would assume a role with a web identity token, which blobbench does not \
                 do; {remedy}"
            )));
        }
        for (file, values) in &profile.sections {
            let get = |key: &str| values.iter().find(|(k, v)| k == key && !v.is_empty()).map(|(_, v)| v.clone());
            let token = get("aws_session_token").or_else(|| get("aws_security_token"));
            match (get("aws_access_key_id"), get("aws_secret_access_key")) {
                (Some(key), Some(secret)) => return Ok(keys(key, secret, token)),
                (None, None) => {}
                _ => {
                    return Err(Error::bad_input(
                        file,
                        format!("profile {name} has only one of aws_access_key_id and aws_secret_access_key"),
                    ))
                }
            }
        }
        if let Some(v) = CONTAINER.iter().find(|v| var(v).is_some()) {
            return Err(Error::invalid(format!(
                "{v} is set, so the AWS CLI would fetch keys from the container's credentials endpoint, which \
                 blobbench does not do; {remedy}"
            )));
        }
        Err(Error::invalid(match profile.sections.first() {
            Some((file, _)) => {
                format!("profile {name} in {} holds no aws_access_key_id and aws_secret_access_key", file.display())
            }
            None => format!(
                "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE to a profile in {}; {NOT_READ}",
                self.credentials.as_deref().map_or_else(|| "(no HOME)".to_string(), |p| p.display().to_string())
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
