//! The advice on fixed result files: exclusions, ranking, tie wording and
//! what would change it, with no timing involved.

use super::headline::HEADLINE_CHART;
use super::{ranking, sections, terminal, words};
use crate::measure::busy::Load;
use crate::measure::rounds::RoundSet;
use crate::records::{DiskUsage, EngineKind};
use crate::report::fixtures::{advise_section, round_set, suite};
use crate::report::format::doc::{Block, VerdictRow};
use crate::results::ResultFile;
use crate::studies::advise::rank::Change;
use crate::studies::advise::rules::Test;
use crate::studies::advise::Store;
use crate::studies::advise::{Durability, Stage, StageTimes};

pub(super) const LMDB: Store = Store::Engine(EngineKind::Lmdb);
pub(super) const REDB: Store = Store::Engine(EngineKind::Redb);

/// An advise file: the given per-op times, SQLite, both file methods,
/// LMDB and redb as candidates, the documented crash table.
pub(super) fn advise_file(durability: Durability, mix: (u32, u32), times: &[(&str, f64)]) -> ResultFile {
    let mut f = suite("host-a", times);
    f.command = "advise".into();
    f.disk_usage.retain(|d| d.layout != EngineKind::Tree); // advise builds no tree of files
    for (layout, allocated) in [("lmdb", 14_000_000), ("redb", 16_000_000)] {
        f.disk_usage.push(DiskUsage {
            layout: EngineKind::from_name(layout).expect("an engine's name"),
            path: format!("/data/test1.{layout}"),
            entries: 1000,
            content_bytes: 10_000_000,
            apparent_bytes: allocated,
            allocated_bytes: allocated,
        });
    }
    let stores = [Store::Sqlite, Store::FilesInPlace, Store::FilesReplace, LMDB, REDB];
    f.advise = Some(advise_section(&stores, mix, durability, None));
    // The article's one-transaction write arms: a file from before --commit-every.
    crate::report::fixtures::as_older(&mut f);
    f
}

/// Durable writes: SQLite reads 5 µs, writes 300 µs; files read 13 µs and
/// write 2400/6000 µs; LMDB reads 4 µs and writes 1000 µs; redb reads 20
/// µs and writes 250 µs.
pub(super) fn durable_times() -> Vec<(&'static str, f64)> {
    vec![
        ("read/db-blob-mmap", 5.0),
        ("read/db-blob", 8.0),
        ("read/flat-posix", 13.0),
        ("write/db-wal-full", 300.0),
        ("write/flat-inplace-fsync", 2400.0),
        ("write/flat-replace-fsync", 6000.0),
        ("read/lmdb", 4.0),
        ("write/lmdb-durable", 1000.0),
        ("read/redb", 20.0),
        ("write/redb-durable", 250.0),
    ]
}

/// Paired rounds for `arms`: arm i's figure in round r is times[i] * wobble[r][i].
pub(super) fn rounds(id: &str, arms: &[(&str, f64)], wobble: &[Vec<f64>]) -> RoundSet {
    let ids: Vec<&str> = arms.iter().map(|(a, _)| *a).collect();
    let figures = wobble.iter().map(|w| (arms.iter().zip(w).map(|((_, t), k)| t * k).collect(), Load::default()));
    let mut set = round_set(id, &ids, figures.collect());
    // As in a file from before the steady-state figures.
    set.rounds.iter_mut().for_each(|r| r.steady_per_op_us.clear());
    set
}

#[test]
fn durability_required_excludes_in_place_files_with_the_facts() {
    let f = advise_file(Durability::Required, (90, 10), &durable_times());
    let (r, s) = ranking(&f).unwrap();
    assert_eq!(r.excluded.len(), 1, "{:?}", r.excluded);
    assert_eq!((r.excluded[0].store, r.excluded[0].test), (Store::FilesInPlace, Test::LostAcknowledged));
    let line = words::exclusion(&r.excluded[0], s);
    assert_eq!(
        line,
        "files, overwrite in place: excluded, lost 1 acknowledged write in 50 power cuts (inplace-fsync); \
         torn-4k model, documented table."
    );
    assert!(words::crash_source(s).contains("from the documented table"), "{}", words::crash_source(s));
}

