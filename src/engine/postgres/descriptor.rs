//! The file that names a directory as a blobbench PostgreSQL dataset, and
//! what it says: the engine, the table, the column storage, local or remote.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::records::EngineKind;
use crate::{Error, Result};

/// The file naming a directory as a blobbench PostgreSQL dataset.
pub const DESCRIPTOR: &str = "blobbench-postgres.json";

/// What a dataset directory says about its table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    pub engine: EngineKind,
    /// The table's name (always `kv` in a throwaway cluster).
    pub table: String,
    pub storage: crate::records::PgStorage,
    /// The table is on a server the user runs (else in `pgdata/`).
    pub remote: bool,
}

impl Descriptor {
    pub fn read(dir: &Path) -> Result<Descriptor> {
        let file = dir.join(DESCRIPTOR);
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, "cannot read", e))?;
        let d: Descriptor = serde_json::from_str(&text)
            .map_err(|e| Error::bad_input(&file, format!("is not a blobbench PostgreSQL descriptor: {e}")))?;
        if !matches!(d.engine, EngineKind::Postgres | EngineKind::PostgresLo) || !plain_name(&d.table) {
            return Err(Error::bad_input(&file, "is not a blobbench PostgreSQL descriptor"));
        }
        Ok(d)
    }
}

/// The PostgreSQL engine a directory holds, if any.
pub(crate) fn detect(dir: &Path) -> Option<EngineKind> {
    Descriptor::read(dir).ok().map(|d| d.engine)
}

/// A plain lower-case identifier, safe to put in SQL unquoted.
pub(super) fn plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && name.len() <= 63
}
