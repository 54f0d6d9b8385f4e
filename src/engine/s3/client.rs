//! The S3 client: requests signed by `rusty-s3` (presigned URLs: AWS
//! signature V4 in the query string, payload `UNSIGNED-PAYLOAD`, so no
//! body is hashed) and sent by `ureq`, blocking, over one keep-alive
//! connection per client with TCP_NODELAY (ureq's default).
//!
//! Nothing is hidden from the timings: no timed request is ever retried
//! (ureq retries none; the first failure ends the operation with an error
//! naming its status), bodies are not compressed, redirects are not
//! followed. Only building and removing a dataset, never timed, try a PUT
//! or DELETE again when the store answers busy (5xx) or the connection
//! broke (a reset, a timeout), as S3 clients do. Every step of a request
//! has a bound ([`super::net`]); bad credentials, a missing permission, a
//! wrong region, a missing bucket and a server error each give one line,
//! which never holds the secret.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rusty_s3::actions::{ListObjectsV2, S3Action};
use rusty_s3::{Bucket, Credentials, UrlStyle};

use super::credentials::Source;
use super::descriptor::ROOT;
use super::keys::{key_flaw, refusal as key_refusal};
use super::net::{url_style, Net, CONNECT_TIMEOUT, DNS_TIMEOUT, STALL_ENV};
use super::refusal::{self, classify, ErrorDoc, Refusal};
use super::retry::{is_broken, is_busy, patiently, timed, Again, BUSY_PAUSES};
use crate::records::Addressing;
use crate::util::interrupt::stop_requested;
use crate::{Error, Result};

/// How long a signed URL stays valid: it is used at once, and a URL in
/// an access log (or sent over plain http) is worth little a minute later.
pub(super) const SIGNED_FOR: Duration = Duration::from_secs(60);

/// Where the objects are and who asks: endpoint, bucket, credentials.
pub struct Store {
    pub(super) bucket: Bucket,
    pub(super) credentials: Credentials,
    /// What errors name: the endpoint and bucket (never a credential).
    pub label: PathBuf,
    /// Whether the endpoint is blobbench's own throwaway cluster (its
    /// fixed test credentials need no checking by the user).
    local: bool,
    /// Where a store the user runs got its credentials (None: blobbench's
    /// own server's).
    source: Option<Source>,
    /// Proxy, bounds and CAs.
    pub net: Net,
    /// The prefix every key a request names must lie under (see
    /// [`super::keys`]): a dataset's, or `blobbench/`.
    scope: String,
}

impl Store {
    /// A store at `endpoint` (`http(s)://host:port`, perhaps with a path),
    /// in `region`, its bucket addressed as `addressing` chooses.
    pub fn new(
        endpoint: &str,
        bucket: &str,
        region: &str,
        credentials: Credentials,
        local: bool,
        net: Net,
        addressing: Addressing,
    ) -> Result<Store> {
        let url = parse_endpoint(endpoint)?;
        let label = PathBuf::from(format!("{}/{bucket}", endpoint.trim_end_matches('/')));
        let style = if local { UrlStyle::Path } else { url_style(addressing, &url, bucket)? };
        let bucket = Bucket::new(url, style, bucket.to_string(), region.to_string())
            .map_err(|e| Error::bad_input(&label, format!("not a usable bucket: {e}")))?;
        Ok(Store { bucket, credentials, label, local, source: None, net, scope: ROOT.to_string() })
    }

    /// The same store, its requests confined to keys under `prefix` (a
    /// dataset's, ending with `/`).
    pub fn within(self, prefix: &str) -> Store {
        Store { scope: prefix.to_string(), ..self }
    }

    /// Refuses a request (`op`) naming `key` outside this store's scope,
    /// or with a segment a URL path would resolve (see [`super::keys`]).
    #[inline]
    pub(super) fn check_key(&self, op: &str, key: &str) -> Result<()> {
        match key_flaw(&self.scope, key) {
            None => Ok(()),
            Some(why) => {
                Err(Error::bad_input(&self.label, format!("{op} not sent: {}", key_refusal(&self.scope, key, why))))
            }
        }
    }

    /// The same store, its credentials found in `source`.
    pub fn with_source(self, source: Source) -> Store {
        Store { source: Some(source), ..self }
    }

    /// The AWS profile its credentials came from (a descriptor keeps it).
    pub fn source_profile(&self) -> Option<String> {
        self.source.as_ref().and_then(Source::profile)
    }

    /// Where its credentials came from, as a result file records it (a
    /// profile's name, never a key); None on blobbench's own server.
    pub fn credentials_from(&self) -> Option<String> {
        self.source.as_ref().map(Source::label)
    }