#[test]
fn durability_relaxed_excludes_what_power_cuts_damage() {
    let times = [
        ("read/db-blob-mmap", 5.0),
        ("read/flat-posix", 13.0),
        ("write/db-wal-normal", 100.0),
        ("write/flat-inplace", 90.0),
        ("write/flat-replace", 160.0),
        ("read/lmdb", 4.0),
        ("write/lmdb-fast", 20.0),
        ("read/redb", 20.0),
        ("write/redb-fast", 50.0),
    ];
    let f = advise_file(Durability::Relaxed, (90, 10), &times);
    let (r, s) = ranking(&f).unwrap();
    let excluded: Vec<Store> = r.excluded.iter().map(|e| e.store).collect();
    assert_eq!(excluded, [Store::FilesInPlace, LMDB]);
    assert!(
        words::exclusion(&r.excluded[0], s).contains("left 627 torn blobs and 0 damaged stores after 50 power cuts")
    );
    // LMDB's durable commit survives the cuts: required durability would admit it.
    assert!(r.changes.contains(&Change::Durability { store: LMDB, need: Durability::Required }), "{:?}", r.changes);
    assert!(words::what_would_change_it(&r).contains("with --durability required, LMDB would no longer be excluded"));
}

#[test]
fn candidates_are_ranked_by_time_at_the_stated_mix() {
    let f = advise_file(Durability::Required, (90, 10), &durable_times());
    let (r, s) = ranking(&f).unwrap();
    // At 90:10: SQLite 34.5, redb 43, LMDB 103.6, files (replace) 611.7 µs per op.
    let order: Vec<Store> = r.ranked.iter().map(|c| c.store).collect();
    assert_eq!(order, [Store::Sqlite, REDB, LMDB, Store::FilesReplace]);
    assert!((r.ranked[0].mixed_us - 34.5).abs() < 1e-9);
    // No rounds: ratios of medians, exact and unpaired, never a tie.
    let redb = r.ranked[1].mixed.unwrap();
    assert!(!redb.paired && (redb.value - 43.0 / 34.5).abs() < 0.01, "{redb:?}");
    assert!(!r.ranked[1].tie);
    let text = words::recommendation(&r, s);
    assert!(
        text.starts_with(
            "Recommendation: SQLite (blob API + mmap reads, WAL + synchronous FULL writes, one commit per run (older \
             file))."
        ),
        "{text}"
    );
    assert!(text.contains("faster at this mix than the next, redb"), "{text}");
    assert!(text.ends_with("so nothing tested it against the noise."), "{text}");
}

#[test]
fn paired_factors_within_noise_are_called_a_tie() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    // SQLite and LMDB reads, paired: LMDB 0.8x of SQLite per round but
    // wobbling by 30% either way; the A/A twins wobble as much.
    let wobble: Vec<Vec<f64>> = (0..8)
        .map(|i| {
            let k = if i % 2 == 0 { 1.3 } else { 0.7 };
            vec![1.0, k, 1.0, 1.0 / k]
        })
        .collect();
    let arms = [("read/db-blob-mmap", 5.0), ("read/lmdb", 5.0), ("read/db-blob", 8.0), ("control/db-blob", 8.0)];
    f.rounds.push(rounds("suite/reads", &arms, &wobble));
    let writes = [("write/db-wal-full", 300.0), ("write/lmdb-durable", 300.0)];
    f.rounds.push(rounds("suite/writes", &writes, &wobble.iter().map(|w| w[..2].to_vec()).collect::<Vec<_>>()));
    // Medians: LMDB as fast as SQLite in both.
    crate::report::fixtures::exp_mut(&mut f, "read/lmdb").summary.per_op_us.median = 5.0;
    crate::report::fixtures::exp_mut(&mut f, "write/lmdb-durable").summary.per_op_us.median = 301.0;
    let (r, s) = ranking(&f).unwrap();
    assert!(r.noise.is_some());
    let lmdb = r.ranked.iter().find(|c| c.store == LMDB).unwrap();
    assert!(lmdb.tie && lmdb.mixed.unwrap().paired, "{lmdb:?}");
    let text = words::recommendation(&r, s);
    assert!(text.starts_with("Recommendation: a tie at 90:10 reads:writes between SQLite"), "{text}");
    assert!(text.contains("LMDB (") && text.contains("within the noise floor"), "{text}");
    let page = format!("{:?}", sections(std::slice::from_ref(&f)));
    assert!(page.contains("tie: LMDB"), "{page}");
}

