//! The `replicated` durability class: a write that returned survives a
//! power cut of every machine *and* the loss of any one machine, its
//! processes and its disk (docs/replication.md). Which candidates can meet
//! it ([`standing`]: every embedded store and the files are one machine),
//! and which of those did, from what machine losses did to them
//! ([`verdicts`]): only those are ranked.

use super::Store;
use crate::engine::postgres::replication;
use crate::records::{CommitWait, ConfigId, EngineKind, EngineSettings, PgReplication, Replica};
use crate::studies::crashtest::loss::MachineLossSection;
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
    /// Cannot meet the class, and why.
    Excluded(String),
}

/// The layouts a machine-loss run of `stores` tests beside the
/// candidates' own: the asynchronous standby, the negative control
/// (excluded whatever it shows: its commits never wait for the standby).
pub fn controls(standings: &[(Store, Standing)]) -> Vec<ConfigId> {
    let pg = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
    let has_pg = standings.iter().any(|(_, s)| *s == Standing::Layout(pg));
    if has_pg {
        vec![ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby)]
    } else {
        Vec::new()
    }
}

/// What `store` can do under the class; `pg` is what the user's server
/// (`--pg URL`) says of its replication, when one is given.
pub fn standing(store: Store, pg: Option<&PgReplication>) -> Standing {
    match store {
        Store::Engine(EngineKind::Postgres) => match pg {
            None => Standing::Layout(ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby)),
            Some(r) => users_postgres(r),
        },
        Store::Engine(EngineKind::S3) => Standing::Excluded(
            "its replicated layouts (Swift on three hosts, SeaweedFS on two) are not measured by this build".into(),
        ),
        _ => Standing::Excluded(ONE_MACHINE.into()),
    }
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
        Some(url) if stores.contains(&Store::Engine(EngineKind::Postgres)) => replication::of_url(url).map(Some),
        _ => Ok(None),
    }
}

/// Every candidate's standing; an error, one line, when none can meet the
/// class, naming each one's reason and the engines that can.
pub fn gate(stores: &[Store], pg: Option<&PgReplication>) -> Result<Vec<(Store, Standing)>> {
    let standings: Vec<(Store, Standing)> = stores.iter().map(|&s| (s, standing(s, pg))).collect();
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
        "--durability replicated: no candidate keeps a write through the loss of a machine ({}); the engine that can: \
         postgres, with a throwaway primary and synchronous standby (--engines postgres) or your own server whose \
         commits wait for a standby (--pg URL)",
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
}

/// The verdicts: each candidate from its standing and, for a layout, what
/// machine losses did to it (a layout not measured, or one that lost an
/// acknowledged write, is excluded); then each control's.
pub fn verdicts(standings: &[(Store, Standing)], losses: Option<&MachineLossSection>) -> Vec<Verdict> {
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
        .map(|(store, s)| Verdict {
            name: store.name().to_string(),
            excluded: match s {
                Standing::Layout(m) => layout(*m),
                Standing::UsersServer(_) => None,
                Standing::Excluded(why) => Some(why.clone()),
            },
        })
        .collect();
    v.extend(controls(standings).into_iter().map(|m| Verdict { name: m.name().to_string(), excluded: layout(m) }));
    v
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
        let e = gate(&stores, None).unwrap_err().to_string();
        assert!(e.contains("sqlite, files-inplace, lmdb: one machine each"), "{e}");
        assert!(e.contains("--engines postgres") && e.contains("--pg URL") && !e.contains('\n'), "{e}");
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::Postgres)], None).unwrap();
        assert_eq!(standings[0].1, Standing::Excluded(ONE_MACHINE.into()));
        let sync = ConfigId::Replicated(EngineKind::Postgres, Replica::SyncStandby);
        assert_eq!(standings[1].1, Standing::Layout(sync));
        assert_eq!(controls(&standings), [ConfigId::Replicated(EngineKind::Postgres, Replica::AsyncStandby)]);
    }

    #[test]
    fn a_users_server_without_a_synchronous_standby_is_excluded_naming_the_setting() {
        let pg = Store::Engine(EngineKind::Postgres);
        let none = users("", "on", "async");
        let e = gate(&[Store::Sqlite, pg], Some(&none)).unwrap_err().to_string();
        assert!(e.contains("postgres: --pg URL: synchronous_standby_names is empty"), "{e}");
        let Standing::Excluded(why) = standing(pg, Some(&users("s1", "off", "sync"))) else { panic!() };
        assert!(why.contains("synchronous_commit = off"), "{why}");
        let Standing::Excluded(why) = standing(pg, Some(&users("s1", "remote_write", "sync"))) else { panic!() };
        assert!(why.contains("not its disk"), "{why}");
        let Standing::Excluded(why) = standing(pg, Some(&users("FIRST 2 (s1, s2)", "on", "sync"))) else { panic!() };
        assert!(why.contains("1 streaming"), "{why}");
        assert!(matches!(standing(pg, Some(&users("s1", "on", "sync"))), Standing::UsersServer(_)));
        let quorum = users("ANY 1 (s1)", "remote_apply", "quorum");
        assert!(matches!(quorum.wait, CommitWait::Standbys { method: SyncMethod::Quorum, .. }));
        assert!(matches!(standing(pg, Some(&quorum)), Standing::UsersServer(_)));
    }

    #[test]
    fn only_a_layout_whose_losses_kept_every_acknowledged_write_is_ranked() {
        let standings = gate(&[Store::Sqlite, Store::Engine(EngineKind::Postgres)], None).unwrap();
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
        let v = verdicts(&standings, Some(&section));
        let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["sqlite", "postgres", "postgres-async-standby"]);
        assert_eq!(v[0].excluded.as_deref(), Some(ONE_MACHINE));
        assert_eq!(v[1].excluded, None, "the synchronous standby kept every write: ranked");
        assert!(v[2].excluded.as_deref().unwrap().contains("negative control"), "even when it lost none");
        section.methods[0].lost_acknowledged = 2;
        let v = verdicts(&standings, Some(&section));
        assert!(v[1].excluded.as_deref().unwrap().contains("lost 2 acknowledged write(s) over 20"), "{v:?}");
        assert!(verdicts(&standings, None)[1].excluded.as_deref().unwrap().contains("not measured"));
    }
}
