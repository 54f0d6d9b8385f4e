//! Result files from what each command measured: the library builds them,
//! so every front end writes the same file for the same measurement.

use super::ResultFile;
use crate::studies::aging::AgingOutcome;
use crate::studies::suite::SuiteOutcome;

impl ResultFile {
    /// The result file of a `suite`.
    pub fn from_suite(outcome: SuiteOutcome) -> ResultFile {
        let mut file = ResultFile::new("suite", outcome.environment);
        file.complete = outcome.complete;
        file.dataset = Some(outcome.spec);
        file.experiments = outcome.experiments;
        file.disk_usage = outcome.disk_usage;
        file.notes = outcome.notes;
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
}
