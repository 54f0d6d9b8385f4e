//! What an S3 error answer means, from its status, its error document
//! (`<Code>`, `<Message>`, `<Region>`) and the `x-amz-bucket-region`
//! header: a wrong region is told apart from bad credentials, and both
//! from a permission the credentials lack.

/// The parts of an S3 error document a one-line error uses.
#[derive(Debug, Default, PartialEq)]
pub struct ErrorDoc {
    pub code: Option<String>,
    pub message: Option<String>,
    pub region: Option<String>,
}

impl ErrorDoc {
    pub fn parse(body: &str) -> ErrorDoc {
        ErrorDoc { code: element(body, "Code"), message: element(body, "Message"), region: element(body, "Region") }
    }
}

/// The short text of `<name>` in an S3 error document.
fn element(body: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = body.find(&open)? + open.len();
    let len = body[start..].find(&format!("</{name}>"))?;
    Some(body[start..start + len].trim().to_string()).filter(|c| !c.is_empty() && c.len() < 200)
}

/// What went wrong, as the user must act on it.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    NoSuchBucket,
    /// The bucket is in another region than the one signed for: the one
    /// the store named, when it named one.
    WrongRegion(Option<String>),
    /// The store does not accept the credentials (its code).
    Credentials(String),
    /// The credentials are good but may not do this (its code).
    Permission(String),
    /// A signed URL the store calls expired or not yet valid (AWS: "Request
    /// has expired"; MinIO: "Request is not valid yet"): this machine's
    /// clock and the store's differ.
    Clock(String),
    Other,
}

/// Reads an error answer; `ours` is the region requests are signed for.
pub fn classify(status: u16, doc: &ErrorDoc, header_region: Option<&str>, ours: &str) -> Refusal {
    let code = doc.code.as_deref().unwrap_or("");
    let named = header_region.map(str::to_string).or_else(|| doc.region.clone()).filter(|r| r != ours);
    let message = doc.message.as_deref().unwrap_or("").to_ascii_lowercase();
    match (status, code) {
        (_, "NoSuchBucket") => Refusal::NoSuchBucket,
        (301 | 307, _) | (_, "PermanentRedirect" | "IllegalLocationConstraintException") => Refusal::WrongRegion(named),
        (400, "AuthorizationHeaderMalformed" | "AuthorizationQueryParametersError") if named.is_some() => {
            Refusal::WrongRegion(named)
        }
        (_, "RequestTimeTooSkewed") => Refusal::Clock(code.into()),
        (403, "AccessDenied") if ["expired", "not yet valid", "not valid yet"].iter().any(|m| message.contains(m)) => {
            Refusal::Clock(code.into())
        }
        (
            _,
            "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "InvalidToken" | "ExpiredToken" | "TokenRefreshRequired",
        ) => Refusal::Credentials(code.into()),
        (403, "AccessDenied" | "AllAccessDisabled" | "AccountProblem") => Refusal::Permission(code.into()),
        _ => Refusal::Other,
    }
}

/// The store's clock less this machine's `now`, in seconds, by the `Date`
/// header of its answer (RFC 1123: "Sat, 28 Nov 2026 08:18:27 GMT").
pub fn skew_secs(date: &str, now: jiff::Timestamp) -> Option<i64> {
    let theirs = jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(date.trim()).ok()?;
    Some(theirs.as_second() - now.as_second())
}

/// How far this machine's clock is from the store's, `skew` seconds being
/// the store's less this machine's, as a person reads it.
pub fn apart(skew: i64) -> String {
    let n = skew.unsigned_abs();
    let amount = match n {
        0..120 => format!("{n} s"),
        120..7_200 => format!("{} min", (n + 30) / 60),
        _ => format!("{} h", (n + 1_800) / 3_600),
    };
    let side = if skew >= 0 { "behind" } else { "ahead of" };
    format!("{amount} {side} the store's")
}