    pub fn bucket(&self) -> &str {
        self.bucket.name()
    }

    /// The prefix its requests' keys lie under.
    pub(super) fn scope(&self) -> &str {
        &self.scope
    }
}

/// `--s3 URL`: an `http://` or `https://` endpoint with a host and no
/// credentials in it (see [`super::credentials`]); a path (a gateway
/// serving S3 below one) is kept, the bucket then follows it.
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
            "--s3: put no credentials in the URL; blobbench reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE's",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("give the endpoint only (the bucket goes in --s3-bucket)"));
    }
    Ok(url)
}

/// What an error answer's headers add to its document.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// `x-amz-bucket-region`.
    region: Option<String>,
    /// The store's clock less this machine's, by its `Date`, in seconds.
    skew_secs: Option<i64>,
}

/// One connection's requests (its own keep-alive pool of `in_flight`).
pub struct Client {
    pub(super) agent: ureq::Agent,
    pub(super) store: Arc<Store>,
    /// Whether to give up: Ctrl-C's flag, or never for a clean-up.
    pub(super) stop: fn() -> bool,
}

/// A request's method and what it is about, for error messages.
#[derive(Clone, Copy)]
pub(super) struct Call<'a> {
    pub op: &'static str,
    pub key: &'a str,
}

impl Client {
    pub fn new(store: Arc<Store>) -> Client {
        Client::stopped_by(store, stop_requested)
    }

    /// A client Ctrl-C does not stop, for the clean-up that Ctrl-C itself
    /// started: with the flag still set, every answer slower than a stop
    /// check would come back as interrupted and the clean-up would fail.
    /// A second Ctrl-C still leaves at once.
    pub fn unstoppable(store: Arc<Store>) -> Client {
        Client::stopped_by(store, || false)
    }

    pub(super) fn stopped_by(store: Arc<Store>, stop: fn() -> bool) -> Client {
        Client { agent: store.net.agent(stop), store, stop }
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
        self.store.check_key(call.op, key)?;
        let url = self.store.bucket.get_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut request = self.agent.get(url.as_str());
        if newest {
            request = request.header("X-Newest", "true");
        }
        let mut resp = request.call().map_err(|e| self.transport(call, e, None))?;
        if resp.status() == 404 {
            let body = read_text(&mut resp);
            return self.missing_key(call, &body).map(|_| None);
        }
        if !resp.status().is_success() {
            let busy = is_busy(resp.status().as_u16());
            self.check(call, &mut resp).map_err(|e| timed(e, busy))?;
        }
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
        self.store.check_key(call.op, key)?;
        let url = self.store.bucket.head_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.head(url.as_str()).call().map_err(|e| self.transport(call, e, None))?;
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
        self.put_once(key, body).and_then(Again::none)
    }

    /// DELETEs `key` (S3 answers the same whether or not it was there), once.
    pub fn delete(&self, key: &str) -> Result<()> {
        self.delete_once(key).and_then(Again::none)
    }

    /// [`Client::put`] for building a dataset, never timed: tried again
    /// after each of [`BUSY_PAUSES`] while the store answers busy, and up
    /// to [`BROKEN_TRIES`] times in all when the connection breaks. Returns
    /// how many tries failed so before the one that stored it.
    pub fn put_patiently(&self, key: &str, body: &[u8]) -> Result<u64> {
        self.patiently(|| self.put_once(key, body))
    }

    /// [`Client::delete`] for removing a dataset, as [`Client::put_patiently`].
    pub fn delete_patiently(&self, key: &str) -> Result<u64> {
        self.patiently(|| self.delete_once(key))
    }

    /// `once` tried again after each of [`BUSY_PAUSES`], as
    /// [`patiently`], the pauses ending at this client's stop.
    pub(super) fn patiently(&self, once: impl FnMut() -> Result<Option<Again>>) -> Result<u64> {
        patiently(&BUSY_PAUSES, self.stop, once)
    }

    /// One PUT: Ok(None) when stored, Ok(Some(again)) when the store
    /// answered busy or the connection broke, Err for any other failure.
    fn put_once(&self, key: &str, body: &[u8]) -> Result<Option<Again>> {
        let call = Call { op: "PUT", key };
        self.store.check_key(call.op, key)?;
        let url = self.store.bucket.put_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        match self.agent.put(url.as_str()).send(body) {
            Ok(mut resp) => self.answer(call, &mut resp),
            Err(e) => self.failed_to_send(call, e),
        }
    }

