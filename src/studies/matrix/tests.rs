use std::path::Path;

use super::tests_support::fixed_section;
use super::*;
use crate::measure::Experiment;
use crate::records::{EngineKind, EngineSettings, Plan, SizeSource, SizesFrom};
use crate::studies::context::RoundsAsked;

fn tiny() -> MatrixOptions {
    MatrixOptions {
        sizes: vec![4000, 1000],
        page_sizes: vec![4096, 1024],
        total_bytes: 200_000,
        cache_bytes: 64 * 1024,
        plan: Plan { repeat: 1, warmup: 0, cold: false, latency: true },
        writes: true,
        yours: None,
        db_read: DbRead::Sql,
    }
}

/// The tests' context in `workdir`: two rounds by count (no budget, so the
/// count holds at any speed).
fn in_dir(workdir: &Path) -> StudyContext {
    let rounds = RoundsAsked { max_rounds: Some(2), ..RoundsAsked::default() };
    StudyContext { rounds, ..StudyContext::new(workdir, EngineSettings::default()) }
}

/// Advise's size crossover reads SQLite as its candidate does: the blob
/// API over the whole database memory-mapped, recorded and labelled.
#[test]
fn the_database_can_be_read_through_the_blob_api_with_mmap() {
    let work = tempfile::tempdir().unwrap();
    let opts = MatrixOptions { sizes: vec![4000], page_sizes: vec![4096], writes: false, ..tiny() };
    let opts = MatrixOptions { db_read: DbRead::BlobApiMmap, ..opts };
    let s = run(&in_dir(work.path()), &opts).unwrap().section;
    assert_eq!(s.params.db_read, DbRead::BlobApiMmap);
    let db = &s.cells[0].internal;
    assert_eq!(db.params.db.access, crate::records::DbAccess::BlobApi);
    assert!(db.params.db.mmap_bytes >= 200_000, "the whole database mapped: {}", db.params.db.mmap_bytes);
    assert_eq!(db.label, DbRead::BlobApiMmap.label());
    assert!(s.cells[0].internal.runs.iter().all(|r| r.ops == 50), "every blob read once per run on average");
    let back: MatrixSection = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back.params.db_read, DbRead::BlobApiMmap);
}

#[test]
fn an_engine_is_measured_once_per_blob_size_beside_the_files() {
    let work = tempfile::tempdir().unwrap();
    let ctx = StudyContext { engines: vec![EngineKind::Lmdb], ..in_dir(work.path()) };
    let s = run(&ctx, &tiny()).unwrap().section;
    assert_eq!(s.params.engine_page_size, Some(4096));
    for c in &s.cells {
        let want = usize::from(c.page_size == 4096);
        assert_eq!(c.engines.len(), want, "page size {}: the engine runs in the 4096 row only", c.page_size);
        for e in &c.engines {
            assert_eq!(e.engine, EngineKind::Lmdb);
            assert_eq!(e.read.params.layout, EngineKind::Lmdb);
            let r = &e.read.runs[0];
            assert_eq!(r.bytes, u64::from(c.count) * u64::from(c.size_bytes), "every blob read back whole");
            assert_eq!(e.files_ratio.rounds, c.direct.runs.len(), "paired with the files round by round");
            let rounds = c.rounds.as_ref().unwrap();
            assert!(rounds.arms.iter().any(|a| a.ends_with("/lmdb")), "{:?}", rounds.arms);
            let w = e.writes.as_ref().expect("writes beside the files'");
            assert_eq!(
                (w.durable.params.commit_every, w.fast.params.commit_every),
                (Some(1), Some(1)),
                "a commit per write"
            );
            assert_ne!(w.fast.params.kv.sync, w.durable.params.kv.sync);
        }
    }
    assert_eq!(s.engine_crossovers.len(), 1);
    assert!(s.engine_crossovers[0].durable.is_some());
    assert!(std::fs::read_dir(work.path()).unwrap().next().is_none(), "the work directory is removed");
}

