//! Blobs that verify themselves: after a crash, each one says by itself
//! whether it is whole and which write it came from, with no record kept
//! by the writer that died.
//!
//! EngineKind (little-endian): key u32, version u64, length u32, FNV-1a 32 of
//! every other byte (header fields and payload), then a payload derived from
//! (key, version). A blob made of two versions, cut short, or moved to the
//! wrong key fails the check.

use rand::{RngCore, SeedableRng};

/// Bytes before the payload.
pub const HEADER: usize = 20;
const SUM_AT: usize = 16;

/// What one stored value turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Whole, of this version.
    Intact(u64),
    /// Mixed versions, cut short, zero-filled, or another key's bytes.
    Torn,
}

/// Fills `buf` (exactly the blob's length, at least [`HEADER`]) with
/// `version` of `key`'s blob.
pub fn encode(buf: &mut [u8], key: u32, version: u64) {
    debug_assert!(buf.len() >= HEADER);
    let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    buf[0..4].copy_from_slice(&key.to_le_bytes());
    buf[4..12].copy_from_slice(&version.to_le_bytes());
    buf[12..16].copy_from_slice(&len.to_le_bytes());
    let seed = (u64::from(key) << 40) ^ version.rotate_left(17) ^ 0xb10b_c0de;
    rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(&mut buf[HEADER..]);
    let sum = checksum(buf);
    buf[SUM_AT..HEADER].copy_from_slice(&sum.to_le_bytes());
}

/// Checks a value read back for `key`, which should be `expected_len` bytes.
pub fn check(bytes: &[u8], key: u32, expected_len: usize) -> Verdict {
    if bytes.len() != expected_len || bytes.len() < HEADER {
        return Verdict::Torn;
    }
    let word = |r: std::ops::Range<usize>| {
        let mut a = [0u8; 4];
        a.copy_from_slice(&bytes[r]);
        u32::from_le_bytes(a)
    };
    let mut v = [0u8; 8];
    v.copy_from_slice(&bytes[4..12]);
    let intact = word(0..4) == key && word(12..16) as usize == bytes.len() && word(SUM_AT..HEADER) == checksum(bytes);
    if intact {
        Verdict::Intact(u64::from_le_bytes(v))
    } else {
        Verdict::Torn
    }
}

/// FNV-1a (32 bits) over the blob without its checksum field.
fn checksum(blob: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in blob[..SUM_AT].iter().chain(&blob[HEADER..]) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_kind_of_damage() {
        let mut a = vec![0u8; 9000];
        encode(&mut a, 7, 3);
        assert_eq!(check(&a, 7, 9000), Verdict::Intact(3));
        assert_eq!(check(&a, 8, 9000), Verdict::Torn, "another key's blob");
        assert_eq!(check(&a[..4096], 7, 9000), Verdict::Torn, "short");
        assert_eq!(check(&[], 7, 9000), Verdict::Torn, "empty");
        let mut b = vec![0u8; 9000];
        encode(&mut b, 7, 4);
        assert_ne!(a[HEADER..], b[HEADER..], "each version has its own payload");
        let mut mixed = b[..4096].to_vec();
        mixed.extend_from_slice(&a[4096..]);
        assert_eq!(check(&mixed, 7, 9000), Verdict::Torn, "new first page, old rest");
        let mut zeroed = a.clone();
        zeroed[5000..6000].fill(0);
        assert_eq!(check(&zeroed, 7, 9000), Verdict::Torn, "a hole");
        assert_eq!(check(&vec![0u8; 9000], 0, 9000), Verdict::Torn, "all zeros is not a blob of key 0");
    }
}