    /// One DELETE, answered as [`Client::put_once`].
    pub(super) fn delete_once(&self, key: &str) -> Result<Option<Again>> {
        let call = Call { op: "DELETE", key };
        self.store.check_key(call.op, key)?;
        let url = self.store.bucket.delete_object(Some(&self.store.credentials), key).sign(SIGNED_FOR);
        match self.agent.delete(url.as_str()).call() {
            Ok(mut resp) => self.answer(call, &mut resp),
            Err(e) => self.failed_to_send(call, e),
        }
    }

    /// A request that got no answer: worth another try when its
    /// connection broke ([`is_broken`]), else an error.
    pub(super) fn failed_to_send(&self, call: Call, e: ureq::Error) -> Result<Option<Again>> {
        let broken = is_broken(&e);
        let e = self.transport(call, e, None);
        if broken {
            Ok(Some(Again::Broken(e)))
        } else {
            Err(e)
        }
    }

    /// A bodiless answer: Ok(None) on success, Ok(Some(error)) when busy.
    pub(super) fn answer(&self, call: Call, resp: &mut ureq::http::Response<ureq::Body>) -> Result<Option<Again>> {
        let busy = is_busy(resp.status().as_u16());
        match self.check(call, resp) {
            Ok(()) => {
                drain(resp);
                Ok(None)
            }
            Err(e) if busy => Ok(Some(Again::Busy(e))),
            Err(e) => Err(e),
        }
    }

    /// The first contact with a store: checks that it answers, that the
    /// bucket exists and that the credentials open it, by listing at most
    /// one key under `prefix` (an answer that names a missing bucket,
    /// unlike a HEAD's); whether there was one. Its answer has the stall
    /// bound of every request: a loaded store, or one with a large bucket
    /// index, may take seconds to list.
    pub fn any_under(&self, prefix: &str) -> Result<bool> {
        self.list_page(prefix, None, 1, None).map(|page| !page.contents.is_empty())
    }

    /// Makes the bucket (only on blobbench's own cluster). A bucket that
    /// is already there is no error: SeaweedFS makes its own at start and
    /// answers 409 BucketAlreadyOwnedByYou to a second creation. Tried
    /// again as a build's PUTs are ([`Client::patiently`]): a throwaway
    /// server just started on a loaded machine may answer 503 at first.
    pub fn create_bucket(&self) -> Result<()> {
        self.patiently(|| self.create_bucket_once()).map(drop)
    }

    fn create_bucket_once(&self) -> Result<Option<Again>> {
        let call = Call { op: "PUT", key: "" };
        let url = self.store.bucket.create_bucket(&self.store.credentials).sign(SIGNED_FOR);
        let mut resp = match self.agent.put(url.as_str()).send_empty() {
            Ok(resp) => resp,
            Err(e) => return self.failed_to_send(call, e),
        };
        if resp.status() == 409 {
            let doc = ErrorDoc::parse(&read_text(&mut resp));
            if doc.code.as_deref() == Some("BucketAlreadyOwnedByYou") {
                return Ok(None);
            }
            return Err(self.status_error(call, 409, "Conflict", &doc, &Said::default()));
        }
        self.answer(call, &mut resp)
    }

    pub(super) fn list_page(
        &self,
        prefix: &str,
        token: Option<&str>,
        max: usize,
        answer: Option<Duration>,
    ) -> Result<rusty_s3::actions::ListObjectsV2Response> {
        let call = Call { op: "LIST", key: prefix };
        let mut list: ListObjectsV2 = self.store.bucket.list_objects_v2(Some(&self.store.credentials));
        list.with_prefix(prefix);
        list.with_max_keys(max);
        if let Some(t) = token {
            list.with_continuation_token(t);
        }
        let url = list.sign(SIGNED_FOR);
        let mut request = self.agent.get(url.as_str());
        if answer.is_some() {
            request = request.config().timeout_recv_response(answer).build();
        }
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
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let said = Said {
            region: header("x-amz-bucket-region"),
            skew_secs: header("date").and_then(|d| refusal::skew_secs(&d, jiff::Timestamp::now())),
        };
        let doc = ErrorDoc::parse(&read_text(resp));
        let reason = status.canonical_reason().unwrap_or("");
        Err(self.status_error(call, status.as_u16(), reason, &doc, &said))
    }

    /// A 404 on a GET: no such key (a miss, as kvtest counts one), or no
    /// such bucket (an error).
    fn missing_key(&self, call: Call, body: &str) -> Result<()> {
        let doc = ErrorDoc::parse(body);
        match doc.code.as_deref() {
            Some("NoSuchBucket") => Err(self.status_error(call, 404, "Not Found", &doc, &Said::default())),
            _ => Ok(()),
        }
    }

