//! `--rounds` and `--budget`: how long a comparison's interleaved rounds go
//! on, shared by every command that compares arms.

use std::time::Duration;

use clap::Args;

use blobbench::measure::rounds::RoundsPlan;
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
    /// `plan` with what was given on the command line. A count given alone
    /// is the number of rounds asked for: the default budget does not cut
    /// it short, so the count never depends on the machine's speed.
    pub fn apply(&self, plan: RoundsPlan) -> RoundsPlan {
        let budget = match (self.budget, self.rounds) {
            (Some(b), _) => Some(b),
            (None, Some(_)) => None,
            (None, None) => plan.budget,
        };
        RoundsPlan { max_rounds: self.rounds.unwrap_or(plan.max_rounds), budget, ..plan }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_given_alone_is_not_cut_short_by_the_default_budget() {
        let plan =
            RoundsPlan { target: 0.05, seed: 1, latency: false, ..RoundsPlan::new(20, Some(Duration::from_secs(4))) };
        let args = |rounds, budget| RoundsArgs { rounds, budget };
        let ten = Some(Duration::from_secs(10));
        assert_eq!(args(None, None).apply(plan), plan);
        assert_eq!(args(Some(3), None).apply(plan), RoundsPlan { max_rounds: 3, budget: None, ..plan });
        assert_eq!(args(Some(3), ten).apply(plan), RoundsPlan { max_rounds: 3, budget: ten, ..plan });
        assert_eq!(args(None, ten).apply(plan), RoundsPlan { budget: ten, ..plan });
    }
}
