//! The `replicated` durability class: a write that returned survives a
//! power cut of every machine *and* the loss of any one machine, its
//! processes and its disk (docs/replication.md). Which candidates can meet
//! it ([`standing`]: every embedded store and the files are one machine),
//! and which of those did, from what machine losses did to them
//! ([`verdicts`]): only those are ranked. With `--no-power-cut` the
//! machine-loss facts are the documented table ([`documented_losses`]).

use super::section::CrashSource;
use super::Store;
use crate::engine::postgres::replication;
use crate::records::{CommitWait, ConfigId, EngineKind, EngineSettings, PgReplication, Replica};
use crate::studies::crashtest::loss::{MachineLossMethodResult, MachineLossSection};
use crate::{Error, Result};

/// Machine losses per layout an advice runs, and with `--quick`.
pub const LOSSES: u32 = 6;
pub const QUICK_LOSSES: u32 = crate::studies::crashtest::loss::QUICK_LOSSES;

/// The one reason every single-machine candidate is excluded.
pub const ONE_MACHINE: &str = "one machine";

/// How a candidate stands under the class before any loss.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its throwaway layout that keeps each write on two machines, to be
    /// judged by machine losses.
    Layout(ConfigId),
    /// The user's own server (`--pg URL`), whose commits wait for a
    /// standby's disk: from its settings, not measured (blobbench never
    /// loses a machine of a user's cluster).
    UsersServer(String),
    /// The user's own store (`--s3 URL`), whose replication cannot be
    /// read: its provider's documented promise, not measured.
    Documented(String),
    /// Cannot meet the class, and why.
    Excluded(String),
}

/// The layouts a machine-loss run of `stores` tests beside the
/// candidates' own: for each synchronous standby (bytea, large objects),
/// its asynchronous one, the negative control (excluded whatever it
/// shows: its commits never wait for the standby).
pub fn controls(standings: &[(Store, Standing)]) -> Vec<ConfigId> {
    standings
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Layout(ConfigId::Replicated(kind, Replica::SyncStandby)) => {
                Some(ConfigId::Replicated(*kind, Replica::AsyncStandby))
            }
            _ => None,
        })
        .collect()
}

/// What `store` can do under the class; `pg` is what the user's server
/// (`--pg URL`) says of its replication, `s3` the user's S3 endpoint
/// (`--s3 URL`), when given. PostgreSQL's candidate layout, bytea or
/// large objects, is its synchronous standby; S3's is Swift on three
/// hosts, SeaweedFS on two judged beside it ([`other_layouts`]).
pub fn standing(store: Store, pg: Option<&PgReplication>, s3: Option<&str>) -> Standing {
    match store {
        Store::Engine(kind @ (EngineKind::Postgres | EngineKind::PostgresLo)) => match pg {
            None => Standing::Layout(ConfigId::Replicated(kind, Replica::SyncStandby)),
            Some(r) => users_postgres(r),
        },
        Store::Engine(EngineKind::S3) => match s3 {
            None => Standing::Layout(ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts)),
            Some(url) => users_s3(url),
        },
        _ => Standing::Excluded(ONE_MACHINE.into()),
    }
}

/// What Amazon documents of a PUT to S3 (its storage classes other than
/// One Zone), the one provider whose promise is stated here.
pub const AWS_PROMISE: &str = "Amazon S3 stores an object across several availability zones (at least three) before a \
     PUT returns, in every storage class but S3 One Zone";

/// A user's S3 endpoint: nothing of its replication can be read through
/// the S3 API, so only a provider's documented promise can admit it.
fn users_s3(url: &str) -> Standing {
    let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default();
    let aws = host == "amazonaws.com" || host.ends_with(".amazonaws.com");
    if aws {
        Standing::Documented(format!("--s3 URL: its replication cannot be read through S3; {AWS_PROMISE}"))
    } else {
        Standing::Excluded(format!(
            "--s3 URL: the replication of {} cannot be read through S3, and no promise of it is documented here",
            if host.is_empty() { url } else { &host }
        ))
    }
}

/// The reason a replicated layout that keeps each write on two hosts, but
/// acknowledges it before any disk has it, fails the class.
pub fn fails_power_cut_half(m: ConfigId) -> String {
    format!(
        "fails the power-cut half of the class: a write returns before any host's disk has it ({}), so a power cut \
         of every host can lose it; it meets only the machine-loss half (each write on two hosts)",
        m.description()
    )
}

