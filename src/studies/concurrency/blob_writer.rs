//! One writer beside the blob readers: it overwrites random blobs (same
//! size, new content, each write its own transaction) for as long as the
//! readers run, so their latency is measured while writes go on. The
//! database is written in WAL mode (readers are never blocked by the
//! writer), files by a new file renamed over the old one (a reader never
//! sees half a blob).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use rand::{Rng, RngCore, SeedableRng};

use crate::engine::{self, OpenMode};
use crate::records::{DbParams, EngineSettings, FileParams, FileRead, FileWrite, SyncLevel};
use crate::Result;

/// The writer running in its own thread.
pub struct BackgroundWriter {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<u64>>,
    started: Instant,
}

/// What the writer did while the readers ran.
pub struct WriterOutcome {
    pub writes_per_s: f64,
}

/// Settings of the writer: WAL + synchronous NORMAL, one transaction per
/// write; files replaced by rename, without fsync.
fn settings() -> EngineSettings {
    EngineSettings {
        db: DbParams {
            journal_mode: Some("wal".into()),
            sync: Some(SyncLevel::Normal),
            multitrans: true,
            ..DbParams::default()
        },
        files: FileParams { read: FileRead::Posix, write: FileWrite::Replace, fsync: false },
        ..EngineSettings::default()
    }
}

/// Puts the dataset at `path` in the writer's mode (a database into WAL)
/// before any reader opens it, and starts writing.
pub fn start(path: &Path, seed: u64) -> Result<BackgroundWriter> {
    let mut engine = engine::open(path, &settings())?;
    let survey = engine.survey(true)?;
    // Opened here, so that a failure is reported before the readers start
    // and the journal mode is WAL when they open the database.
    let mut session = engine.open(OpenMode { write: true, find_max: true })?;
    let max_key = session.info().max_key.or(survey.max_key).unwrap_or(1).max(1);
    let mut content = vec![0u8; survey.blob_max as usize];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x00b1_0bba);
    rng.fill_bytes(&mut content);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || -> Result<u64> {
        let mut writes = 0u64;
        while !flag.load(Ordering::Relaxed) {
            let key = rng.gen_range(1..=max_key);
            // A byte changes per write: the new content always differs.
            let i = writes as usize % content.len().max(1);
            content[i] = content[i].wrapping_add(1);
            if session.overwrite(key, &content)? > 0 {
                writes += 1;
            }
        }
        session.commit()?;
        session.close()?;
        drop(engine);
        Ok(writes)
    });
    Ok(BackgroundWriter { stop, handle, started: Instant::now() })
}

impl BackgroundWriter {
    /// Stops the writer and says how much it wrote.
    pub fn finish(self) -> Result<WriterOutcome> {
        self.stop.store(true, Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        let writes = self.handle.join().map_err(|_| crate::Error::invalid("the blob writer thread panicked"))??;
        Ok(WriterOutcome { writes_per_s: writes as f64 / secs.max(1e-9) })
    }
}
