//! What `crashtest` prints at the terminal: the table of what killed
//! writers or power cuts left per write method, with the legend, the
//! limits, the failed-fsync table and the layer's cost. Rendered from the
//! result file, so the terminal and the file cannot disagree.

use std::fmt::Write as _;

use super::tables::{self, object_store_lines, reasons_notes, Place};
use crate::powercut::cost::LayerCost;
use crate::report::format::doc::Table;
use crate::report::format::text::table_text;
use crate::results::ResultFile;
use crate::studies::crashtest::{self, FsyncFailureResult};
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
    let heading = format!(
        "crashtest: {} kill{} per method (SIGKILL after 0..{} ms of writing, seed {}); {} each; {}",
        s.kills_per_method,
        plural(s.kills_per_method),
        s.run.max_delay_us / 1000,
        s.run.seed,
        tables::run_blobs(&s.run),
        tables::commits(s.run.commit_every)
    );
    let table = tables::kills(&s.methods, Place::Terminal).with_notes(reasons_notes(&s.methods));
    framed(file, (heading, "datasets in", &s.run.workdir), &table, "kills", |o| {
        for line in object_store_lines(&s.methods) {
            let _ = writeln!(o, "{line}");
        }
        o.push_str(crashtest::LEGEND.trim_start_matches('\n'));
        let _ = writeln!(o, "\n{}", crashtest::LIMITS);
    })
}

/// The power-cut test's tables (empty without a `power_cut` section).
fn power_cut_table(file: &ResultFile) -> String {
    let Some(s) = &file.power_cut else { return String::new() };
    let heading = format!(
        "crashtest --power-cut, model {} ({}): {} cut{} per method after 0..{} ms of writing (seed {}); {}; {}",
        s.model,
        s.model_description,
        s.cuts_per_method,
        plural(s.cuts_per_method),
        s.run.max_delay_us / 1000,
        s.run.seed,
        tables::run_blobs(&s.run),
        tables::commits(s.run.commit_every)
    );
    let table = tables::cuts(&s.methods, Place::Terminal).with_notes(reasons_notes(&s.methods));
    framed(file, (heading, "layer over", &s.run.workdir), &table, "cuts", |o| {
        o.push_str(crashtest::POWER_CUT_LEGEND.trim_start_matches('\n'));
        if !s.not_on_layer.is_empty() {
            let _ = writeln!(
                o,
                "\nnot run on the layer: {} (a server's data directory cannot live on it: docs/crash-safety.md)",
                s.not_on_layer.join(", ")
            );
        }
        fsync_failure_table(o, &s.fsync_failure);
        if let Some(c) = &s.layer_cost {
            layer_cost_line(o, c);
        }
    })
}

/// A test's text: its heading, where it wrote (`place` the directory,
/// `workdir`), its table, what `after` adds, and a warning when it was
/// interrupted (the last method has fewer `faults` than asked).
fn framed(
    file: &ResultFile,
    (heading, place, workdir): (String, &str, &str),
    table: &Table,
    faults: &str,
    after: impl FnOnce(&mut String),
) -> String {
    let mut o = heading + "\n";
    where_line(&mut o, place, workdir, file);
    o.push_str(&table_text(table, false));
    after(&mut o);
    if !file.complete {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer {faults} than asked");
    }
    o
}

/// What the layer adds to a write and an fsync, against the disk directly.
fn layer_cost_line(o: &mut String, c: &LayerCost) {
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

/// What one failed fsync left, per method (nothing when not measured).
fn fsync_failure_table(o: &mut String, rows: &[FsyncFailureResult]) {
    if rows.is_empty() {
        return;
    }
    let _ =
        writeln!(o, "\nafter one failed fsync (EIO, reported once, unsynced data dropped, as Linux does), then a cut:");
    let table = tables::fsync_failures(rows, Place::Terminal).with_notes(reasons_notes(rows));
    let table = table_text(&table, false);
    let _ = writeln!(o, "{}", table.trim_end());
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
            run: crate::report::fixtures::crash_run(100),
            methods: vec![CrashMethodResult {
                method: "db-wal".into(),
                kills: 3,
                checks: CheckTotals { torn: 12345, ..Default::default() },
                ..Default::default()
            }],
        });
        f.power_cut = Some(PowerCutSection {
            model: "strict".into(),
            model_description: "drops".into(),
            cuts_per_method: 1,
            run: crate::report::fixtures::crash_run(40),
            not_on_layer: Vec::new(),
            methods: vec![PowerCutMethodResult {
                method: "files-x".into(),
                acknowledges_durability: true,
                lost_after_ack: 7,
                checks: CheckTotals {
                    integrity_failures: 3,
                    integrity_reason: Some(IntegrityReason { first: "kv: cannot open: gone".into(), same: 2 }),
                    ..Default::default()
                },
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
            checks: CheckTotals { blobs_checked: 16, ..Default::default() },
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
