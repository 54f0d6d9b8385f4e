//! Every engine's [`Backend`], and what is done through them: recognising a
//! dataset, opening, building and describing it. Adding an engine is one
//! row in [`BACKENDS`]; the tests check that each kind has exactly one.

use std::path::Path;

use crate::engine::api::Engine;
use crate::engine::backend::{Backend, Claim, Probe, WriteConfig};
use crate::engine::report::{ExportReport, StatReport};
use crate::records::{ConfigId, EngineKind, EngineSettings};
use crate::util::progress::Progress;
use crate::{Error, Result};

/// One backend per engine kind, in the order of [`EngineKind::ALL`] (the
/// crash test's write modes and the help texts follow it).
pub static BACKENDS: [&dyn Backend; EngineKind::ALL.len()] = [
    &crate::engine::sqlite::BACKEND,
    &crate::engine::files::FLAT,
    &crate::engine::files::TREE,
    &crate::engine::external::BACKEND,
    &crate::engine::lmdb::BACKEND,
    &crate::engine::redb::BACKEND,
    &crate::engine::fjall::BACKEND,
    &crate::engine::postgres::BYTEA,
    &crate::engine::postgres::LARGE_OBJECTS,
    &crate::engine::s3::BACKEND,
];

/// The backend of `kind`.
pub fn backend(kind: EngineKind) -> &'static dyn Backend {
    // Every kind has one (a test checks), so the search cannot fail.
    *BACKENDS.iter().find(|b| b.kind() == kind).expect("every engine kind has a backend")
}

/// Every backend's write configurations with their engine, in the
/// registry's order.
pub fn write_configs() -> impl Iterator<Item = (EngineKind, &'static WriteConfig)> {
    BACKENDS.iter().flat_map(|b| b.write_configs().iter().map(move |c| (b.kind(), c)))
}

/// The row of configuration `id` with its engine; None when no backend
/// declares it.
pub fn write_config(id: ConfigId) -> Option<(EngineKind, &'static WriteConfig)> {
    write_configs().find(|(_, c)| c.id == id)
}

/// The key-value engines, in the registry's order (`--engines`).
pub fn key_value_kinds() -> Vec<EngineKind> {
    BACKENDS.iter().map(|b| b.kind()).filter(|k| k.is_key_value()).collect()
}

/// The engines whose dataset is built from a kvtest database (`export
/// --engine`): all but SQLite, whose dataset is that database.
pub fn buildable_kinds() -> Vec<EngineKind> {
    BACKENDS.iter().map(|b| b.kind()).filter(|&k| k != crate::engine::sqlite::KIND).collect()
}

/// Decides which engine made `path`: a backend that recognises its own
/// marker, else a directory of blob files. An SQLite database is known by
/// its header, not (as kvtest does) by a size that is a multiple of 512.
pub fn detect(path: &Path) -> Result<EngineKind> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::NotFound(path.to_path_buf())),
        Err(e) => return Err(Error::io(path, "cannot access", e)),
    };
    let mut head = [0u8; 16];
    let n = if meta.is_dir() {
        0
    } else if !meta.is_file() {
        return Err(Error::bad_input(path, "is neither a regular file nor a directory"));
    } else if meta.len() == 0 {
        return Err(Error::bad_input(path, "is an empty file, not an SQLite database"));
    } else {
        read_prefix(path, &mut head)?
    };
    let probe = Probe { path, is_dir: meta.is_dir(), head: &head[..n] };
    let claims: Vec<(EngineKind, Claim)> = BACKENDS.iter().map(|b| (b.kind(), b.claim(&probe))).collect();
    let sure: Vec<EngineKind> = claims.iter().filter(|c| c.1 == Claim::Yes).map(|c| c.0).collect();
    if sure.len() > 1 {
        // Reading it as the first would measure one engine's files while
        // the user may mean the other's.
        return Err(Error::bad_input(
            path,
            format!(
                "holds the files of {}: a dataset is one engine's (move the other's files elsewhere)",
                engine_list(&sure)
            ),
        ));
    }
    let pick = |want: Claim| claims.iter().find(|c| c.1 == want).map(|c| c.0);
    pick(Claim::Yes)
        .or_else(|| pick(Claim::Fallback))
        .ok_or_else(|| Error::bad_input(path, "is not an SQLite database (no SQLite header)"))
}

/// "two engines, LMDB and fjall" (or three or more, listed).
fn engine_list(kinds: &[EngineKind]) -> String {
    let titles: Vec<&str> = kinds.iter().map(|k| k.title()).collect();
    let (last, rest) = titles.split_last().expect("at least two");
    let count = if kinds.len() == 2 { "two".to_string() } else { kinds.len().to_string() };
    format!("{count} engines, {} and {last}", rest.join(", "))
}

