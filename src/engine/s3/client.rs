//! The S3 client: requests signed by `rusty-s3` (presigned URLs: AWS
//! signature V4 in the query string, payload `UNSIGNED-PAYLOAD`, so no
//! body is hashed) and sent by `ureq`, blocking, over one keep-alive
//! connection per client with TCP_NODELAY (ureq's default).
//!
//! Nothing is hidden from the timings: no timed request is ever retried
//! (ureq retries none; the first failure ends the operation with an error
//! naming its status), bodies are not compressed, redirects are not
//! followed. Only building and removing a dataset, never timed, try a PUT
//! or DELETE again when the store answers busy (5xx), as S3 clients do. A
//! refused or unreachable endpoint fails within [`CONNECT_TIMEOUT`]; bad
//! credentials, a missing bucket and a server error each give one line,
//! which never holds the secret.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusty_s3::actions::{ListObjectsV2, S3Action};
use rusty_s3::{Bucket, Credentials, UrlStyle};

use crate::{Error, Result};

/// How long a connection attempt may take, and the first request to a
/// store (see [`Client::any_under`]): a refused, unreachable or silent
/// endpoint is an error within 5 s, start-up included.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a server may take to answer a request it has received: a
/// CPU-bound Swift beside a build answers in seconds, not minutes.
pub(super) const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// The pauses before each new try of a request the store answered busy,
/// when building or removing a dataset (never in a timed loop): about 30 s
/// in all, as S3 clients back off from 503 SlowDown.
pub(super) const BUSY_PAUSES: [Duration; 6] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
];

/// The answers S3 clients try again: a server error or a busy store
/// (S3's 503 SlowDown; Swift's proxy answers 503 when a storage server
/// missed its timeouts, as a single-process one in a long fsync can).
fn is_busy(status: u16) -> bool {
    matches!(status, 500 | 502 | 503 | 504)
}

/// How long a signed URL stays valid (it is used at once).
pub(super) const SIGNED_FOR: Duration = Duration::from_secs(3600);

/// Where the objects are and who asks: endpoint, bucket, credentials.
pub struct Store {
    pub(super) bucket: Bucket,
    pub(super) credentials: Credentials,
    /// What errors name: the endpoint and bucket (never a credential).
    pub label: PathBuf,
    /// Whether the endpoint is blobbench's own throwaway cluster (its
    /// fixed test credentials need no checking by the user).
    local: bool,
}

impl Store {
    /// A store at `endpoint` (`http://host:port`, path-style), in `region`.
    pub fn new(endpoint: &str, bucket: &str, region: &str, credentials: Credentials, local: bool) -> Result<Store> {
        let url = parse_endpoint(endpoint)?;
        let label = PathBuf::from(format!("{}/{bucket}", endpoint.trim_end_matches('/')));
        let bucket = Bucket::new(url, UrlStyle::Path, bucket.to_string(), region.to_string())
            .map_err(|e| Error::bad_input(&label, format!("not a usable bucket: {e}")))?;
        Ok(Store { bucket, credentials, label, local })
    }

    pub fn bucket(&self) -> &str {
        self.bucket.name()
    }
}

