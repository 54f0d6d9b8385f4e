//! The one rule for every object key blobbench names in a request: it lies
//! under the prefix it works in (a dataset's, or `blobbench/` for a store
//! not tied to one dataset), and no segment after that prefix is empty,
//! `.` or `..`.
//!
//! rusty-s3 builds an object's URL with `Url::set_path`, which resolves
//! `.` and `..` segments as a file system does: a listed key
//! `blobbench/t-1f2e3d4c/../../victim` would be sent as `DELETE /b/victim`,
//! and with path addressing `../../../b2/x` reaches another bucket (an
//! empty key names the bucket itself). S3 stores accept such keys, so
//! anyone who may PUT under `blobbench/`, a store that lists wrongly, or a
//! man in the middle on plain http can plant one. So a removal checks
//! every listed key (and each version's, and each upload's) before it
//! deletes anything, and the client checks each request's key again, in
//! the URL or in a DeleteObjects body alike.

/// Why `key` may not be named in a request made under `prefix` (which
/// ends with `/`), or None when it may.
#[inline]
pub fn key_flaw(prefix: &str, key: &str) -> Option<&'static str> {
    let Some(rest) = key.strip_prefix(prefix) else { return Some("it is not under") };
    for segment in rest.split('/') {
        match segment {
            "" => return Some("it has an empty segment after"),
            "." | ".." => return Some("it has a '.' or '..' segment (which a URL path resolves) after"),
            _ => {}
        }
    }
    None
}

/// The line saying why `key` was refused under `prefix` (the key quoted,
/// so that no character of it can break the line).
pub fn refusal(prefix: &str, key: &str, why: &str) -> String {
    format!("key {key:?} is refused: {why} {prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: a key outside the prefix, or one whose segments a URL
    /// path would resolve, is refused; anything else under it is taken as
    /// the store names it.
    #[test]
    fn only_keys_under_the_prefix_with_plain_segments_pass() {
        let p = "blobbench/t-1f2e3d4c/";
        for ok in ["0000000001", "blobbench-dataset.json", "notes%41.txt", "a/b", "..x", "x..", ".hidden", "a\\..\\b"] {
            assert_eq!(key_flaw(p, &format!("{p}{ok}")), None, "{ok}");
        }
        for (bad, why) in [
            ("blobbench/t-1f2e3d4c/../../victim", "'..'"),
            ("blobbench/t-1f2e3d4c/./x", "'.'"),
            ("blobbench/t-1f2e3d4c/a/..", "'..'"),
            ("blobbench/t-1f2e3d4c/", "empty"),
            ("blobbench/t-1f2e3d4c//x", "empty"),
            ("blobbench/t-1f2e3d4c/x/", "empty"),
            ("blobbench/t-1f2e3d4", "not under"),
            ("victim", "not under"),
            ("", "not under"),
        ] {
            let flaw = key_flaw(p, bad).unwrap_or_else(|| panic!("{bad} passed"));
            assert!(flaw.contains(why), "{bad}: {flaw}");
        }
        let line = refusal(p, "blobbench/t-1f2e3d4c/../x\nforged", key_flaw(p, "blobbench/t-1f2e3d4c/../x").unwrap());
        assert!(!line.contains('\n') && line.contains(r#""blobbench/t-1f2e3d4c/../x\nforged""#), "{line}");
    }
}
