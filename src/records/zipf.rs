//! Hot keys: a Zipfian choice of keys (`--keys zipf:THETA`), key of rank r
//! drawn with probability proportional to 1 / r^theta. Drawn in constant
//! time from an alias table (Vose) built once before any timer; ranks are
//! spread over the key range by a fixed permutation, so the hot blobs are
//! not neighbours on disk.

use super::rng::KvtestRng;

/// Largest theta accepted: beyond it nearly every draw is the hottest key.
pub const MAX_THETA: f64 = 10.0;

/// Parses `zipf:THETA` (0 < THETA <= 10) for clap's value_parser.
pub fn parse_zipf(s: &str) -> Result<f64, String> {
    let theta = s
        .strip_prefix("zipf:")
        .ok_or_else(|| format!("unknown key distribution '{s}' (expected zipf:THETA, e.g. zipf:0.99)"))?;
    let theta: f64 = theta.trim().parse().map_err(|_| format!("zipf theta '{theta}' is not a number"))?;
    if !(theta > 0.0 && theta <= MAX_THETA) {
        return Err(format!("zipf theta must be above 0 and at most {MAX_THETA}, got {theta}"));
    }
    Ok(theta)
}

/// The alias table of a Zipf distribution over keys 1..=n.
#[derive(Debug, Clone)]
pub struct ZipfTable {
    /// Column i keeps its own rank when a draw is below threshold[i].
    threshold: Vec<u32>,
    alias: Vec<u32>,
    /// Rank r (0-based) is key (r * stride) % n + 1; stride is coprime to n.
    stride: u64,
}

impl ZipfTable {
    pub fn new(n: u32, theta: f64) -> Self {
        assert!(n >= 1, "keys start at 1");
        let len = n as usize;
        let weights: Vec<f64> = (1..=len).map(|r| (r as f64).powf(-theta)).collect();
        let total: f64 = weights.iter().sum();
        // Vose: scaled probabilities, split into small (<1) and large columns.
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * len as f64 / total).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) = (0..n).partition(|&i| scaled[i as usize] < 1.0);
        let mut threshold = vec![u32::MAX; len];
        let mut alias: Vec<u32> = (0..n).collect();
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            let p = scaled[s as usize];
            threshold[s as usize] = (p * f64::from(u32::MAX)) as u32;
            alias[s as usize] = l;
            scaled[l as usize] -= 1.0 - p;
            if scaled[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        ZipfTable { threshold, alias, stride: coprime_stride(n) }
    }

    pub fn keys(&self) -> u32 {
        self.threshold.len() as u32
    }

    /// The key of rank `rank` (0 is the hottest).
    #[inline]
    pub fn key_of_rank(&self, rank: u32) -> u32 {
        (u64::from(rank) * self.stride % u64::from(self.keys())) as u32 + 1
    }

    /// One key: two generator steps, two table reads.
    #[inline]
    pub fn draw(&self, rng: &mut KvtestRng) -> u32 {
        let column = rng.next_u32() % self.keys();
        let rank = if rng.next_u32() < self.threshold[column as usize] { column } else { self.alias[column as usize] };
        self.key_of_rank(rank)
    }
}

/// A stride near n times the golden ratio's fraction that shares no factor
/// with n, so rank -> key is a permutation that scatters neighbours.
fn coprime_stride(n: u32) -> u64 {
    let n = u64::from(n);
    let mut s = (n as f64 * 0.618_033_988_75) as u64 | 1;
    while gcd(s, n) != 1 {
        s += 1;
    }
    s.max(1)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(parse_zipf("zipf:0.99").unwrap(), 0.99);
        for bad in ["zipf:-1", "zipf:0", "zipf:abc", "zipf:11", "uniform", "zipf:NaN"] {
            assert!(parse_zipf(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranks_are_a_permutation_of_the_keys() {
        for n in [1, 2, 10, 97, 100, 1000] {
            let t = ZipfTable::new(n, 1.0);
            let mut keys: Vec<u32> = (0..n).map(|r| t.key_of_rank(r)).collect();
            keys.sort_unstable();
            assert_eq!(keys, (1..=n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn hottest_key_gets_its_share() {
        let (n, theta) = (1000u32, 1.0);
        let t = ZipfTable::new(n, theta);
        let mut rng = KvtestRng::new();
        let draws = 200_000;
        let hot = t.key_of_rank(0);
        let hits = (0..draws).filter(|_| t.draw(&mut rng) == hot).count() as f64 / f64::from(draws);
        let expected = 1.0 / (1..=n).map(|r| f64::from(r).powf(-theta)).sum::<f64>();
        assert!((hits / expected - 1.0).abs() < 0.05, "{hits} vs {expected}");
    }
}
