//! `--rounds` and `--budget`: how long a comparison's interleaved rounds go
//! on, shared by every command that compares arms.

use std::time::Duration;

use clap::Args;

use blobbench::studies::context::RoundsAsked;
use blobbench::util::units;

#[derive(Debug, Args, Clone, Copy)]
pub struct RoundsArgs {
    /// Most rounds; each runs every arm once, in a shuffled order. Rounds
    /// stop earlier once every compared pair is within +/-5%, or when the
    /// budget is spent; given without --budget, no time budget applies
    /// [default: suite 30; matrix 20 per cell; aging 12 per age, 4 with --quick; concurrency 3 per point and 20 for the blob readers] (--repeat is the same).
    #[arg(long, alias = "repeat", value_parser = rounds_count, value_name = "N")]
    pub rounds: Option<u32>,
    /// Time the rounds may take (warm-up included; building the datasets
    /// is not), e.g. 90s, 5m. A budget shorter than one round still runs
    /// one round, with a warning. Without it, each command's default
    /// budget applies, unless --rounds is given.
    #[arg(long, allow_hyphen_values = true, value_parser = units::duration, value_name = "DURATION")]
    pub budget: Option<Duration>,
}

fn rounds_count(s: &str) -> Result<u32, units::UnitError> {
    let v: u32 = units::parse_at_least(s, 1, "--rounds")?;
    if v > 10_000 {
        return Err(units::UnitError::from(format!("--rounds {v} is absurd (at most 10000)")));
    }
    Ok(v)
}

impl RoundsArgs {
    /// The rounds asked for on the command line, on top of each study's
    /// own plan (`RoundsAsked::apply`: a count given alone is not cut
    /// short by the default budget).
    pub fn asked(&self) -> RoundsAsked {
        RoundsAsked { max_rounds: self.rounds, budget: self.budget, least_rounds: None }
    }
}
