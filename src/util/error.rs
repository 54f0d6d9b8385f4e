//! The one error type the library returns. Every message is a single line
//! written for the person at the terminal: what went wrong and with which path.

use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: no such file or directory", .0.display())]
    NotFound(PathBuf),
    #[error("{}: {why}", path.display())]
    BadInput { path: PathBuf, why: String },
    #[error("{}: already exists (use --force to replace it)", .0.display())]
    Exists(PathBuf),
    #[error("{}: {why}", path.display())]
    Io {
        path: PathBuf,
        why: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {why}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        why: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub fn bad_input(path: &Path, why: impl Into<String>) -> Self {
        Error::BadInput { path: path.to_path_buf(), why: why.into() }
    }

    /// An I/O error with the path and the action that failed; the OS message
    /// (e.g. "No space left on device") is appended so it names the cause.
    pub fn io(path: &Path, action: &str, source: std::io::Error) -> Self {
        let os = plain_io_message(&source);
        Error::Io { path: path.to_path_buf(), why: format!("{action}: {os}"), source }
    }

    pub fn sqlite(path: &Path, why: impl Into<String>, source: rusqlite::Error) -> Self {
        Error::Sqlite { path: path.to_path_buf(), why: why.into(), source }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }
}

/// "No space left on device" rather than "No space left on device (os error 28)".
fn plain_io_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
