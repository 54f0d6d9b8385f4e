//! The order in which a run visits keys, exactly as kvtest.c does it, so a
//! blobbench run touches the same blobs in the same order as kvtest's.

pub use super::rng::KvtestRng;
use super::zipf::ZipfTable;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
    Random,
}

impl Order {
    /// kvtest's flag for this order, as it prints it.
    pub fn flag(self) -> &'static str {
        match self {
            Order::Asc => "--asc",
            Order::Desc => "--desc",
            Order::Random => "--random",
        }
    }
}

/// The key of the current operation and how to step to the next one.
#[derive(Debug, Clone)]
pub struct KeySequence {
    order: Order,
    key: u32,
    max_id: u32,
    rng: KvtestRng,
    /// Hot keys: when set, keys are drawn from it instead of `order`.
    zipf: Option<std::sync::Arc<ZipfTable>>,
    /// Keys chosen before the run (`aging` visits every blob once, in a
    /// shuffled order); when present, the order above is not used.
    list: Option<std::sync::Arc<[u32]>>,
    at: usize,
}

impl KeySequence {
    pub fn new(order: Order, start: u32, max_id: u32) -> Self {
        Self::with_rng(order, start, max_id, KvtestRng::new())
    }

    pub fn with_rng(order: Order, start: u32, max_id: u32, rng: KvtestRng) -> Self {
        assert!(start >= 1 && max_id >= 1, "keys start at 1");
        KeySequence { order, key: start, max_id, rng, zipf: None, list: None, at: 0 }
    }

    /// Keys drawn from a Zipf table (hot keys), starting with a draw.
    pub fn zipf(table: std::sync::Arc<ZipfTable>, mut rng: KvtestRng) -> Self {
        let key = table.draw(&mut rng);
        KeySequence { order: Order::Random, key, max_id: table.keys(), rng, zipf: Some(table), list: None, at: 0 }
    }

    /// Visits `keys` in the given order, starting again at the end.
    pub fn listed(keys: std::sync::Arc<[u32]>) -> Self {
        assert!(!keys.is_empty() && keys.iter().all(|&k| k >= 1), "keys start at 1");
        let max_id = keys.iter().copied().max().unwrap_or(1);
        KeySequence {
            order: Order::Asc,
            key: keys[0],
            max_id,
            rng: KvtestRng::new(),
            zipf: None,
            list: Some(keys),
            at: 0,
        }
    }

    #[inline]
    pub fn current(&self) -> u32 {
        self.key
    }

    #[inline]
    pub fn advance(&mut self) {
        if let Some(table) = &self.zipf {
            self.key = table.draw(&mut self.rng);
            return;
        }
        if let Some(list) = &self.list {
            self.at = if self.at + 1 == list.len() { 0 } else { self.at + 1 };
            self.key = list[self.at];
            return;
        }
        self.key = match self.order {
            Order::Asc if self.key >= self.max_id => 1,
            Order::Asc => self.key + 1,
            Order::Desc if self.key <= 1 => self.max_id,
            Order::Desc => self.key - 1,
            Order::Random => self.rng.next_u32() % self.max_id + 1,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(mut seq: KeySequence, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let k = seq.current();
                seq.advance();
                k
            })
            .collect()
    }

    #[test]
    fn random_matches_kvtest() {
        // Observed from kvtest itself with --random --max-id 1000.
        let keys = take(KeySequence::new(Order::Random, 1, 1000), 8);
        assert_eq!(keys, [1, 893, 547, 745, 172, 665, 835, 731]);
    }

    #[test]
    fn asc_and_desc_wrap() {
        assert_eq!(take(KeySequence::new(Order::Asc, 3, 4), 5), [3, 4, 1, 2, 3]);
        assert_eq!(take(KeySequence::new(Order::Desc, 2, 4), 5), [2, 1, 4, 3, 2]);
    }

    #[test]
    fn listed_visits_the_list_and_wraps() {
        let seq = KeySequence::listed(std::sync::Arc::from(vec![5u32, 2, 9]));
        assert_eq!(take(seq, 7), [5, 2, 9, 5, 2, 9, 5]);
    }

    #[test]
    fn random_stays_in_range_and_streams_differ() {
        let keys = take(KeySequence::new(Order::Random, 1, 7), 1000);
        assert!(keys.iter().all(|k| (1..=7).contains(k)));
        let a = take(KeySequence::with_rng(Order::Random, 1, 1000, KvtestRng::stream(1)), 20);
        let b = take(KeySequence::with_rng(Order::Random, 1, 1000, KvtestRng::stream(2)), 20);
        assert_ne!(a, b);
    }
}