#[test]
fn a_mix_with_more_writes_would_change_the_leader() {
    let f = advise_file(Durability::Required, (90, 10), &durable_times());
    let (r, _) = ranking(&f).unwrap();
    // SQLite 5 / 300 µs, redb 20 / 250 µs: redb leads once writes are over
    // 15 / (15 + 50) = 23% of operations, i.e. at 76:24 reads or fewer.
    assert!(r.changes.contains(&Change::Mix { reads_pct: 76, more_reads: false, leader: REDB }), "{:?}", r.changes);
    let text = words::what_would_change_it(&r);
    assert!(text.contains("With fewer reads (76:24 or fewer reads), redb would rank first"), "{text}");
    assert!(text.contains("blobbench matrix"), "{text}");
}

#[test]
fn the_page_leads_and_survives_a_round_trip() {
    let f = advise_file(Durability::Required, (90, 10), &durable_times());
    let json = serde_json::to_string(&f).unwrap();
    let back = crate::results::parse("advise.json", &json).unwrap();
    assert_eq!(ranking(&back).unwrap().0, ranking(&f).unwrap().0);
    let doc = crate::report::document(std::slice::from_ref(&back));
    assert_eq!(doc[0].id, "advise", "the advice comes before the verdict");
    let out = page_lines(&back);
    assert!(out.starts_with("Recommendation: SQLite"), "{out}");
    assert!(out.contains("writes (durability required): redb 1.20x faster than SQLite; none (unpaired"), "{out}");
    assert!(out.contains("[chart advise-writes]"), "{out}");
}

/// The advice's section as lines: each paragraph and note, and each
/// evidence row as "question: answer; uncertainty [chart id]".
pub(super) fn page_lines(f: &ResultFile) -> String {
    let section = sections(std::slice::from_ref(f)).remove(0);
    let line = |r: &VerdictRow| format!("{}: {}; {} [chart {}]\n", r.question, r.outcome, r.uncertainty, r.chart_id);
    section
        .blocks
        .iter()
        .map(|b| match b {
            Block::Verdict(v) => v.rows.iter().map(line).collect(),
            Block::Paragraph(p) | Block::Note(p) => format!("{p}\n"),
            _ => String::new(),
        })
        .collect()
}

