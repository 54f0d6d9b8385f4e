//! kvtest's random number generator, on its own so that both the key
//! orders and the Zipf table draw from it without needing each other.

/// kvtest's fixed-seed generator (`randInt` in kvtest.c).
#[derive(Debug, Clone)]
pub struct KvtestRng {
    x: u32,
    y: u32,
}

impl Default for KvtestRng {
    fn default() -> Self {
        Self::new()
    }
}

impl KvtestRng {
    pub const fn new() -> Self {
        KvtestRng { x: 0x333a_13cd, y: 0xecb2_adea }
    }

    /// A differently seeded stream, for extra threads that must not walk in
    /// lock-step with the first one. Stream 0 is kvtest's own.
    pub fn stream(index: u32) -> Self {
        let mut rng = Self::new();
        rng.x ^= index.wrapping_mul(0x9e37_79b9);
        rng.y ^= index.wrapping_mul(0x85eb_ca6b);
        if rng.x == 0 {
            rng.x = 1;
        }
        rng
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        // 1 + !(x & 1) is 0 when x is even and 0xffffffff when x is odd.
        self.x = (self.x >> 1) ^ (1u32.wrapping_add(!(self.x & 1)) & 0xd000_0001);
        self.y = self.y.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        self.x ^ self.y
    }
}
