//! `crashtest`: what a killed writer leaves behind, per write method.
//!
//! For each method a dataset of self-verifying blobs is made (a database or
//! a directory of files); then, again and again, a child process overwrites
//! the blobs with new versions through the benchmark's own write paths and
//! is killed with SIGKILL after a random delay (a seeded, repeatable
//! schedule). After each kill the dataset is opened as a new user would
//! open it (SQLite recovery included), integrity-checked, and every blob is
//! classified; damage is repaired before the next kill so each is judged
//! alone.
//!
//! A process kill is not a power cut: the kernel keeps every page the
//! writer handed to it, so fsync cannot change the outcome here and only
//! the ordering of the writer's own system calls is tested. See
//! docs/crash-safety.md.

mod blob;
mod dataset;
mod kill;
pub mod loss;
pub mod method;
mod options;
mod powercut;
mod section;
mod writer;

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use options::Crash;
pub use options::CrashOptions;
pub use powercut::{power_cut_test, FsyncFailureResult, PowerCutMethodResult, PowerCutReport, PowerCutSection};
pub use section::{CheckTotals, CrashMethodResult, CrashRun, CrashSection, IntegrityOutcome, IntegrityReason};
pub use writer::Signal;
pub use writer::{write_until_killed, WriterSpec};

use crate::measure::stop_requested;
use crate::records::ConfigId;
use crate::studies::context::StudyContext;
use crate::util::progress::Progress;
use crate::{Error, Result};
use dataset::Dataset;
use options::{ROUND_SPAN, WORK_PREFIX};

