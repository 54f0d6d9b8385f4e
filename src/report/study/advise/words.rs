//! The advice in words: the workload line, the recommendation (or the
//! tie), each exclusion's reason and the "what would change it" paragraph,
//! each a function of the ranking and the section alone.

use crate::engine::sqlite;
use crate::records::DbAccess;
use crate::report::format::fmt::{bytes, micros, thousands};
use crate::studies::advise::clients::Row;
use crate::studies::advise::rank::{Change, Excluded, Factor, Ranked, Ranking, Refused};
use crate::studies::advise::rules::{self, Test};
use crate::studies::advise::Stage;
use crate::studies::advise::Store;
use crate::studies::advise::{AdviseSection, CrashSource, Durability};
use crate::studies::matrix::{Crossover, CrossoverKind, DbRead};

/// "SQLite" or "redb": what the store is.
pub fn store_name(store: Store) -> String {
    match store {
        Store::Sqlite => "SQLite".into(),
        Store::FilesInPlace => "files, overwrite in place".into(),
        Store::FilesReplace => "files, temp + rename".into(),
        Store::Engine(kind) => kind.title().into(),
    }
}

/// A row's name at N clients: SQLite with its way of writing and its
/// access path (each a row of its own), every other store as the
/// one-client ranking names it.
pub fn row_name(row: Row) -> String {
    match row.sqlite {
        Some(c) => format!("SQLite, {}, {}", sqlite::writers(c.writers).title, access_path(c.access).0),
        None => store_name(row.store),
    }
}

/// SQLite's access path: its short name, and what reads and writes do
/// through it (it is the write path too).
pub fn access_path(access: DbAccess) -> (&'static str, &'static str) {
    match access {
        DbAccess::BlobApi => (
            "blob handle",
            "reads and writes through the blob handle (a read opens and closes it, a write writes the blob's \
             bytes in place through it)",
        ),
        DbAccess::Sql => {
            ("SQL", "reads and writes through SQL (a prepared SELECT, reset after each read; an UPDATE per write)")
        }
    }
}

/// The configuration advise measured for the section's durability need,
/// with the commit granularity it was measured at.
pub fn configuration(store: Store, s: &AdviseSection) -> String {
    let required = s.workload.durability == Durability::Required;
    let how = match store {
        Store::Sqlite if required => "blob API + mmap reads, WAL + synchronous FULL writes",
        Store::Sqlite => "blob API + mmap reads, WAL + synchronous NORMAL writes",
        Store::FilesInPlace if required => "one file per blob, open/read, pwrite over the old bytes + fsync",
        Store::FilesInPlace => "one file per blob, open/read, pwrite over the old bytes",
        Store::FilesReplace if required => {
            "one file per blob, open/read, write a temp file + fsync, rename, fsync of the directory per commit"
        }
        Store::FilesReplace => "one file per blob, open/read, write a temp file, rename",
        Store::Engine(_) if required => "durable commit",
        Store::Engine(_) => "commit without sync",
    };
    format!("{how}, {}", commits(s))
}

/// How every candidate's writes were committed: "a commit per write",
/// "a commit every 100 writes", or, in a file from before
/// `--commit-every`, "one commit per run (older file)".
pub fn commits(s: &AdviseSection) -> String {
    match s.workload.commit_every {
        Some(1) => "a commit per write".into(),
        Some(n) => format!("a commit every {} writes", thousands(n.into())),
        None => "one commit per run (older file)".into(),
    }
}

/// A candidate refused because its writes were measured at another commit
/// granularity than the workload states.
pub fn refusal(r: &Refused) -> String {
    let granularity = |n: Option<u32>| match n {
        Some(1) => "a commit per write".to_string(),
        Some(n) => format!("a commit every {} writes", thousands(n.into())),
        None => "one transaction per run".to_string(),
    };
    format!(
        "{}: not ranked, its writes were measured with {} and the workload states {}; figures of another commit \
         granularity are not compared.",
        store_name(r.store),
        granularity(r.measured),
        granularity(r.stated)
    )
}

