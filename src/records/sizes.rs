//! Blob size distributions by name (`uniform`, `lognormal`, `list`, `file`):
//! the record kept in result files, its parser (usable as a clap value
//! parser), and a sampler that draws a size without allocating.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// SQLite's largest blob by default (SQLITE_MAX_LENGTH).
pub const MAX_BLOB: u32 = 1_000_000_000;

/// Lognormal draws beyond this many sigmas above the median are clamped
/// there, so a buffer of [`SizeDist::max`] bytes always holds a blob
/// (a draw lands there about 3 times in 10 million).
const LOGNORMAL_TAIL_SIGMAS: f64 = 5.0;

/// How blob sizes are drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SizeDist {
    /// kvtest's: uniform in [size - variance, size + variance].
    Uniform { size: u32, variance: u32 },
    /// Half the blobs are below `median`; ln(size) has deviation `sigma`.
    Lognormal { median: u32, sigma: f64 },
    /// Each blob takes one of these sizes, equally likely.
    List { sizes: Vec<u32> },
    /// A histogram: a blob takes `size` with probability `count` / total.
    /// `source` names the file or directory it was read from.
    Histogram { source: String, buckets: Vec<SizeBucket> },
}

/// One bar of a size histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeBucket {
    pub size: u32,
    pub count: u64,
}

impl SizeDist {
    /// Checks the parameters; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let in_range = |what: &str, v: u32| {
            if v == 0 || v > MAX_BLOB {
                Err(format!("{what} must be from 1 to {MAX_BLOB} bytes, got {v}"))
            } else {
                Ok(())
            }
        };
        match self {
            SizeDist::Uniform { size, variance } => {
                in_range("size", *size)?;
                if variance >= size {
                    return Err("variance must be smaller than size (blobs would be empty)".into());
                }
                in_range("size plus variance", size.saturating_add(*variance))
            }
            SizeDist::Lognormal { median, sigma } => {
                in_range("lognormal median", *median)?;
                if !sigma.is_finite() || *sigma < 0.0 || *sigma > 4.0 {
                    return Err(format!("lognormal sigma must be from 0 to 4, got {sigma}"));
                }
                Ok(())
            }
            SizeDist::List { sizes } => {
                if sizes.is_empty() {
                    return Err("list needs at least one size".into());
                }
                sizes.iter().try_for_each(|&s| in_range("a listed size", s))
            }
            SizeDist::Histogram { source, buckets } => {
                if buckets.iter().all(|b| b.count == 0) {
                    return Err(format!("histogram {source} has no blobs (no bucket with a count above 0)"));
                }
                buckets.iter().try_for_each(|b| in_range("a histogram size", b.size))
            }
        }
    }

    /// The largest size a draw can give.
    pub fn max(&self) -> u32 {
        match self {
            SizeDist::Uniform { size, variance } => size + variance,
            SizeDist::Lognormal { median, sigma } => {
                let cap = f64::from(*median) * (LOGNORMAL_TAIL_SIGMAS * sigma).exp();
                cap.min(f64::from(MAX_BLOB)).max(1.0) as u32
            }
            SizeDist::List { sizes } => sizes.iter().copied().max().unwrap_or(1),
            SizeDist::Histogram { buckets, .. } => {
                buckets.iter().filter(|b| b.count > 0).map(|b| b.size).max().unwrap_or(1)
            }
        }
    }

    /// The expected size of a blob (for disk estimates).
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Uniform { size, .. } => f64::from(*size),
            SizeDist::Lognormal { median, sigma } => {
                (f64::from(*median) * (sigma * sigma / 2.0).exp()).min(self.max().into())
            }
            SizeDist::List { sizes } => sizes.iter().map(|&s| f64::from(s)).sum::<f64>() / sizes.len().max(1) as f64,
            SizeDist::Histogram { buckets, .. } => {
                let n: u64 = buckets.iter().map(|b| b.count).sum();
                buckets.iter().map(|b| f64::from(b.size) * b.count as f64).sum::<f64>() / n.max(1) as f64
            }
        }
    }

    /// How it is written on the command line.
    pub fn describe(&self) -> String {
        match self {
            SizeDist::Uniform { size, variance } => format!("uniform:{size}:{variance}"),
            SizeDist::Lognormal { median, sigma } => format!("lognormal:{median}:{sigma}"),
            SizeDist::List { sizes } => {
                format!("list:{}", sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            }
            SizeDist::Histogram { source, buckets } => format!("file:{source} ({} sizes)", buckets.len()),
        }
    }

    /// A sampler over this distribution; its tables are built here, once.
    pub fn sampler(&self) -> SizeSampler {
        let kind = match self {
            SizeDist::Uniform { size, variance } => Sampler::Uniform(size - variance, size + variance),
            SizeDist::Lognormal { median, sigma } => {
                Sampler::Lognormal { ln_median: f64::from(*median).ln(), sigma: *sigma, max: self.max() }
            }
            SizeDist::List { sizes } => Sampler::Table { sizes: sizes.clone(), cumulative: Vec::new() },
            SizeDist::Histogram { buckets, .. } => {
                let live: Vec<&SizeBucket> = buckets.iter().filter(|b| b.count > 0).collect();
                let mut total = 0u64;
                let cumulative = live
                    .iter()
                    .map(|b| {
                        total += b.count;
                        total
                    })
                    .collect();
                Sampler::Table { sizes: live.iter().map(|b| b.size).collect(), cumulative }
            }
        };
        SizeSampler { kind }
    }
}