/// The set-up took the whole budget: the terminal and the page say so,
/// with the parts' times, from the result file.
#[test]
fn an_over_budget_run_says_so_on_the_terminal_and_the_page() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    let quiet = terminal(&f, false);
    assert!(!quiet.contains("over budget"), "{quiet}");
    let s = f.advise.as_mut().unwrap();
    s.budget_s = 40.0;
    s.over_budget = Some(StageTimes::of([
        (Stage::Setup, 47.0),
        (Stage::PowerCuts, 20.0),
        (Stage::SizeMatrix, 15.0),
        (Stage::Aging, 8.0),
        (Stage::Datasets, 3.0),
        (Stage::Kept, 5.0),
    ]));
    let back = crate::results::parse("advise.json", &serde_json::to_string(&f).unwrap()).unwrap();
    let note = "over budget: the set-up took 47 s of the 40 s budget \
                (power cuts 20 s, size matrix 15 s, aging pass 8 s, datasets 3 s); one round of each arm was run";
    let out = terminal(&back, false);
    assert!(out.contains(note), "{out}");
    let page = crate::report::html(std::slice::from_ref(&back), None);
    assert!(page.contains(note), "the page says it too");
    // The lead from that one round is named, and said to be untested.
    let (r, s) = ranking(&back).unwrap();
    let text = words::recommendation(&r, s);
    assert!(text.starts_with("Recommendation: SQLite") && text.contains("comes from one round"), "{text}");
    // Within the budget, but not the time kept for the page.
    let s = f.advise.as_mut().unwrap();
    s.over_budget.as_mut().unwrap().set(Stage::Setup, 36.0);
    assert!(terminal(&f, false).contains("took 36 s of the 40 s budget (power cuts 20 s, size matrix 15 s, aging pass 8 s, datasets 3 s), leaving less than the 5 s kept for the page; one round"));
}
/// The budget is the whole command's: the page gives each part, the
/// servers' starts within the datasets', and says when the promised
/// rounds ran past it.
#[test]
fn the_page_says_what_the_budget_covered() {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    assert_eq!(words::budget_note(f.advise.as_ref().unwrap()), None, "an older file says nothing");
    let s = f.advise.as_mut().unwrap();
    (s.budget_s, s.elapsed_s) = (60.0, 84.0);
    s.stages = Some(StageTimes::of([
        (Stage::PowerCuts, 7.0),
        (Stage::SizeMatrix, 18.0),
        (Stage::Aging, 4.0),
        (Stage::Datasets, 22.0),
        (Stage::Rounds, 33.0),
        (Stage::Clients, 0.0),
    ]));
    let back = crate::results::parse("advise.json", &serde_json::to_string(&f).unwrap()).unwrap();
    let page = crate::report::html(std::slice::from_ref(&back), None);
    let note = "Budget: 60 s for the whole command, its one-off costs included; it took 84 s (power cuts 7 s, size \
                crossover 18 s, aging pass 4 s, datasets, throwaway servers started 22 s, rounds 33 s). The rounds \
                ran 24 s past it: every arm runs its 6 paired rounds, and a run never holds fewer than 32 \
                operations (with clients, each run is its window), however long each takes. Not counted: writing this page after the measurements.";
    assert!(page.contains(note), "{}", words::budget_note(back.advise.as_ref().unwrap()).unwrap());
    let s = f.advise.as_mut().unwrap();
    s.elapsed_s = 59.0;
    assert!(!words::budget_note(s).unwrap().contains("past it"), "within the budget");
}

#[test]
fn a_faster_factor_is_worded_with_its_interval_turned_the_same_way() {
    use crate::studies::advise::rank::Factor;
    let f = Factor { value: 0.73, low: 0.66, high: 1.01, paired: true, rounds: 4, same: false };
    let o = f.oriented();
    assert!(
        (o.value - 1.0 / 0.73).abs() < 1e-9 && (o.low - 1.0 / 1.01).abs() < 1e-9 && (o.high - 1.0 / 0.66).abs() < 1e-9
    );
    assert_eq!(words::interval(&o), "0.99-1.52 (paired, 4 rounds)");
    assert_eq!(Factor { value: 1.2, ..f }.oriented().value, 1.2, "a slower factor stays as it is");
}