/// The workload in one line.
pub fn workload(s: &AdviseSection) -> String {
    let w = &s.workload;
    let from = w.from_dir.as_ref().map(|d| format!(" (the files under {d})")).unwrap_or_default();
    format!(
        "Workload: {} blobs{from}, {} on average, {}:{} reads:writes, durability {}, {}.",
        thousands(u64::from(w.count)),
        bytes(w.mean_bytes),
        w.mix_reads,
        w.mix_writes,
        match w.durability {
            Durability::Required => "required (a write that returned must survive a power cut)",
            Durability::Relaxed => "relaxed (the last writes may be lost in a power cut, stored blobs must stay whole)",
        },
        match w.commit_every {
            Some(1) => "a write returns once it is committed (--commit-every 1)".to_string(),
            Some(n) =>
                format!("a write returns once {} writes are committed (--commit-every {n})", thousands(n.into())),
            None => "writes timed as one transaction per run (an older file: not per-write figures)".to_string(),
        }
    )
}

/// The note when the work before the rounds used the whole budget, with
/// its parts' times; None when the rounds had their time.
pub fn over_budget(s: &AdviseSection) -> Option<String> {
    let o = s.over_budget.as_ref()?;
    let parts = [
        ("power cuts", o[Stage::PowerCuts]),
        ("size matrix", o[Stage::SizeMatrix]),
        ("aging pass", o[Stage::Aging]),
        ("datasets", o[Stage::Datasets]),
    ]
    .map(|(what, secs)| format!("{what} {secs:.0} s"))
    .join(", ");
    let kept = if o[Stage::Setup] < s.budget_s {
        format!(", leaving less than the {:.0} s kept for the page", o[Stage::Kept])
    } else {
        String::new()
    };
    Some(format!(
        "over budget: the set-up took {:.0} s of the {:.0} s budget ({parts}){kept}; one round of each arm was run \
         (a longer --budget gives more rounds and narrower intervals).",
        o[Stage::Setup],
        s.budget_s
    ))
}

/// What the budget covered and where the time went, part by part; None
/// for an older file without the parts.
pub fn budget_note(s: &AdviseSection) -> Option<String> {
    let t = s.stages.as_ref()?;
    let mut parts = vec![
        ("power cuts", t[Stage::PowerCuts]),
        ("size crossover", t[Stage::SizeMatrix]),
        ("aging pass", t[Stage::Aging]),
        ("datasets, throwaway servers started", t[Stage::Datasets]),
        ("rounds", t[Stage::Rounds]),
    ];
    if s.clients.is_some() {
        parts.push(("rounds with clients", t[Stage::Clients]));
    }
    let parts = parts.iter().map(|(what, secs)| format!("{what} {secs:.0} s")).collect::<Vec<_>>().join(", ");
    // Past the budget with the set-up inside it: the promised rounds ran on.
    let past = if s.elapsed_s > s.budget_s && s.over_budget.is_none() {
        format!(
            " The rounds ran {:.0} s past it: every arm runs its {} paired rounds, and a run never holds fewer than {} \
             operations (with clients, each run is its window), however long each takes.",
            s.elapsed_s - s.budget_s,
            crate::studies::advise::LEAST_ROUNDS,
            crate::measure::rounds::MIN_SIZED_OPS,
        )
    } else {
        String::new()
    };
    Some(format!(
        "Budget: {:.0} s for the whole command, its one-off costs included; it took {:.0} s ({parts}).{past} Not \
         counted: writing this page after the measurements.",
        s.budget_s, s.elapsed_s
    ))
}

/// A factor with its interval: "1.38x (1.20-1.52, paired over 8 rounds)".
pub fn factor_text(f: &Factor) -> String {
    if f.same {
        format!("{:.2}x (the same measurement)", f.value)
    } else if f.paired && f.rounds >= 2 {
        format!("{:.2}x ({:.2}-{:.2}, paired over {} rounds)", f.value, f.low, f.high, f.rounds)
    } else if f.low == f.high {
        format!("{:.2}x (exact ratio of medians, unpaired)", f.value)
    } else {
        format!("{:.2}x ({:.2}-{:.2}, unpaired)", f.value, f.low, f.high)
    }
}

