//! SQLite's journal modes: the one type every setting, crash mode and
//! study uses, named and parsed here only.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `PRAGMA journal_mode`. Result files hold its lowercase name (`"wal"`),
/// which is also what SQLite answers when asked for the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Journal {
    /// A rollback journal deleted at each commit (SQLite's default).
    Delete,
    /// A rollback journal truncated at each commit.
    Truncate,
    /// A rollback journal whose header is zeroed at each commit.
    Persist,
    /// A rollback journal in memory.
    Memory,
    /// A write-ahead log.
    Wal,
    /// No journal: a killed writer can leave the database corrupt.
    Off,
}

impl Journal {
    pub const ALL: [Journal; 6] =
        [Journal::Delete, Journal::Truncate, Journal::Persist, Journal::Memory, Journal::Wal, Journal::Off];

    /// Its name in `PRAGMA journal_mode=NAME` and in result files.
    pub fn name(self) -> &'static str {
        match self {
            Journal::Delete => "delete",
            Journal::Truncate => "truncate",
            Journal::Persist => "persist",
            Journal::Memory => "memory",
            Journal::Wal => "wal",
            Journal::Off => "off",
        }
    }

    /// The mode a name stands for, in any case (SQLite answers `wal`, a
    /// user may type `WAL`).
    pub fn parse(name: &str) -> Option<Journal> {
        Journal::ALL.into_iter().find(|j| j.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Journal> for &'static str {
    fn from(j: Journal) -> &'static str {
        j.name()
    }
}

impl TryFrom<String> for Journal {
    type Error = String;
    fn try_from(s: String) -> Result<Journal, String> {
        Journal::parse(&s).ok_or_else(|| format!("unknown journal mode {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_parses_back_in_any_case_and_serializes_as_its_name() {
        for j in Journal::ALL {
            assert_eq!(Journal::parse(j.name()), Some(j));
            assert_eq!(Journal::parse(&j.name().to_uppercase()), Some(j));
            let json = serde_json::to_string(&j).unwrap();
            assert_eq!(json, format!("\"{}\"", j.name()));
            assert_eq!(serde_json::from_str::<Journal>(&json).unwrap(), j);
        }
        assert_eq!(Journal::parse("sideways"), None);
        assert!(serde_json::from_str::<Journal>("\"sideways\"").is_err());
    }
}