/// `--s3 URL`: an `http://` or `https://` endpoint with a host and no
/// credentials in it (they come from the environment).
pub fn parse_endpoint(endpoint: &str) -> Result<url::Url> {
    let bad = |why: &str| Error::invalid(format!("--s3 {endpoint}: {why}"));
    let url = url::Url::parse(endpoint).map_err(|e| bad(&format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("expected an http:// or https:// endpoint"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("the URL names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid(
            "--s3: put no credentials in the URL; blobbench reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        ));
    }
    if url.path() != "/" || url.query().is_some() {
        return Err(bad("give the endpoint only (the bucket goes in --s3-bucket)"));
    }
    Ok(url)
}

/// One connection's requests (its own keep-alive pool of `in_flight`).
pub struct Client {
    pub(super) agent: ureq::Agent,
    pub(super) store: Arc<Store>,
}

/// A request's method and what it is about, for error messages.
#[derive(Clone, Copy)]
pub(super) struct Call<'a> {
    pub op: &'static str,
    pub key: &'a str,
}

impl Client {
    pub fn new(store: Arc<Store>) -> Client {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(ANSWER_TIMEOUT))
            .timeout_recv_body(Some(ANSWER_TIMEOUT))
            .no_delay(true)
            .max_idle_connections_per_host(1)
            .user_agent("blobbench")
            .build()
            .into();
        Client { agent, store }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// GETs `key` whole into `buf` (grown, never shrunk); its length, or
    /// None when there is no such object. `newest` asks Swift's proxy for
    /// the newest replica (`X-Newest`, which it honours through s3api by
    /// asking every replica); other stores ignore the header.
    pub fn get_into(&self, key: &str, newest: bool, buf: &mut Vec<u8>) -> Result<Option<usize>> {
        let call = Call { op: "GET", key };
        let url = self.store.bucket.get_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut request = self.agent.get(url.as_str());
        if newest {
            request = request.header("X-Newest", "true");
        }
        let mut resp = request.call().map_err(|e| self.transport(call, e, ANSWER_TIMEOUT))?;
        if resp.status() == 404 {
            let body = read_text(&mut resp);
            return self.missing_key(call, &body).map(|_| None);
        }
        self.check(call, &mut resp)?;
        let body = resp.body_mut();
        if let Some(len) = body.content_length().and_then(|l| usize::try_from(l).ok()) {
            if len > buf.len() {
                buf.resize(len, 0);
            }
        }
        let mut reader = body.as_reader();
        let mut n = 0;
        loop {
            if n == buf.len() {
                // Full: a body that fits exactly ends here, so only a
                // longer one (no or a wrong length) grows the buffer.
                let mut one = [0u8; 1];
                match reader.read(&mut one) {
                    Ok(0) => break,
                    Ok(_) => {
                        buf.resize(buf.len().max(4096) * 2, 0);
                        buf[n] = one[0];
                        n += 1;
                    }
                    Err(e) => return Err(self.failed(call, &format!("the body broke off: {e}"))),
                }
            }
            match reader.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(self.failed(call, &format!("the body broke off: {e}"))),
            }
        }
        std::hint::black_box(&buf[..n]);
        Ok(Some(n))
    }

    /// The size of `key`, or None when there is no such object (HEAD).
    pub fn head(&self, key: &str) -> Result<Option<u64>> {
        let call = Call { op: "HEAD", key };
        let url = self.store.bucket.head_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.head(url.as_str()).call().map_err(|e| self.transport(call, e, ANSWER_TIMEOUT))?;
        if resp.status() == 404 {
            // A HEAD's answer has no body to tell a missing bucket from a
            // missing key; sessions check the bucket when they open.
            return Ok(None);
        }
        self.check(call, &mut resp)?;
        Ok(resp.body().content_length().or_else(|| {
            resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok())
        }))
    }

    /// PUTs `body` as `key` (replacing any object there), once.
    pub fn put(&self, key: &str, body: &[u8]) -> Result<()> {
        self.put_once(key, body).and_then(|busy| busy.map_or(Ok(()), Err))
    }

    /// DELETEs `key` (S3 answers the same whether or not it was there), once.
    pub fn delete(&self, key: &str) -> Result<()> {
        self.delete_once(key).and_then(|busy| busy.map_or(Ok(()), Err))
    }

    /// [`Client::put`] for building a dataset, never timed: tried again
    /// after each of [`BUSY_PAUSES`] while the store answers busy. Returns
    /// how many answers were busy before the one that stored it.
    pub fn put_patiently(&self, key: &str, body: &[u8]) -> Result<u64> {
        patiently(&BUSY_PAUSES, || self.put_once(key, body))
    }

    /// [`Client::delete`] for removing a dataset, as [`Client::put_patiently`].
    pub fn delete_patiently(&self, key: &str) -> Result<u64> {
        patiently(&BUSY_PAUSES, || self.delete_once(key))
    }

    /// One PUT: Ok(None) when stored, Ok(Some(error)) when the store
    /// answered busy ([`is_busy`]), Err for any other failure.
    fn put_once(&self, key: &str, body: &[u8]) -> Result<Option<Error>> {
        let call = Call { op: "PUT", key };
        let url = self.store.bucket.put_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.put(url.as_str()).send(body).map_err(|e| self.transport(call, e, ANSWER_TIMEOUT))?;
        self.answer(call, &mut resp)
    }

    /// One DELETE, answered as [`Client::put_once`].
    fn delete_once(&self, key: &str) -> Result<Option<Error>> {
        let call = Call { op: "DELETE", key };
        let url = self.store.bucket.delete_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.delete(url.as_str()).call().map_err(|e| self.transport(call, e, ANSWER_TIMEOUT))?;
        self.answer(call, &mut resp)
    }

    /// A bodiless answer: Ok(None) on success, Ok(Some(error)) when busy.
    pub(super) fn answer(&self, call: Call, resp: &mut ureq::http::Response<ureq::Body>) -> Result<Option<Error>> {
        let busy = is_busy(resp.status().as_u16());
        match self.check(call, resp) {
            Ok(()) => {
                drain(resp);
                Ok(None)
            }
            Err(e) if busy => Ok(Some(e)),
            Err(e) => Err(e),
        }
    }

    /// The first contact with a store: checks that it answers within
    /// [`CONNECT_TIMEOUT`] (something that accepts connections and never
    /// answers is not an S3 endpoint), that the bucket exists and that the
    /// credentials open it, by listing at most one key under `prefix` (an
    /// answer that names a missing bucket, unlike a HEAD's); whether there
    /// was one.
    pub fn any_under(&self, prefix: &str) -> Result<bool> {
        self.list_page(prefix, None, 1, CONNECT_TIMEOUT).map(|page| !page.contents.is_empty())
    }

    /// Makes the bucket (only on blobbench's own cluster).
    pub fn create_bucket(&self) -> Result<()> {
        let call = Call { op: "PUT", key: "" };
        let url = self.store.bucket.create_bucket(&self.store.credentials).sign(SIGNED_FOR);
        let mut resp =
            self.agent.put(url.as_str()).send_empty().map_err(|e| self.transport(call, e, ANSWER_TIMEOUT))?;
        self.check(call, &mut resp)?;
        drain(&mut resp);
        Ok(())
    }

    /// Calls `each(key, size)` for every object whose key starts with
    /// `prefix`, in key order, a page of up to 1000 at a time.
    pub fn list(&self, prefix: &str, each: &mut dyn FnMut(&str, u64) -> Result<()>) -> Result<()> {
        let mut token: Option<String> = None;
        loop {
            let page = self.list_page(prefix, token.as_deref(), 1000, ANSWER_TIMEOUT)?;
            for obj in &page.contents {
                let key = percent_encoding::percent_decode_str(&obj.key).decode_utf8_lossy();
                each(&key, obj.size.unwrap_or(0))?;
            }
            match page.next_continuation_token {
                Some(t) if !page.contents.is_empty() => token = Some(t),
                _ => return Ok(()),
            }
        }
    }

    pub(super) fn list_page(
        &self,
        prefix: &str,
        token: Option<&str>,
        max: usize,
        answer: Duration,
    ) -> Result<rusty_s3::actions::ListObjectsV2Response> {
        let call = Call { op: "LIST", key: prefix };
        let mut list: ListObjectsV2 = self.store.bucket.list_objects_v2(Some(&self.store.credentials));
        list.with_prefix(prefix);
        list.with_max_keys(max);
        if let Some(t) = token {
            list.with_continuation_token(t);
        }
        let url = list.sign(SIGNED_FOR);
        let request = self.agent.get(url.as_str()).config().timeout_recv_response(Some(answer)).build();
        let mut resp = request.call().map_err(|e| self.transport(call, e, answer))?;
        self.check(call, &mut resp)?;
        let text = read_text(&mut resp);
        ListObjectsV2::parse_response(&text)
            .map_err(|e| self.failed(call, &format!("the store's listing could not be read: {e}")))
    }

    /// Turns a non-2xx answer into an error naming its status and S3 code.
    pub(super) fn check(&self, call: Call, resp: &mut ureq::http::Response<ureq::Body>) -> Result<()> {
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = read_text(resp);
        let code = s3_code(&body);
        Err(self.status_error(call, status.as_u16(), status.canonical_reason().unwrap_or(""), code.as_deref()))
    }

    /// A 404 on a GET: no such key (a miss, as kvtest counts one), or no
    /// such bucket (an error).
    fn missing_key(&self, call: Call, body: &str) -> Result<()> {
        match s3_code(body).as_deref() {
            Some("NoSuchBucket") => Err(self.status_error(call, 404, "Not Found", Some("NoSuchBucket"))),
            _ => Ok(()),
        }
    }

    fn status_error(&self, call: Call, status: u16, reason: &str, code: Option<&str>) -> Error {
        let s = &self.store;
        let why = match (status, code) {
            (_, Some("NoSuchBucket")) => format!(
                "bucket {} does not exist{}",
                s.bucket(),
                if s.local { "" } else { " (blobbench makes no bucket on a store you run: create it first)" }
            ),
            (403, Some(c @ ("InvalidAccessKeyId" | "SignatureDoesNotMatch" | "AccessDenied" | "InvalidToken"))) => {
                format!(
                    "the store refused access key {} ({c}); check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION",
                    s.credentials.key()
                )
            }
            _ => {
                let code = code.map(|c| format!(", {c}")).unwrap_or_default();
                let what = if call.key.is_empty() { call.op.to_string() } else { format!("{} {}", call.op, call.key) };
                format!("{what} failed: the store answered {status} {reason}{code}")
            }
        };
        Error::bad_input(&s.label, why)
    }

    pub(super) fn failed(&self, call: Call, why: &str) -> Error {
        Error::bad_input(&self.store.label, format!("{} {} failed: {why}", call.op, call.key))
    }

    /// A request that got no answer: the endpoint refused, was unreachable
    /// or went silent.
    pub(super) fn transport(&self, call: Call, e: ureq::Error, answer: Duration) -> Error {
        let host = self.store.bucket.base_url().host_str().unwrap_or("?").to_string();
        let port = self.store.bucket.base_url().port_or_known_default().unwrap_or(0);
        let why = match &e {
            ureq::Error::Timeout(ureq::Timeout::Connect) => {
                format!("cannot connect to {host}:{port}: no answer within {} s", CONNECT_TIMEOUT.as_secs())
            }
            ureq::Error::Timeout(_) => {
                format!("{} {}: no answer within {} s; is it an S3 endpoint?", call.op, call.key, answer.as_secs())
            }
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("cannot connect to {host}:{port}: connection refused")
            }
            ureq::Error::HostNotFound => format!("cannot connect to {host}:{port}: no such host"),
            ureq::Error::ConnectionFailed => format!("cannot connect to {host}:{port}"),
            other => format!("{} {} failed: {}", call.op, call.key, one_line(&other.to_string())),
        };
        Error::bad_input(&self.store.label, why)
    }
}

