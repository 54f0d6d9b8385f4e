//! Sections every result file gets whatever command wrote it: which
//! machines and files the report covers, per-operation latency of every
//! experiment, and the full environment and parameters, so that any figure
//! can be traced back to what was measured and how.

use super::format::doc::{Block, ColumnKind, Section, Table, NOT_MEASURED};
use super::format::fmt::{bytes, date_time, machine_labels, micros, percent, thousands};
use super::study::suite::{suite_files, SUITE_IDS};
use crate::measure::Experiment;
use crate::results::ResultFile;
use crate::util::units::plural;

fn or_unknown(s: &str) -> String {
    if s.trim().is_empty() {
        "unknown".to_string()
    } else {
        s.to_string()
    }
}

fn gib(b: u64) -> String {
    if b == 0 {
        "unknown".to_string()
    } else {
        format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30))
    }
}

/// "vda (virtio, virtual), not rotational", or what is missing.
fn disk(f: &ResultFile) -> String {
    let Some(s) = f.environment.storage.as_ref() else {
        return "unknown".to_string();
    };
    let spin = match s.rotational {
        Some(true) => ", rotational",
        Some(false) => ", not rotational",
        None => "",
    };
    match &s.block_device {
        Some(d) => format!("{}{spin}", d.describe()),
        None if f.schema_version < 2 => "not recorded".to_string(),
        None => format!("no block device ({}){spin}", or_unknown(&s.device)),
    }
}

fn filesystem(f: &ResultFile) -> String {
    f.environment.storage.as_ref().map_or_else(
        || "unknown".to_string(),
        |s| format!("{} ({}, {} byte blocks)", or_unknown(&s.fs_type), or_unknown(&s.mount_options), s.block_size),
    )
}

pub fn overview(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let hosts: std::collections::BTreeSet<&str> = files.iter().map(|f| f.environment.hostname.as_str()).collect();
    let mut blocks = vec![Block::Paragraph(format!(
        "{} result file{} from {} machine{}.",
        files.len(),
        plural(files.len()),
        hosts.len(),
        plural(hosts.len())
    ))];
    let headers =
        ["machine", "command", "measured", "CPU", "cores", "memory", "kernel", "filesystem", "disk", "SQLite"];
    let rows = files
        .iter()
        .zip(&labels)
        .map(|(f, label)| {
            let e = &f.environment;
            vec![
                label.clone(),
                or_unknown(&f.command),
                date_time(f.created_unix),
                or_unknown(&e.cpu_model),
                e.cores.to_string(),
                gib(e.memory_bytes),
                or_unknown(&e.kernel),
                filesystem(f),
                disk(f),
                or_unknown(&e.sqlite_version),
            ]
        })
        .collect();
    blocks.push(Block::Table(Table::new(&headers, rows).with_kinds(&[ColumnKind::Result])));
    let mut shared: Vec<&str> = files.iter().map(ResultFile::display_label).collect();
    shared.sort_unstable();
    shared.dedup();
    let given: Vec<&str> = files.iter().map(ResultFile::display_label).collect();
    for l in shared.iter().filter(|l| given.iter().filter(|g| g == l).count() > 1) {
        blocks.push(Block::Note(format!(
            "Several result files carry the label \"{l}\"; they are told apart by filesystem, then date \
             (use --label to name them)."
        )));
    }
    for (f, label) in files.iter().zip(&labels) {
        if !f.complete {
            blocks.push(Block::Note(format!(
                "{label}: the {} command was interrupted; only the experiments it finished are shown.",
                or_unknown(&f.command)
            )));
        }
    }
    let notes: Vec<String> =
        files.iter().zip(&labels).flat_map(|(f, label)| f.notes.iter().map(move |n| format!("{label}: {n}"))).collect();
    if !notes.is_empty() {
        blocks.push(Block::Heading("Notes".into()));
        blocks.push(Block::List(notes));
    }
    vec![Section { id: "overview".into(), title: "Machines and result files".into(), in_summary: true, blocks }]
}

/// The ids a file's latency table lists: the whole suite (so gaps show) for
/// suite files, then whatever else the file measured.
fn listed_ids(f: &ResultFile, is_suite: bool) -> Vec<String> {
    let suite = SUITE_IDS.iter().filter(|_| is_suite).map(|id| id.to_string());
    let others = f.experiments.iter().map(|e| &e.id).filter(|id| !is_suite || !SUITE_IDS.iter().any(|s| s.is(id)));
    suite.chain(others.cloned()).collect()
}

