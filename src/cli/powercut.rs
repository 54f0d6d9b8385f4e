//! `crashtest --power-cut`: the tables of what power cuts and a failed
//! fsync left behind, and the layer's own cost.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::bail;

use blobbench::measure::envinfo;
use blobbench::powercut::Model;
use blobbench::results::{self, ResultFile};
use blobbench::studies::crashtest::{self, CrashOptions, PowerCutReport};

use super::progress;

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    pub file: std::path::PathBuf,
}

/// The child that times calls on the mount for the layer-cost figures.
pub fn probe(args: ProbeArgs) -> anyhow::Result<()> {
    let (write_ns, fsync_ns) = blobbench::powercut::cost::probe(&args.file)?;
    println!("{write_ns} {fsync_ns}");
    Ok(())
}

pub fn run(opts: &CrashOptions, model: Model, json: Option<&Path>) -> anyhow::Result<()> {
    let progress = progress::for_terminal();
    let report = crashtest::power_cut_test(opts, model, progress.as_ref())?;
    for m in &report.cleaned_mounts {
        eprintln!("note: unmounted a power-cut layer left by a killed run: {}", m.display());
    }
    let mut results = ResultFile::new("crashtest", envinfo::collect(&opts.workdir));
    results.complete = !report.interrupted;
    results.power_cut = Some(report.section.clone());
    if let Some(p) = json {
        results::write(p, &results)?;
    }
    let fs = results.environment.storage.as_ref().map(|s| s.fs_type.as_str()).unwrap_or("unknown filesystem");
    print!("{}", table(&report, fs));
    let broken: Vec<String> = report
        .section
        .methods
        .iter()
        .filter(|m| m.promises_durability && (m.lost_after_ack > 0 || m.integrity_failures > 0))
        .map(|m| {
            format!(
                "{} ({} lost after acknowledgement, {} integrity failures)",
                m.method, m.lost_after_ack, m.integrity_failures
            )
        })
        .collect();
    if !broken.is_empty() {
        bail!("a method that promised durability lost acknowledged writes in a power cut: {}", broken.join("; "));
    }
    Ok(())
}

fn table(report: &PowerCutReport, fs: &str) -> String {
    let s = &report.section;
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
    if !s.fsync_failure.is_empty() {
        let _ = writeln!(
            o,
            "\nafter one failed fsync (EIO, reported once, unsynced data dropped, as Linux does), then a cut:"
        );
        let _ = writeln!(
            o,
            "{:<18}{:>7}{:>13}{:>15}{:>10}{:>6}{:>8}{:>11}{:>10}  writer's error",
            "method",
            "trials",
            "fsync failed",
            "writer stopped",
            "integrity",
            "torn",
            "missing",
            "lost-acked",
            "whole new"
        );
        for f in &s.fsync_failure {
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
    if report.interrupted {
        let _ = writeln!(o, "warning: interrupted; the last method has fewer cuts than asked");
    }
    o
}
