//! Blob size settings of `aging` and the ages list, with their checks.
//!
//! Issue 14 designs a general `--size-dist`; until it lands, the parsing
//! lives in [`parse_size_dists`] alone so it can be swapped for that one.

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::records::DatasetSpec;

/// SQLite's largest blob with its default SQLITE_MAX_LENGTH.
pub const SQLITE_MAX_BLOB: u32 = 1_000_000_000;

/// The largest storage age accepted: each age step rewrites every blob once.
pub const MAX_AGE: u32 = 100;

/// A uniform blob size distribution, as init draws it (mean +/- variance).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeDist {
    /// "article", "large" or "uniform:MIN..MAX".
    pub name: String,
    pub min_bytes: u32,
    pub max_bytes: u32,
}

impl SizeDist {
    /// The article's blobs: 10 KB +/- 2 KB.
    pub fn article() -> Self {
        SizeDist { name: "article".into(), min_bytes: 8_000, max_bytes: 12_000 }
    }

    /// Blobs around Gray's crossover (256 KB to 1 MB): 100 KB to 1 MB.
    pub fn large() -> Self {
        SizeDist { name: "large".into(), min_bytes: 100_000, max_bytes: 1_000_000 }
    }

    /// The kvtest dataset with these sizes (mean +/- variance; an odd span
    /// loses its last byte so init draws exactly from this range).
    pub fn spec(&self, count: u32, seed: u64) -> DatasetSpec {
        let variance = (self.max_bytes - self.min_bytes) / 2;
        DatasetSpec {
            count,
            size: self.min_bytes + variance,
            variance,
            page_size: 4096,
            seed,
            ..DatasetSpec::default()
        }
    }

    /// Wide enough that read time by size can show a crossover.
    pub fn spans_crossover(&self) -> bool {
        u64::from(self.max_bytes) >= 4 * u64::from(self.min_bytes)
    }

    /// `n` sizes drawn uniformly, as init draws them, before any timer.
    pub fn draw(&self, n: usize, seed: u64) -> Vec<u32> {
        let spec = self.spec(1, seed);
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        (0..n).map(|_| rng.gen_range(spec.size - spec.variance..=spec.size + spec.variance)).collect()
    }
}

/// Parses `article`, `large`, `uniform:MIN..MAX`, comma-separated.
pub fn parse_size_dists(text: &str) -> Result<Vec<SizeDist>, String> {
    let mut out: Vec<SizeDist> = Vec::new();
    for name in text.split(',').map(str::trim) {
        let dist = match name {
            "" => return Err(format!("invalid size setting list {text:?}: empty element")),
            "article" => SizeDist::article(),
            "large" => SizeDist::large(),
            other => parse_uniform(other)?,
        };
        if !out.contains(&dist) {
            out.push(dist);
        }
    }
    Ok(out)
}

fn parse_uniform(text: &str) -> Result<SizeDist, String> {
    let unknown = || format!("unknown size setting '{text}' (expected article, large or uniform:MIN..MAX)");
    let range = text.strip_prefix("uniform:").ok_or_else(unknown)?;
    let (lo, hi) = range.split_once("..").ok_or_else(unknown)?;
    let num = |s: &str| crate::util::units::parse_int(s).map_err(|e| e.to_string());
    let (lo, hi) = (num(lo)?, num(hi)?);
    if lo < 1 || hi < lo {
        return Err(format!("size setting '{text}': sizes must be at least 1 and MIN at most MAX"));
    }
    if hi > i64::from(SQLITE_MAX_BLOB) {
        return Err(format!(
            "size setting '{text}': largest blob {hi} bytes is above SQLite's blob limit of {SQLITE_MAX_BLOB} bytes"
        ));
    }
    Ok(SizeDist { name: text.to_string(), min_bytes: lo as u32, max_bytes: hi as u32 })
}

/// Parses a storage ages list such as `0,1,2,4,8` and checks it.
pub fn parse_ages(text: &str) -> Result<Vec<u32>, String> {
    if text.trim().is_empty() {
        return check_ages(&[]).map(|()| Vec::new());
    }
    let mut ages = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("invalid ages list {text:?}: empty element"));
        }
        if item.starts_with('-') {
            return Err(format!("storage age {item} is negative; ages count rewrites (0, 1, 2, ...)"));
        }
        let age: u64 = item.parse().map_err(|_| format!("storage age '{item}' is not a whole number"))?;
        ages.push(u32::try_from(age).unwrap_or(u32::MAX));
    }
    check_ages(&ages)?;
    Ok(ages)
}

/// An ages list must be non-empty, strictly increasing and at most [`MAX_AGE`].
pub fn check_ages(ages: &[u32]) -> Result<(), String> {
    if ages.is_empty() {
        return Err("the ages list is empty; give storage ages like 0,1,2,4,8".into());
    }
    if let Some(w) = ages.windows(2).find(|w| w[1] <= w[0]) {
        return Err(format!("the ages list must be strictly increasing ({} then {})", w[0], w[1]));
    }
    if let Some(&a) = ages.iter().find(|&&a| a > MAX_AGE) {
        return Err(format!("storage age {a} is absurdly large (at most {MAX_AGE} rewrites of every blob)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_settings_and_uniform() {
        let d = parse_size_dists("article,large,uniform:1k..2k").unwrap();
        assert_eq!(d[0].spec(10, 1).size, 10_000);
        assert_eq!(d[0].spec(10, 1).variance, 2_000);
        assert_eq!((d[1].min_bytes, d[1].max_bytes), (100_000, 1_000_000));
        assert!(d[1].spans_crossover() && !d[0].spans_crossover());
        assert_eq!((d[2].min_bytes, d[2].max_bytes), (1_000, 2_000));
        let drawn = d[1].draw(1000, 3);
        assert!(drawn.iter().all(|s| (100_000..=1_000_000).contains(s)));
        assert_eq!(drawn, d[1].draw(1000, 3), "fixed seed, same sizes");
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(parse_size_dists("uniform:1m..2g").unwrap_err().contains("blob limit"));
        assert!(parse_size_dists("huge").unwrap_err().contains("unknown size setting"));
        assert!(parse_size_dists("article,").unwrap_err().contains("empty"));
    }

    #[test]
    fn ages_are_checked() {
        assert_eq!(parse_ages("0,1,2,4,8").unwrap(), [0, 1, 2, 4, 8]);
        assert!(parse_ages("").unwrap_err().contains("empty"));
        assert!(parse_ages("0,4,2").unwrap_err().contains("increasing"));
        assert!(parse_ages("0,-1").unwrap_err().contains("negative"));
        assert!(parse_ages("0,1000000").unwrap_err().contains("absurd"));
        assert!(check_ages(&[]).is_err());
    }
}
