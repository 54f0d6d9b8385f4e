//! The machine-loss test's accounting: what writers were told, and what
//! blobbench's own reader found afterwards. Nothing here asks the store
//! how it is doing; a blob judges itself (`blob::check`).

use std::collections::HashMap;

use super::super::blob::Verdict;

/// What the reader found for every key after one loss, judged against the
/// newest version of it a writer was told was stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Keys whose newest acknowledged version is gone: an older version,
    /// a torn value or none at all where an acknowledged one had been.
    pub lost_acknowledged: u64,
    /// Of those, the ones found torn or missing (the rest: older, whole).
    pub torn: u64,
    pub missing: u64,
    /// Keys holding a version newer than any acknowledged: a write whose
    /// answer never came (in flight, or failed) that the store kept anyway.
    pub unacknowledged_kept: u64,
}

/// Judges `found` (by key; index 0 unused, None: no value) against `acks`
/// ((key, version) pairs writers were told were stored) and `before`, the
/// version each key held, acknowledged, before the writers began (by key),
/// which then becomes what was found whole (as the crash test's repair
/// puts a blob back to a known version: each loss is judged alone).
pub fn judge(acks: &[(u32, u64)], found: &[Option<Verdict>], before: &mut [u64]) -> Found {
    let mut newest: HashMap<u32, u64> = HashMap::new();
    for &(key, version) in acks {
        let v = newest.entry(key).or_insert(version);
        *v = (*v).max(version);
    }
    let mut out = Found::default();
    for (key, seen) in found.iter().enumerate().skip(1) {
        let acked = newest.get(&(key as u32)).copied().unwrap_or(before[key]).max(before[key]);
        if let Some(Verdict::Intact(v)) = seen {
            before[key] = *v;
        }
        match seen {
            None => {
                out.lost_acknowledged += 1;
                out.missing += 1;
            }
            Some(Verdict::Torn) => {
                out.lost_acknowledged += 1;
                out.torn += 1;
            }
            Some(Verdict::Intact(v)) if *v < acked => out.lost_acknowledged += 1,
            Some(Verdict::Intact(v)) if *v > acked => out.unacknowledged_kept += 1,
            Some(Verdict::Intact(_)) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_torn_or_missing_blob_after_an_acknowledged_write_is_a_loss() {
        let acks = [(1, 11), (1, 12), (2, 21), (3, 31), (4, 41)];
        let found = vec![
            None,
            Some(Verdict::Intact(12)), // its newest acknowledged: kept
            Some(Verdict::Intact(20)), // older than the acknowledged 21: lost
            Some(Verdict::Torn),       // torn: lost
            None,                      // missing: lost
            Some(Verdict::Intact(52)), // never acknowledged past the initial 0: a write kept without an answer
            Some(Verdict::Intact(0)),  // the initial version, nothing acknowledged since
        ];
        let mut before = vec![0; 7];
        let f = judge(&acks, &found, &mut before);
        assert_eq!(f, Found { lost_acknowledged: 3, torn: 1, missing: 1, unacknowledged_kept: 1 });
        assert_eq!(before, [0, 12, 20, 0, 0, 52, 0], "what was found whole is the next loss's starting point");
        let mut before = vec![0, 8];
        let f = judge(&[], &[None, Some(Verdict::Intact(7))], &mut before);
        assert_eq!(f.lost_acknowledged, 1, "older than what an earlier loss left acknowledged");
    }
}
