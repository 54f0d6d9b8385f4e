//! The dataset tools' entry points, gathered for the layers above: a kvtest
//! database (`init`, `init --from`), its copies built by each engine's
//! backend (`build`, `export`), the name database of the external layout,
//! and `stat`. Each lives in its engine's module; this file only names them.

use std::path::{Path, PathBuf};

pub use crate::engine::external::build::init_names;
pub use crate::engine::files::names::{blob_files, blob_name, list_keys, BlobPath};
pub use crate::engine::kvtest_db::{open_kv, KvConnection};
pub use crate::engine::registry::{build, build_with, detect, stat, stat_with};
pub use crate::engine::report::{DbStat, DirStat, ExportReport, StatReport};
pub use crate::engine::sqlite::error::{conn_error, db_error};
pub use crate::engine::sqlite::from_dir;
pub use crate::engine::sqlite::init::{check_spec, estimated_bytes as estimated_db_bytes, init, InitReport};

use crate::records::EngineKind;
use crate::util::progress::Progress;
use crate::Result;

/// One file per blob from the kvtest database `db`, flat or (`tree`) in a
/// tree, staged and renamed into place.
pub fn export(db: &Path, dir: &Path, tree: bool, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    build(crate::engine::files::layout(tree), db, dir, force, progress)
}

/// Where a study keeps the copy of a dataset named `stem` that `kind`
/// reads, in `dir`: `STEM.db` for SQLite, `STEM.dir` for files in one
/// directory, `STEM.tree` for a tree, `STEM.ENGINE` for any other engine.
pub fn copy_path(dir: &Path, stem: &str, kind: EngineKind) -> PathBuf {
    let ext = match kind {
        crate::engine::sqlite::KIND => "db",
        crate::engine::files::FLAT_KIND => "dir",
        crate::engine::files::TREE_KIND => "tree",
        other => other.name(),
    };
    dir.join(format!("{stem}.{ext}"))
}