/// The interval of a factor: "1.71-2.10 (95% paired, 12 rounds)".
pub fn interval(f: &Factor) -> String {
    if f.same {
        "exact (the same measurement on both sides)".into()
    } else if f.paired && f.rounds >= 2 {
        format!("{:.2}-{:.2} (paired, {} rounds)", f.low, f.high, f.rounds)
    } else if f.paired {
        "none (1 round: spread unknown)".into()
    } else {
        "none (unpaired ratio of medians)".into()
    }
}

/// The recommendation: the leader, or the tie, with the mix it is for.
pub fn recommendation(r: &Ranking, s: &AdviseSection) -> String {
    recommendation_as(r, s, "Recommendation")
}

/// The one-client ranking's answer when the file ran clients: the
/// recommendation is the one at N, and this is the ranking below.
pub fn at_one_client(r: &Ranking, s: &AdviseSection) -> String {
    recommendation_as(r, s, "At one client")
}

/// The recommendation's sentence, led by `lead`.
fn recommendation_as(r: &Ranking, s: &AdviseSection, lead: &str) -> String {
    let need = s.workload.durability;
    let mix = format!("{}:{} reads:writes", s.workload.mix_reads, s.workload.mix_writes);
    let tied: Vec<&Ranked> = r.recommended().collect();
    match tied.as_slice() {
        [] => format!(
            "{}: no candidate both meets durability {} and was measured (see below).",
            if lead == "Recommendation" { "No recommendation" } else { lead },
            need.name()
        ),
        [leader] => {
            let next = r.ranked.get(1).and_then(|n| n.mixed.map(|m| (n.store, m)));
            let margin = next
                .map(|(store, m)| {
                    format!(", {} faster at this mix than the next, {}", factor_text(&m), store_name(store))
                })
                .unwrap_or_default();
            format!(
                "{lead}: {} ({}). It is the fastest at {mix} among the candidates that meet durability \
                 {}{margin}.{}",
                store_name(leader.store),
                configuration(leader.store, s),
                need.name(),
                next.map(|(_, m)| untested_margin(&m, s)).unwrap_or_default()
            )
        }
        [leader, rest @ ..] => {
            let others: Vec<String> = rest
                .iter()
                .map(|t| format!("{} ({})", store_name(t.store), t.mixed.map(|m| factor_text(&m)).unwrap_or_default()))
                .collect();
            format!(
                "{lead}: a tie at {mix} between {} ({}) and {}: the difference is within the noise floor \
                 or its interval holds 1.0, so this machine cannot tell them apart. Choose by the other evidence \
                 below (disk space, crash facts) or by what you already run.",
                store_name(leader.store),
                configuration(leader.store, s),
                others.join(", ")
            )
        }
    }
}

/// A caveat for a lead whose margin has no interval: one round (the
/// set-up used the budget) or medians of runs that were not paired, so
/// nothing tested it against the noise floor and it cannot be called a tie.
fn untested_margin(m: &Factor, s: &AdviseSection) -> String {
    if m.same || (m.paired && m.rounds >= 2) {
        String::new()
    } else if s.over_budget.is_some() {
        " Its margin comes from one round, with no spread to test it against the noise: a longer --budget gives \
         paired rounds that can."
            .into()
    } else {
        " Its margin has no interval (the runs were not paired in rounds), so nothing tested it against the noise."
            .into()
    }
}

/// Why a candidate was excluded, with the facts.
pub fn exclusion(e: &Excluded, s: &AdviseSection) -> String {
    let (source, model) = match e.source {
        CrashSource::Measured => ("measured here", s.crash.model.clone()),
        CrashSource::Documented => ("documented table", rules::CRASH_MODEL.name().to_string()),
    };
    format!("{}: excluded, {}; {model} model, {source}.", store_name(e.store), exclusion_reason(e))
}

