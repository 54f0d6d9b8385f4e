//! Words and numbers as the report writes them: machine names, dates,
//! sizes and "1.9x faster" phrases, shared by every section.

use crate::results::ResultFile;

/// One name per result file, in order: its label (the hostname unless
/// `--label` said otherwise), with the filesystem, then the date, then the
/// time, then a number added only where labels would collide, as when one
/// machine was measured twice.
pub fn machine_labels(files: &[ResultFile]) -> Vec<String> {
    let name = |f: &ResultFile| {
        let l = f.display_label();
        if l.is_empty() {
            "unknown host".to_string()
        } else {
            l.to_string()
        }
    };
    let fs =
        |f: &ResultFile| f.environment.storage.as_ref().map(|s| s.fs_type.trim().to_string()).filter(|t| !t.is_empty());
    let with = |f: &ResultFile, extra: Option<String>| {
        let parts: Vec<String> = fs(f).into_iter().chain(extra).collect();
        if parts.is_empty() {
            name(f)
        } else {
            format!("{} ({})", name(f), parts.join(", "))
        }
    };
    let levels: [&dyn Fn(&ResultFile) -> String; 4] =
        [&|f| name(f), &|f| with(f, None), &|f| with(f, Some(date(f.created_unix))), &|f| {
            with(f, Some(date_time(f.created_unix)))
        }];
    let mut labels: Vec<String> = files.iter().map(levels[0]).collect();
    for level in &levels[1..] {
        let dup: Vec<bool> = labels.iter().map(|l| labels.iter().filter(|m| *m == l).count() > 1).collect();
        for (i, f) in files.iter().enumerate() {
            if dup[i] {
                labels[i] = level(f);
            }
        }
    }
    let last = labels.clone();
    for (i, label) in labels.iter_mut().enumerate() {
        if last.iter().filter(|m| **m == *label).count() > 1 {
            label.push_str(&format!(" #{}", i + 1));
        }
    }
    labels
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// "2017-06-05" (UTC).
pub fn date(unix: u64) -> String {
    let (y, m, d) = civil((unix / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// "2017-06-05 14:03 UTC".
pub fn date_time(unix: u64) -> String {
    let secs = unix % 86_400;
    format!("{} {:02}:{:02} UTC", date(unix), secs / 3600, secs % 3600 / 60)
}

/// 1234567 -> "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A rate per second, short: 1234567 -> "1.23M", 6100 -> "6.1k".
pub fn rate(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// A blob size as the article says it: "10 KB" (kvtest's K is 1000).
pub fn blob_size(bytes: u32) -> String {
    match bytes {
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{} MB", b / 1_000_000),
        b if b >= 1000 && b % 1000 == 0 => format!("{} KB", b / 1000),
        b => format!("{b}-byte"),
    }
}

/// Bytes for people: "1.23 GB" (powers of 1000, like the article's du figures).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// How SQLite compares, from ratio = file time / database time:
/// "1.9x faster than", "1.3x slower than" or "about as fast as".
pub fn speed_phrase(ratio: f64) -> String {
    let factor = if ratio >= 1.0 { ratio } else { 1.0 / ratio };
    let shown = format!("{factor:.1}");
    if shown == "1.0" {
        "about as fast as".to_string()
    } else if ratio >= 1.0 {
        format!("{shown}x faster than")
    } else {
        format!("{shown}x slower than")
    }
}

/// A time in microseconds with about three significant digits.
pub fn micros(us: f64) -> String {
    if !us.is_finite() {
        "-".to_string()
    } else if us >= 1000.0 {
        thousands(us.round() as u64)
    } else if us >= 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

pub fn percent(p: f64) -> String {
    if p.is_finite() {
        format!("{p:.1}%")
    } else {
        "-".to_string()
    }
}

/// A byte size with three significant digits and the study's suffixes:
/// "23.4k", "150k", "1.2m", "512".
pub fn fmt_size(bytes: f64) -> String {
    let (v, suffix) = if bytes >= 1e6 {
        (bytes / 1e6, "m")
    } else if bytes >= 1e3 {
        (bytes / 1e3, "k")
    } else {
        (bytes, "")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let mut text = format!("{v:.digits$}");
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    text + suffix
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::envinfo::Environment;

    fn file(host: &str, unix: u64) -> ResultFile {
        let mut f = ResultFile::new("suite", Environment { hostname: host.into(), ..Environment::default() });
        f.created_unix = unix;
        f
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date_time(1_496_671_380), "2017-06-05 14:03 UTC");
        assert_eq!(date(4_107_542_400), "2100-03-01");
    }

    #[test]
    fn labels_disambiguate_only_collisions() {
        let day = 86_400;
        let files = [file("a", 0), file("b", 0), file("a", day), file("", 0)];
        assert_eq!(machine_labels(&files), ["a (1970-01-01)", "b", "a (1970-01-02)", "unknown host"]);
        let same_day = [file("a", 60), file("a", 3600)];
        assert_eq!(machine_labels(&same_day), ["a (1970-01-01 00:01 UTC)", "a (1970-01-01 01:00 UTC)"]);
        let mut on_xfs = file("a", 5);
        on_xfs.environment.storage =
            Some(crate::measure::envinfo::StorageInfo { fs_type: "xfs".into(), ..Default::default() });
        let mut labelled = file("a", 5);
        labelled.label = "laptop".into();
        assert_eq!(machine_labels(&[file("a", 5), on_xfs.clone(), labelled]), ["a", "a (xfs)", "laptop"]);
        let mut ext4 = on_xfs.clone();
        ext4.environment.storage.as_mut().unwrap().fs_type = "ext4".into();
        assert_eq!(machine_labels(&[ext4, on_xfs]), ["a (ext4)", "a (xfs)"], "same label, told apart by filesystem");
        let identical = [file("a", 5), file("a", 5)];
        assert_eq!(machine_labels(&identical), ["a (1970-01-01 00:00 UTC) #1", "a (1970-01-01 00:00 UTC) #2"]);
    }

    #[test]
    fn phrases_follow_the_ratio() {
        assert_eq!(speed_phrase(1.94), "1.9x faster than");
        assert_eq!(speed_phrase(0.5), "2.0x slower than");
        assert_eq!(speed_phrase(1.02), "about as fast as");
        assert_eq!(speed_phrase(0.97), "about as fast as");
        assert_eq!(speed_phrase(0.9), "1.1x slower than");
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_228_800_000), "1,228,800,000");
        assert_eq!(blob_size(10_000), "10 KB");
        assert_eq!(blob_size(1_000_000), "1 MB");
        assert_eq!(blob_size(1234), "1234-byte");
        assert_eq!(bytes(999), "999 bytes");
        assert_eq!(bytes(1_024_512_000), "1.02 GB");
        assert_eq!(micros(12.345), "12.35");
        assert_eq!(micros(f64::NAN), "-");
        assert_eq!(micros(108_000.4), "108,000");
    }

    #[test]
    fn sizes_print_like_the_study() {
        assert_eq!(fmt_size(23_456.0), "23.5k");
        assert_eq!(fmt_size(20_000.0), "20k");
        assert_eq!(fmt_size(150_400.0), "150k");
        assert_eq!(fmt_size(1_234_567.0), "1.23m");
        assert_eq!(fmt_size(512.0), "512");
    }
}