/// The layouts of the candidates' stores beside their candidate one, each
/// excluded before any loss: those whose write is never synced
/// (SeaweedFS on two hosts, beside Swift on three).
pub fn other_layouts(standings: &[(Store, Standing)]) -> Vec<Verdict> {
    let candidates: Vec<ConfigId> = standings
        .iter()
        .filter_map(|(_, s)| match s {
            Standing::Layout(m) => Some(*m),
            _ => None,
        })
        .collect();
    let engines: Vec<EngineKind> = candidates.iter().filter_map(|m| m.kv_params().map(|(k, _)| k)).collect::<Vec<_>>();
    ConfigId::all()
        .filter(|m| m.replica().is_some() && !candidates.contains(m) && !m.acknowledges_durability())
        .filter(|m| m.kv_params().is_some_and(|(k, _)| engines.contains(&k)))
        .map(|m| Verdict { name: m.name().into(), excluded: Some(fails_power_cut_half(m)), source: None })
        .collect()
}

/// A user's PostgreSQL: its commits must wait for a standby's disk.
fn users_postgres(r: &PgReplication) -> Standing {
    match &r.wait {
        CommitWait::NoStandby { why, .. } => Standing::Excluded(format!("--pg URL: {why}")),
        CommitWait::Standbys { level, .. } if level == "remote_write" => Standing::Excluded(format!(
            "--pg URL: synchronous_commit = remote_write: a commit waits for the standby's memory, not its disk ({})",
            r.wait.describe()
        )),
        CommitWait::Standbys { count, connected, .. } if connected < count => Standing::Excluded(format!(
            "--pg URL: synchronous_standby_names = '{}' asks for {count} standby(s), {connected} streaming as \
             synchronous now",
            r.synchronous_standby_names
        )),
        CommitWait::Standbys { .. } => Standing::UsersServer(format!("--pg URL: {}", r.wait.describe())),
    }
}

/// What the user's server says of its replication, when `stores` holds
/// PostgreSQL and `--pg URL` is given.
pub fn read_users_postgres(stores: &[Store], settings: &EngineSettings) -> Result<Option<PgReplication>> {
    match &settings.pg.url {
        Some(url)
            if [EngineKind::Postgres, EngineKind::PostgresLo].iter().any(|&k| stores.contains(&Store::Engine(k))) =>
        {
            replication::of_url(url).map(Some)
        }
        _ => Ok(None),
    }
}

/// Every candidate's standing; an error, one line, when none can meet the
/// class, naming each one's reason and the engines that can.
pub fn gate(stores: &[Store], pg: Option<&PgReplication>, s3: Option<&str>) -> Result<Vec<(Store, Standing)>> {
    let standings: Vec<(Store, Standing)> = stores.iter().map(|&s| (s, standing(s, pg, s3))).collect();
    if standings.iter().any(|(_, s)| !matches!(s, Standing::Excluded(_))) {
        return Ok(standings);
    }
    let local: Vec<&str> = standings
        .iter()
        .filter(|(_, s)| *s == Standing::Excluded(ONE_MACHINE.into()))
        .map(|(store, _)| store.name())
        .collect();
    let mut reasons = Vec::new();
    if !local.is_empty() {
        reasons.push(format!("{}: {ONE_MACHINE} each", local.join(", ")));
    }
    for (store, s) in &standings {
        match s {
            Standing::Excluded(why) if why != ONE_MACHINE => reasons.push(format!("{store}: {why}")),
            _ => {}
        }
    }
    Err(Error::invalid(format!(
        "--durability replicated: no candidate keeps a write through the loss of a machine ({}); the engines that \
         can: postgres or postgres-lo, with a throwaway primary and synchronous standby (--engines postgres) or your \
         own server whose commits wait for a standby (--pg URL); s3, on a throwaway Swift with three storage hosts \
         (--engines s3)",
        reasons.join("; ")
    )))
}

/// A candidate's verdict under the class: ranked, or excluded and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The candidate or control layout's name.
    pub name: String,
    /// None: it meets the class; else the reason it is excluded.
    pub excluded: Option<String>,
    /// Where the machine-loss facts it was judged by came from (None:
    /// judged before any loss, by its standing).
    pub source: Option<CrashSource>,
}

