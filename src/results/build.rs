//! Result files from what each command measured: the library builds them,
//! so every front end writes the same file for the same measurement.

use std::path::Path;

use super::ResultFile;
use crate::drivers::run::RunReport;
use crate::measure::envinfo;
use crate::records::DatasetSpec;
use crate::studies::advise::AdviseOutcome;
use crate::studies::aging::AgingOutcome;
use crate::studies::concurrency::{self, ConcurrencyOptions};
use crate::studies::context::StudyContext;
use crate::studies::crashtest::{CrashReport, PowerCutReport};
use crate::studies::matrix::{MatrixRun, RATIO_FIGURE};
use crate::studies::suite::SuiteOutcome;

impl ResultFile {
    /// The result file of a `run` of the dataset at `path`.
    pub fn from_run(report: &RunReport, path: &Path) -> ResultFile {
        let mut file = ResultFile::new("run", envinfo::collect(path));
        file.complete = !report.interrupted;
        file.experiments.push(report.experiment.clone());
        file
    }

    /// The result file of a `suite`.
    pub fn from_suite(outcome: SuiteOutcome) -> ResultFile {
        let mut file = ResultFile::new("suite", outcome.environment);
        file.complete = outcome.complete;
        file.dataset = Some(outcome.spec);
        file.experiments = outcome.experiments;
        file.disk_usage = outcome.disk_usage;
        file.notes = outcome.notes;
        file.rounds = outcome.rounds;
        file
    }

    /// The result file of a `matrix` measured in `workdir`.
    pub fn from_matrix(run: MatrixRun, workdir: &Path) -> ResultFile {
        let mut file = ResultFile::new("matrix", envinfo::collect(workdir));
        file.complete = !run.interrupted;
        file.notes.push(format!("ratios are of the {RATIO_FIGURE}"));
        file.matrix = Some(run.section);
        file
    }

    /// The result file of a `concurrency` study.
    pub fn from_concurrency(
        measured: concurrency::Measured,
        ctx: &StudyContext,
        opts: &ConcurrencyOptions,
    ) -> ResultFile {
        let mut file = ResultFile::new("concurrency", envinfo::collect(&ctx.workdir));
        let section = measured.section;
        file.complete = !section.interrupted;
        if section.blob_readers.is_some() {
            file.dataset = Some(DatasetSpec {
                count: opts.blob_count,
                size: concurrency::BLOB_SIZE,
                seed: ctx.seed,
                ..DatasetSpec::default()
            });
        }
        file.experiments = measured.experiments;
        file.rounds = measured.rounds;
        file.concurrency = Some(section);
        file
    }

    /// The result file of a `crashtest` run in `workdir`.
    pub fn from_crashtest(report: &CrashReport, workdir: &Path) -> ResultFile {
        let mut file = ResultFile::new("crashtest", envinfo::collect(workdir));
        file.complete = !report.interrupted;
        file.crashtest = Some(report.section.clone());
        file
    }

    /// The result file of a `crashtest --power-cut` run in `workdir`.
    pub fn from_power_cut(report: &PowerCutReport, workdir: &Path) -> ResultFile {
        let mut file = ResultFile::new("crashtest", envinfo::collect(workdir));
        file.complete = !report.interrupted;
        file.power_cut = Some(report.section.clone());
        file
    }

    /// The result file of an `aging` study.
    pub fn from_aging(outcome: AgingOutcome) -> ResultFile {
        let mut file = ResultFile::new("aging", outcome.environment);
        file.complete = outcome.complete;
        file.aging = Some(outcome.section);
        file.notes = outcome.notes;
        file
    }

    /// The result file of an `advise`: its suite's data, the power cuts,
    /// the size matrix and the aging pass when they ran, and its own section.
    pub fn from_advise(outcome: AdviseOutcome) -> ResultFile {
        let mut file = ResultFile::from_suite(outcome.suite);
        file.command = "advise".into();
        file.power_cut = outcome.power_cut;
        file.matrix = outcome.matrix;
        file.aging = outcome.aging;
        file.advise = Some(outcome.section);
        file
    }
}
