//! The crash test's tables, each defined once and drawn on the page and
//! at the terminal: what process kills left per method, what power cuts
//! left, what a failed fsync left; with what both say around them (how the
//! writers committed, why integrity checks failed, what an object store's
//! listing lost).

use crate::report::format::doc::{Block, Table};
use crate::report::format::fmt::thousands;
use crate::studies::crashtest::{
    CrashMethodResult, CrashRun, FsyncFailureResult, IntegrityOutcome, PowerCutMethodResult,
};

/// Where a table is drawn: the page (headers in words, figures with
/// thousands separators, a method by its description) or the terminal
/// (short headers, plain figures, a method by its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Page,
    Terminal,
}

/// One column: its header on the page and at the terminal (None: not
/// drawn there) and its cell.
struct Column<T> {
    page: Option<&'static str>,
    terminal: Option<&'static str>,
    cell: fn(&T, Place) -> String,
}

const fn both<T>(page: &'static str, terminal: &'static str, cell: fn(&T, Place) -> String) -> Column<T> {
    Column { page: Some(page), terminal: Some(terminal), cell }
}

const fn terminal_only<T>(terminal: &'static str, cell: fn(&T, Place) -> String) -> Column<T> {
    Column { page: None, terminal: Some(terminal), cell }
}

/// A count: with thousands separators on the page.
fn count(n: u64, place: Place) -> String {
    match place {
        Place::Page => thousands(n),
        Place::Terminal => n.to_string(),
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// `columns` over `rows`, as drawn at `place`.
fn draw<T>(columns: &[Column<T>], rows: &[T], place: Place) -> Table {
    let shown: Vec<(&'static str, &Column<T>)> = columns
        .iter()
        .filter_map(|c| {
            match place {
                Place::Page => c.page,
                Place::Terminal => c.terminal,
            }
            .map(|h| (h, c))
        })
        .collect();
    let headers: Vec<&str> = shown.iter().map(|(h, _)| *h).collect();
    let cells = rows.iter().map(|r| shown.iter().map(|(_, c)| (c.cell)(r, place)).collect()).collect();
    Table::new(&headers, cells)
}

const KILLS: &[Column<CrashMethodResult>] = &[
    both("method", "method", |m, place| if place == Place::Page { m.description.clone() } else { m.method.clone() }),
    both("kills", "kills", |m, _| m.kills.to_string()),
    both("integrity failures", "integrity", |m, _| m.checks.integrity_failures.to_string()),
    both("torn", "torn", |m, p| count(m.checks.torn, p)),
    both("missing", "missing", |m, p| count(m.checks.missing, p)),
    both("lost", "lost", |m, p| count(m.checks.unexpected_version, p)),
    both("undone", "undone", |m, p| count(m.undone, p)),
    both("stray files", "stray", |m, p| count(m.checks.stray_files, p)),
    both("damaged kills", "damaged", |m, _| m.damaged_kills.to_string()),
    both("whole old", "whole old", |m, p| count(m.checks.intact_old, p)),
    both("whole new", "whole new", |m, p| count(m.checks.intact_new, p)),
];

const CUTS: &[Column<PowerCutMethodResult>] = &[
    both("method", "method", |m, place| if place == Place::Page { m.description.clone() } else { m.method.clone() }),
    both("acknowledged durable", "acks", |m, _| yes_no(m.acknowledges_durability)),
    both("cuts", "cuts", |m, _| m.cuts.to_string()),
    both("integrity failures", "integrity", |m, _| m.checks.integrity_failures.to_string()),
    both("torn", "torn", |m, p| count(m.checks.torn, p)),
    both("missing", "missing", |m, p| count(m.checks.missing, p)),
    both("lost after acknowledgement", "lost-acked", |m, p| count(m.lost_after_ack, p)),
    both("lost before acknowledgement (allowed)", "lost-unack", |m, p| count(m.lost_before_ack, p)),
    both("stray files", "stray", |m, p| count(m.checks.stray_files, p)),
    terminal_only("whole old", |m, p| count(m.checks.intact_old, p)),
    terminal_only("whole new", |m, p| count(m.checks.intact_new, p)),
];

const FSYNC_FAILURES: &[Column<FsyncFailureResult>] =
    &[
        both("method", "method", |f, _| f.method.clone()),
        both("trials", "trials", |f, _| f.trials.to_string()),
        both("fsync failed", "fsync failed", |f, _| f.fsync_failed.to_string()),
        both("writer stopped", "writer stopped", |f, _| f.writer_stopped.to_string()),
        both("integrity failures", "integrity", |f, _| f.integrity_failures.to_string()),
        both("torn", "torn", |f, p| count(f.torn, p)),
        terminal_only("missing", |f, p| count(f.missing, p)),
        both("lost after acknowledgement", "lost-acked", |f, p| count(f.lost_after_ack, p)),
        terminal_only("whole new", |f, p| count(f.intact_new, p)),
        terminal_only("writer's error", |f, _| {
            if f.writer_error.is_empty() {
                "-".to_string()
            } else {
                f.writer_error.clone()
            }
        }),
    ];

/// What process kills left, per method.
pub(super) fn kills(methods: &[CrashMethodResult], place: Place) -> Table {
    draw(KILLS, methods, place)
}

/// What power cuts left, per method.
pub(super) fn cuts(methods: &[PowerCutMethodResult], place: Place) -> Table {
    draw(CUTS, methods, place)
}

/// What one failed fsync, then a cut, left, per method.
pub(super) fn fsync_failures(rows: &[FsyncFailureResult], place: Place) -> Table {
    draw(FSYNC_FAILURES, rows, place)
}

/// How long the writers wrote and on what, in the page's words: "each
/// after 0 to 50 ms of writing (seed 1); 100 blobs of 512 to 65,536 bytes".
pub(super) fn run_words(r: &CrashRun) -> String {
    format!(
        "each after 0 to {} ms of writing (seed {}); {} blobs of {} to {} bytes",
        r.max_delay_us / 1000,
        r.seed,
        r.blobs,
        thousands(r.blob_min_bytes),
        thousands(r.blob_max_bytes)
    )
}

/// The dataset at the terminal: "100 blobs of 512..65536 bytes".
pub(super) fn run_blobs(r: &CrashRun) -> String {
    format!("{} blobs of {}..{} bytes", r.blobs, r.blob_min_bytes, r.blob_max_bytes)
}

/// How every writer committed, named: "a commit per write (SQLite and the
/// engines one transaction each; files each fsynced as their method says)"
/// or "a commit every 100 writes (...)".
pub(super) fn commits(n: u32) -> String {
    match n.max(1) {
        1 => "a commit per write (SQLite and the engines one transaction each; files each written as their method \
              says, a rename's directory fsynced by replace-fsync-dir)"
            .to_string(),
        n => format!(
            "a commit every {} writes, a write returning once its batch is committed (SQLite and the engines one \
             transaction per batch; files each written as their method says, replace-fsync-dir's directory \
             fsynced once per batch)",
            thousands(n.into())
        ),
    }
}

/// What the page and the terminal say above [`integrity_reasons`].
pub(super) const REASONS_HEADING: &str =
    "why the integrity check failed (the first failure's reason; failures that gave it of all)";

/// One line per method whose integrity check failed: the first failure's
/// reason, and how many of its failures gave that reason.
pub(super) fn integrity_reasons<T: IntegrityOutcome>(rows: &[T]) -> Vec<String> {
    rows.iter()
        .filter_map(|m| {
            let r = m.integrity_reason()?;
            Some(format!("{}: {} ({} of {})", m.method(), r.first, r.same, m.integrity_failures()))
        })
        .collect()
}

/// Under a terminal table: why each method's integrity checks failed
/// (nothing when none did), as the store or SQLite said it.
pub(super) fn reasons_notes<T: IntegrityOutcome>(rows: &[T]) -> Vec<String> {
    let lines = integrity_reasons(rows);
    if lines.is_empty() {
        return lines;
    }
    std::iter::once(format!("{REASONS_HEADING}:")).chain(lines).collect()
}

/// The page's note and list of [`integrity_reasons`] (nothing when every
/// check passed).
pub(super) fn reasons_blocks<T: IntegrityOutcome>(rows: &[T]) -> Vec<Block> {
    let lines = integrity_reasons(rows);
    if lines.is_empty() {
        return Vec::new();
    }
    let mut heading = REASONS_HEADING.to_string();
    heading[..1].make_ascii_uppercase();
    vec![Block::Note(format!("{heading}:")), Block::List(lines)]
}

/// One line per method with a bucket listing: what a GET found (of the
/// newest replica), what the listing lost, and how often a plain GET was
/// served an older replica. Shared by the terminal and the page.
pub(super) fn object_store_lines(methods: &[CrashMethodResult]) -> Vec<String> {
    let lines = methods.iter().filter_map(|m| {
        let unlisted = m.unlisted?;
        let on = m.server.as_ref().map(|s| format!(" on {s}")).unwrap_or_default();
        let lost = m.checks.missing + m.undone;
        let mut line = format!(
            "{}{on}: {} writes acknowledged; lost by GET of the newest replica: {lost} (missing {}, undone {}); \
             missing from the bucket's listing: {}",
            m.method, m.acknowledged, m.checks.missing, m.undone, unlisted
        );
        if let Some(stale) = m.stale_reads {
            line.push_str(&format!(
                "; a plain GET served an older replica (or none): {stale} of {} blob checks, \
                 until the server's replicators repair it",
                m.checks.blobs_checked
            ));
        }
        Some(line)
    });
    lines.collect()
}
