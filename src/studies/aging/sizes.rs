//! Blob size settings of `aging` and the ages list, with their checks.
//! A setting is the study's own (`article`, `large`, `uniform:MIN..MAX`),
//! any named distribution of `records::sizes` (`lognormal:30k:1`, ...),
//! or the user's files (`--from`).

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::engine::dataset::from_dir::Scan;
use crate::records::sizes::parse_size_dist;
use crate::records::{DatasetSpec, SizeDist, SizesFrom};

/// SQLite's largest blob with its default SQLITE_MAX_LENGTH.
pub const SQLITE_MAX_BLOB: u32 = 1_000_000_000;

/// The largest storage age accepted: each age step rewrites every blob once.
pub const MAX_AGE: u32 = 100;

/// Content per setting when the count follows from the mean blob size:
/// about the article setting's 100 MB (a tenth with `quick`).
const CONTENT_BYTES: f64 = 100e6;

/// One size setting: the blobs a dataset starts with and the sizes each
/// rewrite draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeSetting {
    /// "article", "large", "uniform:MIN..MAX", a distribution as given
    /// ("lognormal:30k:1"), or "yours" (your files).
    pub name: String,
    /// The range of sizes: exact for a uniform setting; the 5th and 95th
    /// percentiles otherwise (the crossover's size bands span these).
    pub min_bytes: u32,
    pub max_bytes: u32,
    /// Where the sizes come from when not uniform in min..=max: a named
    /// distribution, or your files (absent for the study's own settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<SizesFrom>,
    /// Your files' sizes, ascending, that rewrites draw from (not stored).
    #[serde(skip)]
    file_sizes: Vec<u32>,
}

impl SizeSetting {
    /// The article's blobs: 10 KB +/- 2 KB.
    pub fn article() -> Self {
        Self::uniform("article", 8_000, 12_000)
    }

    /// Blobs around Gray's crossover (256 KB to 1 MB): 100 KB to 1 MB.
    pub fn large() -> Self {
        Self::uniform("large", 100_000, 1_000_000)
    }

    fn uniform(name: &str, min_bytes: u32, max_bytes: u32) -> Self {
        SizeSetting { name: name.into(), min_bytes, max_bytes, from: None, file_sizes: Vec::new() }
    }

    /// Sizes drawn from `dist`, named as given.
    pub fn from_dist(name: &str, dist: SizeDist) -> Self {
        let sampler = dist.sampler();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
        let mut sample: Vec<u32> = (0..10_000).map(|_| sampler.sample(&mut rng)).collect();
        sample.sort_unstable();
        let (min_bytes, max_bytes) = percentiles(&sample);
        SizeSetting {
            name: name.into(),
            min_bytes,
            max_bytes,
            from: Some(SizesFrom::Distribution { dist }),
            file_sizes: Vec::new(),
        }
    }

    /// Your files `used` (of those `found`): their content is the first
    /// blobs, their sizes what rewrites draw.
    pub fn from_files(used: &Scan, found: &Scan) -> Self {
        let file_sizes = used.sizes();
        let (min_bytes, max_bytes) = percentiles(&file_sizes);
        SizeSetting { name: "yours".into(), min_bytes, max_bytes, from: Some(used.sizes_from(found)), file_sizes }
    }

    /// The mean blob size in bytes.
    pub fn mean(&self) -> f64 {
        match &self.from {
            Some(SizesFrom::Distribution { dist }) => dist.mean(),
            Some(SizesFrom::Files { .. }) => {
                self.file_sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / self.file_sizes.len().max(1) as f64
            }
            None => (f64::from(self.min_bytes) + f64::from(self.max_bytes)) / 2.0,
        }
    }

    /// The kvtest dataset with these sizes (uniform: mean +/- variance; an
    /// odd span loses its last byte so init draws exactly from this range;
    /// your files are copied instead, and this is only their estimate).
    pub fn spec(&self, count: u32, seed: u64) -> DatasetSpec {
        let variance = (self.max_bytes - self.min_bytes) / 2;
        let base = DatasetSpec { count, page_size: 4096, seed, ..DatasetSpec::default() };
        match &self.from {
            Some(SizesFrom::Distribution { dist }) => {
                DatasetSpec { size: self.mean().round() as u32, sizes: Some(dist.clone()), ..base }
            }
            Some(SizesFrom::Files { .. }) => DatasetSpec { size: self.mean().round() as u32, ..base },
            None => DatasetSpec { size: self.min_bytes + variance, variance, ..base },
        }
    }

    /// Wide enough that read time by size can show a crossover.
    pub fn spans_crossover(&self) -> bool {
        u64::from(self.max_bytes) >= 4 * u64::from(self.min_bytes)
    }

