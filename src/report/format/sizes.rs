//! How a dataset's blob sizes are shown: the distribution they were drawn
//! from (or the directory they came from) and a one-line histogram of the
//! sizes actually stored, so a reader sees at a glance what "a blob" was.

use crate::records::{DatasetSpec, SizeBucket, SizeDist};
use crate::util::units::short_size;

/// One line describing the dataset.
pub fn dataset_line(d: &DatasetSpec) -> String {
    let sizes = match (&d.from_dir, &d.sizes) {
        (Some(dir), _) => format!("the files under {dir} (mean {} bytes)", thousands(d.size)),
        (None, Some(SizeDist::Uniform { size, variance })) => {
            format!("{} ± {} bytes", thousands(*size), thousands(*variance))
        }
        (None, Some(dist)) => format!("sizes {}", dist.describe()),
        (None, None) => format!("{} ± {} bytes", thousands(d.size), thousands(d.variance)),
    };
    format!("{} blobs of {sizes}, page size {}, seed {}", thousands(d.count), d.page_size, d.seed)
}

/// The stored sizes as "≤16k ▂ 12% · ≤32k █ 41% ...", or "" when not recorded.
pub fn histogram_line(buckets: &[SizeBucket]) -> String {
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    if total == 0 {
        return String::new();
    }
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let most = buckets.iter().map(|b| b.count).max().unwrap_or(1);
    let parts: Vec<String> = buckets
        .iter()
        .map(|b| {
            let bar = BARS[((b.count * 7).div_ceil(most) as usize).min(7)];
            format!("≤{} {bar} {:.0}%", short_size(u64::from(b.size)), b.count as f64 * 100.0 / total as f64)
        })
        .collect();
    parts.join(" · ")
}

fn thousands(n: u32) -> String {
    super::fmt::thousands(u64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_what_the_sizes_were() {
        let d = DatasetSpec { count: 1000, size: 10_000, variance: 2000, ..DatasetSpec::default() };
        assert_eq!(dataset_line(&d), "1,000 blobs of 10,000 ± 2,000 bytes, page size 4096, seed 1");
        let ln = DatasetSpec { sizes: Some(SizeDist::Lognormal { median: 30_000, sigma: 1.0 }), ..d.clone() };
        assert!(dataset_line(&ln).contains("lognormal:30000:1"));
        let h = histogram_line(&[SizeBucket { size: 16_384, count: 1 }, SizeBucket { size: 32_768, count: 3 }]);
        assert!(h.contains("25%") && h.contains("75%") && h.contains('█'), "{h}");
        assert_eq!(histogram_line(&[]), "");
    }
}