/// Runs `once` until it is not busy, pausing `pauses` between tries; how
/// many tries were busy. The last busy answer is the error.
pub(super) fn patiently(pauses: &[Duration], mut once: impl FnMut() -> Result<Option<Error>>) -> Result<u64> {
    let mut busy = 0;
    loop {
        match once()? {
            None => return Ok(busy),
            Some(e) => match pauses.get(busy as usize) {
                Some(&pause) => std::thread::sleep(pause),
                None => return Err(still_busy(e, pauses)),
            },
        }
        busy += 1;
    }
}

/// The last busy answer, saying that it was the last of several tries.
fn still_busy(e: Error, pauses: &[Duration]) -> Error {
    let tries = pauses.len() + 1;
    let waited = pauses.iter().map(Duration::as_secs_f64).sum::<f64>().round() as u64;
    match e {
        Error::BadInput { path, why } => {
            Error::BadInput { path, why: format!("{why} ({tries} tries over {waited} s: the store stayed busy)") }
        }
        other => other,
    }
}

/// Reads what is left of a small answer, so its connection goes back to
/// the pool.
pub(super) fn drain(resp: &mut ureq::http::Response<ureq::Body>) {
    let _ = std::io::copy(&mut resp.body_mut().as_reader(), &mut std::io::sink());
}

