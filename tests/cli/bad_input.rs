//! The bad-input catalogue: every command of the real binary against every
//! kind of bad input a user can hand it. Each case runs in its own temporary
//! directory and checks that the command
//! - fails with a non-zero exit and exactly one line on stderr, starting
//!   with "error:" and naming the problem (or succeeds, where the input is
//!   legal: gaps in the keys, odd file names);
//! - never panics;
//! - leaves every file that existed before byte-for-byte unchanged, and
//!   leaves no new file behind when it fails.
//!
//! A case is one line of `cases()`; a number option is one line of
//! `NUMBER_OPTIONS`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use blobbench::records::EngineKind;
use rusqlite::Connection;

use crate::common;

/// What a case must end with.
#[derive(Clone, Copy)]
enum Expect {
    /// Non-zero exit; the one stderr line contains this text.
    Fail(&'static str),
    /// Success; stdout contains this text.
    Works(&'static str),
    /// Success after SQLite recovered a crashed writer's journal or WAL:
    /// the files change, the committed data does not.
    Recovers,
}
use Expect::*;

/// Builds a case's input in its directory.
type Fixture = fn(&Path);

struct Case {
    name: String,
    fixture: Fixture,
    /// "@x" stands for the file or directory x of the case's directory.
    args: Vec<String>,
    expect: Expect,
    /// RLIMIT_FSIZE for the command: a full disk without mounting one.
    fsize: Option<u64>,
    /// Another process holds an exclusive lock on "@db" while the command runs.
    locked: bool,
    /// The case's directory is seen through the power-cut layer, with this
    /// fault (name, from which occurrence) injected; "@x" is then on the mount.
    fault: Option<(&'static str, u64)>,
    /// This process holds the engine dataset "@t" open while the command runs.
    held: Option<EngineKind>,
    /// Run without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that
    /// permission bits stop even root (a read-only file or directory, mode
    /// 000, are then what they are for any other user).
    nocaps: bool,
    /// Variables set for the command ("@x" in a value stands for x of the
    /// case's directory), after the AWS ones are cleared.
    env: Vec<(&'static str, &'static str)>,
}

fn case(name: &str, fixture: Fixture, args: &[&str], expect: Expect) -> Case {
    let args = args.iter().map(|s| s.to_string()).collect();
    Case {
        name: name.to_string(),
        fixture,
        args,
        expect,
        fsize: None,
        locked: false,
        fault: None,
        held: None,
        nocaps: false,
        env: Vec::new(),
    }
}

impl Case {
    fn fsize(mut self, bytes: u64) -> Self {
        self.fsize = Some(bytes);
        self
    }
    fn locked(mut self) -> Self {
        self.locked = true;
        self
    }
    fn fault(mut self, name: &'static str, at: u64) -> Self {
        self.fault = Some((name, at));
        self
    }

    fn held(mut self, kind: EngineKind) -> Self {
        self.held = Some(kind);
        self
    }

    fn nocaps(mut self) -> Self {
        self.nocaps = true;
        self
    }

    fn env(mut self, vars: &[(&'static str, &'static str)]) -> Self {
        self.env.extend_from_slice(vars);
        self
    }
}

/// Keys in the environment, for the cases that reach a store.
const KEYS: [(&str, &str); 2] = [("AWS_ACCESS_KEY_ID", "AKIATEST"), ("AWS_SECRET_ACCESS_KEY", "s3cret")];
/// The profiles of `aws_files`, in its files.
const PROFILE_FILES: [(&str, &str); 2] =
    [("AWS_SHARED_CREDENTIALS_FILE", "@aws-credentials"), ("AWS_CONFIG_FILE", "@aws-config")];

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let mut v = vec![
        // missing paths
        case("stat: missing path", none, &["stat", "@nope"], Fail("nope: no such file or directory")),
        case("run: missing path", none, &["run", "@nope"], Fail("nope: no such file or directory")),
        case("export: missing db", none, &["export", "@nope", "@out"], Fail("nope: no such file or directory")),
        case("init: missing parent", none, &["init", "@nodir/new.db"], Fail("nodir: no such directory")),
        case("run: json into missing dir", db, &["run", "@db", "--json", "@nodir/r.json"], Fail("nodir: no such directory")),
        case("crashtest: missing workdir", none, &["crashtest", "--workdir", "@nope"], Fail("nope: no such file or directory")),
        // a directory where a file is expected, and the reverse
        case("export: db is a directory", dir, &["export", "@dir", "@out"], Fail("is a directory")),
        case("init: target is a directory", dir, &["init", "@dir"], Fail("dir: is a directory")),
        case("run: json is a directory", db_and_dir, &["run", "@db", "--json", "@dir"], Fail("is a directory")),
        case("run: csv is a directory", db_and_dir, &["run", "@db", "--csv", "@dir"], Fail("is a directory")),
        case("crashtest: json is a directory", dir, &["crashtest", "--json", "@dir"], Fail("is a directory")),
        case("run: empty directory", dir, &["run", "@dir"], Fail("holds no blob files")),
        case("stat: empty directory", dir, &["stat", "@dir"], Works("Number of entries:         0")),
        case("export: target is a file", db_and_text, &["export", "@db", "@text.txt"], Fail("exists and is not a directory")),
        case("crashtest: workdir is a file", text, &["crashtest", "--workdir", "@text.txt"], Fail("is not a directory")),
        // files that are not kvtest databases
        case("stat: empty file", empty, &["stat", "@empty"], Fail("empty file")),
        case("run: empty file", empty, &["run", "@empty"], Fail("empty file")),
        case("export: empty file", empty, &["export", "@empty", "@out"], Fail("empty file")),
        case("stat: text file", text, &["stat", "@text.txt"], Fail("not an SQLite database")),
        case("run: text file", text, &["run", "@text.txt"], Fail("not an SQLite database")),
        case("export: text file", text, &["export", "@text.txt", "@out"], Fail("not an SQLite database")),
        case("stat: binary file", binary, &["stat", "@bin"], Fail("not an SQLite database")),
        case("run: binary file", binary, &["run", "@bin", "--update"], Fail("not an SQLite database")),
        case("export: binary file", binary, &["export", "@bin", "@out"], Fail("not an SQLite database")),
        case("stat: no kv table", no_kv, &["stat", "@db"], Fail("has no table kv")),
        case("run: no kv table", no_kv, &["run", "@db"], Fail("has no table kv")),
        case("export: no kv table", no_kv, &["export", "@db", "@out"], Fail("has no table kv")),
        case("stat: kv with other columns", kv_columns, &["stat", "@db"], Fail("table kv has columns (k INTEGER, v BLOB, extra TEXT)")),
        case("run: kv with other columns", kv_columns, &["run", "@db"], Fail("table kv has columns")),
        case("export: kv with other columns", kv_columns, &["export", "@db", "@out"], Fail("table kv has columns")),
        case("stat: TEXT values", kv_text, &["stat", "@db"], Fail("values that are not BLOBs")),
        case("run: TEXT values", kv_text, &["run", "@db"], Fail("values that are not BLOBs")),
        case("run --update: TEXT values", kv_text, &["run", "@db", "--update"], Fail("value of key 3 is text, not a BLOB")),
        case("export: TEXT values", kv_text, &["export", "@db", "@out"], Fail("is text, not a BLOB")),
        case("stat: NULL values", kv_null, &["stat", "@db"], Fail("values that are not BLOBs")),
        case("run: NULL values", kv_null, &["run", "@db", "--blob-api"], Fail("key 3")),
        case("run --update: NULL values", kv_null, &["run", "@db", "--update"], Fail("is null, not a BLOB")),
        case("export: NULL values", kv_null, &["export", "@db", "@out"], Fail("is null, not a BLOB")),
        // gaps in the keys are legal: runs count the misses
        case("stat: gaps", kv_gaps, &["stat", "@db"], Works("Number of entries:        10")),
        case("run: gaps", kv_gaps, &["run", "@db", "--count", "10", "--repeat", "1"], Works("20 cycles due to 10 misses")),
        case("export: gaps", kv_gaps, &["export", "@db", "@out"], Works("Exported 10 blobs")),
        case("run files: gaps", flat_gaps, &["run", "@flat", "--count", "10", "--repeat", "1"], Works("20 cycles due to 10 misses")),
        // damaged databases
        case("stat: truncated db", truncated, &["stat", "@db"], Fail("malformed")),
        case("run: truncated db", truncated, &["run", "@db"], Fail("malformed")),
        case("export: truncated db", truncated, &["export", "@db", "@out"], Fail("malformed")),
        case("stat: corrupt header", bad_header, &["stat", "@db"], Fail("not an SQLite database")),
        case("run: corrupt header", bad_header, &["run", "@db"], Fail("not an SQLite database")),
        case("export: corrupt header", bad_header, &["export", "@db", "@out"], Fail("not an SQLite database")),
        // another process holds the database
        case("stat: locked db", db, &["stat", "@db"], Fail("db: database is locked by another process")).locked(),
        case("run: locked db", db, &["run", "@db"], Fail("db: database is locked by another process")).locked(),
        case("run --update: locked db", db, &["run", "@db", "--update"], Fail("db: database is locked by another process")).locked(),
        case("export: locked db", db, &["export", "@db", "@out"], Fail("db: database is locked by another process")).locked(),
        // a crashed writer's hot journal or WAL: SQLite recovers it on open
        case("stat: hot journal", hot_journal, &["stat", "@db"], Recovers),
        case("run: hot journal", hot_journal, &["run", "@db", "--repeat", "1"], Recovers),
        case("export: hot journal", hot_journal, &["export", "@db", "@out"], Recovers),
        case("stat: hot WAL", hot_wal, &["stat", "@db"], Recovers),
        case("run: hot WAL", hot_wal, &["run", "@db", "--repeat", "1"], Recovers),
        case("export: hot WAL", hot_wal, &["export", "@db", "@out"], Recovers),
        case("run --update: hot WAL", hot_wal, &["run", "@db", "--update", "--repeat", "1"], Works("write")),
        // read-only inputs and unwritable outputs
        case("run --update: read-only db", read_only, &["run", "@db", "--update"], Fail("read-only")),
        case("run --update: read-only blob files", read_only_flat, &["run", "@flat", "--update"], Fail("Permission denied")).nocaps(),
        case("init: under a regular file", text, &["init", "@text.txt/new.db"], Fail("text.txt: is not a directory")),
        case("export: under a regular file", db_and_text, &["export", "@db", "@text.txt/out"], Fail("text.txt: is not a directory")),
        case("run: json under a regular file", db_and_text, &["run", "@db", "--json", "@text.txt/r.json"], Fail("text.txt: is not a directory")),
        case("run: csv under a regular file", db_and_text, &["run", "@db", "--csv", "@text.txt/r.csv"], Fail("text.txt: is not a directory")),
        case("crashtest: json under a regular file", text, &["crashtest", "--json", "@text.txt/c.json"], Fail("text.txt: is not a directory")),
        case("init: unwritable directory", ro_dir, &["init", "@ro/new.db"], Fail("Permission denied")).nocaps(),
        case("export: unwritable directory", db_and_ro_dir, &["export", "@db", "@ro/out"], Fail("Permission denied")).nocaps(),
        case("run: json in unwritable directory", db_and_ro_dir, &["run", "@db", "--json", "@ro/r.json"], Fail("Permission denied")).nocaps(),
        case("crashtest: unwritable workdir", ro_dir, &["crashtest", "--workdir", "@ro"], Fail("Permission denied")).nocaps(),
        // a full disk (a file size limit on the command)
        case("init: full disk", none, &["init", "@new.db", "--count", "100"], Fail("new.db: cannot build the database: File too large")).fsize(200_000),
        case("export: full disk", db, &["export", "@db", "@out"], Fail("File too large")).fsize(1000),
        case("run: full disk for json", db, &["run", "@db", "--repeat", "1", "--json", "@r.json"], Fail("File too large")).fsize(2000),
        case("run --update: full disk, WAL", db_wal_mode, &["run", "@db", "--update", "--repeat", "1"], Fail("db: cannot read the database: File too large")).fsize(20_000),
        case("run --update: full disk, journal", db, &["run", "@db", "--update", "--repeat", "1"], Fail("File too large")).fsize(20_000),
        case("crashtest: full disk", none, &["crashtest", "--quick", "--workdir", "@", "--method", "truncate"], Fail("File too large")).fsize(20_000),
        // odd names must work
        case("init: spaces and non-ASCII", spaced_dir, &["init", "@my dir/nëw dätä.db", "--count", "5"], Works("Created")),
        case("stat: spaces and non-ASCII", spaced_db, &["stat", "@my dir/dätä ñ.db"], Works("Number of entries:        20")),
        case("run: spaces and non-ASCII", spaced_db, &["run", "@my dir/dätä ñ.db", "--repeat", "1"], Works("Microseconds per BLOB read")),
        case("export: spaces and non-ASCII", spaced_db, &["export", "@my dir/dätä ñ.db", "@my dir/ëxpört ü"], Works("Exported 20 blobs")),
        case("run files: spaces and non-ASCII", spaced_flat, &["run", "@my dir/fläť", "--repeat", "1"], Works("Microseconds per BLOB read")),
        case("crashtest: spaces and non-ASCII", spaced_dir, &["crashtest", "--workdir", "@my dir", "--method", "db-wal-normal,replace", "--kills", "1", "--count", "5"], Works("db-wal-normal")),
        // report: result files that are not result files
        // --commit-every: a count from 1 to 1,000,000, for writes, where a study commits as a workload says
        case("run: --commit-every 0", db, &["run", "@db", "--update", "--commit-every", "0"], Fail("--commit-every must be at least 1")),
        case("advise: --commit-every 0", none, &["advise", "--workdir", "@", "--out", "@rep", "--commit-every", "0"], Fail("--commit-every must be at least 1")),
        case("run: --commit-every above the most", db, &["run", "@db", "--update", "--commit-every", "1000001"], Fail("above the most a commit may group (1000000)")),
        case("crashtest: --commit-every above the most", none, &["crashtest", "--commit-every", "2m"], Fail("above the most a commit may group")),
        // a machine loss asks for a replicated layout, and a replicated layout for a machine loss
        case("crashtest: machine loss of a store with one copy", none, &["crashtest", "--machine-loss", "--method", "postgres-durable", "--workdir", "@"], Fail("postgres-durable keeps one copy on one host")),
        case("crashtest: machine loss of SQLite", none, &["crashtest", "--machine-loss", "--method", "db-wal-full", "--workdir", "@"], Fail("db-wal-full keeps one copy on one host")),
        case("crashtest: replicated layout without a loss", none, &["crashtest", "--method", "postgres-sync-standby", "--workdir", "@"], Fail("add --machine-loss")),
        case("crashtest: --losses without --machine-loss", none, &["crashtest", "--losses", "3"], Fail("--machine-loss")),
        case("advise: --pg without --durability replicated", none, &["advise", "--workdir", "@", "--out", "@rep", "--pg", "postgresql://u@127.0.0.1:1/db"], Fail("--pg URL is read under --durability replicated only")),
        case("advise: --s3 without --durability replicated", none, &["advise", "--workdir", "@", "--out", "@rep", "--s3", "https://s3.amazonaws.com"], Fail("--s3 URL is read under --durability replicated only")),
        case("advise: replicated, an S3 whose replication nothing documents", none, &["advise", "--workdir", "@", "--out", "@rep", "--durability", "replicated", "--engines", "s3", "--s3", "http://minio.internal:9000"], Fail("s3: --s3 URL: the replication of minio.internal cannot be read")),
        case("advise: replicated with only local engines", none, &["advise", "--workdir", "@", "--out", "@rep", "--durability", "replicated", "--engines", "lmdb,redb"], Fail("lmdb, redb: one machine each")),
        case("run: --commit-every on reads", db, &["run", "@db", "--commit-every", "10"], Fail("--commit-every applies to writes and this run only reads")),
        case("run: --commit-every and --multitrans", db, &["run", "@db", "--update", "--multitrans", "--commit-every", "10"], Fail("--commit-every")),
        case("run: --commit-every on the external layout", external, &["run", "@t", "--update", "--commit-every", "10"], Fail("--commit-every does not apply to the external layout")),
        case("matrix: --commit-every", none, &["matrix", "--workdir", "@", "--out", "@rep", "--commit-every", "10"], Fail("--commit-every does not apply to matrix")),
        case("concurrency: --commit-every", none, &["concurrency", "--workdir", "@", "--out", "@rep", "--commit-every", "10"], Fail("--commit-every does not apply to concurrency")),
        // --clients: 1 to 1,024 clients at once; --p99-write a duration above 0; threads or processes
        case("advise: --clients 0", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "0"], Fail("--clients 0: must be from 1 to 1024")),
        case("advise: --clients not a number", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "many"], Fail("not a whole number")),
        case("advise: --clients above the most", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "1025"], Fail("--clients 1025: must be from 1 to 1024")),
        case("advise: --p99-write 0", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--p99-write", "0s"], Fail("--p99-write <DURATION>': invalid duration \"0s\": must be longer than 0s")),
        case("advise: --rate 0", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--rate", "0"], Fail("--rate 0: must be above 0")),
        case("advise: --rate below 0", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--rate", "-5"], Fail("--rate -5: must be above 0")),
        case("advise: --clients-are neither threads nor processes", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--clients-are", "forks"], Fail("invalid value 'forks' for '--clients-are")),
        // --rate beyond what the machine can pace, and SQLite's one writer connection asked of client processes: one line, before anything is written
        case("advise: --rate of ten million a second", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "16", "--rate", "10000000"], Fail("more than this machine can pace")),
        case("advise: --rate beyond the machine at one client", none, &["advise", "--workdir", "@", "--out", "@rep", "--rate", "1e7"], Fail("more than this machine can pace")),
        case("advise: one writer connection with client processes", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--clients-are", "processes", "--sqlite-writers", "one"], Fail("--sqlite-writers one with --clients-are processes")),
        case("advise: --sqlite-writers neither one nor per-client", none, &["advise", "--workdir", "@", "--out", "@rep", "--clients", "2", "--sqlite-writers", "two"], Fail("invalid value 'two' for '--sqlite-writers")),
        case("run: --clients with one writer connection in processes", db, &["run", "@db", "--clients", "2", "--clients-are", "processes", "--sqlite-writers", "one", "--mix", "1:1", "--commit-every", "1"], Fail("--sqlite-writers one with --clients-are processes")),
        case("run: --clients 0", db, &["run", "@db", "--clients", "0"], Fail("--clients 0: must be from 1 to 1024")),
        case("run: --rate without --clients", db, &["run", "@db", "--rate", "100"], Fail("--clients")),
        case("run: --clients with a rate beyond the machine", db, &["run", "@db", "--clients", "4", "--rate", "1e9"], Fail("more than this machine can pace")),
        case("run: --clients with --threads", db, &["run", "@db", "--clients", "4", "--threads", "2"], Fail("cannot be used with")),
        // a result file from before --commit-every: rendered, its write figures marked
        case("run: --start-at unparsable", db, &["run", "@db", "--start-at", "tomorrow"], Fail("neither RFC 3339")),
        case("run: --start-at more than a day away", db, &["run", "@db", "--start-at", "2099-01-01T00:00:00Z"], Fail("within a day of now")),
        case("report --merge: another workload", run_files, &["report", "--merge", "@a.json", "@update.json"], Fail("differ in workload.update")),
        case("report --merge: another endpoint", run_files, &["report", "--merge", "@a.json", "@endpoint.json"], Fail("differ in endpoint")),
        case("report --merge: another dataset", run_files, &["report", "--merge", "@a.json", "@dataset.json"], Fail("differ in dataset.max_id")),
        case("report --merge: one file", run_files, &["report", "--merge", "@a.json"], Fail("at least two")),
        case("report --merge: not a run", run_files, &["report", "--merge", "@a.json", "@r.json"], Fail("not a `run` result file")),
        case("report --merge: as html", run_files, &["report", "--merge", "@a.json", "@a.json", "--format", "html"], Fail("prints text, markdown or json")),
        case("report --merge: one workload", run_files, &["report", "--merge", "@a.json", "@same.json"], Works("ops/s")),
        case("report --merge: as json", run_files, &["report", "--merge", "@a.json", "@same.json", "--format", "json"], Works("\"latency_histogram\": \"")),
        case("report: json without --merge", run_files, &["report", "@a.json", "--format", "json"], Fail("--format json prints merged runs")),
        case("report: a file from before --commit-every", older_suite, &["report", "@r.json", "--format", "text"], Works("one commit per run: older file")),
        case("report: missing file", none, &["report", "@nope.json", "--format", "text"], Fail("nope.json: No such file")),
        case("report: a directory", dir, &["report", "@dir", "--format", "text"], Fail("dir: Is a directory")),
        case("report: empty file", empty, &["report", "@empty", "--format", "text"], Fail("empty: not valid JSON")),
        case("report: text file", text, &["report", "@text.txt", "--format", "text"], Fail("text.txt: not valid JSON")),
        case("report: binary file", binary, &["report", "@bin", "--format", "markdown"], Fail("bin: ")),
        case("report: a database", db, &["report", "@db", "--format", "text"], Fail("db: ")),
        case("report: foreign JSON", foreign_json, &["report", "@r.json", "--format", "text"], Fail("not a blobbench result file")),
        case("report: future schema", future_json, &["report", "@r.json", "--format", "text"], Fail("schema version 99 is not supported")),
        case("report: truncated JSON", truncated_json, &["report", "@r.json", "--format", "text"], Fail("r.json: not valid JSON")),
        case("report: wrong shape", shape_json, &["report", "@r.json", "--format", "text"], Fail("does not match the result schema")),
        case("report: out under a regular file", results_and_text, &["report", "@r.json", "--out", "@text.txt/rep"], Fail("text.txt: is not a directory")),
        case("report: out is a file", results_and_text, &["report", "@r.json", "--out", "@text.txt"], Fail("text.txt")),
        case("report: out is the input's directory", results_in_dir, &["report", "@rep/r.json", "--out", "@rep", "--force"], Fail("holds the input")),
        case("report: full disk", results, &["report", "@r.json", "--out", "@rep"], Fail("File too large")).fsize(10_000),
        case("report: spaces and non-ASCII", spaced_results, &["report", "@my dir/rësults ü.json", "--format", "text"], Works("host-a")),
        case("report html: spaces and non-ASCII", spaced_results, &["report", "@my dir/rësults ü.json", "--out", "@my dir/rëport"], Works("wrote")),
        case("report: crashtest results", crash_results, &["report", "@crash.json", "--format", "text"], Works("Crash safety")),
        case("report: power-cut results", power_results, &["report", "@power.json", "--format", "text"], Works("lost after acknowledgement")),
        // suite: everything is checked before the datasets are built
        case("suite: workdir is a file", text, &["suite", "--workdir", "@text.txt", "--out", "@rep"], Fail("text.txt")),
        case("suite: workdir under a file", text, &["suite", "--workdir", "@text.txt/w", "--out", "@rep"], Fail("text.txt")),
        case("suite: out under a regular file", text, &["suite", "--workdir", "@", "--out", "@text.txt/rep"], Fail("text.txt: is not a directory")),
        case("suite: out is a file", text, &["suite", "--workdir", "@", "--out", "@text.txt"], Fail("text.txt")),
        case("suite: the same workdir twice", none, &["suite", "--workdir", "@", "--workdir", "@", "--out", "@rep"], Fail("is given twice")),
        case("suite: blank label", none, &["suite", "--workdir", "@", "--out", "@rep", "--label", " "], Fail("a label needs at least one visible character")),
        case("report: baseline of a future schema", results_and_future, &["report", "@r.json", "--baseline", "@f.json", "--format", "text"], Fail("f.json: schema version 99 is not supported")),
        case("report: baseline missing", results, &["report", "@r.json", "--baseline", "@nope.json", "--format", "text"], Fail("nope.json")),
        case("suite: full disk", none, &["suite", "--workdir", "@", "--out", "@rep", "--count", "200"], Fail("File too large")).fsize(100_000),
        // matrix
        case("matrix: missing workdir", none, &["matrix", "--workdir", "@nope", "--out", "@rep"], Fail("nope: ")),
        case("matrix: workdir is a file", text, &["matrix", "--workdir", "@text.txt", "--out", "@rep"], Fail("text.txt: ")),
        case("matrix: out under a regular file", text, &["matrix", "--workdir", "@", "--out", "@text.txt/rep"], Fail("text.txt: is not a directory")),
        case("matrix: out is a file", text, &["matrix", "--workdir", "@", "--out", "@text.txt"], Fail("text.txt")),
        case("matrix: empty list element", none, &["matrix", "--workdir", "@", "--out", "@rep", "--sizes", "10k,,20k"], Fail("--sizes")),
        case("matrix: full disk", none, &["matrix", "--sizes", "10k", "--pagesizes", "4096", "--total", "1M", "--repeat", "1", "--workdir", "@", "--out", "@rep"], Fail("File too large")).fsize(100_000),
        case("matrix --from: missing dir", none, &["matrix", "--from", "@nope", "--workdir", "@", "--out", "@rep"], Fail("nope: no such file or directory")),
        case("matrix --from: a file", text, &["matrix", "--from", "@text.txt", "--workdir", "@", "--out", "@rep"], Fail("text.txt: is not a directory")),
        case("matrix --from: empty dir", empty_src, &["matrix", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("src: holds no regular, readable, non-empty file")),
        case("matrix --from: only symlinks and an empty file", links_and_empty_src, &["matrix", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("(skipped: 2 symbolic links (not followed), 1 empty files)")),
        case("matrix --from with --size-dist", empty_src, &["matrix", "--from", "@src", "--size-dist", "uniform:10k", "--workdir", "@", "--out", "@rep"], Fail("cannot be used with")),
        case("matrix --size-dist: bad sigma", none, &["matrix", "--size-dist", "lognormal:30k:-1", "--workdir", "@", "--out", "@rep"], Fail("sigma must be from 0 to 4")),
        case("matrix --size-dist: unknown kind", none, &["matrix", "--size-dist", "zipf:1", "--workdir", "@", "--out", "@rep"], Fail("unknown size distribution")),
        case("matrix --size-dist: larger than --total", none, &["matrix", "--size-dist", "uniform:2m", "--total", "1m", "--sizes", "10k", "--workdir", "@", "--out", "@rep"], Fail("holds no blob")),
        case("matrix: spaces and non-ASCII", spaced_dir, &["matrix", "--sizes", "10k", "--pagesizes", "4096", "--total", "100k", "--repeat", "1", "--workdir", "@my dir", "--out", "@my dir/rëport ü"], Works("results")),
        // concurrency
        case("concurrency: missing workdir", none, &["concurrency", "--workdir", "@nope", "--out", "@rep"], Fail("nope: ")),
        case("concurrency: workdir is a file", text, &["concurrency", "--workdir", "@text.txt", "--out", "@rep"], Fail("text.txt: ")),
        case("concurrency: out under a regular file", text, &["concurrency", "--workdir", "@", "--out", "@text.txt/rep"], Fail("text.txt: is not a directory")),
        case("concurrency: out is a file", text, &["concurrency", "--workdir", "@", "--out", "@text.txt"], Fail("text.txt")),
        case("concurrency: unknown mode", none, &["concurrency", "--workdir", "@", "--out", "@rep", "--modes", "wal,bogus"], Fail("--modes")),
        case("concurrency: full disk", none, &["concurrency", "--threads", "1", "--duration", "0.1", "--repeat", "1", "--rows", "200", "--workload", "read", "--modes", "shared,wal,private-cache,rw", "--workdir", "@", "--out", "@rep"], Fail("File too large")).fsize(2_000),
        // I/O faults through the power-cut layer: one line with the OS cause, no figures printed
        case("run: EIO on a read (db)", db, &["run", "@db", "--repeat", "1"], Fail("Input/output error")).fault("read-eio", 1),
        case("run: EIO on a read (files)", flat_gaps, &["run", "@flat", "--repeat", "1"], Fail("Input/output error")).fault("read-eio", 3),
        case("run --update: ENOSPC on a write (db)", db, &["run", "@db", "--update", "--repeat", "1"], Fail("No space left on device")).fault("write-enospc", 2),
        case("run --update: EIO on a write (files)", flat_gaps, &["run", "@flat", "--update", "--repeat", "1"], Fail("Input/output error")).fault("write-eio", 3),
        case("run --update: ENOSPC on a write (files)", flat_gaps, &["run", "@flat", "--update", "--repeat", "1"], Fail("No space left on device")).fault("write-enospc", 3),
        case("run --update --fsync: failed fsync", flat_gaps, &["run", "@flat", "--update", "--fsync", "--repeat", "1"], Fail("Input/output error")).fault("fsync-eio", 1),
        case("run --update: failed fsync (db)", db, &["run", "@db", "--update", "--repeat", "1"], Fail("Input/output error")).fault("fsync-eio", 1),
        case("concurrency: spaces and non-ASCII", spaced_dir, &["concurrency", "--threads", "1", "--duration", "0.1", "--repeat", "1", "--rows", "200", "--workload", "read", "--modes", "shared,wal,private-cache,rw", "--workdir", "@my dir", "--out", "@my dir/rëport ü"], Works("report in")),
        // init --from DIR, size distributions, mixes and hot keys (issue 14)
        case("init --from: missing dir", none, &["init", "@new.db", "--from", "@nope"], Fail("nope: no such file or directory")),
        case("init --from: a file", text, &["init", "@new.db", "--from", "@text.txt"], Fail("text.txt: is not a directory")),
        case("init --from: empty dir", empty_src, &["init", "@new.db", "--from", "@src"], Fail("src: holds no regular, readable, non-empty file")),
        case("init --from: only a symlink loop", loop_src, &["init", "@new.db", "--from", "@src/loop"], Fail("symbolic links")),
        case("init --from: symlink loop beside a file", loop_and_file_src, &["init", "@new.db", "--from", "@src"], Works("skipped 2 symbolic links")),
        case("init --from: unreadable subdirectory (root without DAC capabilities)", unreadable_sub_src, &["init", "@new.db", "--from", "@src"], Works("skipped 1 unreadable")).nocaps(),
        case("init --from: unreadable subdirectory as root", unreadable_sub_src, &["init", "@new.db", "--from", "@src"], Works("Created")),
        case("init --from: non-UTF-8 names", non_utf8_src, &["init", "@new.db", "--from", "@src"], Works("2 blobs")),
        // advise: everything is checked before any dataset is built, and --from DIR is only read
        case("advise --from: empty dir", empty_src, &["advise", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("src: holds no regular, readable, non-empty file")),
        case("advise --from: only a symlink loop", loop_src, &["advise", "--from", "@src/loop", "--workdir", "@", "--out", "@rep"], Fail("symbolic links")),
        case("advise --mix 0:0", none, &["advise", "--mix", "0:0", "--workdir", "@", "--out", "@rep"], Fail("--mix 0:0 has neither reads nor writes")),
        case("advise --mix 90", none, &["advise", "--mix", "90", "--workdir", "@", "--out", "@rep"], Fail("expected R:W")),
        case("advise --engines nope", none, &["advise", "--engines", "nope", "--workdir", "@", "--out", "@rep"], Fail("unknown key-value engine 'nope'")),
        case("advise --durability maybe", none, &["advise", "--durability", "maybe", "--workdir", "@", "--out", "@rep"], Fail("maybe")),
        case("advise: a budget too short for one round", none, &["advise", "--budget", "2s", "--workdir", "@", "--out", "@rep"], Fail("is too short for 10000 blobs (their datasets and 6 paired rounds): give at least")),
        case("advise --budget 0s", none, &["advise", "--budget", "0s", "--workdir", "@", "--out", "@rep"], Fail("longer than 0s")),
        case("advise: not enough free space", none, &["advise", "--count", "100000", "--sizes", "uniform:1000000000", "--workdir", "@", "--out", "@rep"], Fail("not enough free space: advise needs about")),
        case("advise: out inside --from", dir, &["advise", "--from", "@dir", "--workdir", "@", "--out", "@dir/rep"], Fail("is inside --from")),
        case("advise: workdir inside --from", dir, &["advise", "--from", "@dir", "--workdir", "@dir", "--out", "@rep"], Fail("is inside --from")),
        case("suite --from: empty dir", empty_src, &["suite", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("holds no regular")),
        case("init --sizes: negative sigma", none, &["init", "@new.db", "--sizes", "lognormal:30k:-1"], Fail("sigma")),
        case("init --sizes: median 0", none, &["init", "@new.db", "--sizes", "lognormal:0:1"], Fail("median")),
        case("init --sizes: unknown kind", none, &["init", "@new.db", "--sizes", "pareto:1"], Fail("unknown size distribution")),
        case("init --sizes: empty histogram file", text_empty_hist, &["init", "@new.db", "--sizes", "file:@hist"], Fail("is empty")),
        case("init --sizes: malformed histogram file", text_bad_hist, &["init", "@new.db", "--sizes", "file:@hist"], Fail("line 2")),
        case("init --sizes: negative count", text_negative_hist, &["init", "@new.db", "--sizes", "file:@hist"], Fail("negative")),
        case("init --sizes: missing histogram file", none, &["init", "@new.db", "--sizes", "file:@hist"], Fail("cannot read histogram file")),
        case("suite --sizes: negative sigma", none, &["suite", "--sizes", "lognormal:30k:-1", "--workdir", "@", "--out", "@rep"], Fail("sigma")),
        case("run --mix 0:0", db, &["run", "@db", "--mix", "0:0"], Fail("no operations")),
        case("run --mix 1:2:3", db, &["run", "@db", "--mix", "1:2:3"], Fail("READ:WRITE")),
        case("run --keys zipf:-1", db, &["run", "@db", "--keys", "zipf:-1"], Fail("theta")),
        // rounds and budgets: checked before anything is built
        case("suite --rounds 0", none, &["suite", "--rounds", "0", "--workdir", "@", "--out", "@rep"], Fail("--rounds")),
        case("suite --budget 0s", none, &["suite", "--budget", "0s", "--workdir", "@", "--out", "@rep"], Fail("longer than 0s")),
        case("suite --budget -5s", none, &["suite", "--budget", "-5s", "--workdir", "@", "--out", "@rep"], Fail("negative")),
        case("suite --budget abc", none, &["suite", "--budget", "abc", "--workdir", "@", "--out", "@rep"], Fail("invalid duration")),
        case("matrix --rounds 0", none, &["matrix", "--rounds", "0", "--workdir", "@", "--out", "@rep"], Fail("--rounds")),
        case("matrix --budget abc", none, &["matrix", "--budget", "abc", "--workdir", "@", "--out", "@rep"], Fail("invalid duration")),
        // A budget shorter than one round runs one round, with a warning.
        case("suite: a budget shorter than one round", none, &["suite", "--count", "200", "--budget", "1ms", "--workdir", "@", "--out", "@rep"], Works("allowed only 1 round")),
        // Inconsistent rounds are shown unpaired, never as a wrong ratio.
        case("report: an arm missing from a round", rounds_arm_missing, &["report", "--format", "text", "@r.json"], Works("unpaired")),
        case("report: rounds of different lengths", rounds_uneven, &["report", "--format", "text", "@r.json"], Works("rounds inconsistent")),
        case("suite --keys zipf:-1", none, &["suite", "--keys", "zipf:-1", "--workdir", "@", "--out", "@rep"], Fail("theta")),
        // aging: ages and sizes are checked before anything is built
        case("aging: empty ages list", none, &["aging", "--workdir", "@", "--out", "@rep", "--ages", ""], Fail("the ages list is empty")),
        case("aging: unsorted ages", none, &["aging", "--workdir", "@", "--out", "@rep", "--ages", "0,4,2"], Fail("strictly increasing")),
        case("aging: negative age", none, &["aging", "--workdir", "@", "--out", "@rep", "--ages", "0,-1"], Fail("is negative")),
        case("aging: absurd age", none, &["aging", "--workdir", "@", "--out", "@rep", "--ages", "0,1000000"], Fail("absurdly large")),
        case("aging: blobs above SQLite's limit", none, &["aging", "--workdir", "@", "--out", "@rep", "--size-dist", "uniform:1m..2g"], Fail("blob limit")),
        case("aging: unknown size setting", none, &["aging", "--workdir", "@", "--out", "@rep", "--size-dist", "huge"], Fail("unknown size setting")),
        case("aging --from: missing dir", none, &["aging", "--from", "@nope", "--workdir", "@", "--out", "@rep"], Fail("nope: no such file or directory")),
        case("aging --from: empty dir", empty_src, &["aging", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("src: holds no regular, readable, non-empty file")),
        case("aging --from: only symlinks and an empty file", links_and_empty_src, &["aging", "--from", "@src", "--workdir", "@", "--out", "@rep"], Fail("(skipped: 2 symbolic links (not followed), 1 empty files)")),
        case("aging --from with --sizes", empty_src, &["aging", "--from", "@src", "--sizes", "lognormal:30k:1", "--workdir", "@", "--out", "@rep"], Fail("cannot be used with")),
        case("aging --sizes: bad sigma", none, &["aging", "--sizes", "lognormal:30k:-1", "--workdir", "@", "--out", "@rep"], Fail("sigma must be from 0 to 4")),
        case("aging --size-dist: empty list: element", none, &["aging", "--size-dist", "article,list:", "--workdir", "@", "--out", "@rep"], Fail("list needs at least one size")),
        case("aging: churn of 100%", none, &["aging", "--workdir", "@", "--out", "@rep", "--churn", "100"], Fail("--churn")),
        case("aging: workdir is a file", text, &["aging", "--workdir", "@text.txt", "--out", "@rep"], Fail("text.txt")),
        case("aging: out is a file", text, &["aging", "--workdir", "@", "--out", "@text.txt"], Fail("text.txt")),
        case("aging --rounds 0", none, &["aging", "--rounds", "0", "--workdir", "@", "--out", "@rep"], Fail("--rounds")),
        case("aging --budget 0s", none, &["aging", "--budget", "0s", "--workdir", "@", "--out", "@rep"], Fail("longer than 0s")),
        case("aging --budget -5s", none, &["aging", "--budget", "-5s", "--workdir", "@", "--out", "@rep"], Fail("negative")),
        case("aging --budget abc", none, &["aging", "--budget", "abc", "--workdir", "@", "--out", "@rep"], Fail("invalid duration")),
        // As in suite: a budget shorter than one round runs one round, with a warning.
        case("aging: a budget shorter than one round", none, &["aging", "--quick", "--count", "20", "--ages", "0", "--size-dist", "article", "--budget", "1ms", "--workdir", "@", "--out", "@rep"], Works("allowed only 1 round")),
        case("aging: full disk before anything is measured", none, &["aging", "--quick", "--count", "50", "--workdir", "@", "--out", "@rep"], Fail("File too large")).fsize(100_000),
    ];
    v.extend(engine_cases());
    for (command, option) in NUMBER_OPTIONS {
        for bad in BAD_NUMBERS.iter().filter(|b| !(*option == "--cache-size" && **b == "-3")) {
            let mut args: Vec<&str> = command.to_vec();
            args.extend([*option, *bad]);
            v.push(case(&format!("{} {option} {bad}", command[0]), db, &args, Fail(option)));
        }
    }
    v
}

/// Every option that takes a number, with the arguments that reach it.
/// `--cache-size` takes negative numbers (KiB, as in SQLite), so "-3" is legal there.
const NUMBER_OPTIONS: &[(&[&str], &str)] = &[
    (&["init", "@new.db"], "--count"),
    (&["init", "@new.db"], "--size"),
    (&["init", "@new.db"], "--variance"),
    (&["init", "@new.db"], "--pagesize"),
    (&["init", "@new.db"], "--seed"),
    (&["run", "@db"], "--count"),
    (&["run", "@db"], "--max-id"),
    (&["run", "@db"], "--start"),
    (&["run", "@db"], "--cache-size"),
    (&["run", "@db"], "--mmap"),
    (&["run", "@db"], "--repeat"),
    (&["run", "@db"], "--warmup"),
    (&["run", "@db"], "--seed"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--count"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--size"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--variance"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--pagesize"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--rounds"),
    (&["matrix", "--workdir", "@", "--out", "@rep"], "--sizes"),
    (&["matrix", "--workdir", "@", "--out", "@rep"], "--pagesizes"),
    (&["matrix", "--workdir", "@", "--out", "@rep"], "--total"),
    (&["matrix", "--workdir", "@", "--out", "@rep"], "--cache"),
    (&["matrix", "--workdir", "@", "--out", "@rep"], "--rounds"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--threads"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--duration"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--rounds"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--rows"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--batch"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--busy-timeout"),
    (&["concurrency", "--workdir", "@", "--out", "@rep"], "--seed"),
    (&["aging", "--workdir", "@", "--out", "@rep"], "--count"),
    (&["aging", "--workdir", "@", "--out", "@rep"], "--rounds"),
    (&["crashtest"], "--kills"),
    (&["crashtest"], "--count"),
    (&["crashtest"], "--seed"),
    (&["run", "@db", "--update"], "--commit-every"),
    (&["suite", "--workdir", "@", "--out", "@rep"], "--commit-every"),
    (&["advise", "--workdir", "@", "--out", "@rep"], "--commit-every"),
    (&["aging", "--workdir", "@", "--out", "@rep"], "--commit-every"),
    (&["crashtest"], "--commit-every"),
    (&["crashtest", "--machine-loss"], "--losses"),
];

/// Not a number, a fraction, an unknown unit, an overflow, empty, negative.
const BAD_NUMBERS: &[&str] = &["abc", "1.5k", "10x", "99999999999999999999", "", "-3"];

/// The key-value engines' bad inputs: "@t" is the engine's dataset.
#[rustfmt::skip]
fn engine_cases() -> Vec<Case> {
    vec![
        case("export: unknown engine", db, &["export", "@db", "@t", "--engine", "bogus"], Fail("--engine")),
        case("run: empty lmdb dir", dir, &["run", "@dir"], Fail("dir")),
        case("run: lmdb without data.mdb", lmdb_no_data, &["run", "@t"], Fail("t")),
        case("run: redb path is a directory", dir, &["run", "@dir", "--update"], Fail("dir")),
        case("run: file where lmdb dir expected", lmdb_file, &["run", "@t"], Fail("t")),
        case("run: corrupt lmdb", lmdb_corrupt, &["run", "@t"], Fail("t")),
        case("run: truncated lmdb", lmdb_truncated, &["run", "@t"], Fail("truncated")),
        case("run: corrupt redb", redb_corrupt, &["run", "@t"], Fail("t")),
        case("run: truncated redb", redb_truncated, &["run", "@t"], Fail("t")),
        case("stat: truncated redb", redb_truncated, &["stat", "@t"], Fail("t")),
        case("run: corrupt fjall", fjall_corrupt, &["run", "@t"], Fail("t")),
        case("run: lmdb held elsewhere", lmdb, &["run", "@t", "--update"], Fail("another process")).held(EngineKind::Lmdb),
        case("run: redb held elsewhere", redb, &["run", "@t", "--update"], Fail("another process")).held(EngineKind::Redb),
        case("run: fjall held elsewhere", fjall, &["run", "@t", "--update"], Fail("another process")).held(EngineKind::Fjall),
        case("run: fjall's clients as processes", fjall, &["run", "@t", "--clients", "2", "--clients-are", "processes"], Fail("--clients-are processes: fjall locks its keyspace for one process")),
        case("run: clients writing in a rollback journal", db, &["run", "@db", "--clients", "2", "--mix", "1:1", "--window", "20ms"], Fail("journal mode delete, where one client's read blocks another's commit when several clients write; use --jmode wal")),
        case("export: engine over a foreign dir", db_and_text_dir, &["export", "@db", "@t", "--engine", "lmdb", "--force"], Fail("refusing")),
        case("export: s3 URL holding credentials", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://key:s3cret@127.0.0.1:1", "--s3-bucket", "b"], Fail("put no credentials in the URL")),
        case("export: s3 endpoint not a URL", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "notaurl", "--s3-bucket", "b"], Fail("--s3 notaurl: not a URL")),
        case("export: s3 URL not http", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "ftp://127.0.0.1:1", "--s3-bucket", "b"], Fail("expected an http:// or https:// endpoint")),
        case("export: s3 store without credentials", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://127.0.0.1:1", "--s3-bucket", "bkt"], Fail("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")),
        // Bucket names S3 refuses, before any request (the endpoint is closed).
        case("export: s3 bucket name too short", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://127.0.0.1:1", "--s3-bucket", "b"], Fail("--s3-bucket b: a bucket name has 3 to 63 characters")),
        case("export: s3 bucket name upper case", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://127.0.0.1:1", "--s3-bucket", "Users"], Fail("only lower-case letters")),
        case("stat: s3 listing with a bucket name upper case", dir, &["stat", "--s3", "http://127.0.0.1:1", "--s3-bucket", "AB"], Fail("--s3-bucket AB")),
        case("stat: neither a path nor a store", dir, &["stat"], Fail("stat needs a PATH")),
        case("drop: a directory that is no dataset", dir, &["drop", "@dir"], Fail("is not a blobbench S3 dataset")),
        case("drop: an lmdb dataset", lmdb, &["drop", "@t"], Fail("drop removes only those, so nothing was removed")),
        case("drop: an s3 dataset whose store cannot be reached", s3_unreachable, &["drop", "@t"], Fail("AWS_ACCESS_KEY_ID")),
        case("drop: a prefix that is not a dataset's", dir, &["drop", "--prefix", "blobbench/", "--s3", "http://127.0.0.1:1", "--s3-bucket", "bkt"], Fail("not a blobbench dataset's prefix")),
        case("export: s3 CA file missing", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "https://127.0.0.1:1", "--s3-bucket", "bkt", "--s3-ca", "@none.pem"], Fail("--s3-ca: cannot read")),
        case("export: s3 CA file not PEM", db, &["export", "@db", "@t", "--engine", "s3", "--s3", "https://127.0.0.1:1", "--s3-bucket", "bkt", "--s3-ca", "@db"], Fail("no PEM certificate")),
        case("run: s3 CA file not PEM", db, &["run", "@db", "--s3-ca", "@db"], Fail("no PEM certificate")),
        case("export: s3 addressing unknown", db, &["export", "@db", "@t", "--engine", "s3", "--s3-addressing", "sideways"], Fail("invalid value 'sideways'")),
        case("export: unknown --s3-server", db, &["export", "@db", "@t", "--engine", "s3", "--s3-server", "minio"], Fail("unknown --s3-server 'minio' (expected swift, swift-3hosts, seaweedfs, seaweedfs-2hosts)")),
        case("suite: unknown --s3-server", none, &["suite", "--engines", "s3", "--s3-server", "ceph", "--workdir", "@", "--out", "@rep"], Fail("unknown --s3-server 'ceph'")),
        case("crashtest: unknown --s3-server", none, &["crashtest", "--method", "s3-durable", "--s3-server", "x", "--workdir", "@"], Fail("unknown --s3-server 'x'")),
        // Issue 50: a listed key outside the prefix; a dataset another
        // blobbench holds; a profile that assumes a role or uses SSO; a
        // missing profile, keys in the environment or not.
        case("drop: a listed key a URL would resolve outside the prefix", s3_planted, &["drop", "@t"], Fail(r#"key "blobbench/t-0000abcd/../../victim" is refused"#)).env(&KEYS),
        case("drop: an s3 dataset a write run holds", s3_unreachable, &["drop", "@t"], Fail("is in use by blobbench process")).held(EngineKind::S3),
        case("export: an s3 profile that assumes a role", aws_files, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://127.0.0.1:1", "--s3-bucket", "bkt"], Fail("profile scoped gets its keys through role_arn")).env(&PROFILE_FILES).env(&[("AWS_PROFILE", "scoped")]),
        case("drop: an s3 profile that uses SSO", aws_files_and_dataset, &["drop", "@t"], Fail("profile sso gets its keys through sso_session")).env(&PROFILE_FILES).env(&[("AWS_PROFILE", "sso")]),
        case("export: a missing s3 profile, keys in the environment", aws_files, &["export", "@db", "@t", "--engine", "s3", "--s3", "http://127.0.0.1:1", "--s3-bucket", "bkt"], Fail("profile nope is in neither")).env(&PROFILE_FILES).env(&KEYS).env(&[("AWS_PROFILE", "nope")]),
        case("run: a missing s3 profile", aws_files_and_dataset, &["run", "@t"], Fail("profile nope is in neither")).env(&PROFILE_FILES).env(&[("AWS_PROFILE", "nope")]),
        // LMDB's data.mdb beside fjall's keyspaces/: neither is read as the dataset
        case("run: two engines' files in one dir", lmdb_and_fjall, &["run", "@t"], Fail("holds the files of two engines, LMDB and fjall")),
        case("run --threads: two engines' files in one dir", lmdb_and_fjall, &["run", "@t", "--threads", "2"], Fail("holds the files of two engines, LMDB and fjall")),
        case("stat: two engines' files in one dir", lmdb_and_fjall, &["stat", "@t"], Fail("holds the files of two engines, LMDB and fjall")),
    ]
}

/// Run only as the child of [`common::hold_in_child`]: holds an engine's
/// dataset open until its stdin closes.
#[test]
#[ignore = "helper process for the held-dataset cases"]
fn hold_engine_dataset() {
    common::hold_from_env();
}

// ---- fixtures ----------------------------------------------------------

/// An S3 dataset on a store nothing answers at: `drop` must keep its
/// descriptor.
fn s3_unreachable(d: &Path) {
    std::fs::create_dir(d.join("t")).unwrap();
    let desc = r#"{"engine":"s3","bucket":"bkt","prefix":"blobbench/t-0000abcd/","id":"0000abcd","endpoint":"http://127.0.0.1:1"}"#;
    std::fs::write(d.join("t/blobbench-s3.json"), desc).unwrap();
}

/// An S3 dataset on a scripted store whose listing names a key with `..`.
fn s3_planted(d: &Path) {
    std::fs::create_dir(d.join("t")).unwrap();
    let endpoint = common::s3::planted_store();
    let desc = format!(
        r#"{{"engine":"s3","bucket":"bkt","prefix":"blobbench/t-0000abcd/","id":"0000abcd","endpoint":"{endpoint}"}}"#
    );
    std::fs::write(d.join("t/blobbench-s3.json"), desc).unwrap();
}

/// AWS shared files: profile `scoped` with keys in the credentials file
/// and a role to assume in the config file; `sso` using SSO; and a
/// kvtest database.
fn aws_files(d: &Path) {
    db(d);
    let credentials = "[scoped]\naws_access_key_id = AKIABROAD\naws_secret_access_key = broad\n";
    std::fs::write(d.join("aws-credentials"), credentials).unwrap();
    let config = "[profile scoped]\nrole_arn = arn:aws:iam::1:role/scoped\nsource_profile = x\n\n\
        [profile sso]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = r\n";
    std::fs::write(d.join("aws-config"), config).unwrap();
}

fn aws_files_and_dataset(d: &Path) {
    aws_files(d);
    s3_unreachable(d);
}

fn engine_fixture(d: &Path, kind: EngineKind) {
    db(d);
    common::engine_dataset(kind, &d.join("db"), &d.join("t"));
}

fn lmdb(d: &Path) {
    engine_fixture(d, EngineKind::Lmdb);
}

fn redb(d: &Path) {
    engine_fixture(d, EngineKind::Redb);
}

fn fjall(d: &Path) {
    engine_fixture(d, EngineKind::Fjall);
}

/// An LMDB dataset at "t" with a fjall dataset's files moved in beside it.
fn lmdb_and_fjall(d: &Path) {
    lmdb(d);
    common::engine_dataset(EngineKind::Fjall, &d.join("db"), &d.join("f"));
    for entry in std::fs::read_dir(d.join("f")).unwrap() {
        let entry = entry.unwrap();
        std::fs::rename(entry.path(), d.join("t").join(entry.file_name())).unwrap();
    }
    std::fs::remove_dir(d.join("f")).unwrap();
}

fn lmdb_no_data(d: &Path) {
    lmdb(d);
    std::fs::remove_file(d.join("t/data.mdb")).unwrap();
}

fn lmdb_file(d: &Path) {
    std::fs::write(d.join("t"), b"data.mdb should be a directory").unwrap();
}

fn garble(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let end = (at + 4096).min(bytes.len());
    for b in &mut bytes[at..end] {
        *b ^= 0x5a;
    }
    std::fs::write(path, bytes).unwrap();
}

fn cut(path: &Path, keep: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(keep).unwrap();
}

fn lmdb_corrupt(d: &Path) {
    lmdb(d);
    garble(&d.join("t/data.mdb"), 0);
}

fn lmdb_truncated(d: &Path) {
    lmdb(d);
    let len = std::fs::metadata(d.join("t/data.mdb")).unwrap().len();
    cut(&d.join("t/data.mdb"), len / 2);
}

fn redb_corrupt(d: &Path) {
    redb(d);
    garble(&d.join("t"), 16);
}

fn redb_truncated(d: &Path) {
    redb(d);
    let len = std::fs::metadata(d.join("t")).unwrap().len();
    cut(&d.join("t"), len / 2);
}

fn fjall_corrupt(d: &Path) {
    fjall(d);
    std::fs::write(d.join("t/version"), b"FJL\xff garbage").unwrap();
}

fn db_and_text_dir(d: &Path) {
    db(d);
    std::fs::create_dir(d.join("t")).unwrap();
    std::fs::write(d.join("t/notes.txt"), b"mine").unwrap();
}

fn empty_src(d: &Path) {
    std::fs::create_dir(d.join("src")).unwrap();
}

fn loop_src(d: &Path) {
    empty_src(d);
    std::os::unix::fs::symlink("loop", d.join("src/loop")).unwrap();
}

fn loop_and_file_src(d: &Path) {
    empty_src(d);
    std::os::unix::fs::symlink("b", d.join("src/a")).unwrap();
    std::os::unix::fs::symlink("a", d.join("src/b")).unwrap();
    std::fs::write(d.join("src/c"), b"content").unwrap();
}

fn links_and_empty_src(d: &Path) {
    loop_and_file_src(d);
    std::fs::write(d.join("src/c"), b"").unwrap();
}

fn unreadable_sub_src(d: &Path) {
    std::fs::create_dir_all(d.join("src/locked")).unwrap();
    std::fs::write(d.join("src/open.bin"), b"readable").unwrap();
    std::fs::write(d.join("src/locked/secret.bin"), b"hidden").unwrap();
    std::fs::set_permissions(d.join("src/locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
}

fn non_utf8_src(d: &Path) {
    use std::os::unix::ffi::OsStrExt;
    empty_src(d);
    std::fs::write(d.join("src").join(std::ffi::OsStr::from_bytes(b"caf\xe9.bin")), b"latin-1 name").unwrap();
    std::fs::write(d.join("src").join(std::ffi::OsStr::from_bytes(b"tab\there")), b"tab").unwrap();
}

fn text_empty_hist(d: &Path) {
    std::fs::write(d.join("hist"), "# sizes\n\n").unwrap();
}

fn text_bad_hist(d: &Path) {
    std::fs::write(d.join("hist"), "1000 5\n2000\n").unwrap();
}

fn text_negative_hist(d: &Path) {
    std::fs::write(d.join("hist"), "1000 -5\n").unwrap();
}

fn none(_: &Path) {}

/// A suite file written before `--commit-every` (schema version 3).
fn older_suite(d: &Path) {
    std::fs::copy(common::fixture("suite-host-a.json"), d.join("r.json")).unwrap();
}

/// An external-blobs dataset "@t" built from "@db".
fn external(d: &Path) {
    engine_fixture(d, EngineKind::External);
}

/// A version 3 suite file whose reads ran in 4 rounds, changed by `spoil`.
fn rounds_file(d: &Path, spoil: fn(&mut serde_json::Value)) {
    let text = std::fs::read_to_string(common::fixture("suite-host-a.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["schema_version"] = 3.into();
    let arms = ["read/db-blob-mmap", "read/flat-posix"];
    let round =
        |a: f64, b: f64| serde_json::json!({"order": [0, 1], "per_op_us": [a, b], "elapsed_ms": 1.0, "load": {}});
    v["rounds"] = serde_json::json!([{
        "id": "suite/reads", "arms": arms, "seed": 1, "warmup": true, "target_pct": 5.0,
        "max_rounds": 4, "stop": "max-rounds",
        "rounds": [round(5.0, 10.0), round(5.0, 10.0), round(5.0, 10.0), round(5.0, 10.0)]
    }]);
    spoil(&mut v);
    std::fs::write(d.join("r.json"), serde_json::to_string(&v).unwrap()).unwrap();
}

fn rounds_arm_missing(d: &Path) {
    rounds_file(d, |v| {
        v["rounds"][0]["rounds"][2] =
            serde_json::json!({"order": [0], "per_op_us": [5.0], "elapsed_ms": 1.0, "load": {}})
    });
}

fn rounds_uneven(d: &Path) {
    rounds_file(d, |v| v["rounds"][0]["rounds"][1]["per_op_us"] = serde_json::json!([5.0, 10.0, 7.0]));
}

fn make_db(path: &Path, keys: impl Iterator<Item = u32>) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    for k in keys {
        let v: Vec<u8> = (0..2000u32).map(|i| (i.wrapping_mul(k).wrapping_add(k) % 251) as u8).collect();
        conn.execute("INSERT INTO kv VALUES(?1, ?2)", rusqlite::params![k, v]).unwrap();
    }
    conn
}

fn db(d: &Path) {
    make_db(&d.join("db"), 1..=20);
}

fn dir(d: &Path) {
    std::fs::create_dir(d.join("dir")).unwrap();
}

fn db_and_dir(d: &Path) {
    db(d);
    dir(d);
}

fn text(d: &Path) {
    std::fs::write(d.join("text.txt"), "hello, this is not a database\n").unwrap();
}

fn db_and_text(d: &Path) {
    db(d);
    text(d);
}

fn empty(d: &Path) {
    std::fs::write(d.join("empty"), b"").unwrap();
}

fn binary(d: &Path) {
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(d.join("bin"), bytes).unwrap();
}

fn no_kv(d: &Path) {
    Connection::open(d.join("db")).unwrap().execute_batch("CREATE TABLE other(x)").unwrap();
}

fn kv_columns(d: &Path) {
    let c = Connection::open(d.join("db")).unwrap();
    c.execute_batch("CREATE TABLE kv(k INTEGER, v BLOB, extra TEXT); INSERT INTO kv VALUES(1, x'00', 'a')").unwrap();
}

fn kv_text(d: &Path) {
    make_db(&d.join("db"), 1..=5).execute("UPDATE kv SET v='text' WHERE k=3", []).unwrap();
}

fn kv_null(d: &Path) {
    make_db(&d.join("db"), 1..=5).execute("UPDATE kv SET v=NULL WHERE k=3", []).unwrap();
}

fn kv_gaps(d: &Path) {
    make_db(&d.join("db"), (1..=10).map(|k| 2 * k));
}

fn flat_gaps(d: &Path) {
    std::fs::create_dir(d.join("flat")).unwrap();
    for k in (1..=10).map(|k| 2 * k) {
        std::fs::write(d.join(format!("flat/{k:06}")), vec![k as u8; 1000]).unwrap();
    }
}

fn truncated(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    let f = std::fs::OpenOptions::new().write(true).open(d.join("db")).unwrap();
    f.set_len(3 * 4096 + 100).unwrap();
}

fn bad_header(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    let mut bytes = std::fs::read(d.join("db")).unwrap();
    bytes[16..100].fill(0xA5);
    std::fs::write(d.join("db"), bytes).unwrap();
}

/// The state a writer killed in the middle of a transaction leaves: the
/// database with some new pages written and the hot journal that undoes them.
fn hot_journal(d: &Path) {
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let conn = make_db(&work.join("db"), 1..=20);
    conn.execute_batch("PRAGMA cache_size=2; BEGIN; UPDATE kv SET v=randomblob(length(v));").unwrap();
    assert!(work.join("db-journal").exists());
    std::fs::copy(work.join("db"), d.join("db")).unwrap();
    std::fs::copy(work.join("db-journal"), d.join("db-journal")).unwrap();
    drop(conn);
    std::fs::remove_dir_all(&work).unwrap();
}

/// A writer killed after committing to the WAL, before any checkpoint:
/// the committed data lives only in the -wal file.
fn hot_wal(d: &Path) {
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let conn = make_db(&work.join("db"), 1..=20);
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; UPDATE kv SET v=randomblob(length(v));")
        .unwrap();
    std::fs::copy(work.join("db"), d.join("db")).unwrap();
    std::fs::copy(work.join("db-wal"), d.join("db-wal")).unwrap();
    drop(conn);
    std::fs::remove_dir_all(&work).unwrap();
}

fn db_wal_mode(d: &Path) {
    make_db(&d.join("db"), 1..=20).execute_batch("PRAGMA journal_mode=WAL").unwrap();
}

fn read_only(d: &Path) {
    make_db(&d.join("db"), 1..=20);
    std::fs::set_permissions(d.join("db"), std::fs::Permissions::from_mode(0o444)).unwrap();
}

fn read_only_flat(d: &Path) {
    flat_gaps(d);
    for e in std::fs::read_dir(d.join("flat")).unwrap() {
        std::fs::set_permissions(e.unwrap().path(), std::fs::Permissions::from_mode(0o444)).unwrap();
    }
}

fn ro_dir(d: &Path) {
    std::fs::create_dir(d.join("ro")).unwrap();
    std::fs::set_permissions(d.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
}

fn db_and_ro_dir(d: &Path) {
    db(d);
    ro_dir(d);
}

fn spaced_dir(d: &Path) {
    std::fs::create_dir(d.join("my dir")).unwrap();
}

fn spaced_db(d: &Path) {
    spaced_dir(d);
    make_db(&d.join("my dir/dätä ñ.db"), 1..=20);
}

fn spaced_flat(d: &Path) {
    spaced_dir(d);
    std::fs::create_dir(d.join("my dir/fläť")).unwrap();
    for k in 1..=20 {
        std::fs::write(d.join(format!("my dir/fläť/{k:06}")), vec![k as u8; 1000]).unwrap();
    }
}

const SUITE_RESULTS: &str = include_str!("../fixtures/suite-host-a.json");

fn results(d: &Path) {
    std::fs::write(d.join("r.json"), SUITE_RESULTS).unwrap();
}

/// A change to a result file's JSON.
type Spoil = fn(&mut serde_json::Value);

/// `run` result files of a small database: "@a.json", "@same.json" (its
/// copy), and copies that differ in one field each ("@update.json",
/// "@endpoint.json", "@dataset.json"); "@r.json" is a suite's.
fn run_files(d: &Path) {
    let db = common::small_db(d);
    let a = d.join("a.json");
    common::ok(&["run", db.to_str().unwrap(), "--count", "20", "--repeat", "1", "--json", a.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let variants: [(&str, Spoil); 4] = [
        ("same.json", |_| {}),
        ("update.json", |v| v["experiments"][0]["params"]["update"] = true.into()),
        ("endpoint.json", |v| v["run"]["endpoint"] = "elsewhere:/data/t.db".into()),
        ("dataset.json", |v| v["experiments"][0]["params"]["max_id"] = 7.into()),
    ];
    for (name, change) in variants {
        let mut w = v.clone();
        change(&mut w);
        std::fs::write(d.join(name), serde_json::to_string(&w).unwrap()).unwrap();
    }
    results(d);
}

fn results_and_text(d: &Path) {
    results(d);
    text(d);
}

fn results_in_dir(d: &Path) {
    std::fs::create_dir(d.join("rep")).unwrap();
    std::fs::write(d.join("rep/r.json"), SUITE_RESULTS).unwrap();
}

fn spaced_results(d: &Path) {
    spaced_dir(d);
    std::fs::write(d.join("my dir/rësults ü.json"), SUITE_RESULTS).unwrap();
}

fn foreign_json(d: &Path) {
    std::fs::write(d.join("r.json"), r#"{"name": "something else", "values": [1, 2, 3]}"#).unwrap();
}

fn future_json(d: &Path) {
    std::fs::write(d.join("r.json"), SUITE_RESULTS.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1))
        .unwrap();
}

fn results_and_future(d: &Path) {
    results(d);
    std::fs::write(d.join("f.json"), SUITE_RESULTS.replacen("\"schema_version\": 1", "\"schema_version\": 99", 1))
        .unwrap();
}

fn truncated_json(d: &Path) {
    std::fs::write(d.join("r.json"), &SUITE_RESULTS[..SUITE_RESULTS.len() / 2]).unwrap();
}

fn shape_json(d: &Path) {
    std::fs::write(d.join("r.json"), r#"{"schema": "blobbench-results", "schema_version": 1, "command": 7}"#).unwrap();
}

/// A real crashtest result file, from the binary itself (a fraction of a second).
fn power_results(d: &Path) {
    std::fs::write(d.join("power.json"), include_str!("../fixtures/power-cut-strict.json")).unwrap();
}

fn crash_results(d: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_blobbench"))
        .args(["crashtest", "--method", "replace", "--kills", "1", "--count", "5", "--workdir"])
        .arg(d)
        .arg("--json")
        .arg(d.join("crash.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---- the harness -------------------------------------------------------

/// The committed content of a database, as a fresh reader (which recovers
/// a hot journal or WAL) sees it: a checksum of every key and value.
fn committed_content(db: &Path) -> u64 {
    let c = Connection::open(db).unwrap();
    let mut s = c.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let rows = s.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))).unwrap();
    rows.map(|r| r.unwrap())
        .fold(0u64, |h, (k, v)| v.iter().fold(h ^ k as u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)))
}

/// Runs one case; returns what went wrong, if anything.
fn check(c: &Case) -> Option<String> {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    (c.fixture)(d);
    let reference = matches!(c.expect, Recovers).then(|| {
        let copy = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
        committed_content(&copy.path().join("db"))
    });
    // The engine is held from a child (POSIX locks are per process), opened
    // before the snapshot so that only the command's changes count.
    let engine_holder = c.held.map(|kind| common::hold_in_child(kind, &d.join("t")));
    let before = common::snapshot(d);
    // Taken after the snapshot: POSIX locks are per process, and reading
    // the file (closing any descriptor of it) would drop this one.
    let holder = c.locked.then(|| {
        let conn = Connection::open(d.join("db")).unwrap();
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        conn
    });
    // The layer runs in this process; the command, a child, uses the mount.
    let mnt = tempfile::tempdir().unwrap();
    let layer = c.fault.map(|(name, at)| {
        let plan = blobbench::powercut::FaultPlan::parse(name, at).unwrap();
        blobbench::powercut::Mounted::mount(d, mnt.path(), plan).unwrap_or_else(|e| panic!("{e}"))
    });
    let seen = if layer.is_some() { mnt.path() } else { d };
    let args: Vec<PathBuf> = c
        .args
        .iter()
        .map(|a| match a.strip_prefix('@') {
            Some("") => seen.to_path_buf(),
            Some(rel) => seen.join(rel),
            None => match a.strip_prefix("file:@") {
                Some(rel) => PathBuf::from(format!("file:{}", seen.join(rel).display())),
                None => PathBuf::from(a),
            },
        })
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blobbench"));
    cmd.args(&args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_DEFAULT_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_SECURITY_TOKEN")
        .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
        .env_remove("AWS_ROLE_ARN")
        .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        .env_remove("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        // No profile of this machine's user either.
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws/config");
    for (name, value) in &c.env {
        match value.strip_prefix('@') {
            Some(rel) => cmd.env(name, seen.join(rel)),
            None => cmd.env(name, value),
        };
    }
    if let Some(limit) = c.fsize {
        // SAFETY: setrlimit and signal are async-signal-safe. SIGXFSZ is
        // left at its default (a core dump): blobbench must ignore it
        // itself so that write() fails with EFBIG, as a full disk fails
        // with ENOSPC.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                libc::setrlimit(libc::RLIMIT_FSIZE, &r);
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                Ok(())
            });
        }
    }
    if c.nocaps {
        // SAFETY: prctl is async-signal-safe. Dropped from the bounding set,
        // the capabilities are gone from the binary exec'd next.
        unsafe {
            cmd.pre_exec(|| {
                // CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2), linux/capability.h.
                for cap in [1 as libc::c_ulong, 2] {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().unwrap();
    drop(holder);
    let faults = layer.map(|l| {
        let n = l.counters().faults_injected;
        drop(l); // unmounts: what was not fsync'd is dropped, as after a power cut
        n
    });
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut problems = Vec::new();
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        problems.push("panicked".to_string());
    }
    let after = common::snapshot(d);
    drop(engine_holder);
    match c.expect {
        Fail(needle) => {
            if out.status.success() {
                problems.push("exit status 0".into());
            }
            let lines: Vec<&str> = stderr.lines().collect();
            if lines.len() != 1 || !lines[0].starts_with("error: ") {
                problems.push(format!("stderr is not one \"error:\" line: {stderr:?}"));
            } else if !lines[0].contains(needle) {
                problems.push(format!("error does not say {needle:?}: {}", lines[0]));
            }
            let changes = diff(&before, &after);
            if !changes.is_empty() {
                problems.push(format!("files changed or left behind: {changes:?}"));
            }
            if faults == Some(0) {
                problems.push("the fault was never injected".into());
            }
            if faults.is_some() && !stdout.trim().is_empty() {
                problems.push(format!("printed figures from a run that hit an I/O error: {stdout}"));
            }
        }
        Works(needle) => {
            if !out.status.success() {
                problems.push(format!("failed: {stderr:?}"));
            } else if !stdout.contains(needle) {
                problems.push(format!("stdout lacks {needle:?}: {stdout}"));
            }
            let changed: Vec<_> = before.iter().filter(|(p, s)| after.get(*p) != Some(s)).collect();
            if !c.args.contains(&"--update".to_string()) && !changed.is_empty() {
                problems.push(format!("inputs changed: {changed:?}"));
            }
        }
        Recovers => {
            if !out.status.success() {
                problems.push(format!("failed: {stderr:?}"));
            }
            let now = committed_content(&d.join("db"));
            if Some(now) != reference {
                problems.push("committed data changed".into());
            }
        }
    }
    (!problems.is_empty()).then(|| format!("{}: {} (args {:?})", c.name, problems.join("; "), c.args))
}

/// What changed between two snapshots. SQLite's own "-shm" index and an
/// empty "-wal", which any open of a WAL database may create and cannot
/// always remove after a failure, hold no data and are not counted.
fn diff(before: &BTreeMap<PathBuf, u64>, after: &BTreeMap<PathBuf, u64>) -> Vec<String> {
    const EMPTY: u64 = 0xcbf2_9ce4_8422_2325;
    let sqlite_own = |p: &Path, sum: u64| {
        let name = p.to_string_lossy();
        name.ends_with("-shm") || (name.ends_with("-wal") && sum == EMPTY)
    };
    let mut d: Vec<String> = Vec::new();
    for (p, s) in after {
        match before.get(p) {
            None if sqlite_own(p, *s) => {}
            None => d.push(format!("new {}", p.display())),
            Some(b) if b != s => d.push(format!("changed {}", p.display())),
            _ => {}
        }
    }
    d.extend(before.keys().filter(|p| !after.contains_key(*p)).map(|p| format!("removed {}", p.display())));
    d
}

#[test]
fn every_command_survives_bad_input() {
    let run = cases();
    // Cases wait on locks and child processes; a few at a time keep the
    // whole catalogue short on a small machine.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = run.get(i) else { break };
                if let Some(f) = check(c) {
                    failures.lock().unwrap().push(f);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), run.len(), failures.join("\n"));
}
