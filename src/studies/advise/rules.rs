//! The ranking rules as plain data (documented in docs/advise.md): which
//! configuration of each store answers each durability need, which crash
//! facts exclude a candidate, and the crash table used when no power-cut
//! run was possible.

use super::candidate::Durability;
use super::section::CrashFact;
use crate::powercut::Model;
use crate::records::{ConfigId, EngineKind};
use crate::studies::matrix::DbRead;

/// SQLite's candidate's read path in the size matrix: its own, the one
/// [`Store::read_id`] times (`read/db-blob-mmap`: blob API, mmap).
pub const SQLITE_READ: DbRead = DbRead::BlobApiMmap;

/// The engines considered when `--engines` is not given: every embedded
/// key-value engine in the registry (a server is considered when asked for,
/// since it needs one running or its programs installed).
pub fn default_engines() -> Vec<EngineKind> {
    EngineKind::KEY_VALUE.into_iter().filter(|k| !k.is_server()).collect()
}

/// What excludes a candidate, by durability need. Each test reads the crash
/// facts of the write method the candidate uses for that need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The method never tells its caller a write is durable.
    NoDurabilityPromise,
    /// Power cuts lost writes the method had acknowledged as durable.
    LostAcknowledged,
    /// Power cuts left torn blobs or a store failing its integrity check.
    Damaged,
}

/// The exclusion rules: (need, test). A candidate failing any test of the
/// stated need is excluded, with the facts as its reason.
pub const EXCLUSIONS: [(Durability, Test); 4] = [
    (Durability::Required, Test::NoDurabilityPromise),
    (Durability::Required, Test::LostAcknowledged),
    (Durability::Required, Test::Damaged),
    (Durability::Relaxed, Test::Damaged),
];

impl Test {
    /// Whether `fact` fails this test.
    pub fn fails(self, fact: &CrashFact) -> bool {
        match self {
            Test::NoDurabilityPromise => !fact.acknowledges_durability,
            Test::LostAcknowledged => fact.lost_after_ack > 0,
            Test::Damaged => fact.torn > 0 || fact.integrity_failures > 0,
        }
    }
}

/// The first test of `need` that `fact` fails.
pub fn excluded_by(need: Durability, fact: &CrashFact) -> Option<Test> {
    EXCLUSIONS.iter().filter(|(d, _)| *d == need).map(|(_, t)| *t).find(|t| t.fails(fact))
}

/// Rewrites of every blob in advise's short aging pass (its ages are 0
/// and this).
pub const AGING_AGE: u32 = 2;

/// The model of the documented table and of advise's own power-cut run:
/// each unsynced write dropped, whole or torn by 4 KiB sectors (NVMe and
/// 4K-native drives).
pub const CRASH_MODEL: Model = Model::Torn { sector: 4096 };

/// Power cuts per method behind each backend's recorded power-cut facts
/// (`crashtest --power-cut --model torn-4k` on the development machine,
/// docs/crash-safety.md, 100 blobs, seed 1), used when FUSE does not work
/// where advise runs.
pub const DOCUMENTED_CUTS: u32 = 50;

/// The documented table as crash facts: every write configuration whose
/// backend records what power cuts did to it.
pub fn documented() -> Vec<CrashFact> {
    ConfigId::methods()
        .into_iter()
        .filter_map(|method| {
            let cuts = method.power_cuts()?;
            Some(CrashFact {
                method: Some(method),
                acknowledges_durability: method.acknowledges_durability(),
                cuts: DOCUMENTED_CUTS,
                lost_after_ack: cuts.lost_after_ack,
                torn: cuts.torn,
                integrity_failures: cuts.integrity_failures,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::candidate::{Store, ALWAYS};
    use super::*;

    #[test]
    fn documented_methods_are_crash_test_methods() {
        let stores = ALWAYS.into_iter().chain(default_engines().into_iter().map(Store::Engine));
        for s in stores {
            for need in [Durability::Required, Durability::Relaxed] {
                let m = s.crash_method(need).expect("a crash method");
                assert!(documented().iter().any(|f| f.method == Some(m)), "{} not documented", m.name());
                assert!(
                    crate::studies::crashtest::method::parse_list(m.name()).is_ok(),
                    "{} not a crash method",
                    m.name()
                );
            }
        }
    }

    /// The twelve methods of the power-cut run in docs/crash-safety.md.
    #[test]
    fn the_documented_table_holds_the_twelve_measured_methods() {
        let names: Vec<&str> = documented().iter().filter_map(|f| f.method).map(ConfigId::name).collect();
        assert_eq!(
            names,
            [
                "db-wal-normal",
                "db-wal-full",
                "inplace",
                "inplace-fsync",
                "replace",
                "replace-fsync-dir",
                "lmdb-durable",
                "lmdb-fast",
                "redb-durable",
                "redb-fast",
                "fjall-durable",
                "fjall-fast"
            ]
        );
    }

    #[test]
    fn in_place_writes_are_excluded_when_durability_is_required() {
        let facts = documented();
        let of = |m: &str| facts.iter().find(|f| f.method.map(ConfigId::name) == Some(m)).unwrap().clone();
        assert_eq!(excluded_by(Durability::Required, &of("inplace-fsync")), Some(Test::LostAcknowledged));
        assert_eq!(excluded_by(Durability::Required, &of("db-wal-normal")), Some(Test::NoDurabilityPromise));
        assert_eq!(excluded_by(Durability::Required, &of("db-wal-full")), None);
        assert_eq!(excluded_by(Durability::Relaxed, &of("inplace")), Some(Test::Damaged));
        assert_eq!(excluded_by(Durability::Relaxed, &of("replace")), None);
    }
}