/// An error answer's text (S3 errors are a few hundred bytes of XML).
pub(super) fn read_text(resp: &mut ureq::http::Response<ureq::Body>) -> String {
    let mut text = String::new();
    let _ = resp.body_mut().as_reader().take(1 << 20).read_to_string(&mut text);
    text
}

/// The `<Code>` of an S3 error document.
fn s3_code(body: &str) -> Option<String> {
    let start = body.find("<Code>")? + "<Code>".len();
    let len = body[start..].find("</Code>")?;
    Some(body[start..start + len].trim().to_string()).filter(|c| !c.is_empty() && c.len() < 64)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The credentials for a store the user runs, from the usual environment
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, optionally
/// `AWS_SESSION_TOKEN`), and its region (`AWS_REGION`, else us-east-1).
pub fn env_credentials(label: &Path) -> Result<(Credentials, String)> {
    let credentials = Credentials::from_env().ok_or_else(|| {
        Error::bad_input(label, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to reach a store you run")
    })?;
    let region =
        std::env::var("AWS_REGION").ok().filter(|r| !r.trim().is_empty()).unwrap_or_else(|| "us-east-1".into());
    Ok((credentials, region))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_plain_http_urls_without_credentials() {
        assert!(parse_endpoint("http://127.0.0.1:9000").is_ok());
        assert!(parse_endpoint("https://s3.example.com/").is_ok());
        let e = parse_endpoint("http://key:secret@h:9000").unwrap_err().to_string();
        assert!(e.contains("no credentials in the URL") && !e.contains("secret@"), "{e}");
        assert!(parse_endpoint("ftp://h").unwrap_err().to_string().contains("http://"));
        assert!(parse_endpoint("http://h:9000/bucket").unwrap_err().to_string().contains("--s3-bucket"));
        assert!(parse_endpoint("not a url").unwrap_err().to_string().starts_with("--s3 not a url: not a URL"));
    }

    #[test]
    fn error_codes_are_read_from_s3_error_documents() {
        let doc = "<?xml version='1.0'?><Error><Code>NoSuchBucket</Code><Message>x</Message></Error>";
        assert_eq!(s3_code(doc).as_deref(), Some("NoSuchBucket"));
        assert_eq!(s3_code("<html>Bad Gateway</html>"), None);
    }

    #[test]
    fn busy_answers_are_tried_again_and_others_end_at_once() {
        let busy = || Error::bad_input(Path::new("s"), "PUT k failed: the store answered 503 Service Unavailable");
        let no_pause = [Duration::ZERO; 3];
        let mut calls = 0;
        let twice_busy = patiently(&no_pause, || {
            calls += 1;
            Ok((calls <= 2).then(busy))
        });
        assert_eq!((twice_busy.unwrap(), calls), (2, 3));
        let mut calls = 0;
        let e = patiently(&no_pause, || {
            calls += 1;
            Ok(Some(busy()))
        })
        .unwrap_err()
        .to_string();
        assert_eq!(calls, 4, "one try, then one after each pause");
        assert!(e.ends_with("503 Service Unavailable (4 tries over 0 s: the store stayed busy)"), "{e}");
        let mut calls = 0;
        let refused = patiently(&no_pause, || {
            calls += 1;
            Err(Error::bad_input(Path::new("s"), "the store refused access key k"))
        });
        assert!(refused.is_err() && calls == 1, "a refusal is not tried again");
        assert!([500, 502, 503, 504].into_iter().all(is_busy) && ![200, 403, 404, 507].into_iter().any(is_busy));
        assert!(BUSY_PAUSES.iter().sum::<Duration>() < Duration::from_secs(60), "a dead store fails within a minute");
    }

    #[test]
    fn a_refused_endpoint_is_one_line_naming_it() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store =
            Store::new(&format!("http://127.0.0.1:{port}"), "b", "us-east-1", Credentials::new("k", "s3cr3t"), false)
                .unwrap();
        let e = Client::new(Arc::new(store)).put("x", b"y").unwrap_err().to_string();
        assert!(e.contains(&format!("cannot connect to 127.0.0.1:{port}: connection refused")), "{e}");
        assert!(!e.contains("s3cr3t") && !e.contains('\n'), "{e}");
    }
}
