//! What a server engine said about itself, as recorded in result files:
//! one shape for every engine a server runs, so a new one fills it rather
//! than adding its own field to the schema.

use serde::{Deserialize, Serialize};

use super::postgres::PgServerInfo;

/// Where the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerPlace {
    /// blobbench's throwaway server, started for the run in the dataset's
    /// directory.
    Local,
    /// A server the user runs (`--pg URL`), on this machine or another.
    Remote,
}

impl ServerPlace {
    pub fn local(self) -> bool {
        self == ServerPlace::Local
    }
}

/// One of the server's settings, as it reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSetting {
    pub name: String,
    pub value: String,
}

/// What a server engine said about itself, read once before the runs.
/// Result files written before this shape held PostgreSQL's own fields
/// (`version_num`, `shared_buffers`...); they are read into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredServerInfo")]
pub struct ServerInfo {
    /// The server's product, e.g. "PostgreSQL".
    pub product: String,
    /// Its version as it reports it, e.g. "15.14 (Debian 15.14-0+deb12u1)".
    pub version: String,
    pub place: ServerPlace,
    /// What holds the blobs there, e.g. "table kv".
    pub blobs_in: String,
    /// The settings that decide what a run measures (PostgreSQL's
    /// `synchronous_commit` as the session set it, `shared_buffers`...),
    /// in the engine's order.
    pub settings: Vec<ServerSetting>,
}

impl ServerInfo {
    /// "SeaweedFS 4.48, 1 replica": product, version and replicas.
    pub fn summary(&self) -> String {
        let version = if self.version.is_empty() { String::new() } else { format!(" {}", self.version) };
        let replicas = match self.setting("replicas") {
            Some("1") => ", 1 replica".to_string(),
            Some(n) => format!(", {n} replicas"),
            None => String::new(),
        };
        format!("{}{version}{replicas}", self.product)
    }

    /// The value of the setting `name`, if reported.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings.iter().find(|s| s.name == name).map(|s| s.value.as_str())
    }
}

/// `server` as result files hold it: this shape, or PostgreSQL's of the
/// files written before it.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredServerInfo {
    Current { product: String, version: String, place: ServerPlace, blobs_in: String, settings: Vec<ServerSetting> },
    Postgres(PgServerInfo),
}

impl From<StoredServerInfo> for ServerInfo {
    fn from(stored: StoredServerInfo) -> ServerInfo {
        match stored {
            StoredServerInfo::Current { product, version, place, blobs_in, settings } => {
                ServerInfo { product, version, place, blobs_in, settings }
            }
            StoredServerInfo::Postgres(pg) => pg.into(),
        }
    }
}

/// PostgreSQL's own fields, as files written before the generic shape
/// hold them and as its engine reads them, in the generic shape.
impl From<PgServerInfo> for ServerInfo {
    fn from(pg: PgServerInfo) -> ServerInfo {
        let setting = |name: &str, value: String| ServerSetting { name: name.into(), value };
        let mut settings = vec![
            setting("server_version_num", pg.version_num.to_string()),
            setting("shared_buffers", pg.shared_buffers),
            setting("synchronous_commit", pg.synchronous_commit),
            setting("wal_level", pg.wal_level),
            setting("fsync", pg.fsync),
        ];
        settings.extend(pg.replication.map(|r| setting("replication", r)));
        ServerInfo {
            product: "PostgreSQL".into(),
            version: pg.version,
            place: if pg.server == "remote" { ServerPlace::Remote } else { ServerPlace::Local },
            blobs_in: format!("table {}", pg.table),
            settings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> ServerInfo {
        ServerInfo {
            product: "PostgreSQL".into(),
            version: "15.14".into(),
            place: ServerPlace::Local,
            blobs_in: "table kv".into(),
            settings: vec![ServerSetting { name: "fsync".into(), value: "on".into() }],
        }
    }

    #[test]
    fn the_generic_shape_round_trips() {
        let text = serde_json::to_string(&info()).unwrap();
        assert!(text.contains(r#""place":"local""#), "{text}");
        assert_eq!(serde_json::from_str::<ServerInfo>(&text).unwrap(), info());
        assert_eq!(info().setting("fsync"), Some("on"));
        assert_eq!(info().setting("wal_level"), None);
    }

    #[test]
    fn postgresqls_old_fields_are_read_into_it() {
        let old = r#"{"version": "15.14 (Debian 15.14-0+deb12u1)", "version_num": 150014,
            "shared_buffers": "128MB", "synchronous_commit": "off", "wal_level": "replica",
            "fsync": "on", "server": "remote", "table": "blobbench_kv_1"}"#;
        let info: ServerInfo = serde_json::from_str(old).unwrap();
        assert_eq!((info.product.as_str(), info.place), ("PostgreSQL", ServerPlace::Remote));
        assert_eq!(info.blobs_in, "table blobbench_kv_1");
        assert_eq!(info.setting("server_version_num"), Some("150014"));
        assert_eq!(info.setting("synchronous_commit"), Some("off"));
        assert!(serde_json::from_str::<ServerInfo>(r#"{"version": "1"}"#).is_err(), "neither shape");
    }
}
