//! The flags that point a server engine at a server the user runs instead
//! of blobbench's throwaway one (PostgreSQL's `--pg URL`), flattened into
//! `export`, `run` and `stat` so each server engine's flags are written
//! once.

use std::path::Path;

use clap::Args;

use blobbench::engine::postgres::{redact, remote_table_name};
use blobbench::records::EngineSettings;

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// PostgreSQL: use this server (postgresql://user:password@host:port/db)
    /// instead of a throwaway cluster; export writes only to the table it
    /// creates there, blobbench_<DIR's name>, and run and stat of that
    /// dataset need the same URL again.
    #[arg(long, value_name = "URL")]
    pub pg: Option<String>,
}

impl ServerArgs {
    /// Puts each server's address in its engine's part of `settings`.
    pub fn apply(&self, settings: &mut EngineSettings) {
        settings.pg.url.clone_from(&self.pg);
    }

    /// What `export` of the dataset at `dir` will write on a server the
    /// user runs (none for a throwaway server), said before it starts.
    pub fn export_notice(&self, dir: &Path) -> Option<String> {
        let url = self.pg.as_deref()?;
        Some(format!("Writing table {} on {} (nothing else there is touched)", remote_table_name(dir), redact(url)))
    }
}