/// Draws sizes from a [`SizeDist`]: constant or logarithmic time, no
/// allocation per draw.
#[derive(Debug, Clone)]
pub struct SizeSampler {
    kind: Sampler,
}

#[derive(Debug, Clone)]
enum Sampler {
    Uniform(u32, u32),
    Lognormal {
        ln_median: f64,
        sigma: f64,
        max: u32,
    },
    /// Equally likely sizes when `cumulative` is empty; else weighted by
    /// the running totals in `cumulative`.
    Table {
        sizes: Vec<u32>,
        cumulative: Vec<u64>,
    },
}

impl SizeSampler {
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match &self.kind {
            Sampler::Uniform(lo, hi) if lo == hi => *lo,
            Sampler::Uniform(lo, hi) => rng.gen_range(*lo..=*hi),
            Sampler::Lognormal { ln_median, sigma, max } => {
                let x = (ln_median + sigma * standard_normal(rng)).exp();
                (x.round() as u32).clamp(1, *max)
            }
            Sampler::Table { sizes, cumulative } if cumulative.is_empty() => sizes[rng.gen_range(0..sizes.len())],
            Sampler::Table { sizes, cumulative } => {
                let total = *cumulative.last().unwrap_or(&1);
                let pick = rng.gen_range(0..total);
                sizes[cumulative.partition_point(|&c| c <= pick)]
            }
        }
    }
}

/// One standard normal draw (Box-Muller; the second value is dropped).
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // in (0, 1]: ln is finite
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Parses `uniform:SIZE[:VARIANCE]`, `lognormal:MEDIAN:SIGMA`,
/// `list:S1,S2,...` or `file:PATH` (a histogram file of `SIZE COUNT` lines;
/// `#` starts a comment). Sizes take K/M suffixes. For clap's value_parser.
pub fn parse_size_dist(s: &str) -> Result<SizeDist, String> {
    let (name, rest) = s.split_once(':').unwrap_or((s, ""));
    let size = |v: &str, what: &str| -> Result<u32, String> {
        crate::util::units::parse_int(v.trim())
            .ok()
            .and_then(|b| u32::try_from(b).ok())
            .ok_or_else(|| format!("{what} '{v}' is not a size in bytes"))
    };
    let dist = match name.to_ascii_lowercase().as_str() {
        "uniform" => {
            let (a, b) = rest.split_once(':').unwrap_or((rest, "0"));
            SizeDist::Uniform { size: size(a, "uniform size")?, variance: size(b, "uniform variance")? }
        }
        "lognormal" => {
            let (a, b) = rest.split_once(':').ok_or("lognormal needs MEDIAN:SIGMA, e.g. lognormal:30k:1.0")?;
            let sigma: f64 = b.trim().parse().map_err(|_| format!("lognormal sigma '{b}' is not a number"))?;
            SizeDist::Lognormal { median: size(a, "lognormal median")?, sigma }
        }
        "list" => SizeDist::List {
            sizes: rest.split(',').filter(|p| !p.trim().is_empty()).map(|p| size(p, "list size")).collect::<Result<_, _>>()?,
        },
        "file" => histogram_file(std::path::Path::new(rest))?,
        _ => {
            return Err(format!(
                "unknown size distribution '{name}' (expected uniform:SIZE[:VAR], lognormal:MEDIAN:SIGMA, list:A,B,... or file:PATH)"
            ))
        }
    };
    dist.validate()?;
    Ok(dist)
}

