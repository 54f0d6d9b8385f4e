//! How the S3 client reaches a store, decided once per store so a timed
//! request pays none of it: which proxy carries the requests (none for
//! loopback), how long each step of a request may take, which CAs an
//! https store's certificate may chain to, and whether the bucket goes in
//! the host name or the path.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rusty_s3::UrlStyle;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, DefaultConnector, NextTimeout, Transport};

use crate::records::Addressing;
use crate::{Error, Result};

/// How long opening a connection may take: TCP, a proxy's CONNECT and a
/// TLS handshake together. An answer has the stall bound ([`STALL_TIMEOUT`]),
/// the first request's too: a loaded store may take seconds to list.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long resolving the endpoint's host name may take.
pub const DNS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request may go without progress: no byte sent, no byte
/// received. A bound on the stall, not on the whole request, so a large
/// body on a slow link still arrives.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Environment variable giving the stall bound in whole seconds instead
/// (tests shorten it; the default is [`STALL_TIMEOUT`]).
pub const STALL_ENV: &str = "BLOBBENCH_S3_STALL_SECS";
/// How often a read waiting on a silent store looks at the Ctrl-C flag.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// Everything about reaching one store that is not the store's address.
#[derive(Clone)]
pub struct Net {
    /// The proxy the requests go through, with how it is named in errors,
    /// on the terminal and in result files (never its credentials).
    pub proxy: Option<(ureq::Proxy, String)>,
    stall: Duration,
    /// Whether the host is a name to resolve (an IP address needs no
    /// lookup, and a bounded lookup costs a thread).
    resolve: bool,
    roots: Option<RootCerts>,
}

impl Net {
    /// How requests reach `url`: the environment's proxy unless bypassed,
    /// the stall bound, and for https the system's CAs plus `ca`'s.
    pub fn for_url(url: &url::Url, ca: Option<&Path>) -> Result<Net> {
        let proxy = match proxy_for(url, |name| std::env::var(name).ok()) {
            Some((var, value)) => Some(proxy(var, &value)?),
            None => None,
        };
        let roots = if url.scheme() == "https" { Some(roots(ca)?) } else { None };
        let resolve = matches!(url.host(), Some(url::Host::Domain(_)));
        Ok(Net { proxy, stall: stall_bound()?, resolve, roots })
    }

    /// A loopback store (blobbench's own): direct, plain http.
    pub fn loopback() -> Result<Net> {
        Ok(Net { proxy: None, stall: stall_bound()?, resolve: false, roots: None })
    }

    /// The same, with requests stalling at most `stall` (tests).
    #[cfg(test)]
    pub fn stalling(self, stall: Duration) -> Net {
        Net { stall, ..self }
    }

    pub fn stall(&self) -> Duration {
        self.stall
    }

    /// What a result file records as the `proxy` setting.
    pub fn proxy_label(&self) -> String {
        self.proxy.as_ref().map_or_else(|| "none".to_string(), |(_, label)| label.clone())
    }

