//! `--mix READ:WRITE`: parsing and checking a mix of reads and writes.

use super::Mix;

/// Largest share on either side: a script holds (read + write) reduced
/// operations, repeated, so the ratio stays exact.
const MAX_SHARE: u32 = 10_000;

impl Mix {
    /// Checks that the mix does something and is not absurd.
    pub fn validate(&self) -> Result<(), String> {
        if self.read == 0 && self.write == 0 {
            return Err("--mix 0:0 has no operations (e.g. --mix 95:5)".into());
        }
        if self.read > MAX_SHARE || self.write > MAX_SHARE {
            return Err(format!("--mix shares must be at most {MAX_SHARE}"));
        }
        Ok(())
    }

    /// Percent of operations that read.
    pub fn read_pct(&self) -> f64 {
        f64::from(self.read) * 100.0 / f64::from(self.read + self.write).max(1.0)
    }
}

/// Parses `READ:WRITE` (two whole numbers, not both 0) for clap.
pub fn parse_mix(s: &str) -> Result<Mix, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let [r, w] = parts[..] else {
        return Err(format!("--mix '{s}' must be READ:WRITE, two whole numbers (e.g. 95:5)"));
    };
    let num = |v: &str| v.trim().parse::<u32>().map_err(|_| format!("--mix '{s}': '{v}' is not a whole number"));
    let mix = Mix { read: num(r)?, write: num(w)? };
    mix.validate()?;
    Ok(mix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ratios_and_rejects_nonsense() {
        assert_eq!(parse_mix("95:5").unwrap(), Mix { read: 95, write: 5 });
        assert_eq!(parse_mix("0:1").unwrap(), Mix { read: 0, write: 1 });
        for bad in ["0:0", "1:2:3", "95", "a:b", "-1:5", "95:5.5", "20000:1"] {
            assert!(parse_mix(bad).is_err(), "{bad}");
        }
    }
}
