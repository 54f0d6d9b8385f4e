//! What `crashtest` prints at the terminal: the table of what killed
//! writers or power cuts left per write method, with the legend, the
//! limits, the failed-fsync table and the layer's cost. Rendered from the
//! result file, so the terminal and the file cannot disagree.

use std::fmt::Write as _;

use crate::report::format::doc::{Block, Table};
use crate::report::format::text::table_text;
use crate::results::ResultFile;
use crate::studies::crashtest::{self, CrashMethodResult, FsyncFailureResult, IntegrityOutcome};
use crate::util::units::plural;

/// "ext4", or "unknown filesystem" when the mount table said nothing.
fn fs_type(file: &ResultFile) -> &str {
    file.environment.storage.as_ref().map(|s| s.fs_type.as_str()).unwrap_or("unknown filesystem")
}

/// What `blobbench crashtest` prints: the kill test's or the power-cut
/// test's tables, whichever `file` holds (empty when neither).
pub fn terminal(file: &ResultFile, _colour: bool) -> String {
    kill_table(file) + &power_cut_table(file) + &super::loss::terminal(file)
}

/// The kill test's table (empty without a `crashtest` section).
fn kill_table(file: &ResultFile) -> String {
    let Some(s) = &file.crashtest else { return String::new() };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "crashtest: {} kill{} per method (SIGKILL after 0..{} ms of writing, seed {}); {} blobs of {}..{} bytes each; {}",
        s.kills_per_method,
        plural(s.kills_per_method),
        s.max_delay_us / 1000,
        s.seed,
        s.blobs,
        s.blob_min_bytes,
        s.blob_max_bytes,
        super::commits(s.commit_every)
    );
    where_line(&mut o, "datasets in", &s.workdir, file);
    let headers = [
        "method",
        "kills",
        "integrity",
        "torn",
        "missing",
        "lost",
        "undone",
        "stray",
        "damaged",
        "whole old",
        "whole new",
    ];
    let rows = s.methods.iter().map(|m| {
        let (kills, failures, damaged) = (m.kills.into(), m.integrity_failures.into(), m.damaged_kills.into());
        let n = [kills, failures, m.torn, m.missing, m.unexpected_version, m.undone, m.stray_files, damaged];
        let n = n.into_iter().chain([m.intact_old, m.intact_new]).map(|n: u64| n.to_string());
        std::iter::once(m.method.clone()).chain(n).collect()
    });
    o.push_str(&table_text(&Table::new(&headers, rows.collect()).with_notes(reasons_notes(&s.methods)), false));
    for line in object_store_lines(&s.methods) {
        let _ = writeln!(o, "{line}");
    }
    o.push_str(crashtest::LEGEND.trim_start_matches('\n'));
    let _ = writeln!(o, "\n{}", crashtest::LIMITS);
    if !file.complete {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer kills than asked");
    }
    o
}

