//! The S3 engine's settings: where its objects go.

/// The S3 engine's own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Params {
    /// A store the user runs (`--s3 URL`, with `--s3-bucket`); None:
    /// blobbench's throwaway server inside the dataset's directory.
    pub url: Option<String>,
    /// The bucket in that store (which blobbench never makes or deletes).
    pub bucket: Option<String>,
    /// Which throwaway server to build on (`--s3-server`), by one of the
    /// names `engine::s3::server_names` gives; None: the first of them.
    /// Checked where it is used, so an unknown name is one line.
    pub server: Option<String>,
    /// The throwaway server's replicas (export only); None: the server's
    /// own default.
    pub replicas: Option<u8>,
}

impl S3Params {
    /// A throwaway server by name, nothing else set (a study's datasets).
    pub fn on_server(server: Option<&str>) -> S3Params {
        S3Params { server: server.map(str::to_string), ..S3Params::default() }
    }
}
