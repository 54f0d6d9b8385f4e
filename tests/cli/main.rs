//! Every end-to-end test, as one test binary: the crate and its
//! dependencies link once, not once per file (issue 37). One module per
//! guarantee area; shared helpers in `tests/common/`.

#[path = "../common/mod.rs"]
mod common;

mod advise;
mod aging;
mod bad_input;
mod clients;
mod concurrency;
mod crashtest;
mod engines;
mod fjall_powercut;
mod kvtest;
mod machine_loss;
mod matrix;
mod postgres;
mod powercut;
mod process_state;
mod report;
mod s3;
mod s3_bucket;
mod s3_profiles;
mod s3_throwaway;
mod suite;
mod workload;