    /// An agent with one keep-alive connection, no retries, no redirects,
    /// every step bounded, and reads that give up once `stop` says so
    /// (Ctrl-C's flag, or never for a clean-up).
    pub fn agent(&self, stop: fn() -> bool) -> ureq::Agent {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(self.proxy.as_ref().map(|(p, _)| p.clone()))
            .timeout_resolve(self.resolve.then_some(DNS_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_per_write(Some(self.stall))
            .timeout_per_read(Some(self.stall))
            .timeout_recv_response(Some(self.stall))
            .no_delay(true)
            .max_idle_connections_per_host(1)
            .user_agent("blobbench");
        if let Some(roots) = &self.roots {
            config = config.tls_config(TlsConfig::builder().root_certs(roots.clone()).build());
        }
        let connector = DefaultConnector::new().chain(Stoppable { stop });
        ureq::Agent::with_parts(config.build(), connector, DefaultResolver::default())
    }
}

/// The stall bound: [`STALL_ENV`]'s seconds, else [`STALL_TIMEOUT`].
fn stall_bound() -> Result<Duration> {
    match std::env::var(STALL_ENV) {
        Err(_) => Ok(STALL_TIMEOUT),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(s) if s > 0 => Ok(Duration::from_secs(s)),
            _ => Err(Error::invalid(format!("{STALL_ENV}={v}: expected whole seconds, at least 1"))),
        },
    }
}

/// The proxy a request to `url` goes through, as curl decides it from the
/// environment (`env` reads a variable): none for a loopback host or one
/// `NO_PROXY` names, else `http_proxy` (`https_proxy` for https), then
/// `all_proxy`, each in lower or upper case. The variable's name and value.
pub fn proxy_for(url: &url::Url, env: impl Fn(&str) -> Option<String>) -> Option<(&'static str, String)> {
    let host = url.host_str()?;
    if is_loopback(host) {
        return None;
    }
    let first = |names: &[&'static str]| {
        names.iter().find_map(|&n| env(n).filter(|v| !v.trim().is_empty()).map(|v| (n, v.trim().to_string())))
    };
    if let Some((_, list)) = first(&["no_proxy", "NO_PROXY"]) {
        if list.split(',').any(|entry| no_proxy_matches(entry.trim(), host)) {
            return None;
        }
    }
    let own: [&'static str; 2] =
        if url.scheme() == "https" { ["https_proxy", "HTTPS_PROXY"] } else { ["http_proxy", "HTTP_PROXY"] };
    first(&own).or_else(|| first(&["all_proxy", "ALL_PROXY"]))
}

/// Whether requests to `endpoint` travel unencrypted beyond this
/// machine: plain http to a host that is not loopback. Its presigned URLs
/// carry the access key, each request's signature and a session token in
/// their query string (rusty-s3 signs nothing else), for anyone on the
/// path to read.
pub fn in_clear(endpoint: &str) -> bool {
    url::Url::parse(endpoint).is_ok_and(|u| u.scheme() == "http" && u.host_str().is_some_and(|h| !is_loopback(h)))
}

/// 127.0.0.0/8, ::1, `localhost` and its subdomains: never proxied (a
/// proxy elsewhere cannot reach this machine's loopback).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let name = bare.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// One `NO_PROXY` entry against `host`: `*`; a name, which covers its
/// subdomains (`example.com`, `.example.com`, `*.example.com`); an IP
/// address; or a range (`10.0.0.0/8`). A `:port` on the entry is ignored.
fn no_proxy_matches(entry: &str, host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let entry = entry.to_ascii_lowercase();
    if entry.is_empty() {
        return false;
    }
    if entry == "*" {
        return true;
    }
    if let Some((net, bits)) = entry.split_once('/') {
        return in_range(&host, net, bits);
    }
    let entry = without_port(&entry);
    let name = entry.trim_start_matches("*.").trim_start_matches('.').trim_end_matches('.');
    !name.is_empty() && (host == name || host.strip_suffix(name).is_some_and(|rest| rest.ends_with('.')))
}

fn without_port(entry: &str) -> &str {
    if entry.parse::<IpAddr>().is_ok() {
        return entry;
    }
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => entry,
    }
}

/// Whether the IP address `host` is in `net`/`bits`.
fn in_range(host: &str, net: &str, bits: &str) -> bool {
    let (Ok(host), Ok(net), Ok(bits)) = (host.parse::<IpAddr>(), net.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (host, net) {
        (IpAddr::V4(h), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(h) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(h), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(h) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// The proxy `var` names, and its label: scheme, host and port, without
/// the credentials a proxy URL may hold.
fn proxy(var: &str, value: &str) -> Result<(ureq::Proxy, String)> {
    let bad = |why: &str| Error::invalid(format!("{var}: {why} (set NO_PROXY to the store's host to go direct)"));
    let proxy = ureq::Proxy::new(value).map_err(|_| bad("not a proxy URL"))?;
    if !matches!(proxy.protocol(), ureq::ProxyProtocol::Http | ureq::ProxyProtocol::Https) {
        return Err(bad("only http:// and https:// proxies are supported"));
    }
    let scheme = if proxy.protocol() == ureq::ProxyProtocol::Https { "https" } else { "http" };
    let label = format!("{scheme}://{}:{}", proxy.host(), proxy.port());
    Ok((proxy, label))
}

/// The CAs an https store may chain to: the system's store, as OpenSSL
/// finds it (`SSL_CERT_FILE`, `SSL_CERT_DIR`, the distribution's bundle),
/// and `ca`'s; Mozilla's roots (ureq's own) when there are neither.
fn roots(ca: Option<&Path>) -> Result<RootCerts> {
    let mut certs: Vec<Certificate<'static>> = rustls_native_certs::load_native_certs()
        .certs
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()).to_owned())
        .collect();
    if let Some(file) = ca {
        certs.extend(read_ca(file)?);
    }
    Ok(if certs.is_empty() { RootCerts::WebPki } else { RootCerts::Specific(Arc::new(certs)) })
}

/// The certificates of the PEM bundle `file` (`--s3-ca`): at least one,
/// else a one-line error naming the file.
pub fn read_ca(file: &Path) -> Result<Vec<Certificate<'static>>> {
    let bytes = std::fs::read(file).map_err(|e| Error::io(file, "--s3-ca: cannot read", e))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(Error::bad_input(file, format!("--s3-ca: no PEM certificate could be read: {e}"))),
        }
    }
    if certs.is_empty() {
        return Err(Error::bad_input(file, "--s3-ca: no PEM certificate in it"));
    }
    Ok(certs)
}