/// The failing fact alone: "lost 1 acknowledged write in 50 power cuts
/// (inplace-fsync)".
pub fn exclusion_reason(e: &Excluded) -> String {
    let f = &e.fact;
    match e.test {
        Test::NoDurabilityPromise => format!("{} never acknowledges a write as durable", f.method_name()),
        Test::LostAcknowledged => format!(
            "lost {} acknowledged write{} in {} power cuts ({})",
            f.lost_after_ack,
            if f.lost_after_ack == 1 { "" } else { "s" },
            f.cuts,
            f.method_name()
        ),
        Test::Damaged => format!(
            "left {} torn blob{} and {} damaged store{} after {} power cuts ({})",
            f.torn,
            if f.torn == 1 { "" } else { "s" },
            f.integrity_failures,
            if f.integrity_failures == 1 { "" } else { "s" },
            f.cuts,
            f.method_name()
        ),
    }
}

/// Where the crash facts come from.
pub fn crash_source(s: &AdviseSection) -> String {
    match s.crash.source {
        CrashSource::Measured => format!(
            "Crash facts: measured here by a quick power-cut run ({} model, {} cuts per method; see Power cuts below).",
            s.crash.model,
            s.crash.methods.first().map_or(0, |m| m.cuts)
        ),
        CrashSource::Documented => format!(
            "Crash facts: from the documented table (docs/crash-safety.md, {} model, {} cuts per method on the \
             development machine), not measured here: {}.",
            s.crash.model,
            s.crash.methods.first().map_or(0, |m| m.cuts),
            s.crash.why
        ),
    }
}

/// One thing that would change the answer, as a clause: "with fewer
/// reads (76:24 or fewer reads), redb would rank first".
pub fn change(c: &Change) -> String {
    match c {
        Change::Mix { reads_pct, more_reads, leader } => format!(
            "with {} reads ({}:{} or {} reads), {} would rank first",
            if *more_reads { "more" } else { "fewer" },
            reads_pct,
            100 - reads_pct,
            if *more_reads { "more" } else { "fewer" },
            store_name(*leader)
        ),
        Change::Size { crossover, page_size, largest_bytes, against, db_read } => {
            size_change(crossover, (*page_size, *db_read), *largest_bytes, *against)
        }
        Change::Cold { leader, reads } => format!(
            "with the data not in the page cache (reads measured with the cache evicted before each run), {} \
             would rank first{}",
            store_name(*leader),
            reads.filter(|f| f.paired && f.low <= 1.0 && f.high >= 1.0).map_or_else(String::new, |f| format!(
                ", though not clearly: the interval of its cold reads against the leader's holds 1.0 ({})",
                interval(&f)
            ))
        ),
        Change::Aged { age, leader } => format!(
            "after {age} rewrites of every blob (reads slowed or sped up as the aging pass measured), {} would \
             rank first",
            store_name(*leader)
        ),
        Change::Durability { store, need } => format!(
            "with --durability {}, {} would no longer be excluded (its writes at that durability were not measured by this run)",
            need.name(),
            store_name(*store)
        ),
    }
}

/// The "what would change it" paragraph.
pub fn what_would_change_it(r: &Ranking) -> String {
    let parts: Vec<String> = r.changes.iter().map(change).collect();
    let mix = if r.changes.iter().any(|c| matches!(c, Change::Mix { .. })) {
        String::new()
    } else if r.ranked.len() > 1 {
        "No read/write mix from 0:100 to 100:0 changes the leader on these figures. ".into()
    } else {
        String::new()
    };
    let mix = format!("{mix}{}", unchanged(r));
    let size = if r.changes.iter().any(|c| matches!(c, Change::Size { .. })) {
        ""
    } else {
        "Blob size: not measured by this run; `blobbench matrix` finds the size above which files read faster \
         than SQLite on this machine."
    };
    if parts.is_empty() {
        format!("What would change it: {mix}{size}").trim_end().to_string()
    } else {
        let mut text = parts.join("; ");
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + &text[1..];
        }
        format!("What would change it: {text}. {mix}{size}").trim_end().to_string()
    }
}

