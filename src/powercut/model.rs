//! Power-cut models: what of the changes not yet made durable reaches the
//! disk when the power goes. See docs/crash-safety.md for the filesystems
//! each one stands for.

use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::state::Pending;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Nothing that was not fsync'd reaches the disk: exactly POSIX's
    /// promise and no more.
    Strict,
    /// Each pending change independently: dropped, written whole, or written
    /// in part, sector by sector (SQLite's test6.c, in spirit).
    Torn { sector: u64 },
}

/// Every model: name, what it is.
pub const MODELS: [(&str, &str, Model); 3] = [
    ("strict", "unsynced data and namespace changes are lost", Model::Strict),
    (
        "torn-512",
        "a random subset of unsynced writes reaches the disk, torn at 512-byte sectors",
        Model::Torn { sector: 512 },
    ),
    (
        "torn-4k",
        "a random subset of unsynced writes reaches the disk, torn at 4 KiB sectors",
        Model::Torn { sector: 4096 },
    ),
];

impl Model {
    pub fn name(self) -> &'static str {
        MODELS.iter().find(|m| m.2 == self).map_or("?", |m| m.0)
    }

    pub fn description(self) -> &'static str {
        MODELS.iter().find(|m| m.2 == self).map_or("?", |m| m.1)
    }

    pub fn parse(text: &str) -> Result<Model, String> {
        let t = text.trim().to_ascii_lowercase();
        MODELS.iter().find(|m| m.0 == t).map(|m| m.2).ok_or_else(|| {
            let names: Vec<&str> = MODELS.iter().map(|m| m.0).collect();
            format!("unknown power-cut model {text:?} (one of: {})", names.join(", "))
        })
    }

    /// The pieces of `ops` (in order) that reach the disk at the cut.
    pub fn what_lands(self, ops: &[Pending], rng: &mut SmallRng, stats: &mut CutStats) -> Vec<Pending> {
        let Model::Torn { sector } = self else { return Vec::new() };
        let mut landed = Vec::new();
        for op in ops {
            match op {
                Pending::Truncate(_) => {
                    if rng.gen_bool(0.5) {
                        landed.push(op.clone());
                    }
                }
                Pending::Write { offset, data } => match rng.gen_range(0..3) {
                    0 => {}
                    1 => {
                        stats.landed_whole += 1;
                        landed.push(op.clone());
                    }
                    _ => {
                        stats.landed_torn += 1;
                        landed.extend(torn_pieces(*offset, data, sector, rng));
                    }
                },
            }
        }
        landed
    }

    /// How many of a node's pending xattr changes, oldest first, reach the
    /// disk at the cut: none in the strict model; in the torn models any
    /// prefix, each change whole, as ext4's journal commits metadata in
    /// order and never tears an attribute block.
    pub fn xattr_changes_landing(self, pending: usize, rng: &mut SmallRng) -> usize {
        match self {
            Model::Strict => 0,
            Model::Torn { .. } => rng.gen_range(0..=pending),
        }
    }
}

/// The sectors of one write that made it, each with probability 1/2.
fn torn_pieces(offset: u64, data: &[u8], sector: u64, rng: &mut SmallRng) -> Vec<Pending> {
    let mut pieces = Vec::new();
    let end = offset + data.len() as u64;
    let mut at = offset;
    while at < end {
        let next = ((at / sector) + 1) * sector;
        let stop = next.min(end);
        if rng.gen_bool(0.5) {
            let slice = &data[(at - offset) as usize..(stop - offset) as usize];
            pieces.push(Pending::Write { offset: at, data: slice.to_vec() });
        }
        at = stop;
    }
    pieces
}

/// What one cut did with the pending changes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CutStats {
    /// Writes made and not yet synced when the power went.
    pub pending_writes: u64,
    /// Of those, written whole / written in part (torn models only).
    pub landed_whole: u64,
    pub landed_torn: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn names_parse_and_torn_writes_split_at_sectors() {
        for m in MODELS {
            assert_eq!(Model::parse(m.0), Ok(m.2));
        }
        assert!(Model::parse("lazy").unwrap_err().contains("strict"));
        let ops = vec![Pending::Write { offset: 100, data: vec![7u8; 10_000] }; 200];
        let mut stats = CutStats::default();
        let mut rng = SmallRng::seed_from_u64(3);
        assert!(Model::Strict.what_lands(&ops, &mut rng, &mut stats).is_empty());
        let landed = Model::Torn { sector: 4096 }.what_lands(&ops, &mut rng, &mut stats);
        assert!(stats.landed_whole > 30 && stats.landed_torn > 30, "{stats:?}");
        for p in &landed {
            let Pending::Write { offset, data } = p else { panic!("only writes") };
            let len = data.len() as u64;
            let whole = *offset == 100 && len == 10_000;
            let in_one_sector = offset / 4096 == (offset + len - 1) / 4096;
            assert!(whole || in_one_sector, "a piece is one sector or the whole write: {offset}+{len}");
        }
    }
}