/// How an experiment's writes were committed: "1 per write", "every 100
/// writes", "1 per run of 1,000" (kvtest's way), "-" for reads.
fn commits(e: &Experiment) -> String {
    let p = &e.params;
    if !p.update && p.mix.is_none_or(|m| m.write == 0) {
        return "-".into();
    }
    match p.commit_every {
        Some(1) => "1 per write".into(),
        Some(n) => format!("every {} writes", thousands(n.into())),
        None => format!("1 per run of {}", thousands(p.count)),
    }
}

fn latency_row(e: Option<&Experiment>) -> Vec<String> {
    let Some(e) = e else {
        return std::iter::once(NOT_MEASURED.to_string()).chain(vec![String::new(); 12]).collect();
    };
    let s = &e.summary;
    let older = "not recorded (older file)".to_string();
    let mut row = vec![
        s.runs.to_string(),
        micros(s.per_op_us.median),
        s.steady_per_op_us.map_or_else(|| older.clone(), |st| micros(st.median)),
        s.one_off_us.map_or(older, |st| format!("{:.3}", st.median / 1000.0)),
        commits(e),
        percent(s.figure().cv_pct),
        percent(s.figure().spread_pct),
    ];
    match &e.latency {
        Some(l) => row.extend(
            [l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us].map(micros).into_iter().chain([thousands(l.count)]),
        ),
        None => row.extend(vec!["not recorded".to_string(); 6]),
    }
    row
}

pub fn latency(files: &[ResultFile]) -> Vec<Section> {
    if files.iter().all(|f| f.experiments.is_empty()) {
        return Vec::new();
    }
    let labels = machine_labels(files);
    let suite: Vec<&ResultFile> = suite_files(files).into_iter().map(|(_, f)| f).collect();
    let headers = [
        "machine",
        "experiment",
        "runs",
        "per-op median (µs)",
        "steady per-op (µs)",
        "one-off per run (ms)",
        "commits",
        "CV",
        "spread",
        "p50 (µs)",
        "p90 (µs)",
        "p99 (µs)",
        "p99.9 (µs)",
        "max (µs)",
        "ops timed",
    ];
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    for (f, label) in files.iter().zip(&labels) {
        // An advise file ran a few of the suite's arms: list only those.
        let is_suite = suite.iter().any(|s| std::ptr::eq(*s, f)) && f.advise.is_none();
        for id in listed_ids(f, is_suite) {
            let e = f.experiment(&id);
            let mut row = vec![label.clone(), id.to_string()];
            row.extend(latency_row(e));
            rows.push(row);
        }
        for e in &f.experiments {
            warnings.extend(e.warnings.iter().map(|w| format!("{label}, {}: {w}", e.id)));
        }
        warnings.extend(paired_spread(f).map(|w| format!("{label}: {w}")));
    }
    let mut blocks = vec![
        Block::Note(
            "Per-op median: kvtest's per-blob time (opening, committing and closing spread over the ops), median over \
             the timed runs. Steady per-op: the loop with every commit inside it and the work the writes left to the \
             close (a WAL checkpoint), over the ops: the figure the comparisons use. One-off per run: the session's \
             open and close, paid once however many ops it makes. Commits: how the writes were committed. CV is the \
             coefficient of variation and spread is (max - min) / median of the steady figure over the runs. \
             Percentiles are single operations, timed one by one (a write's commit inside it) and merged over all \
             timed runs (HDR histogram)."
                .to_string(),
        ),
        Block::Table(Table::new(&headers, rows).with_kinds(&[ColumnKind::Result])),
    ];
    if !warnings.is_empty() {
        blocks.push(Block::Heading("Warnings".into()));
        blocks.push(Block::List(warnings));
    }
    vec![Section {
        id: "latency".into(),
        title: "Per-operation latency and run-to-run spread".into(),
        in_summary: true,
        blocks,
    }]
}

/// One sentence for the arms of the file's rounds whose runs varied by
/// more than the noise threshold: they do not warn one by one, since every
/// ratio between them is paired by round and its interval holds that noise.
fn paired_spread(f: &ResultFile) -> Option<String> {
    let paired = |id: &str| f.rounds.iter().any(|s| s.consistent() && s.arms.iter().any(|a| a == id));
    let cvs: Vec<f64> =
        f.experiments.iter().filter(|e| e.summary.noisy && paired(&e.id)).map(|e| e.summary.figure().cv_pct).collect();
    let worst = cvs.iter().copied().reduce(f64::max)?;
    Some(format!(
        "the runs of {} of the arms measured in rounds varied by more than {:.0}% (coefficient of variation of \
         per-op time, up to {worst:.0}%): the machine was busy or noisy. The ratios stated are paired by round, \
         so a slow spell that hit every arm of a round cancels out; their intervals carry what remains.",
        cvs.len(),
        crate::measure::NOISY_CV_PCT
    ))
}