/// What was measured and does not change the leader: cold reads, aging.
fn unchanged(r: &Ranking) -> String {
    let Some(leader) = r.ranked.first().filter(|_| r.ranked.len() > 1) else { return String::new() };
    let mut out = String::new();
    let has = |f: fn(&Change) -> bool| r.changes.iter().any(f);
    if leader.cold_read_us.is_some() && !has(|c| matches!(c, Change::Cold { .. })) {
        out.push_str("Cold reads (the page cache evicted before each run) do not change the leader. ");
    }
    if let Some(a) = leader.aged.filter(|_| !has(|c| matches!(c, Change::Aged { .. }))) {
        out.push_str(&format!("Neither do {} rewrites of every blob (the aging pass). ", a.age));
    }
    out
}

/// What the short aging pass did to each ranked candidate, in one note.
pub fn aging_note(r: &Ranking, sample: u32) -> Option<String> {
    let parts: Vec<String> = r
        .ranked
        .iter()
        .filter_map(|c| {
            let a = c.aged?;
            let reads = a.read_change.map_or_else(|| "reads not measured".into(), |x| format!("reads {x:.2}x"));
            let space = a.growth.map_or_else(|| "space not measured".into(), |g| format!("space {g:.2}x"));
            Some(format!("{} {reads}, {space} ({})", store_name(c.store), bytes(a.allocated_bytes)))
        })
        .collect();
    let age = r.ranked.iter().find_map(|c| c.aged.map(|a| a.age))?;
    Some(format!(
        "After {age} rewrites of every blob (the aging pass, on a sample of {} blobs with your sizes; each against \
         its own age 0, reads warm): {}. SQLite is aged in WAL mode with blob API reads (no mmap).",
        thousands(u64::from(sample)),
        parts.join("; ")
    ))
}

/// The size crossover in words, naming the read path of each side.
fn size_change(c: &Crossover, (page_size, db_read): (u32, DbRead), largest: u32, against: Store) -> String {
    let name = store_name(against);
    let how = match against {
        Store::Sqlite => format!("{} KiB pages, {} against files by open/read", page_size / 1024, db_read.short()),
        _ => format!("{name}'s own reads against files by open/read, in the same rounds"),
    };
    match (c.kind, c.size_bytes) {
        (CrossoverKind::At, Some(size)) => format!(
            "above about {} per blob, files opened directly read faster than {name} (size matrix crossover, {how})",
            bytes(size.round() as u64)
        ),
        (CrossoverKind::BelowRange, _) => {
            format!("files opened directly read faster than {name} at every blob size the size matrix measured ({how})")
        }
        _ => format!(
            "no blob size up to {} would: {name} read faster at every size the size matrix measured ({how})",
            bytes(u64::from(largest))
        ),
    }
}

/// Disk space of a candidate beside the leader's.
pub fn space(r: &Ranked, leader: &Ranked) -> Option<(String, String)> {
    let (mine, theirs) = (r.allocated_bytes?, leader.allocated_bytes?);
    let ratio = mine as f64 / theirs.max(1) as f64;
    Some((format!("{ratio:.2}x"), format!("{} vs {} allocated (exact, from stat)", bytes(mine), bytes(theirs))))
}

/// What one flush cost on the datasets' disk, which every durable figure
/// rests on; where it is too fast for a disk's media, that the device
/// answers from a cache. None for an older file.
pub fn flush_note(s: &AdviseSection) -> Option<String> {
    let f = s.flush.as_ref()?;
    let t = |x: &crate::measure::flush::FlushTimes| {
        format!("{} µs (the slowest of {}: {} µs)", micros(x.p50_us), f.trials, micros(x.max_us))
    };
    let mut text = format!(
        "One flush on the datasets' disk, measured before the rounds ({} of each, median): fdatasync after \
         rewriting a 4 KiB block of a file {}; a new 4 KiB file with its fsync and its directory's {}. Each durable \
         write above waits for at least one.",
        f.trials,
        t(&f.rewrite_fdatasync),
        t(&f.new_file_fsync_dir)
    );
    if f.from_cache() {
        text.push_str(&format!(
            " A flush under {:.0} µs did not wait for a disk's media: this device acknowledges flushes from a cache \
             (a hypervisor's, or a drive's with power-loss protection). blobbench cannot tell which; durability \
             here rests on that cache.",
            crate::measure::flush::CACHED_BELOW_US
        ));
    }
    Some(text)
}
