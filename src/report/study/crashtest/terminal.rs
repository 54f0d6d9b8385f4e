//! What `crashtest` prints at the terminal: the table of what killed
//! writers or power cuts left per write method, with the legend, the
//! limits, the failed-fsync table and the layer's cost. Rendered from the
//! result file, so the terminal and the file cannot disagree.

use std::fmt::Write as _;

use crate::results::ResultFile;
use crate::studies::crashtest::{self, FsyncFailureResult};

/// "ext4", or "unknown filesystem" when the mount table said nothing.
fn fs_type(file: &ResultFile) -> &str {
    file.environment.storage.as_ref().map(|s| s.fs_type.as_str()).unwrap_or("unknown filesystem")
}

/// What `blobbench crashtest` prints: the kill test's or the power-cut
/// test's tables, whichever `file` holds (empty when neither).
pub fn terminal(file: &ResultFile, _colour: bool) -> String {
    kill_table(file) + &power_cut_table(file)
}

/// The kill test's table (empty without a `crashtest` section).
fn kill_table(file: &ResultFile) -> String {
    let Some(s) = &file.crashtest else { return String::new() };
    let fs = fs_type(file);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "crashtest: {} kill{} per method (SIGKILL after 0..{} ms of writing, seed {}); {} blobs of {}..{} bytes each",
        s.kills_per_method,
        if s.kills_per_method == 1 { "" } else { "s" },
        s.max_delay_us / 1000,
        s.seed,
        s.blobs,
        s.blob_min_bytes,
        s.blob_max_bytes
    );
    let _ = writeln!(
        o,
        "datasets in {} ({fs}); one write = one blob, one transaction for SQLite and the engines\n",
        s.workdir
    );
    let _ = writeln!(
        o,
        "{:<20}{:>6}{:>11}{:>7}{:>9}{:>6}{:>8}{:>7}{:>9}{:>11}{:>11}",
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
        "whole new"
    );
    for m in &s.methods {
        let _ = writeln!(
            o,
            "{:<20}{:>6}{:>11}{:>7}{:>9}{:>6}{:>8}{:>7}{:>9}{:>11}{:>11}",
            m.method,
            m.kills,
            m.integrity_failures,
            m.torn,
            m.missing,
            m.unexpected_version,
            m.undone,
            m.stray_files,
            m.damaged_kills,
            m.intact_old,
            m.intact_new
        );
    }
    o.push_str(crashtest::LEGEND);
    let _ = writeln!(o, "\n{}", crashtest::LIMITS);
    if !file.complete {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer kills than asked");
    }
    o
}

/// The power-cut test's tables (empty without a `power_cut` section).
fn power_cut_table(file: &ResultFile) -> String {
    let Some(s) = &file.power_cut else { return String::new() };
    let fs = fs_type(file);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "crashtest --power-cut, model {} ({}): {} cut{} per method after 0..{} ms of writing (seed {}); {} blobs of {}..{} bytes",
        s.model,
        s.model_description,
        s.cuts_per_method,
        if s.cuts_per_method == 1 { "" } else { "s" },
        s.max_delay_us / 1000,
        s.seed,
        s.blobs,
        s.blob_min_bytes,
        s.blob_max_bytes
    );
    let _ = writeln!(
        o,
        "layer over {} ({fs}); one write = one blob, one transaction for SQLite and the key-value engines\n",
        s.workdir
    );
    let _ = writeln!(
        o,
        "{:<18}{:>5}{:>6}{:>10}{:>6}{:>8}{:>11}{:>12}{:>6}{:>10}{:>10}",
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
        "whole new"
    );
    for m in &s.methods {
        let _ = writeln!(
            o,
            "{:<18}{:>5}{:>6}{:>10}{:>6}{:>8}{:>11}{:>12}{:>6}{:>10}{:>10}",
            m.method,
            if m.acknowledges_durability { "yes" } else { "no" },
            m.cuts,
            m.integrity_failures,
            m.torn,
            m.missing,
            m.lost_after_ack,
            m.lost_before_ack,
            m.stray_files,
            m.intact_old,
            m.intact_new
        );
    }
    o.push_str(crashtest::POWER_CUT_LEGEND);
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
    let _ = writeln!(
        o,
        "{:<18}{:>7}{:>13}{:>15}{:>10}{:>6}{:>8}{:>11}{:>10}  writer's error",
        "method", "trials", "fsync failed", "writer stopped", "integrity", "torn", "missing", "lost-acked", "whole new"
    );
    for f in rows {
        let _ = writeln!(
            o,
            "{:<18}{:>7}{:>13}{:>15}{:>10}{:>6}{:>8}{:>11}{:>10}  {}",
            f.method,
            f.trials,
            f.fsync_failed,
            f.writer_stopped,
            f.integrity_failures,
            f.torn,
            f.missing,
            f.lost_after_ack,
            f.intact_new,
            if f.writer_error.is_empty() { "-" } else { &f.writer_error }
        );
    }
}
