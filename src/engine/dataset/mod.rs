//! kvtest datasets: a database of blobs (`init`), its copy as one file per
//! blob (`export`), a database of the files' names (`external`), what a path
//! holds (`layout`), and what it occupies (`stat`).

mod export;
mod external;
pub mod from_dir;
mod init;
mod layout;
mod stat;

pub use export::{export, ExportReport};
pub use external::init_names;
pub use init::{check_spec, estimated_bytes as estimated_db_bytes, init, InitReport};
pub use layout::{blob_files, blob_name, detect, list_keys, open_kv, BlobPath, KvConnection};
pub(crate) use layout::{conn_error, db_error, open_io_cause};
pub use stat::{stat, DbStat, DirStat, StatReport};

use std::path::Path;

use crate::records::EngineKind;
use crate::util::progress::Progress;
use crate::{Error, Result};

/// Builds `kind`'s dataset at `target` from the kvtest database `db`: the
/// same keys and byte-identical values. Built under a temporary name and
/// renamed into place, so an interrupted build never looks complete.
pub fn build(kind: EngineKind, db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    match kind {
        EngineKind::Flat => export(db, target, false, force, progress),
        EngineKind::Tree => export(db, target, true, force, progress),
        EngineKind::External => external::build(db, target, force, progress),
        EngineKind::Lmdb => super::lmdb::build(db, target, force, progress),
        EngineKind::Redb => super::redb::build(db, target, force, progress),
        EngineKind::Fjall => super::fjall::build(db, target, force, progress),
        EngineKind::Postgres | EngineKind::PostgresLo => {
            super::postgres::build(kind, db, target, force, &crate::records::PgParams::default(), progress)
        }
        EngineKind::Db => Err(Error::invalid("a kvtest database is made by init, not exported")),
    }
}