/// The verdicts: each candidate from its standing and, for a layout, what
/// machine losses did to it (`source`: a quick run, or the documented
/// table; a layout not measured, or one that lost an acknowledged write,
/// is excluded); then each control's, then the candidates' stores' other
/// layouts ([`other_layouts`]).
pub fn verdicts(
    standings: &[(Store, Standing)],
    losses: Option<&MachineLossSection>,
    source: CrashSource,
) -> Vec<Verdict> {
    let measured = |m: ConfigId| losses.and_then(|l| l.methods.iter().find(|r| r.method == m.name()));
    let layout = |m: ConfigId| match measured(m) {
        None => Some("its machine losses were not measured".to_string()),
        Some(r) if !r.promises_survival => {
            Some(format!("{}: a commit does not wait for a second machine (the negative control)", r.method))
        }
        Some(r) if r.failed.is_some() => Some(format!(
            "{}: its machine-loss test failed after {} losses: {}",
            r.method,
            r.losses,
            r.failed.as_deref().unwrap_or_default()
        )),
        Some(r) if r.losses == 0 => Some(format!("{}: no machine loss completed", r.method)),
        Some(r) if r.lost_acknowledged > 0 => Some(format!(
            "{} lost {} acknowledged write(s) over {} machine losses",
            r.method, r.lost_acknowledged, r.losses
        )),
        Some(_) => None,
    };
    let mut v: Vec<Verdict> = standings
        .iter()
        .map(|(store, s)| {
            let (excluded, source) = match s {
                Standing::Layout(m) => (layout(*m), Some(source)),
                Standing::UsersServer(_) => (None, None),
                Standing::Documented(_) => (None, Some(CrashSource::Documented)),
                Standing::Excluded(why) => (Some(why.clone()), None),
            };
            Verdict { name: store.name().to_string(), excluded, source }
        })
        .collect();
    let control = |m: ConfigId| Verdict { name: m.name().to_string(), excluded: layout(m), source: Some(source) };
    v.extend(controls(standings).into_iter().map(control));
    v.extend(other_layouts(standings));
    v
}

/// The layouts a ranked candidate stands for: those whose cost against
/// the same store alone is measured.
pub fn ranked_layouts(standings: &[(Store, Standing)], verdicts: &[Verdict]) -> Vec<ConfigId> {
    standings
        .iter()
        .filter_map(|(store, s)| match s {
            Standing::Layout(m) => Some((store.name(), *m)),
            _ => None,
        })
        .filter(|(name, _)| verdicts.iter().any(|v| v.name == *name && v.excluded.is_none()))
        .map(|(_, m)| m)
        .collect()
}