/// The power-cut test's tables (empty without a `power_cut` section).
fn power_cut_table(file: &ResultFile) -> String {
    let Some(s) = &file.power_cut else { return String::new() };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "crashtest --power-cut, model {} ({}): {} cut{} per method after 0..{} ms of writing (seed {}); {} blobs of {}..{} bytes; {}",
        s.model,
        s.model_description,
        s.cuts_per_method,
        plural(s.cuts_per_method),
        s.max_delay_us / 1000,
        s.seed,
        s.blobs,
        s.blob_min_bytes,
        s.blob_max_bytes,
        super::commits(s.commit_every)
    );
    where_line(&mut o, "layer over", &s.workdir, file);
    let headers = [
        "method",
        "acks",
        "cuts",
        "integrity",
        "torn",
        "missing",
        "lost-acked",
        "lost-unack",
        "stray",
        "whole old",
        "whole new",
    ];
    let rows = s.methods.iter().map(|m| {
        let (cuts, failures) = (m.cuts.into(), m.integrity_failures.into());
        let n = [cuts, failures, m.torn, m.missing, m.lost_after_ack, m.lost_before_ack, m.stray_files];
        let n = n.into_iter().chain([m.intact_old, m.intact_new]).map(|n: u64| n.to_string());
        let acks = if m.acknowledges_durability { "yes" } else { "no" };
        [m.method.clone(), acks.to_string()].into_iter().chain(n).collect()
    });
    o.push_str(&table_text(&Table::new(&headers, rows.collect()).with_notes(reasons_notes(&s.methods)), false));
    o.push_str(crashtest::POWER_CUT_LEGEND.trim_start_matches('\n'));
    if !s.not_on_layer.is_empty() {
        let _ = writeln!(
            o,
            "\nnot run on the layer: {} (a server's data directory cannot live on it: docs/crash-safety.md)",
            s.not_on_layer.join(", ")
        );
    }
    fsync_failure_table(&mut o, &s.fsync_failure);
    if let Some(c) = &s.layer_cost {
        let us = |ns: u64| ns as f64 / 1000.0;
        let _ = writeln!(
            o,
            "\nlayer cost (median): 10 KB pwrite {:.1} us through the layer vs {:.1} us direct ({} writes); \
             fsync {:.1} us through the layer (no disk flush) vs {:.1} us direct ({} fsyncs)",
            us(c.write_10k_layer_ns),
            us(c.write_10k_direct_ns),
            c.writes,
            us(c.fsync_layer_ns),
            us(c.fsync_direct_ns),
            c.fsyncs
        );
    }
    if !file.complete {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer cuts than asked");
    }
    o
}

/// What one failed fsync left, per method (nothing when not measured).
fn fsync_failure_table(o: &mut String, rows: &[FsyncFailureResult]) {
    if rows.is_empty() {
        return;
    }
    let _ =
        writeln!(o, "\nafter one failed fsync (EIO, reported once, unsynced data dropped, as Linux does), then a cut:");
    let headers = [
        "method",
        "trials",
        "fsync failed",
        "writer stopped",
        "integrity",
        "torn",
        "missing",
        "lost-acked",
        "whole new",
        "writer's error",
    ];
    let cells = rows.iter().map(|f| {
        let counts = [f.trials, f.fsync_failed, f.writer_stopped, f.integrity_failures].map(u64::from);
        let figures =
            counts.into_iter().chain([f.torn, f.missing, f.lost_after_ack, f.intact_new]).map(|n| n.to_string());
        let error = if f.writer_error.is_empty() { "-" } else { &f.writer_error };
        std::iter::once(f.method.clone()).chain(figures).chain([error.to_string()]).collect()
    });
    let table = table_text(&Table::new(&headers, cells.collect()).with_notes(reasons_notes(rows)), false);
    let _ = writeln!(o, "{}", table.trim_end());
}