    /// Blobs in the setting when no count is given: 10k article-sized or 500
    /// large ones; otherwise about 100 MB of content (a tenth with `quick`),
    /// at most the files there are.
    pub fn default_count(&self, quick: bool) -> u32 {
        let by_mean = || {
            let (budget, lo, hi) =
                if quick { (CONTENT_BYTES / 10.0, 20.0, 1_000.0) } else { (CONTENT_BYTES, 50.0, 10_000.0) };
            (budget / self.mean().max(1.0)).clamp(lo, hi) as u32
        };
        match (&self.from, self.spans_crossover(), quick) {
            (Some(_), _, _) => by_mean(),
            (None, true, false) => 500,
            (None, true, true) => 60,
            (None, false, false) => 10_000,
            (None, false, true) => 1_000,
        }
    }

    /// `n` sizes drawn as the setting says, before any timer.
    pub fn draw(&self, n: usize, seed: u64) -> Vec<u32> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        match &self.from {
            Some(SizesFrom::Distribution { dist }) => {
                let sampler = dist.sampler();
                (0..n).map(|_| sampler.sample(&mut rng)).collect()
            }
            Some(SizesFrom::Files { .. }) if !self.file_sizes.is_empty() => {
                (0..n).map(|_| self.file_sizes[rng.gen_range(0..self.file_sizes.len())]).collect()
            }
            _ => (0..n).map(|_| rng.gen_range(self.min_bytes..=self.max_bytes)).collect(),
        }
    }
}

/// The 5th and 95th percentiles of ascending sizes.
fn percentiles(sorted: &[u32]) -> (u32, u32) {
    let at = |q: usize| sorted.get((sorted.len().saturating_sub(1)) * q / 100).copied().unwrap_or(1);
    (at(5), at(95))
}

/// Kinds of `records::sizes` a setting may also be written as.
const DIST_KINDS: [&str; 4] = ["uniform:", "lognormal:", "list:", "file:"];

/// Parses `article`, `large`, `uniform:MIN..MAX` or any named distribution
/// (`uniform:SIZE[:VAR]`, `lognormal:MEDIAN:SIGMA`, `list:A,B,...`,
/// `file:PATH`), comma-separated (a `list:`'s own commas stay with it).
pub fn parse_size_dists(text: &str) -> Result<Vec<SizeSetting>, String> {
    let mut items: Vec<String> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let a_size = part.starts_with(|c: char| c.is_ascii_digit());
        match items.last_mut() {
            Some(last) if a_size && last.starts_with("list:") => {
                last.push(',');
                last.push_str(part);
            }
            _ => items.push(part.to_string()),
        }
    }
    let mut out: Vec<SizeSetting> = Vec::new();
    for name in &items {
        let setting = match name.as_str() {
            "" => return Err(format!("invalid size setting list {text:?}: empty element")),
            "article" => SizeSetting::article(),
            "large" => SizeSetting::large(),
            other if other.starts_with("uniform:") && other.contains("..") => parse_uniform(other)?,
            other if DIST_KINDS.iter().any(|k| other.starts_with(k)) => {
                SizeSetting::from_dist(other, parse_size_dist(other)?)
            }
            other => return Err(format!(
                "unknown size setting '{other}' (expected article, large, uniform:MIN..MAX or a distribution: uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH)"
            )),
        };
        if !out.contains(&setting) {
            out.push(setting);
        }
    }
    Ok(out)
}

fn parse_uniform(text: &str) -> Result<SizeSetting, String> {
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
    Ok(SizeSetting::uniform(text, lo as u32, hi as u32))
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
    fn named_distributions_are_settings() {
        let d = parse_size_dists("article,lognormal:30k:1,list:4k,64k,large").unwrap();
        let names: Vec<&str> = d.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["article", "lognormal:30k:1", "list:4k,64k", "large"]);
        let logn = &d[1];
        assert!(matches!(
            &logn.from,
            Some(SizesFrom::Distribution { dist: SizeDist::Lognormal { median: 30_000, .. } })
        ));
        assert!(logn.min_bytes < 10_000 && logn.max_bytes > 100_000, "5th..95th percentile: {logn:?}");
        assert!(logn.spans_crossover());
        assert_eq!(logn.spec(10, 1).sizes, Some(SizeDist::Lognormal { median: 30_000, sigma: 1.0 }));
        assert_eq!(logn.default_count(false), 2_021, "about 100 MB of a 49.5 KB mean");
        let drawn = d[2].draw(500, 4);
        assert!(drawn.iter().all(|s| [4_000, 64_000].contains(s)) && drawn.contains(&4_000) && drawn.contains(&64_000));
        assert_eq!(d[0].default_count(true), 1_000, "the study's own counts stay");
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(parse_size_dists("uniform:1m..2g").unwrap_err().contains("blob limit"));
        assert!(parse_size_dists("huge").unwrap_err().contains("unknown size setting"));
        assert!(parse_size_dists("lognormal:30k:-1").unwrap_err().contains("sigma"));
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
