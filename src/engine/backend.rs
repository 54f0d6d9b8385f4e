//! What one engine kind brings to blobbench, so that adding an engine is
//! one module that implements [`Backend`] and one row in the registry
//! (`engine/registry.rs`): how its dataset is recognised, built from a
//! kvtest database, opened with a run's settings and described, what its
//! timer covers, and which write modes the crash test puts through it.

use std::path::{Path, PathBuf};

use crate::engine::api::Engine;
pub use crate::engine::config::{PowerCuts, ServerKill, WriteConfig, WriteSettings, WritersConfig};
use crate::engine::report::{ExportReport, StatReport};
use crate::records::{EngineKind, EngineSettings};
use crate::util::progress::Progress;
use crate::Result;

/// What detection looked at: the path, whether it is a directory, and the
/// first bytes of a file (empty for a directory).
pub struct Probe<'a> {
    pub path: &'a Path,
    pub is_dir: bool,
    pub head: &'a [u8],
}

/// A backend's answer to "is this your dataset?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    No,
    /// Its own marker is there (a file header, the engine's own files).
    Yes,
    /// Any directory would do (a directory of blob files): taken only when
    /// no backend says [`Claim::Yes`].
    Fallback,
}

impl Claim {
    /// [`Claim::Yes`] when the backend found its own marker, else [`Claim::No`].
    pub fn yes_if(found_own_marker: bool) -> Claim {
        if found_own_marker {
            Claim::Yes
        } else {
            Claim::No
        }
    }
}

/// Where a dataset's bytes are on this machine's disk, for a study that
/// sizes and inspects its files (`aging`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalBytes {
    /// All of them are in these files and directories (each exists).
    In(Vec<PathBuf>),
    /// None are here: a server elsewhere holds them (why, as the study
    /// records it).
    Remote(String),
}

/// One engine kind. Every method is required, so a new engine that forgets
/// one does not compile.
pub trait Backend: Sync {
    fn kind(&self) -> EngineKind;

    /// Whether `probe` is this engine's dataset.
    fn claim(&self, probe: &Probe) -> Claim;

    /// Builds this engine's dataset at `target` from the kvtest database
    /// `db`: the same keys and byte-identical values, staged under a
    /// temporary name (`engine::staging`) so an interrupted build never
    /// looks complete. With `force`, only a previous dataset of this kind is
    /// replaced.
    /// `settings` carries an engine's own build options (PostgreSQL's
    /// server and column storage); the others ignore it.
    fn build(
        &self,
        db: &Path,
        target: &Path,
        force: bool,
        settings: &EngineSettings,
        progress: &dyn Progress,
    ) -> Result<ExportReport>;

    /// The dataset at `path` with one run's settings (nothing is opened yet).
    fn open(&self, path: &Path, settings: &EngineSettings) -> Box<dyn Engine>;

    /// What `stat` says about the dataset. `vacuum` rebuilds a database
    /// first; other engines refuse it.
    /// `settings` says how to reach a server (PostgreSQL's `--pg`).
    fn stat(&self, path: &Path, vacuum: bool, settings: &EngineSettings) -> Result<StatReport>;

    /// Where the dataset at `path` keeps its bytes on this machine (with
    /// the run's `settings`, which say how to reach a server): never a
    /// guess, so a remote store's descriptor is not mistaken for its data.
    fn local_bytes(&self, path: &Path, settings: &EngineSettings) -> Result<LocalBytes>;

    /// What kvtest's total covers for this engine with these settings, as
    /// `run` prints it ("open + loop + commit + close").
    fn timer_covers(&self, settings: &EngineSettings) -> &'static str;

    /// The crash test's write modes through this engine (none is a choice,
    /// stated by returning an empty list).
    fn write_configs(&self) -> &'static [WriteConfig];

    /// Ends what killed blobbench runs left running in the work
    /// directories directly under `workdir` (a server whose owner died);
    /// a study calls it before it makes its own. Returns how many it ended.
    fn reap_killed(&self, workdir: &Path) -> Result<usize>;

    /// Checks what this engine needs beyond its dataset (a server's
    /// programs), and, given where a dataset of it will be built
    /// (`target`), that it can live there (a server's socket path must fit),
    /// so a study fails in one line before it builds anything.
    fn preflight(&self, settings: &EngineSettings, target: Option<&Path>) -> Result<()>;
}