/// The IAM action a request needs, for a permission error.
pub fn action(op: &str) -> &'static str {
    match op {
        "GET" | "HEAD" => "s3:GetObject",
        "GET (version)" => "s3:GetObjectVersion",
        "PUT" | "PUT (part)" | "POST (create multipart upload)" | "POST (complete multipart upload)" => "s3:PutObject",
        "DELETE" | "POST (delete objects)" => "s3:DeleteObject",
        "DELETE (version)" => "s3:DeleteObjectVersion",
        "DELETE (abort multipart upload)" => "s3:AbortMultipartUpload",
        "LIST" => "s3:ListBucket",
        "LIST (versions)" => "s3:ListBucketVersions",
        "LIST (uploads)" => "s3:ListBucketMultipartUploads",
        "GET (versioning)" => "s3:GetBucketVersioning",
        _ => "s3:*",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(code: &str, message: &str, region: Option<&str>) -> ErrorDoc {
        let region = region.map(|r| format!("<Region>{r}</Region>")).unwrap_or_default();
        ErrorDoc::parse(&format!(
            "<?xml version='1.0'?><Error><Code>{code}</Code><Message>{message}</Message>{region}</Error>"
        ))
    }

    #[test]
    fn error_documents_are_read() {
        let d = doc("NoSuchBucket", "x", None);
        assert_eq!((d.code.as_deref(), d.message.as_deref(), d.region), (Some("NoSuchBucket"), Some("x"), None));
        assert_eq!(ErrorDoc::parse("<html>Bad Gateway</html>"), ErrorDoc::default());
    }

    #[test]
    fn a_wrong_region_names_the_expected_one() {
        let moved = doc("PermanentRedirect", "use the specified endpoint", None);
        assert_eq!(
            classify(301, &moved, Some("eu-west-1"), "us-east-1"),
            Refusal::WrongRegion(Some("eu-west-1".into()))
        );
        let in_body = doc("PermanentRedirect", "m", Some("ap-south-1"));
        assert_eq!(classify(301, &in_body, None, "us-east-1"), Refusal::WrongRegion(Some("ap-south-1".into())));
        assert_eq!(classify(301, &ErrorDoc::default(), None, "us-east-1"), Refusal::WrongRegion(None));
        let presigned =
            doc("AuthorizationQueryParametersError", "the region 'us-east-1' is wrong", Some("eu-central-1"));
        assert_eq!(classify(400, &presigned, None, "us-east-1"), Refusal::WrongRegion(Some("eu-central-1".into())));
        assert_eq!(
            classify(400, &doc("AuthorizationQueryParametersError", "m", None), None, "us-east-1"),
            Refusal::Other
        );
    }

    #[test]
    fn the_clocks_skew_is_read_from_the_answers_date() {
        let now: jiff::Timestamp = "2026-11-28T08:00:00Z".parse().unwrap();
        assert_eq!(skew_secs("Sat, 28 Nov 2026 08:03:10 GMT", now), Some(190));
        assert_eq!(skew_secs("Sat, 28 Nov 2026 07:59:30 GMT", now), Some(-30));
        assert_eq!(skew_secs("yesterday", now), None);
        assert_eq!(apart(190), "3 min behind the store's");
        assert_eq!(apart(-30), "30 s ahead of the store's");
        assert_eq!(apart(3 * 3600 - 100), "3 h behind the store's");
    }

    #[test]
    fn a_permission_is_told_apart_from_bad_credentials() {
        let us = "us-east-1";
        for code in ["InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"] {
            assert_eq!(classify(403, &doc(code, "m", None), None, us), Refusal::Credentials(code.into()));
        }
        assert_eq!(
            classify(403, &doc("AccessDenied", "Access Denied", None), None, us),
            Refusal::Permission("AccessDenied".into())
        );
        assert_eq!(
            classify(403, &doc("AccessDenied", "Request has expired", None), None, us),
            Refusal::Clock("AccessDenied".into())
        );
        assert_eq!(
            classify(403, &doc("RequestTimeTooSkewed", "m", None), None, us),
            Refusal::Clock("RequestTimeTooSkewed".into())
        );
        assert_eq!(classify(404, &doc("NoSuchBucket", "m", None), None, us), Refusal::NoSuchBucket);
        assert_eq!(classify(503, &doc("SlowDown", "m", None), None, us), Refusal::Other);
        // MinIO's words for a URL signed in its future.
        assert_eq!(
            classify(403, &doc("AccessDenied", "Request is not valid yet", None), None, us),
            Refusal::Clock("AccessDenied".into())
        );
        assert_eq!((action("PUT"), action("LIST")), ("s3:PutObject", "s3:ListBucket"));
    }
}
