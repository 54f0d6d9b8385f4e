//! Numbers as kvtest reads them: decimal or `0x` hex, with an optional suffix
//! K/M/G (powers of 1000), KB/MB/GB (also powers of 1000) or KiB/MiB/GiB
//! (powers of 1024), case-insensitive. Unlike kvtest, anything else is an
//! error instead of a silent zero, and overflow is caught. Also the plural
//! ending of a count, for the messages that state one.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

impl From<String> for UnitError {
    fn from(s: String) -> Self {
        UnitError(s)
    }
}

const SUFFIXES: [(&str, i64); 9] = [
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("k", 1_000),
    ("m", 1_000_000),
    ("g", 1_000_000_000),
];

/// Parses a signed integer with kvtest's suffixes.
pub fn parse_int(text: &str) -> Result<i64, UnitError> {
    let bad = |why: &str| UnitError(format!("invalid number {text:?}: {why}"));
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let (number, suffix) = digits.split_at(end);
    if number.is_empty() {
        return Err(bad("expected digits"));
    }
    let value = i64::from_str_radix(number, radix).map_err(|_| bad("too large"))?;
    let multiplier = if suffix.is_empty() {
        1
    } else {
        let lower = suffix.to_ascii_lowercase();
        SUFFIXES
            .iter()
            .find(|(name, _)| *name == lower)
            .map(|&(_, m)| m)
            .ok_or_else(|| bad("unknown suffix (use K, M, G, KB, MB, GB, KiB, MiB, GiB)"))?
    };
    let value = value.checked_mul(multiplier).ok_or_else(|| bad("too large"))?;
    Ok(if negative { -value } else { value })
}

/// A whole number of at least `min` that fits in `T`.
pub fn parse_at_least<T: TryFrom<i64>>(text: &str, min: i64, what: &str) -> Result<T, UnitError> {
    let v = parse_int(text)?;
    if v < min {
        return Err(UnitError(format!("{what} must be at least {min}, got {text}")));
    }
    T::try_from(v).map_err(|_| UnitError(format!("{what} {text} is too large")))
}

/// clap parser: a count of at least 1.
pub fn positive_u64(text: &str) -> Result<u64, UnitError> {
    parse_at_least(text, 1, "value")
}

/// clap parser: a count of at least 1 that fits SQLite's 32-bit keys as kvtest uses them.
pub fn positive_u32(text: &str) -> Result<u32, UnitError> {
    parse_at_least(text, 1, "value").and_then(|v: u32| {
        if v > i32::MAX as u32 {
            Err(UnitError(format!("{text} is too large (at most {})", i32::MAX)))
        } else {
            Ok(v)
        }
    })
}

/// clap parser: zero or more.
pub fn non_negative_u64(text: &str) -> Result<u64, UnitError> {
    parse_at_least(text, 0, "value")
}

/// clap parser: a byte count that fits `i64` and is at least zero.
pub fn non_negative_i64(text: &str) -> Result<i64, UnitError> {
    parse_at_least(text, 0, "value")
}

/// clap parser: a SQLite page size, a power of two from 512 to 65536.
pub fn page_size(text: &str) -> Result<u32, UnitError> {
    let v: u32 = parse_at_least(text, 1, "page size")?;
    check_page_size(v).map_err(UnitError)?;
    Ok(v)
}

pub fn check_page_size(v: u32) -> Result<(), String> {
    if !(512..=65536).contains(&v) || !v.is_power_of_two() {
        return Err(format!("page size must be a power of two from 512 to 65536, got {v}"));
    }
    Ok(())
}

/// A comma-separated list, each element parsed by `one`.
pub fn parse_list<T>(text: &str, one: impl Fn(&str) -> Result<T, UnitError>) -> Result<Vec<T>, UnitError> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.iter().any(|s| s.is_empty()) {
        return Err(UnitError(format!("invalid list {text:?}: empty element")));
    }
    items.into_iter().map(one).collect()
}

