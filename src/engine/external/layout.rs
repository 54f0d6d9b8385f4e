//! What an external dataset directory holds, and its kind.

use std::path::Path;

use crate::records::EngineKind;

/// The external layout's kind, for the studies that compare it by design.
pub const KIND: EngineKind = EngineKind::External;

/// File names inside an external dataset directory.
pub const NAMES_DB: &str = "names.db";
pub const BLOBS_DIR: &str = "blobs";

/// Whether `dir` is an external dataset: its name database and blob
/// directory are there.
pub fn is_dataset(dir: &Path) -> bool {
    dir.join(NAMES_DB).is_file() && dir.join(BLOBS_DIR).is_dir()
}
