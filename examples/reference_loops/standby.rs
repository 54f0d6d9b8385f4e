//! PostgreSQL with a synchronous standby (issue 48's reference):
//!
//!   reference_loops standby URL N WINDOW_MS [threads|processes]
//!
//! First checks, through the `postgres` crate, that a commit on the server
//! at URL waits for a standby: `synchronous_standby_names` is set, and
//! `pg_stat_replication` shows a standby streaming as `sync` (or
//! `quorum`); otherwise it fails, naming what it read. Then N clients each
//! make durable writes for one window, as `clients postgres URL N
//! WINDOW_MS KIND 0:100` does (a connection per client,
//! `synchronous_commit = on`, one autocommitted `UPDATE ... SET v = $2
//! WHERE k = $1` of bytea per write, so each commit waits for the
//! standby's flush), and prints its figures. Table `kv`, or `PG_TABLE`.

use std::time::Duration;

use crate::Res;

/// How long connecting may take: a server that does not answer fails
/// the loop rather than hanging it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

const USAGE: &str = "usage: reference_loops standby URL N WINDOW_MS [threads|processes]";

pub fn main(args: &[String]) -> Res<()> {
    let [url, n, window_ms, rest @ ..] = args else { return Err(USAGE.into()) };
    let kind = match rest {
        [] => "threads",
        [k] if k == "threads" || k == "processes" => k.as_str(),
        _ => return Err(USAGE.into()),
    };
    println!("# standby: {}", sync_standby(url)?);
    let clients = [url, n, window_ms].map(String::clone);
    let args: Vec<String> =
        ["postgres".to_string()].into_iter().chain(clients).chain([kind.into(), "0:100".into()]).collect();
    crate::clients::main(&args)
}

/// The standby a commit at `url` waits for, as `name (state)`; an error
/// when no commit there waits for one.
fn sync_standby(url: &str) -> Res<String> {
    let mut config: postgres::Config = url.parse()?;
    config.connect_timeout(CONNECT_TIMEOUT);
    let mut client = config.connect(postgres::NoTls)?;
    // The clients set synchronous_commit = on themselves: whether their
    // commits wait rests on the standby names and the standbys streaming.
    let names: String = client.query_one("SHOW synchronous_standby_names", &[])?.get(0);
    if names.trim().is_empty() {
        return Err("no commit at this server waits for a standby (synchronous_standby_names is empty)".into());
    }
    let rows = client.query(
        "SELECT application_name, sync_state FROM pg_stat_replication \
         WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')",
        &[],
    )?;
    let standbys: Vec<String> =
        rows.iter().map(|r| format!("{} ({})", r.get::<_, String>(0), r.get::<_, String>(1))).collect();
    if standbys.is_empty() {
        return Err(format!(
            "synchronous_standby_names = '{names}', but pg_stat_replication shows no synchronous standby streaming"
        )
        .into());
    }
    Ok(format!("{}; synchronous_standby_names = '{names}'", standbys.join(", ")))
}