/// Environment rows, one column per file.
fn environment_table(files: &[ResultFile], labels: &[String]) -> Table {
    type Field = fn(&ResultFile) -> String;
    fn storage(f: &ResultFile, get: fn(&crate::measure::envinfo::StorageInfo) -> String) -> String {
        f.environment.storage.as_ref().map_or_else(|| "unknown".to_string(), get)
    }
    let fields: Vec<(&str, Field)> = vec![
        ("label", |f| if f.label.is_empty() { "not recorded (hostname used)".into() } else { f.label.clone() }),
        ("schema version", |f| f.schema_version.to_string()),
        ("hostname", |f| or_unknown(&f.environment.hostname)),
        ("command", |f| or_unknown(&f.command)),
        ("measured", |f| date_time(f.created_unix)),
        ("complete", |f| if f.complete { "yes".into() } else { "no (interrupted)".into() }),
        ("blobbench", |f| match &f.environment.git_revision {
            Some(rev) => format!("{} ({rev})", or_unknown(&f.environment.blobbench_version)),
            None => or_unknown(&f.environment.blobbench_version),
        }),
        ("SQLite", |f| or_unknown(&f.environment.sqlite_version)),
        ("SQLite source id", |f| or_unknown(&f.environment.sqlite_source_id)),
        ("OS", |f| or_unknown(&f.environment.os)),
        ("kernel", |f| or_unknown(&f.environment.kernel)),
        ("architecture", |f| or_unknown(&f.environment.arch)),
        ("CPU", |f| or_unknown(&f.environment.cpu_model)),
        ("cores", |f| f.environment.cores.to_string()),
        ("memory", |f| gib(f.environment.memory_bytes)),
        ("data path", |f| storage(f, |s| or_unknown(&s.path))),
        ("mount point", |f| storage(f, |s| or_unknown(&s.mount_point))),
        ("device", |f| storage(f, |s| or_unknown(&s.device))),
        ("filesystem", |f| storage(f, |s| or_unknown(&s.fs_type))),
        ("mount options", |f| storage(f, |s| or_unknown(&s.mount_options))),
        ("disk", disk),
        ("block size", |f| storage(f, |s| format!("{} bytes", s.block_size))),
        ("filesystem size", |f| storage(f, |s| format!("{} ({} free)", bytes(s.total_bytes), bytes(s.free_bytes)))),
        ("dataset", |f| f.dataset.as_ref().map_or_else(|| "none".to_string(), super::format::sizes::dataset_line)),
        ("blob sizes stored", |f| {
            f.dataset.as_ref().map_or_else(String::new, |d| super::format::sizes::histogram_line(&d.size_histogram))
        }),
        ("SQLite compile options", |f| f.environment.sqlite_compile_options.join(" ")),
    ];
    Table {
        headers: std::iter::once(String::new()).chain(labels.iter().cloned()).collect(),
        rows: fields
            .into_iter()
            .map(|(name, get)| std::iter::once(name.to_string()).chain(files.iter().map(get)).collect())
            .collect(),
        ..Table::default()
    }
}

fn parameters_table(f: &ResultFile) -> Table {
    let headers = [
        "experiment",
        "what",
        "layout",
        "path",
        "ops per run",
        "order",
        "threads",
        "timed runs",
        "warm-up",
        "cold",
        "clock overhead",
    ];
    let rows = f
        .experiments
        .iter()
        .map(|e| {
            let p = &e.params;
            vec![
                e.id.clone(),
                e.label.clone(),
                p.layout.name().to_string(),
                p.path.clone(),
                thousands(p.count),
                p.order.flag().trim_start_matches('-').to_string(),
                p.threads.to_string(),
                e.summary.runs.to_string(),
                e.warmup_runs.to_string(),
                if p.plan.cold { "yes".into() } else { "no".into() },
                percent(e.clock_overhead_pct),
            ]
        })
        .collect();
    Table::new(&headers, rows)
}

pub fn environment(files: &[ResultFile]) -> Vec<Section> {
    let labels = machine_labels(files);
    let mut blocks = vec![Block::Table(environment_table(files, &labels))];
    for (f, label) in files.iter().zip(&labels) {
        blocks.push(Block::Heading(format!("Parameters: {label}")));
        if f.experiments.is_empty() {
            blocks.push(Block::Paragraph("No experiments in this file.".into()));
        } else {
            blocks.push(Block::Table(parameters_table(f)));
        }
    }
    vec![Section { id: "environment".into(), title: "Environment and parameters".into(), in_summary: false, blocks }]
}