fn read_prefix(path: &Path, buf: &mut [u8]) -> Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(Error::io(path, "cannot read", e)),
        }
    }
    Ok(n)
}

/// Opens the dataset at `path` with the engine that made it.
pub fn open(path: &Path, settings: &EngineSettings) -> Result<Box<dyn Engine>> {
    open_as(detect(path)?, path, settings)
}

/// Opens `path` as an engine of `kind` (already detected).
pub fn open_as(kind: EngineKind, path: &Path, settings: &EngineSettings) -> Result<Box<dyn Engine>> {
    Ok(backend(kind).open(path, settings))
}

/// Builds `kind`'s dataset at `target` from the kvtest database `db`.
pub fn build(kind: EngineKind, db: &Path, target: &Path, force: bool, progress: &dyn Progress) -> Result<ExportReport> {
    build_with(kind, db, target, force, &EngineSettings::default(), progress)
}

/// [`build`] with an engine's own build options (PostgreSQL's `--pg`).
pub fn build_with(
    kind: EngineKind,
    db: &Path,
    target: &Path,
    force: bool,
    settings: &EngineSettings,
    progress: &dyn Progress,
) -> Result<ExportReport> {
    backend(kind).build(db, target, force, settings, progress)
}

/// Ends what killed runs of any engine left running under `workdir` (see
/// [`Backend::reap_killed`]), and the hosts of replicated clusters whose
/// owner was killed (wherever they are: their records are machine-wide);
/// returns how many.
pub fn reap_killed(workdir: &Path) -> Result<usize> {
    let hosts = crate::engine::throwaway::hosts::reap_orphans()?;
    BACKENDS.iter().try_fold(hosts, |n, b| Ok(n + b.reap_killed(workdir)?))
}

/// Describes the dataset at `path`. `vacuum` rebuilds a database first (as
/// kvtest's --vacuum), which rewrites the file: only on request.
pub fn stat(path: &Path, vacuum: bool) -> Result<StatReport> {
    stat_with(path, vacuum, &EngineSettings::default())
}