    pub(super) fn status_error(&self, call: Call, status: u16, reason: &str, doc: &ErrorDoc, said: &Said) -> Error {
        let s = &self.store;
        let ours = s.bucket.region();
        let key = s.credentials.key();
        let what = if call.key.is_empty() { call.op.to_string() } else { format!("{} {}", call.op, call.key) };
        let why = match classify(status, doc, said.region.as_deref(), ours) {
            Refusal::NoSuchBucket => format!(
                "bucket {} does not exist{}",
                s.bucket(),
                if s.local { "" } else { " (blobbench makes no bucket on a store you run: create it first)" }
            ),
            Refusal::WrongRegion(Some(r)) => {
                format!("bucket {} is in region {r}, not {ours}: set AWS_REGION={r}", s.bucket())
            }
            Refusal::WrongRegion(None) => format!(
                "the store answered {status} {}: bucket {} is not in region {ours}; set AWS_REGION to its region",
                doc.code.as_deref().unwrap_or(reason),
                s.bucket()
            ),
            Refusal::Credentials(c) => format!(
                "the store refused access key {key} ({c}); check {}",
                s.source.as_ref().unwrap_or(&Source::Environment).check()
            ),
            Refusal::Permission(c) => format!(
                "{what} was denied ({c}): access key {key} is valid but lacks {} on bucket {}",
                refusal::action(call.op),
                s.bucket()
            ),
            Refusal::Clock(c) => {
                let apart = match said.skew_secs {
                    Some(skew) => {
                        format!("this machine's clock is {} (by the Date of its answer)", refusal::apart(skew))
                    }
                    None => "this machine's clock and the store's differ by more than a minute".into(),
                };
                format!(
                    "{what} failed ({c}): {apart}, and signed URLs are valid for {} s: set this machine's clock \
                     (NTP: chrony or systemd-timesyncd)",
                    SIGNED_FOR.as_secs()
                )
            }
            Refusal::Other => {
                let code = doc.code.as_deref().map(|c| format!(", {c}")).unwrap_or_default();
                format!("{what} failed: the store answered {status} {reason}{code}")
            }
        };
        Error::bad_input(&s.label, why)
    }

    pub(super) fn failed(&self, call: Call, why: &str) -> Error {
        Error::bad_input(&self.store.label, format!("{} {} failed: {why}", call.op, call.key))
    }

    /// A request that got no answer: the endpoint (or the proxy) refused,
    /// was unreachable or went silent, or Ctrl-C ended the wait. `answer`
    /// is the bound on the answer when it is not the stall bound.
    pub(super) fn transport(&self, call: Call, e: ureq::Error, answer: Option<Duration>) -> Error {
        let url = self.store.bucket.base_url();
        let target = format!("{}:{}", url.host_str().unwrap_or("?"), url.port_or_known_default().unwrap_or(0));
        let (place, through) = match &self.store.net.proxy {
            Some((_, label)) => (format!("proxy {label}"), format!(" (through proxy {label})")),
            None => (target.clone(), String::new()),
        };
        let stall = self.store.net.stall().as_secs();
        let why = match &e {
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted && (self.stop)() => {
                return Error::Interrupted
            }
            ureq::Error::Timeout(ureq::Timeout::Connect) => {
                format!("cannot connect to {target}{through}: no answer within {} s", CONNECT_TIMEOUT.as_secs())
            }
            ureq::Error::Timeout(ureq::Timeout::Resolve) => {
                format!("cannot connect to {target}: its name did not resolve within {} s", DNS_TIMEOUT.as_secs())
            }
            ureq::Error::Timeout(_) => format!(
                "{what}: no answer within {} s{through} (it took the request and sent nothing back; \
                 {STALL_ENV} waits longer for a slow store)",
                answer.map_or(stall, |a| a.as_secs()),
                what = format_args!("{} {}", call.op, call.key)
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                format!("cannot connect to {place}: connection refused")
            }
            ureq::Error::HostNotFound => format!("cannot connect to {target}: no such host"),
            ureq::Error::ConnectionFailed => format!("cannot connect to {target}{through}"),
            ureq::Error::ConnectProxyFailed(why) => format!("proxy {} failed to connect to {target}: {why}", place),
            ureq::Error::Rustls(tls) if tls.to_string().contains("UnknownIssuer") => {
                format!("{target}'s certificate is signed by no CA this machine trusts; give its CA with --s3-ca FILE")
            }
            other => format!("{} {} failed{through}: {}", call.op, call.key, one_line(&other.to_string())),
        };
        Error::bad_input(&self.store.label, why)
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

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