/// clap parser: seconds, fractional allowed ("30", "0.5"), more than zero.
pub fn seconds(text: &str) -> Result<f64, UnitError> {
    let bad = || UnitError(format!("invalid duration {text:?}: expected seconds greater than 0"));
    let s = text.trim().trim_end_matches('s');
    let v: f64 = s.parse().map_err(|_| bad())?;
    if !v.is_finite() || v <= 0.0 || v > 86_400.0 {
        return Err(bad());
    }
    Ok(v)
}

/// clap parser: a time budget, "90s", "2m", "1h", "500ms" or plain
/// seconds; more than zero and at most a day.
pub fn duration(text: &str) -> Result<std::time::Duration, UnitError> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit {
        "" | "s" | "sec" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(UnitError(format!("invalid duration {text:?}: expected e.g. 90s, 2m, 1h"))),
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| UnitError(format!("invalid duration {text:?}: expected e.g. 90s, 2m, 1h")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(UnitError(format!("invalid duration {text:?}: must not be negative")));
    }
    let secs = v * scale;
    if secs <= 0.0 {
        return Err(UnitError(format!("invalid duration {text:?}: must be longer than 0s")));
    }
    if secs > 86_400.0 {
        return Err(UnitError(format!("invalid duration {text:?}: at most a day (24h)")));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// "10k" style label for a byte size, as the internal-vs-external study writes them.
pub fn short_size(bytes: u64) -> String {
    if bytes >= 1_000_000 && bytes.is_multiple_of(1_000_000) {
        format!("{}m", bytes / 1_000_000)
    } else if bytes >= 1000 && bytes.is_multiple_of(1000) {
        format!("{}k", bytes / 1000)
    } else {
        bytes.to_string()
    }
}

/// The plural ending of a count: "" for one, "s" otherwise ("1 run", "2 runs").
pub fn plural<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvtest_suffixes() {
        assert_eq!(parse_int("100k"), Ok(100_000));
        assert_eq!(parse_int("10K"), Ok(10_000));
        assert_eq!(parse_int("2KiB"), Ok(2048));
        assert_eq!(parse_int("1mib"), Ok(1 << 20));
        assert_eq!(parse_int("3G"), Ok(3_000_000_000));
        assert_eq!(parse_int("4GB"), Ok(4_000_000_000));
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("0x1K"), Ok(1000));
        assert_eq!(parse_int("-5"), Ok(-5));
        assert_eq!(parse_int("+7"), Ok(7));
    }

    #[test]
    fn garbage_is_an_error_not_zero() {
        for bad in ["", "abc", "10x", "1.5k", "k", "0x", "10 kb extra", "99999999999999999999", "9223372036854775807k"]
        {
            assert!(parse_int(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn ranges_are_checked() {
        assert!(positive_u64("0").is_err());
        assert!(positive_u64("-3").is_err());
        assert_eq!(positive_u64("1k"), Ok(1000));
        assert!(positive_u32("3G").is_err());
        assert_eq!(non_negative_u64("0"), Ok(0));
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size("4096"), Ok(4096));
        assert_eq!(page_size("64KiB"), Ok(65536));
        assert!(page_size("4000").is_err());
        assert!(page_size("256").is_err());
        assert!(page_size("131072").is_err());
    }

    #[test]
    fn lists_and_seconds() {
        assert_eq!(parse_list("10k,20k, 1m", positive_u64), Ok(vec![10_000, 20_000, 1_000_000]));
        assert!(parse_list("10k,,20k", positive_u64).is_err());
        assert_eq!(seconds("0.5"), Ok(0.5));
        assert_eq!(seconds("30s"), Ok(30.0));
        assert!(seconds("0").is_err());
        assert!(seconds("nan").is_err());
        assert_eq!(short_size(10_000), "10k");
        assert_eq!(short_size(1_000_000), "1m");
        assert_eq!(short_size(1234), "1234");
    }

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        for bad in ["0s", "0", "-5s", "abc", "5 parsecs", "", "25h"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert!(duration("-5s").unwrap_err().to_string().contains("negative"));
        assert!(duration("0s").unwrap_err().to_string().contains("longer than 0s"));
    }
}