/// Reads a histogram file: one `SIZE COUNT` pair per line.
fn histogram_file(path: &std::path::Path) -> Result<SizeDist, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read histogram file {}: {e}", path.display()))?;
    let source = path.display().to_string();
    let buckets = parse_histogram(&text).map_err(|e| format!("histogram file {source}: {e}"))?;
    if buckets.is_empty() {
        return Err(format!("histogram file {source} is empty (expected lines of SIZE COUNT)"));
    }
    Ok(SizeDist::Histogram { source, buckets })
}

/// Parses `SIZE COUNT` lines (blank lines and `#` comments ignored).
pub fn parse_histogram(text: &str) -> Result<Vec<SizeBucket>, String> {
    let mut buckets = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(size), Some(count), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("line {}: expected SIZE COUNT, got '{line}'", n + 1));
        };
        let size = crate::util::units::parse_int(size)
            .ok()
            .and_then(|b| u32::try_from(b).ok())
            .ok_or_else(|| format!("line {}: '{size}' is not a size in bytes", n + 1))?;
        if count.starts_with('-') {
            return Err(format!("line {}: count {count} is negative", n + 1));
        }
        let count: u64 = count.parse().map_err(|_| format!("line {}: count '{count}' is not a whole number", n + 1))?;
        buckets.push(SizeBucket { size, count });
    }
    Ok(buckets)
}

/// Sizes grouped into power-of-two bins for the report: bucket `size` is
/// the bin's upper bound (2^k), `count` how many blobs fell in it.
pub fn power_of_two_histogram(sizes: impl IntoIterator<Item = u64>) -> Vec<SizeBucket> {
    let mut bins = [0u64; 33];
    for s in sizes {
        let k = if s <= 1 { 0 } else { (64 - (s - 1).leading_zeros()) as usize };
        bins[k.min(32)] += 1;
    }
    bins.iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(k, &c)| SizeBucket { size: (1u64 << k).min(u64::from(u32::MAX)) as u32, count: c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn draws(d: &SizeDist, n: usize) -> Vec<u32> {
        let s = d.sampler();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        (0..n).map(|_| s.sample(&mut rng)).collect()
    }

    #[test]
    fn parses_each_kind() {
        assert_eq!(parse_size_dist("uniform:10k:2k").unwrap(), SizeDist::Uniform { size: 10_000, variance: 2_000 });
        assert_eq!(parse_size_dist("lognormal:30k:1").unwrap(), SizeDist::Lognormal { median: 30_000, sigma: 1.0 });
        assert_eq!(parse_size_dist("list:4k,64k").unwrap(), SizeDist::List { sizes: vec![4_000, 64_000] });
    }

    #[test]
    fn rejects_bad_parameters() {
        for bad in [
            "lognormal:30k:-1",
            "lognormal:0:1",
            "lognormal:30k",
            "list:",
            "uniform:10:20",
            "zipf:1",
            "file:/nonexistent",
        ] {
            assert!(parse_size_dist(bad).is_err(), "{bad}");
        }
        assert!(parse_histogram("100 -3").unwrap_err().contains("negative"));
        assert!(parse_histogram("100").is_err());
        assert!(parse_histogram("abc 3").is_err());
        assert!(parse_histogram("# only a comment\n").unwrap().is_empty());
    }

    #[test]
    fn lognormal_median_is_near_its_parameter() {
        let mut v = draws(&SizeDist::Lognormal { median: 30_000, sigma: 1.0 }, 20_001);
        v.sort_unstable();
        let median = f64::from(v[10_000]);
        assert!((median / 30_000.0 - 1.0).abs() < 0.05, "{median}");
        assert!(v.iter().all(|&s| s >= 1 && s <= SizeDist::Lognormal { median: 30_000, sigma: 1.0 }.max()));
    }

    #[test]
    fn histogram_follows_its_weights() {
        let d = SizeDist::Histogram {
            source: "t".into(),
            buckets: vec![
                SizeBucket { size: 10, count: 3 },
                SizeBucket { size: 99, count: 0 },
                SizeBucket { size: 20, count: 1 },
            ],
        };
        let v = draws(&d, 40_000);
        assert!(!v.contains(&99));
        let tens = v.iter().filter(|&&s| s == 10).count() as f64 / v.len() as f64;
        assert!((tens - 0.75).abs() < 0.02, "{tens}");
        assert_eq!(d.max(), 20);
    }

    #[test]
    fn power_of_two_bins() {
        let h = power_of_two_histogram([1, 2, 3, 4, 5, 1024, 1025]);
        let pairs: Vec<(u32, u64)> = h.iter().map(|b| (b.size, b.count)).collect();
        assert_eq!(pairs, [(1, 1), (2, 1), (4, 2), (8, 1), (1024, 1), (2048, 1)]);
    }
}