/// What `crashtest` does by default, and with `--quick`.
pub use options::{DEFAULT_COUNT, DEFAULT_KILLS, QUICK_COUNT, QUICK_KILLS};
/// What the table's columns count (the terminal and the report show it).
pub const LEGEND: &str = "
integrity: kills after which integrity_check failed (for an engine's store: it could not be opened or read). torn,
missing, lost (whole but an unexpected version), undone (whole, but older than a write to it that had returned),
stray (temporary files left behind): totals over all kills. damaged: kills that left anything torn, missing, lost
or stray.
whole old / whole new: blobs intact at their version before the kill / at a version the killed writer wrote.
";

/// What a process kill shows and what it cannot; said wherever results are.
pub const LIMITS: &str = "\
Each writer was killed with SIGKILL, a process crash. The kernel kept every page the writer had passed to
write(), so this tests only what each method's order of system calls leaves behind when the process dies
between two of them (a file truncated but not rewritten, a temporary file never renamed, a transaction SQLite
must roll back or recover). It is not a power cut: nothing in the page cache was lost, so fsync protects
nothing here (a method with fsync differs only because its writer spends its time elsewhere when killed), and
a method that is clean here can still tear or lose data when the power fails. docs/crash-safety.md describes
what a power-cut test needs. For PostgreSQL the server's processes (postmaster and backends) are SIGKILLed, then
the client, and the server is restarted (crash recovery) for the check: a commit acknowledged under
synchronous_commit=off may still be in the server's WAL buffers, its own memory, which the kill loses.
";

/// What the power-cut table's columns count.
pub const POWER_CUT_LEGEND: &str = "
acks: a write that returned was promised durable (COMMIT under synchronous=FULL with a journal; a file fsync'd where
it lives, a rename only with its directory fsync'd; an engine's durable commit, one per write; its fast commit
acknowledges nothing). integrity: cuts after which integrity_check failed (an engine's store: it could not be opened
or read). lost-acked: blobs older, torn or missing after that version or a later one was acknowledged durable (for
such a method the version on disk before the cut counts as acknowledged): durability violations. lost-unack: blobs
older than the last write that returned, which was not promised durable (allowed). Other columns as in the
kill test: totals over all cuts. The command fails when a method whose documentation promises durability loses an
acknowledged write; db-delete is counted but not judged: SQLite documents that DELETE mode under FULL may lose the
last commit in a power cut (the journal's unlink is not fsync'd; synchronous=EXTRA does it: db-delete-extra).
";

#[derive(Debug, Clone)]
pub struct CrashReport {
    pub section: CrashSection,
    /// Stopped by Ctrl-C: the last method has fewer kills.
    pub interrupted: bool,
}

pub fn crashtest(ctx: &StudyContext, opts: &CrashOptions) -> Result<CrashReport> {
    let opts = &Crash::new(ctx, opts);
    let progress = &ctx.progress();
    opts.validate()?;
    // Before any method runs: a missing server would end a long run late.
    for m in &opts.methods {
        m.check_installed(&opts.ctx.settings).map_err(|e| Error::invalid(format!("--method {}: {e}", m.name())))?;
    }
    crate::engine::registry::reap_killed(&opts.ctx.workdir)?;
    // Enterable by others (not listable): PostgreSQL's throwaway cluster
    // runs as the `postgres` user when blobbench runs as root.
    let root = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .tempdir_in(&opts.ctx.workdir)
        .map_err(|e| Error::io(&opts.ctx.workdir, "cannot create a directory here", e))?;
    let mut section = CrashSection {
        fault: "SIGKILL".into(),
        kills_per_method: opts.kills,
        run: CrashRun::of(opts),
        methods: Vec::new(),
    };
    progress.start("crashtest", u64::from(opts.kills) * opts.methods.len() as u64);
    let mut interrupted = false;
    for (i, &method) in opts.methods.iter().enumerate() {
        // A short name: a server's Unix socket path must fit in 107 bytes.
        let dir = root.path().join(format!("m{i}"));
        std::fs::create_dir(&dir).map_err(|e| Error::io(&dir, "cannot create directory", e))?;
        let result = one_method(opts, method, &dir, progress, &mut interrupted);
        let _ = std::fs::remove_dir_all(&dir);
        section.methods.push(result?);
        if interrupted {
            break;
        }
    }
    progress.finish();
    Ok(CrashReport { section, interrupted })
}

fn one_method(
    opts: &Crash,
    method: ConfigId,
    dir: &std::path::Path,
    progress: &dyn Progress,
    interrupted: &mut bool,
) -> Result<CrashMethodResult> {
    let started = Instant::now();
    let path = dir.join(method.dataset_name());
    let mut ds = Dataset::create_with(&path, method, opts.count, opts.ctx.seed, opts.ctx.settings.clone())?;
    // Each method has its own schedule, the same whether run alone or not.
    let schedule_seed = method.name().bytes().fold(opts.ctx.seed, |h, b| h.rotate_left(7) ^ u64::from(b));
    let mut schedule = rand::rngs::SmallRng::seed_from_u64(schedule_seed);
    let max_us = opts.max_delay.as_micros() as u64;
    let mut r = CrashMethodResult {
        method: method.name().into(),
        description: method.description().into(),
        promises_atomic: method.promises_atomic(),
        acknowledges_durability: method.acknowledges_durability(),
        ..CrashMethodResult::default()
    };
    let acks = dir.join("acks");
    for kill in 1..=u64::from(opts.kills) {
        let _ = std::fs::remove_file(&acks);
        let delay = Duration::from_micros(schedule.gen_range(0..=max_us));
        let spec = WriterSpec {
            method,
            path: path.clone(),
            count: opts.count,
            seed: opts.ctx.seed,
            base: kill * ROUND_SPAN,
            acks: Some(acks.clone()),
            commit_every: opts.commit_every,
            settings: opts.ctx.settings.clone(),
        };
        kill::run_and_kill(&opts.writer, &spec, delay)?;
        let t = ds.check(spec.base)?;
        let returned = writer::read_acks(&acks)?;
        r.undone += undone(&t, &returned);
        r.acknowledged += returned.len() as u64;
        if let Some(n) = t.unlisted {
            r.unlisted = Some(r.unlisted.unwrap_or(0) + n);
        }
        if let Some(n) = t.stale {
            r.stale_reads = Some(r.stale_reads.unwrap_or(0) + n);
        }
        r.kills += 1;
        r.checks.add(&t, opts.count);
        let damaged = t.integrity_failed() || t.torn + t.missing + t.unexpected > 0 || !t.stray.is_empty();
        r.damaged_kills += u32::from(damaged);
        ds.repair(&t)?;
        progress.advance(1);
        if stop_requested() {
            *interrupted = true;
            break;
        }
    }
    // After the kills: the first check's server described it.
    r.server = ds.server()?;
    r.elapsed_ns = started.elapsed().as_nanos() as u64;
    Ok(r)
}

/// Blobs found whole at a version older than the last write to them that
/// returned to the writer (`acks`: key, version, promised durable).
fn undone(t: &dataset::Tally, acks: &[(u32, u64, bool)]) -> u64 {
    let mut last = std::collections::HashMap::new();
    for &(key, version, _) in acks {
        let v = last.entry(key).or_insert(version);
        *v = (*v).max(version);
    }
    let older = |(key, &returned): (&u32, &u64)| matches!(t.found.get(*key as usize), Some(Some(blob::Verdict::Intact(v))) if *v < returned);
    last.iter().filter(|&e| older(e)).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrity_reason_keeps_the_first_and_counts_its_repeats() {
        let mut slot = None;
        for r in [None, Some("kv: cannot open: missing blob file"), Some("kv: other"), None] {
            IntegrityReason::count(&mut slot, r);
        }
        IntegrityReason::count(&mut slot, Some("kv: cannot open: missing blob file"));
        let r = slot.expect("two reasons seen");
        assert_eq!((r.first.as_str(), r.same), ("kv: cannot open: missing blob file", 2));
        let mut none = None;
        IntegrityReason::count(&mut none, None);
        assert_eq!(none, None, "a passed check gives no reason");
    }

    #[test]
    fn undone_counts_whole_blobs_older_than_a_returned_write() {
        use blob::Verdict::{Intact, Torn};
        let mut t = dataset::Tally::default();
        t.found = vec![None, Some(Intact(5)), Some(Intact(7)), Some(Torn), None];
        // key 1 returned 6 and 7 but has 5; key 2 has what returned; key 3
        // is torn (its own column); key 4 is missing (its own column).
        let acks = [(1, 6, false), (1, 7, false), (2, 7, true), (3, 9, true), (4, 1, true)];
        assert_eq!(undone(&t, &acks), 1);
        assert_eq!(undone(&t, &[]), 0);
    }
}