/// Where a request to `endpoint` names `bucket`. `Auto` chooses as the
/// AWS CLI does: the host name when the bucket can be one and the
/// endpoint is a host name (not an IP address, nor `localhost`) with no
/// path of its own; the path otherwise. An explicit choice the bucket or
/// endpoint cannot take is an error.
pub fn url_style(addressing: Addressing, endpoint: &url::Url, bucket: &str) -> Result<UrlStyle> {
    let named = matches!(endpoint.host(), Some(url::Host::Domain(h)) if !is_loopback(h));
    let hostable = dns_compatible(bucket, endpoint.scheme() == "https");
    match addressing {
        Addressing::Path => Ok(UrlStyle::Path),
        Addressing::Virtual if !hostable => Err(Error::invalid(format!(
            "--s3-addressing virtual: bucket {bucket} cannot be part of a host name{}; use --s3-addressing path",
            if endpoint.scheme() == "https" && bucket.contains('.') { " over https (it has dots)" } else { "" }
        ))),
        Addressing::Virtual if !matches!(endpoint.host(), Some(url::Host::Domain(_))) => Err(Error::invalid(
            "--s3-addressing virtual needs an endpoint named by a host name, not an IP address; use --s3-addressing path",
        )),
        Addressing::Virtual => Ok(UrlStyle::VirtualHost),
        Addressing::Auto if named && hostable && endpoint.path() == "/" => Ok(UrlStyle::VirtualHost),
        Addressing::Auto => Ok(UrlStyle::Path),
    }
}

/// A bucket name that can be a DNS label (S3's rules: 3 to 63 lower-case
/// letters, digits, `-` and `.`, starting and ending with a letter or
/// digit, not an IP address); over https without dots, which a wildcard
/// certificate cannot cover.
fn dns_compatible(bucket: &str, tls: bool) -> bool {
    let b = bucket.as_bytes();
    (3..=63).contains(&b.len())
        && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && !bucket.contains("..")
        && !bucket.contains(".-")
        && !bucket.contains("-.")
        && bucket.parse::<std::net::Ipv4Addr>().is_err()
        && !(tls && bucket.contains('.'))
}