/// [`stat`] reaching a server as `settings` say (PostgreSQL's `--pg`).
pub fn stat_with(path: &Path, vacuum: bool, settings: &EngineSettings) -> Result<StatReport> {
    backend(detect(path)?).stat(path, vacuum, settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::progress::Silent;

    #[test]
    fn every_kind_has_exactly_one_backend() {
        for kind in EngineKind::ALL {
            assert_eq!(BACKENDS.iter().filter(|b| b.kind() == kind).count(), 1, "{kind:?}");
        }
        let order: Vec<EngineKind> = BACKENDS.iter().map(|b| b.kind()).collect();
        assert_eq!(order, EngineKind::ALL, "the registry follows EngineKind::ALL");
    }

    /// Every engine's built dataset is detected as its kind and described.
    /// And every engine follows the same lifetime rules (`engine::keep`): a
    /// measured read session keeps its handle for the next one; a cold
    /// run's `drop_own_caches` and a write session close it, so the next
    /// session opens it again. One file per blob has no handle. One test,
    /// so each server engine's dataset (a throwaway cluster's) is built once.
    #[test]
    fn every_built_dataset_is_detected_and_read_sessions_keep_the_handle_until_a_cold_run_or_a_write() {
        use crate::engine::api::OpenMode;
        let dir = tempfile::tempdir().unwrap();
        // PostgreSQL's throwaway cluster runs as `postgres` when tests run as root.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let (db, _) = crate::engine::kv::test_support::tiny_kv(dir.path(), 12);
        let settings = EngineSettings::default();
        for b in BACKENDS {
            let kind = b.kind();
            let target = if kind == detect(&db).unwrap() {
                db.clone()
            } else {
                let target = dir.path().join(kind.name());
                assert_eq!(build(kind, &db, &target, false, &Silent).unwrap().files, 12, "{kind:?}");
                target
            };
            assert_eq!(detect(&target).unwrap(), kind);
            let mut engine = b.open(&target, &settings);
            engine.survey(true).unwrap();
            // Beside the engine, so a server engine's stat uses the
            // throwaway cluster the engine started.
            assert!(stat(&target, false).is_ok(), "{kind:?}: stat");
            let has_handle = !kind.is_files();
            let session = |mode: OpenMode| {
                let mut s = engine.open(mode).unwrap();
                let opened = s.info().opened_handle;
                assert!(s.read(3).unwrap() > 0, "{kind:?}");
                s.commit().unwrap();
                s.close().unwrap();
                opened
            };
            let read = OpenMode::measured(false, false);
            assert_eq!(session(read), has_handle, "{kind:?}: the first session opens the handle");
            assert!(!session(read), "{kind:?}: the next one finds it kept open");
            assert!(!session(read), "{kind:?}: and the one after");
            engine.drop_own_caches().unwrap();
            assert_eq!(session(read), has_handle, "{kind:?}: a cold run opens it again");
            assert_eq!(session(OpenMode::measured(true, false)), has_handle, "{kind:?}: a write opens its own");
            assert_eq!(session(read), has_handle, "{kind:?}: after a write, nothing was kept");
            assert!(!session(OpenMode::READ), "{kind:?}: kept by the read before");
            assert!(!session(OpenMode::READ), "{kind:?}: a session that does not keep uses it, and leaves it kept");
            // A server engine stays open, so the clients below use the
            // throwaway cluster it runs (one start, not one each); a local
            // store's engine is closed first, so the clients open its
            // files anew.
            let _running = kind.is_server().then_some(engine);
            // The clients of a long-running application (`OpenMode::client`,
            // writers committing each write) keep their handles between
            // runs: opening is in no run but the first.
            // SQLite's clients write in WAL (a rollback journal is refused).
            let mut wal = settings.clone();
            wal.db.journal_mode = Some(crate::records::Journal::Wal);
            let mut clients = b.open(&target, &EngineSettings { commit_every: Some(1), ..wal });
            match clients.survey(true) {
                // Its writes commit nothing: it has no clients' configuration.
                Err(e) if kind == EngineKind::External => {
                    assert!(e.to_string().contains("--commit-every does not apply"), "{e}");
                    continue;
                }
                r => drop(r.unwrap()),
            }
            let run = |engine: &dyn crate::engine::Engine| {
                let mut both = [engine.open(OpenMode::client(0)).unwrap(), engine.open(OpenMode::client(1)).unwrap()];
                let opened = both.iter().any(|s| s.info().opened_handle);
                for s in &mut both {
                    assert!(s.read(3).unwrap() > 0, "{kind:?}");
                    s.commit().unwrap();
                }
                both.into_iter().for_each(|s| s.close().unwrap());
                opened
            };
            assert_eq!(run(clients.as_ref()), has_handle, "{kind:?}: the clients' first run opens their handles");
            assert!(!run(clients.as_ref()), "{kind:?}: their next run finds them kept");
        }
    }

    /// The result schema lists every engine (three `layout` enums) and
    /// every crash-test write mode: a new backend must be added there too.
    #[test]
    fn the_result_schema_lists_every_engine_and_crash_mode() {
        let text = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/results.schema.json"));
        let schema: serde_json::Value = serde_json::from_str(text).unwrap();
        let names = |v: &serde_json::Value| -> Vec<String> {
            v["enum"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
        };
        let engines: Vec<String> = BACKENDS.iter().map(|b| b.kind().name().to_string()).collect();
        let defs = &schema["$defs"];
        let layouts = [
            &defs["params"]["properties"]["layout"],
            &defs["disk_usage"]["properties"]["layout"],
            &defs["aging"]["properties"]["settings"]["items"]["properties"]["layouts"]["items"]["properties"]["engine"],
        ];
        for layout in layouts {
            assert_eq!(names(layout), engines);
        }
        let modes: Vec<String> =
            BACKENDS.iter().flat_map(|b| b.write_configs()).map(|m| m.id.name().to_string()).collect();
        assert_eq!(names(&defs["crash_method"]["properties"]["method"]), modes);
    }

    /// A directory with two engines' files (LMDB's data.mdb beside fjall's
    /// keyspaces/) is refused, naming both, instead of read as the first.
    #[test]
    fn a_directory_of_two_engines_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _) = crate::engine::kv::test_support::tiny_kv(dir.path(), 5);
        let (lmdb, fjall) = (dir.path().join("lmdb"), dir.path().join("fjall"));
        build(EngineKind::Lmdb, &db, &lmdb, false, &Silent).unwrap();
        build(EngineKind::Fjall, &db, &fjall, false, &Silent).unwrap();
        for entry in std::fs::read_dir(&fjall).unwrap() {
            let entry = entry.unwrap();
            std::fs::rename(entry.path(), lmdb.join(entry.file_name())).unwrap();
        }
        let e = detect(&lmdb).unwrap_err().to_string();
        assert!(e.contains("holds the files of two engines, LMDB and fjall"), "{e}");
        assert_eq!(e.lines().count(), 1);
        assert!(stat(&lmdb, false).is_err(), "stat refuses it too");
        assert_eq!(
            engine_list(&[EngineKind::Lmdb, EngineKind::Redb, EngineKind::Fjall]),
            "3 engines, LMDB, redb and fjall"
        );
    }

    #[test]
    fn unknown_files_are_refused_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(matches!(detect(&d.join("missing")), Err(Error::NotFound(_))));
        let empty = d.join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(detect(&empty).unwrap_err().to_string().contains("empty"));
        let text = d.join("t.txt");
        std::fs::write(&text, b"hello world, this is text\n").unwrap();
        assert!(detect(&text).unwrap_err().to_string().contains("not an SQLite database"));
    }
}