/// [`durable_times`] with every read and every write paired over 8 rounds,
/// each arm wobbling by up to 3% its own way round by round.
fn durable_file_in_rounds() -> ResultFile {
    let mut f = advise_file(Durability::Required, (90, 10), &durable_times());
    let times = durable_times();
    let reads: Vec<(&str, f64)> = times.iter().copied().filter(|(id, _)| id.starts_with("read/")).collect();
    let writes: Vec<(&str, f64)> = times.iter().copied().filter(|(id, _)| id.starts_with("write/")).collect();
    let wobble = |arms: usize| -> Vec<Vec<f64>> {
        (0..8).map(|r| (0..arms).map(|i| 1.0 + 0.015 * (((r + 2 * i) % 5) as f64 - 2.0)).collect()).collect()
    };
    f.rounds.push(rounds("suite/reads", &reads, &wobble(reads.len())));
    f.rounds.push(rounds("suite/writes", &writes, &wobble(writes.len())));
    f
}

#[test]
fn the_page_opens_with_the_time_per_op_at_the_mix_and_its_paired_intervals() {
    let f = durable_file_in_rounds();
    let doc = crate::report::document(std::slice::from_ref(&f));
    let Some(Block::Figure(fig)) = doc[0].blocks.first() else { panic!("{:?}", doc[0].blocks.first()) };
    assert_eq!(fig.id, HEADLINE_CHART);
    let crate::report::Chart::Bars(bars) = &fig.chart else { panic!("a bar chart") };
    assert_eq!(bars.title, "Time per operation at 90:10 reads:writes");
    // The ranked candidates, fastest first; the excluded one left out, named.
    assert_eq!(bars.groups, ["SQLite", "redb", "LMDB", "files, temp + rename"]);
    let (r, _) = ranking(&f).unwrap();
    let mixed: Vec<Option<f64>> = r.ranked.iter().map(|c| Some(c.mixed_us)).collect();
    assert_eq!(bars.values.iter().map(|v| v[0]).collect::<Vec<_>>(), mixed);
    assert_eq!(bars.reference, Some(r.ranked[0].mixed_us), "the leader's time");
    assert!((r.ranked[0].mixed_us - 34.5).abs() < 1e-9);
    assert!(fig.caption.iter().any(|c| c.contains("excluded by the crash facts: files, overwrite in place")));
    // The leader has no whisker; each other bar the paired interval of
    // its factor, drawn around its own time.
    assert_eq!(bars.errors[0], [None]);
    for (c, e) in r.ranked.iter().zip(&bars.errors).skip(1) {
        let (lo, hi) = e[0].unwrap_or_else(|| panic!("{:?} has a paired interval", c.store));
        let m = c.mixed.unwrap();
        assert!(m.paired && m.rounds == 8 && lo < hi, "{m:?}");
        assert!((lo / c.mixed_us - m.low / m.value).abs() < 1e-9 && (hi / c.mixed_us - m.high / m.value).abs() < 1e-9);
    }
    assert_eq!(fig.chart.to_svg().matches("class=\"errorbar\"").count(), 3);
    // The evidence row of the mix links to it.
    let redb = r.ranked[1].mixed.unwrap();
    let row = format!("at 90:10: redb {:.2}x slower than SQLite; {:.2}-{:.2}", redb.value, redb.low, redb.high);
    let text = page_lines(&f);
    assert!(text.contains(&format!("{row} (paired, 8 rounds) [chart advise-headline]")), "{text}");
}

