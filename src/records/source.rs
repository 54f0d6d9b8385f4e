//! Where a study's blob sizes come from when they are the user's own
//! (`--from DIR`, `--sizes`/`--size-dist DIST`), and what a result file
//! records of it, so a report can say which data its figures are about.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sizes::SizeDist;

/// The user's blobs, as a study is asked to use them.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeSource {
    /// Random content, sizes drawn from a named distribution.
    Dist(SizeDist),
    /// The content of the regular files under a directory (only read).
    Files(PathBuf),
}

/// What a result file says of the user's blobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SizesFrom {
    /// Random content with sizes drawn from `dist`.
    Distribution { dist: SizeDist },
    /// The content of files under `dir`: `files_used` of the `files_found`
    /// usable ones (evenly spaced in path order when the study's budget
    /// holds fewer), `content_bytes` the sum of the used files' sizes.
    Files {
        dir: String,
        files_found: u64,
        files_used: u64,
        content_bytes: u64,
        /// "N symbolic links (not followed)", one per kind skipped.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
    },
}

impl SizesFrom {
    /// "your files in DIR (120 of 2000 files, 5.9 MB)" or
    /// "sizes drawn from lognormal:30000:1 (random content)".
    pub fn describe(&self) -> String {
        match self {
            SizesFrom::Distribution { dist } => format!("sizes drawn from {} (random content)", dist.describe()),
            SizesFrom::Files { dir, files_found, files_used, content_bytes, skipped } => {
                let used = if files_used == files_found {
                    format!("{files_used} files")
                } else {
                    format!("{files_used} of {files_found} files, evenly spaced")
                };
                let skipped =
                    if skipped.is_empty() { String::new() } else { format!("; skipped {}", skipped.join(", ")) };
                let size = match *content_bytes as f64 {
                    b if b < 1e6 => format!("{:.1} KB", b / 1e3),
                    b => format!("{:.1} MB", b / 1e6),
                };
                format!("your files in {dir} ({used}, {size}{skipped})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_both_kinds() {
        let d = SizesFrom::Distribution { dist: SizeDist::Lognormal { median: 30_000, sigma: 1.0 } };
        assert_eq!(d.describe(), "sizes drawn from lognormal:30000:1 (random content)");
        let f = SizesFrom::Files {
            dir: "/photos".into(),
            files_found: 2000,
            files_used: 120,
            content_bytes: 5_900_000,
            skipped: vec!["3 empty files".into()],
        };
        assert_eq!(
            f.describe(),
            "your files in /photos (120 of 2000 files, evenly spaced, 5.9 MB; skipped 3 empty files)"
        );
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains("\"kind\":\"files\""), "{json}");
        assert_eq!(serde_json::from_str::<SizesFrom>(&json).unwrap(), f);
    }
}