/// The last link of the connector chain: wraps each connection so a read
/// waiting on a silent store wakes every [`STOP_CHECK`] and gives up at
/// Ctrl-C (the handler's SA_RESTART would otherwise keep it waiting until
/// its bound). Writes are left whole: a write cut short cannot resume.
#[derive(Debug)]
struct Stoppable {
    stop: fn() -> bool,
}

impl Connector<Box<dyn Transport>> for Stoppable {
    type Out = StoppableTransport;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<Box<dyn Transport>>,
    ) -> std::result::Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| StoppableTransport { inner, stop: self.stop }))
    }
}

#[derive(Debug)]
struct StoppableTransport {
    inner: Box<dyn Transport>,
    stop: fn() -> bool,
}

impl Transport for StoppableTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> std::result::Result<(), ureq::Error> {
        self.inner.transmit_output(amount, timeout)
    }

    /// Waits in slices of [`STOP_CHECK`] up to the read's own bound (the
    /// clock is read only once a slice has passed with nothing received).
    fn await_input(&mut self, timeout: NextTimeout) -> std::result::Result<bool, ureq::Error> {
        let bound = timeout.for_read();
        let mut waited = Duration::ZERO;
        loop {
            let left = bound.after.saturating_sub(waited);
            let sliced = left > STOP_CHECK;
            let after = if sliced { STOP_CHECK } else { left };
            let slice = NextTimeout { after: after.into(), per_read: None, ..bound };
            match self.inner.await_input(slice) {
                Err(ureq::Error::Timeout(_)) if sliced => {
                    if (self.stop)() {
                        return Err(ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::Interrupted, "Ctrl-C")));
                    }
                    waited += STOP_CHECK;
                }
                other => return other,
            }
        }
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    fn url(s: &str) -> url::Url {
        s.parse().unwrap()
    }

    #[test]
    fn only_plain_http_off_this_machine_is_in_clear() {
        for clear in ["http://s3.lan:9000", "http://10.0.0.5/gw/", "http://[2001:db8::1]:9000"] {
            assert!(in_clear(clear), "{clear}");
        }
        for not in ["https://s3.lan", "http://127.0.0.1:9000", "http://localhost:1", "http://[::1]:9000", "x"] {
            assert!(!in_clear(not), "{not}");
        }
    }

    #[test]
    fn loopback_never_goes_through_a_proxy_and_no_proxy_is_honoured() {
        let all =
            env(&[("HTTP_PROXY", "http://127.0.0.1:1"), ("http_proxy", "http://p:1"), ("ALL_PROXY", "http://a:1")]);
        for host in [
            "http://127.0.0.1:9000",
            "http://127.5.6.7",
            "http://[::1]:9000",
            "http://localhost:9000",
            "http://s3.localhost",
        ] {
            assert_eq!(proxy_for(&url(host), &all), None, "{host}");
        }
        assert_eq!(proxy_for(&url("http://s3.example.com"), &all), Some(("http_proxy", "http://p:1".into())));
        let https = env(&[("HTTP_PROXY", "http://h:1"), ("ALL_PROXY", "http://a:1")]);
        assert_eq!(proxy_for(&url("https://s3.example.com"), &https), Some(("ALL_PROXY", "http://a:1".into())));
        assert_eq!(proxy_for(&url("https://s3.example.com"), env(&[])), None);
        for no in ["example.com", ".example.com", "*.example.com", "other, s3.example.com:443", "*", "10.0.0.0/8"] {
            let vars: &'static [(&'static str, &'static str)] =
                Box::leak(vec![("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", no)].into_boxed_slice());
            let host = if no.contains('/') { "https://10.1.2.3" } else { "https://s3.example.com" };
            assert_eq!(proxy_for(&url(host), env(vars)), None, "NO_PROXY={no}");
        }
        let vars = env(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "ample.com,10.0.0.0/8")]);
        assert!(proxy_for(&url("https://s3.example.com"), &vars).is_some(), "a suffix is not a subdomain");
        assert!(proxy_for(&url("https://11.0.0.1"), &vars).is_some());
    }

    #[test]
    fn a_proxy_is_named_without_its_credentials() {
        let (_, label) = proxy("HTTPS_PROXY", "http://user:s3cret@proxy.example.com:3128").unwrap();
        assert_eq!(label, "http://proxy.example.com:3128");
        let e = proxy("ALL_PROXY", "socks5://p:1080").unwrap_err().to_string();
        assert!(e.starts_with("ALL_PROXY: only http://") && e.contains("NO_PROXY"), "{e}");
    }

    #[test]
    fn the_bucket_goes_in_the_host_name_only_where_it_can() {
        let (aws, ip) = (url("https://s3.eu-west-1.amazonaws.com"), url("http://10.0.0.5:9000"));
        let style = |a, u: &url::Url, b| format!("{:?}", url_style(a, u, b).unwrap());
        assert_eq!(style(Addressing::Auto, &aws, "my-bucket"), "VirtualHost");
        assert_eq!(style(Addressing::Auto, &aws, "My_Bucket"), "Path", "not a DNS name");
        assert_eq!(style(Addressing::Auto, &aws, "a.b.c"), "Path", "dots over https");
        assert_eq!(style(Addressing::Auto, &url("http://minio.lan:9000"), "a.b.c"), "VirtualHost");
        assert_eq!(style(Addressing::Auto, &ip, "my-bucket"), "Path", "an IP address");
        assert_eq!(style(Addressing::Auto, &url("http://localhost:9000"), "my-bucket"), "Path");
        assert_eq!(style(Addressing::Auto, &url("https://gw.example.com/s3/"), "my-bucket"), "Path", "a path");
        assert_eq!(style(Addressing::Path, &aws, "my-bucket"), "Path");
        assert_eq!(style(Addressing::Virtual, &url("http://localhost:9000"), "my-bucket"), "VirtualHost");
        assert!(url_style(Addressing::Virtual, &ip, "my-bucket").unwrap_err().to_string().contains("IP address"));
        assert!(url_style(Addressing::Virtual, &aws, "a.b").unwrap_err().to_string().contains("dots"));
        for bad in ["ab", "-ab", "ab-", "a..b", "192.168.1.1", &"x".repeat(64)] {
            assert!(!dns_compatible(bad, false), "{bad}");
        }
    }

    #[test]
    fn a_ca_file_must_hold_a_pem_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let missing = read_ca(&dir.path().join("none.pem")).unwrap_err().to_string();
        assert!(missing.contains("--s3-ca: cannot read") && !missing.contains('\n'), "{missing}");
        let text = dir.path().join("text.pem");
        std::fs::write(&text, "hello\n").unwrap();
        assert!(read_ca(&text).unwrap_err().to_string().contains("no PEM certificate"));
    }

    /// A read on a connection that never answers ends at its bound, or at
    /// the stop flag within a slice; the flag is the test's own, so other
    /// tests' runs are not stopped.
    #[test]
    fn a_silent_store_ends_at_the_bound_or_at_ctrl_c() {
        use std::sync::atomic::{AtomicBool, Ordering};
        static STOP: AtomicBool = AtomicBool::new(false);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}/x", listener.local_addr().unwrap());
        let net = Net { proxy: None, stall: Duration::from_secs(1), resolve: false, roots: None };
        let agent = |stop: fn() -> bool| {
            let config = ureq::Agent::config_builder()
                .proxy(None)
                .timeout_per_read(Some(net.stall))
                .timeout_recv_response(Some(net.stall))
                .build();
            ureq::Agent::with_parts(
                config,
                DefaultConnector::new().chain(Stoppable { stop }),
                DefaultResolver::default(),
            )
        };
        let e = agent(|| false).get(&endpoint).call().unwrap_err();
        assert!(matches!(e, ureq::Error::Timeout(_)), "{e:?}");
        STOP.store(true, Ordering::SeqCst);
        let e = agent(|| STOP.load(Ordering::SeqCst)).get(&endpoint).call().unwrap_err();
        assert!(matches!(&e, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::Interrupted), "{e:?}");
        drop(listener);
    }
}
