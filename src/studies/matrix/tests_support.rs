//! Fixed matrix results for tests of everything that renders them.

use super::*;
use crate::measure::{Experiment, Stat, Summary};
use crate::records::keys::Order;
use crate::records::{DbParams, FileParams, Plan, WorkloadParams};

fn fake(us: f64) -> Experiment {
    let params = WorkloadParams {
        path: String::new(),
        layout: crate::engine::sqlite::KIND,
        update: false,
        count: 1,
        max_id: 1,
        start: 1,
        order: Order::Random,
        threads: 1,
        db: DbParams::default(),
        files: FileParams::default(),
        kv: Default::default(),
        commit_every: None,
        plan: Plan::default(),
        seed: None,
        zipf_theta: None,
        mix: None,
        round_trip: false,
        server_info: None,
    };
    Experiment {
        id: String::new(),
        label: String::new(),
        params,
        warmup_runs: 0,
        runs: Vec::new(),
        latency: None,
        latency_histogram: None,
        summary: Summary { loop_per_op_us: Stat { median: us, ..Stat::default() }, ..Summary::default() },
        clock_cost_ns: 0.0,
        clock_overhead_pct: 0.0,
        warnings: Vec::new(),
        class_latency: Vec::new(),
        handle_open_ns: None,
    }
}

/// A 2 x 3 section from fixed times: files cost 20 us per blob everywhere,
/// the database 10, 20 or 40 us as blobs grow (one cell missing).
pub(crate) fn fixed_section() -> MatrixSection {
    let mut cells = Vec::new();
    for (page_size, db_us) in [(1024, [10.0, 20.0, 40.0]), (4096, [8.0, 25.0, f64::NAN])] {
        for (size, us) in [10_000, 100_000, 1_000_000].into_iter().zip(db_us) {
            if us.is_nan() {
                continue;
            }
            cells.push(MatrixCell {
                size_bytes: size,
                page_size,
                count: 1,
                content_bytes: u64::from(size),
                cache_pages: 1,
                internal: fake(us),
                external: fake(20.0),
                direct: fake(10.0),
                external_ratio: 20.0 / us,
                direct_ratio: 10.0 / us,
                rounds: None,
                writes: None,
                engines: Vec::new(),
            });
        }
    }
    let params = MatrixParams {
        sizes_bytes: vec![10_000, 100_000, 1_000_000],
        page_sizes: vec![1024, 4096],
        total_bytes: 1_000_000,
        cache_bytes: 2_048_000,
        plan: Plan::default(),
        order: Order::Random,
        file_read: FileRead::Posix,
        seed: 1,
        workdir: String::new(),
        sizes_from: None,
        engines: Vec::new(),
        engine_page_size: None,
        db_read: DbRead::Sql,
    };
    MatrixSection::new(params, cells)
}

/// [`fixed_section`] with PostgreSQL (bytea) measured in the 1024 row: it
/// reads in 5, 10 and 40 us where files opened by key take 10, so files /
/// engine is 2.0, 1.0 and 0.25, with intervals of +/-0.1, 0.1 and 0.05.
pub(crate) fn section_with_engine() -> MatrixSection {
    let fixed = fixed_section();
    let mut params = fixed.params.clone();
    params.engines = vec![crate::records::EngineKind::Postgres];
    params.engine_page_size = Some(1024);
    let mut cells = fixed.cells.clone();
    for (cell, (us, half)) in
        cells.iter_mut().filter(|c| c.page_size == 1024).zip([(5.0, 0.1), (10.0, 0.1), (40.0, 0.05)])
    {
        let value = 10.0 / us;
        let files_ratio = crate::measure::paired::PairedRatio {
            value,
            low: value - half,
            high: value + half,
            rounds: 10,
            coverage_pct: 97.9,
            outliers: Vec::new(),
        };
        cell.engines.push(EngineCell {
            engine: crate::records::EngineKind::Postgres,
            read: fake(us),
            files_ratio,
            writes: None,
        });
    }
    MatrixSection::new(params, cells)
}
