//! One writer beside the blob readers: it overwrites random blobs (same
//! size, new content, each write its own transaction) for as long as the
//! readers run, so their latency is measured while writes go on. The
//! database is written in WAL mode (readers are never blocked by the
//! writer), files by a new file renamed over the old one (a reader never
//! sees half a blob). [`WriterArm`] runs such readers as one arm of
//! interleaved rounds, a writer beside each run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use rand::{Rng, RngCore, SeedableRng};

use crate::drivers::parallel_read::ParallelArm;
use crate::drivers::run::{RunOptions, RunReport};
use crate::engine::{self, OpenMode};
use crate::measure::cold::EvictionReport;
use crate::measure::rounds::Arm;
use crate::measure::{self, RunContext, RunOutcome, Stat};
use crate::records::EngineSettings;
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

/// Puts the dataset at `path` in the writer's mode (a database into WAL)
/// before any reader opens it, and starts writing.
pub fn start(path: &Path, seed: u64) -> Result<BackgroundWriter> {
    let mut engine = engine::open(path, &EngineSettings::fast_rewrites())?;
    let survey = engine.survey(true)?;
    // Opened here, so that a failure is reported before the readers start
    // and the journal mode is WAL when they open the database.
    let mut session = engine.open(OpenMode { find_max: true, ..OpenMode::WRITE })?;
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

/// Readers of one store while one writer overwrites its blobs, as an arm of
/// interleaved rounds: a writer starts before every run (warm-up included)
/// and stops after it, so each run is read beside writes and the stores
/// with a writer pair by round like the stores without one.
pub struct WriterArm {
    readers: ParallelArm,
    path: PathBuf,
    seed: u64,
    /// The writer's rate during each timed run, in order.
    rates: Vec<f64>,
}

impl WriterArm {
    /// Puts the dataset in the writer's mode (one short writer: a database
    /// turns to WAL) before the readers open it, then prepares them.
    pub fn prepare(run: &RunOptions, threads: u32, seed: u64) -> Result<WriterArm> {
        start(&run.path, seed)?.finish()?;
        let readers = ParallelArm::prepare(run, threads)?;
        Ok(WriterArm { readers, path: run.path.clone(), seed, rates: Vec::new() })
    }

    /// The readers' report and the writer's median rate over the timed runs.
    pub fn finish(self, id: &str, label: &str, measured: measure::Measured) -> Result<(RunReport, f64)> {
        let rate = Stat::of(&self.rates).median;
        Ok((self.readers.finish(id, label, measured)?, rate))
    }
}

impl Arm for WriterArm {
    fn evict(&mut self) -> Option<Result<EvictionReport>> {
        self.readers.evict()
    }

    fn run(&mut self, ctx: RunContext<'_>) -> Result<RunOutcome> {
        let timed = ctx.timed;
        let writer = start(&self.path, self.seed.wrapping_add(self.rates.len() as u64))?;
        let read = self.readers.run(ctx);
        // Stopped whether or not the readers succeeded.
        let written = writer.finish()?;
        let outcome = read?;
        if timed {
            self.rates.push(written.writes_per_s);
        }
        Ok(outcome)
    }

    fn warms_up(&self) -> bool {
        self.readers.warms_up()
    }
}