/// What machine losses did to each replicated layout on the development
/// machine (docs/replication.md, *Measured here*): the facts
/// `--no-power-cut` judges the candidates by, marked documented.
pub fn documented_losses() -> MachineLossSection {
    let row = |m: ConfigId, losses: u32, acknowledged: u64| MachineLossMethodResult {
        method: m.name().into(),
        description: m.description().into(),
        promises_survival: m.replica().is_some_and(Replica::keeps_two_copies),
        losses,
        acknowledged,
        ..MachineLossMethodResult::default()
    };
    let pg = |r| ConfigId::Replicated(EngineKind::Postgres, r);
    let s3 = |r| ConfigId::Replicated(EngineKind::S3, r);
    MachineLossSection {
        losses_per_method: 20,
        methods: vec![
            row(pg(Replica::SyncStandby), 20, 689),
            // Its 20 losses did not complete there: never ranked (the control).
            row(pg(Replica::AsyncStandby), 0, 0),
            row(s3(Replica::SwiftThreeHosts), 20, 148),
            row(s3(Replica::SeaweedfsTwoHosts), 18, 547),
        ],
        ..MachineLossSection::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{PgStandbyRow, SyncMethod};
    use crate::studies::crashtest::loss::MachineLossMethodResult;

    fn users(names: &str, commit: &str, sync_state: &str) -> PgReplication {
        let row = PgStandbyRow { name: "s1".into(), state: "streaming".into(), sync_state: sync_state.into() };
        replication::judge(names.into(), commit.into(), vec![row])
    }

    #[test]
    fn only_local_engines_is_one_line_naming_the_engine_that_can() {
        let stores = [Store::Sqlite, Store::FilesInPlace, Store::Engine(EngineKind::Lmdb)];
        let e = gate(&stores, None, None).unwrap_err().to_string();
        assert!(e.contains("sqlite, files-inplace, lmdb: one machine each"), "{e}");
        assert!(e.contains("--engines postgres") && e.contains("--pg URL") && !e.contains('\n'), "{e}");
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::Postgres)], None, None).unwrap();
        assert_eq!(standings[0].1, Standing::Excluded(ONE_MACHINE.into()));
        let sync = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
        assert_eq!(standings[1].1, Standing::Layout(sync));
        assert_eq!(controls(&standings), [ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby)]);
    }

    #[test]
    fn a_users_server_without_a_synchronous_standby_is_excluded_naming_the_setting() {
        let pg = Store::Engine(EngineKind::Postgres);
        let none = users("", "on", "async");
        let e = gate(&[Store::Sqlite, pg], Some(&none), None).unwrap_err().to_string();
        assert!(e.contains("postgres: --pg URL: synchronous_standby_names is empty"), "{e}");
        let Standing::Excluded(why) = standing(pg, Some(&users("s1", "off", "sync")), None) else { panic!() };
        assert!(why.contains("synchronous_commit = off"), "{why}");
        let Standing::Excluded(why) = standing(pg, Some(&users("s1", "remote_write", "sync")), None) else { panic!() };
        assert!(why.contains("not its disk"), "{why}");
        let Standing::Excluded(why) = standing(pg, Some(&users("FIRST 2 (s1, s2)", "on", "sync")), None) else {
            panic!()
        };
        assert!(why.contains("1 streaming"), "{why}");
        assert!(matches!(standing(pg, Some(&users("s1", "on", "sync")), None), Standing::UsersServer(_)));
        let quorum = users("ANY 1 (s1)", "remote_apply", "quorum");
        assert!(matches!(quorum.wait, CommitWait::Standbys { method: SyncMethod::Quorum, .. }));
        assert!(matches!(standing(pg, Some(&quorum), None), Standing::UsersServer(_)));
    }

    #[test]
    fn only_a_layout_whose_losses_kept_every_acknowledged_write_is_ranked() {
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::Postgres)], None, None).unwrap();
        let row = |method: &str, promises: bool, lost: u64| MachineLossMethodResult {
            method: method.into(),
            promises_survival: promises,
            losses: 20,
            lost_acknowledged: lost,
            ..MachineLossMethodResult::default()
        };
        let mut section = MachineLossSection {
            methods: vec![row("postgres-sync-standby", true, 0), row("postgres-async-standby", false, 0)],
            ..MachineLossSection::default()
        };
        let v = verdicts(&standings, Some(&section), CrashSource::Measured);
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["sqlite", "postgres", "postgres-async-standby"]);
        assert_eq!(v[0].excluded.as_deref(), Some(ONE_MACHINE));
        assert_eq!(v[1].excluded, None, "the synchronous standby kept every write: ranked");
        assert!(v[2].excluded.as_deref().unwrap().contains("negative control"), "even when it lost none");
        section.methods[0].lost_acknowledged = 2;
        let v = verdicts(&standings, Some(&section), CrashSource::Measured);
        assert!(v[1].excluded.as_deref().unwrap().contains("lost 2 acknowledged write(s) over 20"), "{v:?}");
        assert!(verdicts(&standings, None, CrashSource::Measured)[1]
            .excluded
            .as_deref()
            .unwrap()
            .contains("not measured"));
    }

    /// PostgreSQL's large objects stand on their own synchronous standby,
    /// with their own asynchronous one as the control, as bytea does.
    #[test]
    fn large_objects_are_judged_on_their_synchronous_standby_with_their_own_control() {
        let lo = Store::Engine(EngineKind::PostgresLo);
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::Postgres), lo], None, None).unwrap();
        let sync = ConfigId::Replicated(EngineKind::PostgresLo, Replica::SyncStandby);
        assert_eq!(standings[2].1, Standing::Layout(sync), "not one machine: a standby layout exists");
        let controls: Vec<&str> = controls(&standings).iter().map(|m| m.name()).collect();
        assert_eq!(controls, ["postgres-async-standby", "postgres-lo-async-standby"]);
        let Standing::Excluded(why) = standing(lo, Some(&users("", "on", "async")), None) else { panic!() };
        assert!(why.contains("synchronous_standby_names"), "a user's server judged as for bytea: {why}");
        let row = |m: &str, promises: bool| MachineLossMethodResult {
            method: m.into(),
            promises_survival: promises,
            losses: 3,
            ..MachineLossMethodResult::default()
        };
        let section = MachineLossSection {
            methods: vec![row("postgres-lo-sync-standby", true), row("postgres-lo-async-standby", false)],
            ..MachineLossSection::default()
        };
        let v = verdicts(&standings[2..], Some(&section), CrashSource::Measured);
        assert_eq!((v[0].name.as_str(), v[0].excluded.as_deref()), ("postgres-lo", None), "{v:?}");
        assert!(v[1].excluded.as_deref().unwrap().contains("negative control"), "{v:?}");
        assert_eq!(ranked_layouts(&standings[2..], &v), [sync]);
    }

    /// S3's candidate is Swift on three hosts; SeaweedFS on two is
    /// excluded beside it, its reason naming the half of the class it fails.
    #[test]
    fn s3_is_judged_on_swift_and_seaweedfs_fails_the_power_cut_half() {
        let s3 = Store::Engine(EngineKind::S3);
        let standings = gate(&[Store::Sqlite, s3], None, None).unwrap();
        let swift = ConfigId::Replicated(EngineKind::S3, Replica::SwiftThreeHosts);
        assert_eq!(standings[1].1, Standing::Layout(swift));
        assert!(controls(&standings).is_empty(), "no control without PostgreSQL");
        let row = |m: ConfigId| MachineLossMethodResult {
            method: m.name().into(),
            promises_survival: true,
            losses: 3,
            ..MachineLossMethodResult::default()
        };
        let section = MachineLossSection { methods: vec![row(swift)], ..MachineLossSection::default() };
        let v = verdicts(&standings, Some(&section), CrashSource::Measured);
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["sqlite", "s3", "s3-seaweedfs-2hosts"]);
        assert_eq!(v[1].excluded, None, "Swift kept every write: ranked");
        let why = v[2].excluded.as_deref().unwrap();
        assert!(why.contains("fails the power-cut half") && why.contains("not synced"), "{why}");
        assert!(why.contains("machine-loss half"), "{why}");
        assert_eq!(ranked_layouts(&standings, &v), [swift]);
    }

    /// `--s3 URL`: nothing of its replication can be read; Amazon's
    /// documented promise admits it, marked documented; any other
    /// endpoint is excluded, saying why.
    #[test]
    fn a_users_s3_stands_on_a_documented_promise_or_is_excluded() {
        let s3 = Store::Engine(EngineKind::S3);
        let aws = standing(s3, None, Some("https://s3.eu-west-1.amazonaws.com"));
        let Standing::Documented(promise) = &aws else { panic!("{aws:?}") };
        assert!(promise.contains("cannot be read") && promise.contains("availability zones"), "{promise}");
        let standings = vec![(s3, aws.clone())];
        let v = verdicts(&standings, None, CrashSource::Measured);
        assert_eq!((v[0].excluded.as_ref(), v[0].source), (None, Some(CrashSource::Documented)));
        assert!(ranked_layouts(&standings, &v).is_empty(), "nothing of the user's store is measured");
        let Standing::Excluded(why) = standing(s3, None, Some("http://minio.internal:9000")) else { panic!() };
        assert!(why.contains("minio.internal") && why.contains("cannot be read"), "{why}");
        let e = gate(&[Store::Sqlite, s3], None, Some("http://minio.internal:9000")).unwrap_err().to_string();
        assert!(e.contains("s3: --s3 URL") && e.contains("--engines s3"), "{e}");
    }

    /// `--no-power-cut`: the candidates judged by the documented table,
    /// each verdict marked documented; the negative control still excluded.
    #[test]
    fn the_documented_table_judges_every_layout_and_marks_it() {
        let stores = [Store::Engine(EngineKind::Postgres), Store::Engine(EngineKind::S3)];
        let standings = gate(&stores, None, None).unwrap();
        let table = documented_losses();
        let v = verdicts(&standings, Some(&table), CrashSource::Documented);
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["postgres", "s3", "postgres-async-standby", "s3-seaweedfs-2hosts"]);
        assert!(v[..2].iter().all(|v| v.excluded.is_none() && v.source == Some(CrashSource::Documented)), "{v:?}");
        assert!(v[2].excluded.as_deref().unwrap().contains("negative control"), "{v:?}");
        assert!(v[3].excluded.as_deref().unwrap().contains("power-cut half"), "{v:?}");
        for m in &table.methods {
            assert!(ConfigId::parse(&m.method).and_then(ConfigId::replica).is_some(), "{}", m.method);
        }
    }
}
