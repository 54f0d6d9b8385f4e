//! The script of a `--mix READ:WRITE` run: reads and same-size overwrites
//! in exactly that ratio, shuffled with a fixed seed, chosen before the timer.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::session::{Script, ScriptOp};
use crate::records::Mix;
use crate::Result;

/// Operations in a script: enough for the ratio's order not to repeat
/// within a short run, few enough to stay in cache (one byte-pair each).
const SCRIPT_LEN_MIN: u32 = 4096;

pub fn mix_script(mix: Mix, blob_max: u32, seed: u64) -> Result<Script> {
    mix.validate().map_err(crate::Error::invalid)?;
    let g = gcd(mix.read, mix.write);
    let (r, w) = (mix.read / g, mix.write / g);
    let repeats = SCRIPT_LEN_MIN.div_ceil(r + w);
    let mut ops: Vec<ScriptOp> = std::iter::repeat_n(ScriptOp::Read, (r * repeats) as usize)
        .chain(std::iter::repeat_n(ScriptOp::Overwrite, (w * repeats) as usize))
        .collect();
    ops.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(seed ^ 0x0b5e_55ed));
    Script::new(ops, blob_max, seed)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_keeps_the_ratio_exactly() {
        let s = mix_script(Mix { read: 95, write: 5 }, 100, 1).unwrap();
        let reads = s.ops().iter().filter(|o| **o == ScriptOp::Read).count();
        let writes = s.ops().len() - reads;
        assert_eq!(reads * 5, writes * 95);
        assert!(s.ops().len() >= 4096);
        let only_writes = mix_script(Mix { read: 0, write: 3 }, 100, 1).unwrap();
        assert!(only_writes.ops().iter().all(|o| *o == ScriptOp::Overwrite));
    }
}
