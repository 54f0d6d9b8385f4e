//! The words of `advise --durability replicated`, the notes its page and
//! terminal show: which candidates meet the class and why the others do
//! not, each verdict's source marked (*documented* when it rests on the
//! documented table or a provider's promise rather than on this run), and
//! what replication costs per write against the same store alone.

use crate::measure::paired::PairedRatio;
use crate::records::{ConfigId, Replica};
use crate::studies::advise::replicated::{Standing, Verdict};
use crate::studies::advise::replication_cost::{CostAt, ReplicationCost};
use crate::studies::advise::{CrashSource, Store};

use super::super::super::interval::Ratio;

/// The marker of a fact this run did not measure.
pub const DOCUMENTED: &str = "*documented*";

/// Every note, in the page's order: the class and what meets it, the
/// users' own stores, each exclusion, then the cost of replication.
pub fn notes(standings: &[(Store, Standing)], verdicts: &[Verdict], costs: &[ReplicationCost]) -> Vec<String> {
    let ranked: Vec<&str> = verdicts.iter().filter(|v| v.excluded.is_none()).map(|v| v.name.as_str()).collect();
    let mut notes =
        vec![format!(
        "advise --durability replicated (a write that returned survives a power cut of every machine and the loss of \
         any one): {}",
        if ranked.is_empty() { "no candidate meets it".to_string() } else { format!("meets it: {}", ranked.join(", ")) }
    )];
    for (store, s) in standings {
        match s {
            Standing::UsersServer(how) => notes.push(format!("{store}: {how} (the server's settings, not measured)")),
            Standing::Documented(promise) => notes.push(format!("{store}: {promise} ({DOCUMENTED}, not measured)")),
            Standing::Layout(_) | Standing::Excluded(_) => {}
        }
    }
    let users = |name: &str| standings.iter().any(|(s, st)| s.name() == name && !matches!(st, Standing::Layout(_)));
    notes.extend(verdicts.iter().filter(|v| !(v.excluded.is_none() && users(&v.name))).filter_map(verdict_line));
    notes.extend(cost_lines(costs));
    notes
}

/// A verdict's line: an exclusion and its reason, or a layout admitted by
/// the documented table; None for a layout whose losses here admitted it
/// (the first note names it).
fn verdict_line(v: &Verdict) -> Option<String> {
    let table = "the machine-loss table of docs/replication.md (--no-power-cut), not measured here";
    // A reason that starts with the layout's name says it once.
    let excluded = v.excluded.as_deref().map(|why| why.strip_prefix(&format!("{}: ", v.name)).unwrap_or(why));
    match (excluded, v.source) {
        (Some(why), Some(CrashSource::Documented)) => {
            Some(format!("{}: excluded, {why} ({DOCUMENTED}: {table})", v.name))
        }
        (Some(why), _) => Some(format!("{}: excluded, {why}", v.name)),
        (None, Some(CrashSource::Documented)) => {
            Some(format!("{}: no acknowledged write lost in machine losses ({DOCUMENTED}: {table})", v.name))
        }
        (None, _) => None,
    }
}

/// The same store alone, as the cost line names it.
fn alone_words(layout: ConfigId) -> &'static str {
    match layout.replica() {
        Some(Replica::SyncStandby | Replica::AsyncStandby) => "PostgreSQL alone, one server",
        Some(Replica::SwiftThreeHosts) => "Swift on one host, its three replicas on one object server",
        Some(Replica::SeaweedfsTwoHosts) => "SeaweedFS alone, one copy",
        None => "the same store alone",
    }
}

/// Each layout's cost, then the one sentence saying what it is a floor of.
pub fn cost_lines(costs: &[ReplicationCost]) -> Vec<String> {
    let Some(first) = costs.first() else { return Vec::new() };
    let mut lines: Vec<String> = costs.iter().map(cost_line).collect();
    let link = if first.veth { "a veth link between network namespaces" } else { "loopback" };
    lines.push(format!(
        "On one machine the hosts are joined by {link}, with none of a real network's latency: the cost above is a \
         floor; the real figure is your own cluster's (blobbench run --update with --pg URL, or on a dataset exported \
         with --s3 URL)."
    ));
    lines
}

/// "postgres-sync-standby against postgres-durable (...): 1.21x ...".
fn cost_line(c: &ReplicationCost) -> String {
    let at: Vec<String> = c.at.iter().map(at_words).collect();
    let on = match c.on_loss_cluster {
        true => ", the replicated side on the cluster its machine losses ran on, whole again after them",
        false => "",
    };
    format!(
        "What replication costs: {} against {} ({}{on}), time per acknowledged write, paired in interleaved rounds: {}",
        c.layout,
        c.alone,
        alone_words(c.layout),
        at.join("; ")
    )
}

