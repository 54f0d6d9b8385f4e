//! Whether a commit on a PostgreSQL server waits for a standby, read from
//! the server itself (`--pg URL`): `synchronous_standby_names`,
//! `synchronous_commit` and `pg_stat_replication`. Reading the view's
//! details (`sync_state`) needs `pg_read_all_stats`, which `pg_monitor`
//! grants: without it the answer would be a guess, so it is one line
//! naming the role to grant.

use postgres::Client;

use super::conn::{self, pg_error};
use crate::records::{CommitWait, PgReplication, PgStandbyRow, SyncMethod};
use crate::{Error, Result};

/// What the server at `url` (`--pg`) says of its replication.
pub fn of_url(url: &str) -> Result<PgReplication> {
    let config = conn::parse_url(url)?;
    let label = std::path::PathBuf::from(conn::redact(url));
    let mut client = conn::connect(&config, &label)?;
    read(&mut client, &label)
}

/// What the server's replication settings and view say.
pub fn read(client: &mut Client, label: &std::path::Path) -> Result<PgReplication> {
    let err = |what: &'static str| move |e| pg_error(label, what, e);
    let row = client
        .query_one(
            "SELECT current_user::text, \
             (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) \
             OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')",
            &[],
        )
        .map_err(err("cannot read the user's roles"))?;
    let (user, may_read): (String, Option<bool>) = (row.get(0), row.get(1));
    if may_read != Some(true) {
        return Err(Error::bad_input(
            label,
            format!(
                "user {user} may not read pg_stat_replication's sync_state, so whether a commit waits for a standby \
                 cannot be told: grant it pg_monitor (GRANT pg_monitor TO {user})"
            ),
        ));
    }
    let show = |client: &mut Client, name: &str| -> Result<String> {
        client.query_one(&format!("SHOW {name}"), &[]).map(|r| r.get(0)).map_err(err("cannot read the settings"))
    };
    let names = show(client, "synchronous_standby_names")?;
    let commit = show(client, "synchronous_commit")?;
    let standbys = client
        .query(
            "SELECT application_name::text, coalesce(state, ''), coalesce(sync_state, '') FROM pg_stat_replication \
             ORDER BY application_name",
            &[],
        )
        .map_err(err("cannot read pg_stat_replication"))?
        .into_iter()
        .map(|r| PgStandbyRow { name: r.get(0), state: r.get(1), sync_state: r.get(2) })
        .collect();
    Ok(judge(names, commit, standbys))
}

/// What a commit waits for, from the settings and the standbys the
/// primary sees.
pub fn judge(names: String, commit: String, standbys: Vec<PgStandbyRow>) -> PgReplication {
    let wait = match (parse_names(&names), commit.as_str()) {
        (None, _) => CommitWait::NoStandby {
            setting: "synchronous_standby_names".into(),
            why: "synchronous_standby_names is empty: a commit waits for this server's disk only".into(),
        },
        (Some(_), "off" | "local") => CommitWait::NoStandby {
            setting: "synchronous_commit".into(),
            why: format!("synchronous_commit = {commit}: a commit does not wait for the standbys named"),
        },
        (Some((method, count)), level) => {
            let waited = standbys
                .iter()
                .filter(|s| s.state == "streaming" && matches!(s.sync_state.as_str(), "sync" | "quorum"))
                .count();
            CommitWait::Standbys { method, count, level: level.to_string(), connected: waited as u32 }
        }
    };
    PgReplication { synchronous_standby_names: names, synchronous_commit: commit, standbys, wait }
}

/// `synchronous_standby_names`: `[FIRST] N (names)`, `ANY N (names)` or a
/// plain list (the first one); None when empty. The count is how many
/// standbys a commit waits for.
pub fn parse_names(text: &str) -> Option<(SyncMethod, u32)> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let upper = t.to_ascii_uppercase();
    let (method, rest) = if let Some(rest) = upper.strip_prefix("ANY ") {
        (SyncMethod::Quorum, rest.trim_start())
    } else if let Some(rest) = upper.strip_prefix("FIRST ") {
        (SyncMethod::Priority, rest.trim_start())
    } else {
        (SyncMethod::Priority, upper.as_str())
    };
    let count = match rest.split_once('(') {
        Some((n, _)) if !n.trim().is_empty() => n.trim().parse().unwrap_or(1),
        _ => 1,
    };
    (count > 0).then_some((method, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standby(name: &str, sync: &str) -> PgStandbyRow {
        PgStandbyRow { name: name.into(), state: "streaming".into(), sync_state: sync.into() }
    }

    #[test]
    fn the_names_say_how_many_standbys_a_commit_waits_for_and_how_they_are_chosen() {
        assert_eq!(parse_names(""), None);
        assert_eq!(parse_names("  "), None);
        assert_eq!(parse_names("*"), Some((SyncMethod::Priority, 1)));
        assert_eq!(parse_names("s1, s2"), Some((SyncMethod::Priority, 1)));
        assert_eq!(parse_names("2 (s1, s2, s3)"), Some((SyncMethod::Priority, 2)));
        assert_eq!(parse_names("FIRST 1 (s1, s2)"), Some((SyncMethod::Priority, 1)));
        assert_eq!(parse_names("any 2 (s1, s2, s3)"), Some((SyncMethod::Quorum, 2)));
        assert_eq!(parse_names("ANY 0 (s1)"), None, "waiting for none is no wait");
    }

    #[test]
    fn a_commit_waits_only_when_standbys_are_named_and_synchronous_commit_asks_for_them() {
        let none = judge(String::new(), "on".into(), vec![standby("s1", "async")]);
        assert!(none.wait.refusal().unwrap().contains("synchronous_standby_names"), "{:?}", none.wait);
        let local = judge("*".into(), "local".into(), vec![standby("s1", "sync")]);
        assert!(local.wait.refusal().unwrap().contains("synchronous_commit = local"));
        let write = judge("*".into(), "remote_write".into(), vec![standby("s1", "sync")]);
        assert!(write.wait.refusal().unwrap().contains("remote_write"), "not on the standby's disk");
        let on = judge("*".into(), "on".into(), vec![standby("s1", "sync")]);
        assert_eq!(on.wait.refusal(), None, "{:?}", on.wait);
        let apply = judge(
            "ANY 1 (s1, s2)".into(),
            "remote_apply".into(),
            vec![standby("s1", "quorum"), standby("s2", "quorum")],
        );
        assert_eq!(apply.wait.refusal(), None);
        let missing = judge("FIRST 2 (s1, s2)".into(), "on".into(), vec![standby("s1", "sync")]);
        assert!(missing.wait.refusal().unwrap().contains("1 of the 2"), "{:?}", missing.wait.refusal());
        assert!(
            on.wait.describe().contains("1 standby") && on.wait.describe().contains("on"),
            "{}",
            on.wait.describe()
        );
    }
}