#[test]
fn the_terminal_ends_with_the_answer_the_ranking_and_three_evidence_lines() {
    let f = durable_file_in_rounds();
    let out = terminal(&f, false);
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines[0].starts_with("Workload: 1,000 blobs"), "{out}");
    let rec = lines.iter().position(|l| l.starts_with("Recommendation: SQLite")).unwrap_or_else(|| panic!("{out}"));
    assert!(lines[rec].contains("paired over 8 rounds") && !lines[rec].contains("nothing tested"), "{}", lines[rec]);
    let table = &lines[rec + 1..rec + 7];
    for h in ["rank", "candidate", "read µs/op", "write µs/op", "µs/op at 90:10", "vs the leader", "disk", "excluded"]
    {
        assert!(table[0].contains(h), "{h}: {}", table[0]);
    }
    // One line per candidate: the four ranked in order, then the excluded
    // one with its figures and the fact that excludes it.
    for (line, name) in table[1..].iter().zip(["SQLite", "redb", "LMDB", "files, temp + rename"]) {
        assert!(line.trim_start().contains(name) && line.trim_end().ends_with("no"), "{line}");
    }
    assert!(table[1].contains("34.50") && table[1].contains("leader") && table[1].contains("10.25 MB"), "{}", table[1]);
    let excluded = table[5];
    assert!(excluded.contains("files, overwrite in place") && excluded.contains("2,400"), "{excluded}");
    assert!(excluded.ends_with("yes: lost 1 acknowledged write in 50 power cuts (inplace-fsync)"), "{excluded}");
    // Then at most three decisive lines, and nothing after them.
    assert!(lines[rec + 7].starts_with("Decisive evidence (all 12 evidence rows"), "{}", lines[rec + 7]);
    let evidence = &lines[rec + 8..];
    assert_eq!(evidence.len(), 3, "{out}");
    let redb = ranking(&f).unwrap().0.ranked[1].mixed.unwrap();
    let at_mix = format!("  - at 90:10: redb {:.2}x slower than SQLite; {:.2}-{:.2}", redb.value, redb.low, redb.high);
    assert!(evidence[0].starts_with(&at_mix), "{}", evidence[0]);
    assert!(evidence[0].ends_with("(paired, 8 rounds) [chart advise-headline]"), "{}", evidence[0]);
    // redb's reads make its gap (0.9 x 15 µs), not its faster writes.
    assert!(evidence[1].starts_with("  - reads (warm): redb 4.0"), "{}", evidence[1]);
    assert!(evidence[1].ends_with("(paired, 8 rounds) [chart advise-reads]"), "{}", evidence[1]);
    assert_eq!(evidence[2], "  - what would change it: with fewer reads (76:24 or fewer reads), redb would rank first");
    // The full evidence stays on the page.
    assert!(!out.contains("disk space:") && page_lines(&f).contains("disk space:"));
}

#[test]
fn the_page_says_how_many_rounds_and_operations_each_candidate_had() {
    let mut f = durable_file_in_rounds();
    assert!(!page_lines(&f).contains("Rounds and operations"), "older files record no operations");
    let reads = f.rounds.iter_mut().find(|r| r.id == "suite/reads").unwrap();
    reads.ops_per_run = vec![4000; reads.arms.len()];
    let writes = f.rounds.iter_mut().find(|r| r.id == "suite/writes").unwrap();
    writes.ops_per_run = vec![150, 60, 40, 130, 170];
    writes.run_time_s = Some(0.15);
    let text = page_lines(&f);
    let note = text.lines().find(|l| l.starts_with("Rounds and operations")).unwrap_or_else(|| panic!("{text}"));
    assert!(
        note.contains("warm reads: 8 rounds, 4,000 per run; writes: 8 rounds, each arm's run sized to about 0.15 s")
    );
    assert!(
        note.contains("per run SQLite 150, files, overwrite in place 60, files, temp + rename 40, LMDB 130, redb 170.")
    );
}

/// The flush note names its tail for what it is: over 40 trials the
/// nearest-rank "p99" is the slowest trial, so the page says "the slowest
/// of 40", never a p99 it did not measure.
#[test]
fn the_flush_note_names_the_slowest_of_its_trials_not_a_p99() {
    let mut s = advise_section(&[Store::Sqlite], (90, 10), Durability::Required, None);
    let times = r#"{"p50_us": 250.0, "p99_us": 900.0}"#;
    let cost = format!(r#"{{"trials": 40, "rewrite_fdatasync": {times}, "new_file_fsync_dir": {times}}}"#);
    s.flush = Some(serde_json::from_str(&cost).unwrap());
    let note = words::flush_note(&s).unwrap();
    assert!(note.contains("the slowest of 40: 900.0 µs"), "{note}");
    assert!(!note.contains("p99"), "{note}");
}
