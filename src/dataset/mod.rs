//! kvtest datasets: a database of blobs (`init`), its copy as one file per
//! blob (`export`), a database of the files' names (`external`), what a path
//! holds (`layout`), and what it occupies (`stat`).

mod export;
mod external;
mod init;
mod layout;
mod stat;

pub use export::{export, ExportReport};
pub use external::init_names;
pub use init::{check_spec, estimated_bytes as estimated_db_bytes, init, InitReport};
pub use layout::{blob_files, blob_name, detect, list_keys, open_kv, BlobPath, KvConnection};
pub(crate) use layout::{conn_error, db_error, open_io_cause};
pub use stat::{stat, DbStat, DirStat, StatReport};