/// One client count's cost: the paired ratio and its interval, and both
/// medians.
fn at_words(a: &CostAt) -> String {
    let who = match a.clients {
        1 => "1 client".to_string(),
        n => format!("{n} clients (the time per write over all of them: the inverse of throughput)"),
    };
    let ratio = match &a.ratio {
        Some(p) => ratio_words(p),
        None => format!("{:.2}x, no interval", a.replicated_us / a.alone_us.max(f64::MIN_POSITIVE)),
    };
    format!("{ratio} at {who} ({:.0} against {:.0} us)", a.replicated_us, a.alone_us)
}

/// "1.21x, interval 1.05-1.40 (95% paired, 6 rounds)", saying when the
/// interval holds 1.
fn ratio_words(p: &PairedRatio) -> String {
    let r = Ratio::paired(p);
    let tie = if p.rounds >= 2 && p.spans_one() { ", no cost told apart from the noise" } else { "" };
    format!("{:.2}x, interval {}{tie}", p.value, r.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::EngineKind;
    use crate::studies::advise::replicated::{documented_losses, gate, standing, verdicts};

    fn paired(value: f64, low: f64, high: f64) -> PairedRatio {
        PairedRatio { value, low, high, rounds: 6, coverage_pct: 96.9, outliers: Vec::new() }
    }

    #[test]
    fn seaweedfs_is_excluded_naming_the_power_cut_half_it_fails() {
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::S3)], None, None).unwrap();
        let v = verdicts(&standings, None, CrashSource::Measured);
        let lines = notes(&standings, &v, &[]);
        let weed = lines.iter().find(|n| n.starts_with("s3-seaweedfs-2hosts: excluded")).expect("a line of its own");
        assert!(weed.contains("power-cut half") && weed.contains("power cut of every host"), "{weed}");
        assert!(lines.iter().any(|n| n == "sqlite: excluded, one machine"), "{lines:?}");
    }

    #[test]
    fn a_documented_promise_or_table_is_marked_documented() {
        let s3 = Store::Engine(EngineKind::S3);
        let standings = vec![(s3, standing(s3, None, Some("https://s3.us-east-1.amazonaws.com")))];
        let v = verdicts(&standings, None, CrashSource::Measured);
        let lines = notes(&standings, &v, &[]);
        assert!(lines[0].ends_with("meets it: s3"), "{lines:?}");
        let promise = lines.iter().find(|n| n.contains("availability zones")).expect("the promise");
        assert!(promise.contains("cannot be read") && promise.contains("*documented*, not measured"), "{promise}");
        // --no-power-cut: every layout's verdict rests on the table.
        let pg = Store::Engine(EngineKind::Postgres);
        let standings = gate(&[pg], None, None).unwrap();
        let v = verdicts(&standings, Some(&documented_losses()), CrashSource::Documented);
        let lines = notes(&standings, &v, &[]);
        let pg_line = lines.iter().find(|n| n.starts_with("postgres: ")).expect("postgres's line");
        assert!(pg_line.contains("*documented*") && pg_line.contains("not measured here"), "{pg_line}");
        let control = lines.iter().find(|n| n.starts_with("postgres-async-standby: excluded")).unwrap();
        assert!(control.contains("*documented*"), "{control}");
        assert_eq!(control.matches("postgres-async-standby").count(), 1, "named once: {control}");
    }

    #[test]
    fn the_cost_is_stated_with_its_interval_and_said_to_be_a_floor() {
        let layout = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
        let cost = ReplicationCost {
            layout,
            alone: ConfigId::Durable(EngineKind::Postgres),
            veth: true,
            on_loss_cluster: true,
            at: vec![
                CostAt { clients: 1, replicated_us: 1210.0, alone_us: 1000.0, ratio: Some(paired(1.21, 1.05, 1.40)) },
                CostAt { clients: 8, replicated_us: 300.0, alone_us: 310.0, ratio: Some(paired(0.97, 0.90, 1.08)) },
            ],
            rounds_id: "replication-cost/postgres-sync-standby".into(),
        };
        let lines = cost_lines(std::slice::from_ref(&cost));
        assert_eq!(lines.len(), 2, "{lines:?}");
        let l = &lines[0];
        assert!(l.contains("postgres-sync-standby against postgres-durable (PostgreSQL alone"), "{l}");
        assert!(l.contains("on the cluster its machine losses ran on"), "{l}");
        assert!(
            l.contains("1.21x, interval 1.05-1.40 (95% paired, 6 rounds) at 1 client (1210 against 1000 us)"),
            "{l}"
        );
        assert!(l.contains("0.97x, interval 0.90-1.08 (95% paired, 6 rounds), no cost told apart"), "{l}");
        assert!(l.contains("at 8 clients"), "{l}");
        let floor = &lines[1];
        assert!(floor.contains("veth") && floor.contains("floor"), "{floor}");
        assert!(floor.contains("--pg URL") && floor.contains("--s3 URL"), "{floor}");
        let loopback = cost_lines(&[ReplicationCost { veth: false, ..cost }]);
        assert!(loopback[1].contains("joined by loopback"), "{loopback:?}");
        assert!(cost_lines(&[]).is_empty(), "no cost measured: no floor sentence either");
    }
}