/// Under a table: why each method's integrity checks failed (nothing when
/// none did), as the store or SQLite said it.
fn reasons_notes<T: IntegrityOutcome>(rows: &[T]) -> Vec<String> {
    let lines = integrity_reasons(rows);
    if lines.is_empty() {
        return lines;
    }
    std::iter::once(format!("{REASONS_HEADING}:")).chain(lines).collect()
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

/// Both tests' second heading line: where they wrote (`place` the
/// directory, on `file`'s filesystem) and what one write is.
fn where_line(o: &mut String, place: &str, workdir: &str, file: &ResultFile) {
    let _ = writeln!(
        o,
        "{place} {workdir} ({}); one write = one blob, one transaction for SQLite and the engines\n",
        fs_type(file)
    );
}

/// One line per method with a bucket listing: what a GET found (of the
/// newest replica), what the listing lost, and how often a plain GET was
/// served an older replica. Shared by the terminal and the page.
pub(super) fn object_store_lines(methods: &[CrashMethodResult]) -> Vec<String> {
    let lines = methods.iter().filter_map(|m| {
        let unlisted = m.unlisted?;
        let on = m.server.as_ref().map(|s| format!(" on {s}")).unwrap_or_default();
        let mut line = format!(
            "{}{on}: {} writes acknowledged; lost by GET of the newest replica: {} (missing {}, undone {}); \
             missing from the bucket's listing: {}",
            m.method,
            m.acknowledged,
            m.missing + m.undone,
            m.missing,
            m.undone,
            unlisted
        );
        if let Some(stale) = m.stale_reads {
            line.push_str(&format!(
                "; a plain GET served an older replica (or none): {stale} of {} blob checks, \
                 until the server's replicators repair it",
                m.blobs_checked
            ));
        }
        Some(line)
    });
    lines.collect()
}

#[cfg(test)]
mod tests {
    use crate::studies::crashtest::*;

    /// Every table's rows line up under its header, and the free-text
    /// column of the failed-fsync table follows its last figure.
    #[test]
    fn tables_keep_their_columns() {
        let mut f = crate::report::fixtures::suite("host-a", &[]);
        f.crashtest = Some(CrashSection {
            fault: "SIGKILL".into(),
            kills_per_method: 3,
            blobs: 100,
            blob_min_bytes: 512,
            blob_max_bytes: 65_536,
            max_delay_us: 50_000,
            seed: 1,
            workdir: "/tmp".into(),
            commit_every: 1,
            methods: vec![CrashMethodResult { method: "db-wal".into(), kills: 3, torn: 12345, ..Default::default() }],
        });
        f.power_cut = Some(PowerCutSection {
            model: "strict".into(),
            model_description: "drops".into(),
            cuts_per_method: 1,
            blobs: 40,
            blob_min_bytes: 512,
            blob_max_bytes: 65_536,
            max_delay_us: 50_000,
            seed: 1,
            workdir: "/tmp".into(),
            commit_every: 1,
            not_on_layer: Vec::new(),
            methods: vec![PowerCutMethodResult {
                method: "files-x".into(),
                acknowledges_durability: true,
                lost_after_ack: 7,
                integrity_failures: 3,
                integrity_reason: Some(IntegrityReason { first: "kv: cannot open: gone".into(), same: 2 }),
                ..Default::default()
            }],
            fsync_failure: vec![
                FsyncFailureResult {
                    method: "db-x".into(),
                    trials: 4,
                    writer_error: "EIO".into(),
                    ..Default::default()
                },
                FsyncFailureResult { method: "db-y".into(), ..Default::default() },
            ],
            layer_cost: None,
        });
        f.complete = false;
        let out = super::terminal(&f, false);
        let line = |start: &str| out.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {out}"));
        assert_eq!(line("  method  kills").len(), line("  db-wal ").len(), "{out}");
        assert!(
            line("  db-wal ").ends_with("  12345        0     0       0      0        0          0          0"),
            "{out}"
        );
        assert_eq!(line("  method   acks").len(), line("  files-x ").len(), "{out}");
        assert!(line("  files-x ").contains("yes      0          3     0        0           7"), "{out}");
        assert!(line("  files-x: ").ends_with("kv: cannot open: gone (2 of 3)"), "{out}");
        assert_eq!(
            out.matches("why the integrity check failed").count(),
            1,
            "only under the table with failures: {out}"
        );
        assert!(line("  method  trials").ends_with("whole new  writer's error"), "{out}");
        assert!(line("  db-x ").ends_with("         0  EIO"), "{out}");
        assert!(line("  db-y ").ends_with("         0  -"), "{out}");
        assert!(out.contains("1 cut per method") && out.contains("3 kills per method"), "{out}");
    }

    /// A store with replicas reports its stale plain GETs apart from the
    /// losses, which are judged on the newest replica; a store without a
    /// listing gets no line.
    #[test]
    fn object_store_lines_keep_stale_replicas_apart_from_losses() {
        let s3 = CrashMethodResult {
            method: "s3-durable".into(),
            acknowledged: 40,
            blobs_checked: 16,
            unlisted: Some(0),
            stale_reads: Some(3),
            ..Default::default()
        };
        let db = CrashMethodResult { method: "db-wal".into(), ..Default::default() };
        let lines = super::object_store_lines(&[db, s3]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("s3-durable: 40 writes acknowledged; lost by GET of the newest replica: 0"));
        assert!(lines[0].contains("older replica (or none): 3 of 16 blob checks"), "{}", lines[0]);
    }
}