#[test]
fn tiny_matrix_end_to_end() {
    let work = tempfile::tempdir().unwrap();
    let run = run(&in_dir(work.path()), &tiny()).unwrap();
    assert!(!run.interrupted);
    let s = &run.section;
    assert_eq!(s.params.sizes_bytes, vec![1000, 4000], "sorted");
    assert_eq!(s.cells.len(), 4);
    let first = &s.cells[0];
    assert_eq!((first.page_size, first.size_bytes, first.count), (1024, 1000, 200));
    assert_eq!((s.cells[1].page_size, s.cells[1].size_bytes), (4096, 1000), "by blob size, then page size");
    assert_eq!(first.cache_pages, 64);
    assert_eq!(first.content_bytes, 200_000);
    for c in &s.cells {
        for e in [&c.internal, &c.external, &c.direct] {
            let r = &e.runs[0];
            assert_eq!(r.ops, u64::from(c.count), "{}: every op found its blob", e.id);
            assert_eq!(r.bytes, u64::from(c.count) * u64::from(c.size_bytes), "{}", e.id);
            assert_eq!(e.params.order, Order::Random);
        }
        assert_eq!(c.internal.params.db.cache_size, c.cache_pages);
        assert_eq!(c.external.params.db.cache_size, c.cache_pages, "same cache for both databases");
        // Paired: the median over rounds of external / internal of the same round.
        let loops = Experiment::loop_times;
        let expected = crate::measure::paired::paired_ratio(&loops(&c.external), &loops(&c.internal)).unwrap().value;
        assert!((c.external_ratio - expected).abs() < 1e-12);
        let rounds = c.rounds.as_ref().expect("the reads ran in rounds");
        assert_eq!((rounds.rounds.len(), rounds.arms.len()), (2, 3));
        assert_eq!(c.internal.runs.len(), 2);
        assert!(c.external_ratio.is_finite() && c.external_ratio > 0.0);
        assert!(c.direct_ratio.is_finite() && c.direct_ratio > 0.0);
        assert!(c.external.id.ends_with("/external") && c.external.id.contains(&format!("p{}", c.page_size)));
    }
    assert_eq!(s.crossovers.len(), 2);
    assert_eq!(s.best_page_sizes.len(), 2);
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "datasets removed");
    // The section survives a round trip through the result file.
    let mut file = crate::results::ResultFile::new("matrix", crate::measure::envinfo::Environment::default());
    file.matrix = Some(s.clone());
    let text = serde_json::to_string(&file).unwrap();
    let back = crate::results::parse("x", &text).unwrap().matrix.unwrap();
    assert_eq!(back.cells.len(), 4);
    assert_eq!(back.grid(Figure::ExternalRatio), s.grid(Figure::ExternalRatio));
}

#[test]
fn cell_datasets_hold_the_same_blobs() {
    use crate::engine::Session;
    let work = tempfile::tempdir().unwrap();
    // Two page sizes of one blob size: the second reuses the first's files,
    // which must still match its own database byte for byte.
    for page_size in [2048, 4096] {
        let spec = CellSpec { size: 2000, page_size, count: 30, cache_pages: 10, yours: false };
        let paths = cell::CellPaths::new(work.path(), &spec);
        std::fs::create_dir(&paths.dir).unwrap();
        assert_eq!(cell::build(&spec, &yours::Content::Fixed, 1, &paths).unwrap(), 60_000);
        let kv = rusqlite::Connection::open(&paths.blobs_db).unwrap();
        let mut store = crate::engine::ExternalStore::open(&paths.names_db, &paths.files, spec.cache_pages).unwrap();
        for k in 1..=spec.count {
            let v: Vec<u8> = kv.query_row("SELECT v FROM kv WHERE k=?1", [k], |r| r.get(0)).unwrap();
            assert_eq!(store.read(k).unwrap(), 2000);
            assert_eq!(store.last_read(), v.as_slice(), "page size {page_size}, key {k}");
        }
        let page = |db: &Path| -> i64 {
            rusqlite::Connection::open(db).unwrap().query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap()
        };
        assert_eq!(page(&paths.blobs_db), i64::from(page_size));
        assert_eq!(page(&paths.names_db), i64::from(page_size), "the name database has the cell's page size too");
    }
    let dirs = std::fs::read_dir(work.path()).unwrap().count();
    assert_eq!(dirs, 3, "two cell directories and one shared directory of files");
}

#[test]
fn bad_options_fail_before_any_work() {
    let work = tempfile::tempdir().unwrap();
    let check = |f: &dyn Fn(&mut StudyContext, &mut MatrixOptions), needle: &str| {
        let (mut ctx, mut o) = (in_dir(work.path()), tiny());
        f(&mut ctx, &mut o);
        let err = run(&ctx, &o).unwrap_err().to_string();
        assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "nothing built for {needle}");
    };
    check(&|_, o| o.total_bytes = 3999, "smaller than one blob");
    check(&|_, o| o.cache_bytes = 4095, "smaller than one page");
    check(&|_, o| o.page_sizes = vec![1000], "power of two");
    check(&|_, o| o.sizes.clear(), "at least one");
    check(&|_, o| o.yours = Some(SizeSource::Files(work.path().join("none"))), "none");
    check(&|_, o| o.yours = Some(SizeSource::Files(work.path().to_path_buf())), "no regular");
    check(&|_, o| o.plan.repeat = 0, "--repeat");
    check(&|ctx, _| ctx.workdir = work.path().join("missing"), "does not exist");
    check(&|_, o| o.sizes = vec![0], "from 1 to");
    check(&|_, o| o.sizes = vec![2_000_000_000], "from 1 to");
    check(&|_, o| o.total_bytes = 1 << 42, "more than");
    check(
        &|_, o| {
            o.sizes = vec![1_000_000];
            o.total_bytes = 1 << 42;
        },
        "not enough free space",
    );
}

/// Names, sizes and modification times of a directory's files.
fn listing(dir: &Path) -> Vec<(std::ffi::OsString, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let (e, m) = (e.as_ref().unwrap(), e.as_ref().unwrap().metadata().unwrap());
            (e.file_name(), m.len(), m.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn your_files_make_one_more_cell_per_page_size() {
    let (work, mine) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for i in 0..40u32 {
        std::fs::write(mine.path().join(format!("f{i:02}")), vec![i as u8; 1000 + 100 * i as usize]).unwrap();
    }
    let before = listing(mine.path());
    let mut o = MatrixOptions { sizes: Vec::new(), writes: false, ..tiny() };
    o.total_bytes = 30_000;
    o.yours = Some(SizeSource::Files(mine.path().to_path_buf()));
    let s = run(&in_dir(work.path()), &o).unwrap().section;
    assert!(s.cells.is_empty(), "no fixed sizes asked");
    assert_eq!(s.yours.iter().map(|c| c.page_size).collect::<Vec<_>>(), [1024, 4096]);
    let Some(SizesFrom::Files { files_found, files_used, content_bytes, .. }) = &s.params.sizes_from else {
        panic!("{:?}", s.params.sizes_from)
    };
    assert_eq!((*files_found, *files_used), (40, 10), "an evenly spaced sample within --total");
    for c in &s.yours {
        assert_eq!((c.count, c.content_bytes), (10, *content_bytes));
        let r = &c.internal.runs[0];
        assert_eq!(r.ops, 10);
        assert!((10_000..=49_000).contains(&r.bytes), "the files' own sizes were read: {}", r.bytes);
        assert!(c.internal.id.contains("/yours/"), "{}", c.internal.id);
    }
    assert_eq!(listing(mine.path()), before, "your directory is only read");
}

#[test]
fn a_distribution_sets_your_cells_sizes() {
    let work = tempfile::tempdir().unwrap();
    let dist = crate::records::SizeDist::List { sizes: vec![1000, 3000] };
    let mut o = MatrixOptions { sizes: vec![2000], page_sizes: vec![4096], writes: false, ..tiny() };
    o.yours = Some(SizeSource::Dist(dist.clone()));
    let s = run(&in_dir(work.path()), &o).unwrap().section;
    assert_eq!(s.cells.len(), 1);
    let y = &s.yours[0];
    assert_eq!((y.size_bytes, y.count), (2000, 100), "mean size, total / mean blobs");
    assert_eq!(s.params.sizes_from, Some(SizesFrom::Distribution { dist: dist.clone() }));
    // The cell's database holds blobs of exactly the listed sizes.
    let spec = CellSpec { size: 2000, page_size: 4096, count: 40, cache_pages: 10, yours: true };
    let paths = cell::CellPaths::new(work.path(), &spec);
    std::fs::create_dir(&paths.dir).unwrap();
    cell::build(&spec, &yours::Content::Dist(dist.clone()), 1, &paths).unwrap();
    let kv = rusqlite::Connection::open(&paths.blobs_db).unwrap();
    let mut q = kv.prepare("SELECT DISTINCT length(v) FROM kv ORDER BY 1").unwrap();
    let lengths: Vec<i64> = q.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(lengths, [1000, 3000]);
    let bad = MatrixOptions { yours: Some(SizeSource::Dist(crate::records::SizeDist::List { sizes: vec![] })), ..o };
    assert!(run(&in_dir(work.path()), &bad).unwrap_err().to_string().contains("--size-dist"));
}

#[test]
fn defaults_are_the_studys() {
    let o = MatrixOptions::default();
    let cells = o.cells();
    assert_eq!(cells.len(), 49);
    let c1024 = cells.iter().find(|c| c.page_size == 1024 && c.size == 10_000).unwrap();
    assert_eq!((c1024.count, c1024.cache_pages), (10_000, 2000));
    let c64k = cells.iter().find(|c| c.page_size == 65536 && c.size == 1_000_000).unwrap();
    assert_eq!((c64k.count, c64k.cache_pages), (100, 31));
    assert!(MatrixOptions::quick().cells().len() < cells.len());
}

#[test]
fn derived_figures_from_fixed_results() {
    let s = fixed_section();
    let g = s.grid(Figure::ExternalRatio);
    assert_eq!(g.values, vec![vec![Some(2.0), Some(1.0), Some(0.5)], vec![Some(2.5), Some(0.8), None]]);
    assert_eq!(s.crossovers[0].external.size_bytes, Some(100_000.0), "exactly 1.0 at 100k");
    assert!(s.crossovers[0].external.exact);
    let c = s.crossovers[1].external.size_bytes.unwrap();
    assert!(c > 10_000.0 && c < 100_000.0, "{c}");
    assert_eq!(s.crossovers[0].direct.kind, CrossoverKind::At);
    let best: Vec<(u32, u32)> = s.best_page_sizes.iter().map(|b| (b.size_bytes, b.page_size)).collect();
    assert_eq!(best, vec![(10_000, 4096), (100_000, 1024), (1_000_000, 1024)]);
}
