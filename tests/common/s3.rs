//! A bucket of a SeaweedFS the tests start, seen as its owner sees it:
//! made, versioned, written and listed with rusty-s3 and ureq directly
//! (never through blobbench), with every version and incomplete upload
//! under a prefix counted; a loopback relay that slows a store's answers
//! down; a proxy that plants a key in its listings; and a scripted store
//! whose listing holds one.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use assert_cmd::Command;
use blobbench::engine::s3::seaweedfs;
use rusty_s3::{Bucket, Credentials, Map, Method, S3Action, UrlStyle};

const SIGNED_FOR: Duration = Duration::from_secs(60);

/// A bucket of the store at `endpoint`, with the throwaway SeaweedFS's
/// credentials.
pub struct OwnBucket {
    pub endpoint: String,
    pub name: String,
    bucket: Bucket,
    credentials: Credentials,
    agent: ureq::Agent,
}

/// blobbench with the throwaway SeaweedFS's credentials in the
/// environment, as a user of that store runs it (no proxy variables: the
/// store is on loopback).
pub fn as_user(args: &[&str]) -> Command {
    let mut c = super::blobbench();
    c.args(args);
    for (name, value) in USER_ENV {
        match value {
            Some(v) => c.env(name, v),
            None => c.env_remove(name),
        };
    }
    c
}

/// [`as_user`], as a process to start and signal.
pub fn as_user_process(args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("blobbench"));
    c.args(args);
    for (name, value) in USER_ENV {
        match value {
            Some(v) => c.env(name, v),
            None => c.env_remove(name),
        };
    }
    c
}

const USER_ENV: [(&str, Option<&str>); 6] = [
    ("AWS_ACCESS_KEY_ID", Some(seaweedfs::ACCESS_KEY)),
    ("AWS_SECRET_ACCESS_KEY", Some(seaweedfs::SECRET)),
    ("AWS_SESSION_TOKEN", None),
    ("AWS_REGION", None),
    ("AWS_DEFAULT_REGION", Some("us-east-1")),
    ("RUST_BACKTRACE", None),
];

/// What a listing of versions or uploads found under a prefix.
#[derive(Debug, Default, PartialEq)]
pub struct Under {
    /// Versions and delete markers (on an unversioned bucket, objects).
    pub versions: usize,
    pub bytes: u64,
    pub uploads: usize,
}

impl OwnBucket {
    /// The bucket `name` at `endpoint`, made now.
    pub fn create(endpoint: &str, name: &str) -> OwnBucket {
        let bucket = Bucket::new(endpoint.parse().unwrap(), UrlStyle::Path, name.to_string(), "us-east-1").unwrap();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().into();
        let credentials = Credentials::new(seaweedfs::ACCESS_KEY, seaweedfs::SECRET);
        let b = OwnBucket { endpoint: endpoint.into(), name: name.into(), bucket, credentials, agent };
        let url = b.bucket.create_bucket(&b.credentials).sign(SIGNED_FOR);
        assert!(b.agent.put(url.as_str()).send_empty().unwrap().status().is_success());
        b
    }

    /// Turns versioning on: every PUT then keeps the old version, every
    /// DELETE adds a delete marker.
    pub fn enable_versioning(&self) {
        let body = r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>"#;
        let url = self.signed(Method::Put, &[("versioning", "")]);
        let status = self.agent.put(url.as_str()).send(body).unwrap().status();
        assert!(status.is_success(), "PUT ?versioning: {status}");
    }

    pub fn put(&self, key: &str, body: &[u8]) {
        let url = self.bucket.put_object(Some(&self.credentials), key).sign(SIGNED_FOR);
        assert!(self.agent.put(url.as_str()).send(body).unwrap().status().is_success());
    }

    pub fn delete(&self, key: &str) {
        let url = self.bucket.delete_object(Some(&self.credentials), key).sign(SIGNED_FOR);
        assert!(self.agent.delete(url.as_str()).call().unwrap().status().is_success());
    }

    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let url = self.bucket.get_object(Some(&self.credentials), key).sign(SIGNED_FOR);
        let mut resp = self.agent.get(url.as_str()).call().unwrap();
        resp.status().is_success().then(|| resp.body_mut().read_to_vec().unwrap())
    }

    /// Every version (and delete marker) and incomplete multipart upload
    /// under `prefix`, by ListObjectVersions and ListMultipartUploads.
    pub fn under(&self, prefix: &str) -> Under {
        let mut under = Under::default();
        self.each(&[("versions", ""), ("prefix", prefix)], &mut |node| {
            if node.has_tag_name("Version") || node.has_tag_name("DeleteMarker") {
                under.versions += 1;
                under.bytes += text(node, "Size").and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            }
        });
        self.each(&[("uploads", ""), ("prefix", prefix)], &mut |node| {
            under.uploads += node.has_tag_name("Upload") as usize
        });
        under
    }

    /// The keys of the current objects under `prefix`.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let mut list = self.bucket.list_objects_v2(Some(&self.credentials));
        list.with_prefix(prefix);
        let url = list.sign(SIGNED_FOR);
        let text = self.agent.get(url.as_str()).call().unwrap().body_mut().read_to_string().unwrap();
        rusty_s3::actions::ListObjectsV2::parse_response(&text).unwrap().contents.into_iter().map(|c| c.key).collect()
    }

    /// Calls `each` on every element of one page of a bucket-level
    /// listing (the tests' prefixes hold fewer than a page).
    fn each(&self, query: &[(&'static str, &str)], each: &mut dyn FnMut(roxmltree::Node<'_, '_>)) {
        let url = self.signed(Method::Get, query);
        let mut resp = self.agent.get(url.as_str()).call().unwrap();
        assert!(resp.status().is_success(), "{query:?}: {}", resp.status());
        let text = resp.body_mut().read_to_string().unwrap();
        roxmltree::Document::parse(&text).unwrap().descendants().filter(|n| n.is_element()).for_each(each);
    }

    fn signed(&self, method: Method, query: &[(&'static str, &str)]) -> url::Url {
        let mut map = Map::new();
        for &(k, v) in query {
            map.insert(k, v.to_string());
        }
        let c = &self.credentials;
        rusty_s3::signing::sign(
            &jiff::Timestamp::now(),
            method,
            self.bucket.base_url().clone(),
            c.key(),
            c.secret(),
            c.token(),
            self.bucket.region(),
            SIGNED_FOR.as_secs(),
            map.iter(),
            std::iter::empty(),
        )
    }
}

fn text<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.children().find(|n| n.has_tag_name(name)).and_then(|n| n.text())
}

/// A loopback TCP relay to `upstream` that holds each chunk of the
/// store's answers for `delay` before passing it on: a store slower than
/// blobbench's Ctrl-C check, on loopback, for the rest of the test run.
pub fn slow_relay(upstream: &str, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = upstream.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else { continue };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || copy(c2, s2, Duration::ZERO));
            std::thread::spawn(move || copy(server, client, delay));
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn copy(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let mut buf = vec![0; 64 << 10];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        std::thread::sleep(delay);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A loopback HTTP proxy in front of a store (`upstream`, plain http) that
/// passes every request on as it came (its presigned signature covers the
/// proxy's host, which it keeps), records what each deletes, and on
/// demand plants a key in listings or refuses PUTs: a store that lists
/// wrongly, or a man in the middle, on loopback.
pub struct Meddler {
    pub endpoint: String,
    /// Plant `PREFIX../../victim` in every ListObjectsV2 page of 1000 keys
    /// under a dataset's prefix (not in the one-key listings that check a
    /// store, so an export's own checks pass).
    pub plant: Arc<AtomicBool>,
    /// PUTs of objects let through before the rest are refused (403
    /// AccessDenied), when set.
    pub puts_left: Arc<Mutex<Option<usize>>>,
    seen: Arc<Mutex<Vec<Passed>>>,
}

/// One request the proxy passed on, and the keys it deletes (a DELETE's,
/// or a DeleteObjects body's).
#[derive(Debug, Clone)]
pub struct Passed {
    pub method: String,
    pub target: String,
    pub deleted: Vec<String>,
}

impl Meddler {
    pub fn start(upstream: &str) -> Meddler {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_string();
        let (plant, puts_left, seen) = (Arc::default(), Arc::default(), Arc::default());
        let m = Meddler { endpoint, plant, puts_left, seen };
        let (plant, puts_left, seen) = (m.plant.clone(), m.puts_left.clone(), m.seen.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                let (plant, puts_left, seen) = (plant.clone(), puts_left.clone(), seen.clone());
                std::thread::spawn(move || {
                    let _ = meddle(client, server, &plant, &puts_left, &seen);
                });
            }
        });
        m
    }

    /// Every request passed on so far.
    pub fn seen(&self) -> Vec<Passed> {
        self.seen.lock().unwrap().clone()
    }

    /// Every key deleted so far (DELETE or DeleteObjects), as sent.
    pub fn deleted(&self) -> Vec<String> {
        self.seen().into_iter().flat_map(|p| p.deleted).collect()
    }
}

type Head = (String, Vec<(String, String)>);

/// Serves one client connection until it closes.
fn meddle(
    client: TcpStream,
    mut server: TcpStream,
    plant: &AtomicBool,
    puts_left: &Mutex<Option<usize>>,
    seen: &Mutex<Vec<Passed>>,
) -> std::io::Result<()> {
    let mut from_client = BufReader::new(client.try_clone()?);
    let mut to_client = client;
    let mut from_server = BufReader::new(server.try_clone()?);
    while let Some((line, headers)) = read_head(&mut from_client)? {
        let body = read_body(&mut from_client, &headers, true)?;
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("").to_string());
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let key =
            percent_encoding::percent_decode_str(path.trim_start_matches('/').split_once('/').map_or("", |(_, k)| k))
                .decode_utf8_lossy()
                .into_owned();
        let deleted = match method.as_str() {
            "DELETE" if param("uploadId").is_none() => vec![key.clone()],
            "POST" if param("delete").is_some() => body_keys(&body),
            _ => Vec::new(),
        };
        seen.lock().unwrap().push(Passed { method: method.clone(), target: target.clone(), deleted });
        let object_put = method == "PUT" && !key.is_empty() && param("partNumber").is_none();
        if object_put {
            let mut left = puts_left.lock().unwrap();
            if let Some(n) = left.as_mut() {
                if *n == 0 {
                    let denied = "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";
                    write!(to_client, "HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\n\r\n{denied}", denied.len())?;
                    continue;
                }
                *n -= 1;
            }
        }
        write!(server, "{line}\r\n")?;
        for (name, value) in &headers {
            write!(server, "{name}: {value}\r\n")?;
        }
        server.write_all(b"\r\n")?;
        server.write_all(&body)?;
        let Some((status, answer_headers)) = read_head(&mut from_server)? else { return Ok(()) };
        let code: u16 = status.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        let has_body = method != "HEAD" && code != 204 && code != 304;
        let mut answer = if has_body { read_body(&mut from_server, &answer_headers, false)? } else { Vec::new() };
        let prefix = param("prefix").unwrap_or("");
        let dataset = prefix.starts_with("blobbench/") && prefix.ends_with('/') && prefix.len() > "blobbench/".len();
        if plant.load(Ordering::SeqCst)
            && param("list-type") == Some("2")
            && param("max-keys") == Some("1000")
            && dataset
        {
            let text = String::from_utf8_lossy(&answer).into_owned();
            let planted =
                format!("<Contents><Key>{prefix}../../victim</Key><Size>1</Size></Contents></ListBucketResult>");
            answer = text.replacen("</ListBucketResult>", &planted, 1).into_bytes();
        }
        to_client.write_all(format!("{status}\r\n").as_bytes())?;
        for (name, value) in &answer_headers {
            if !name.eq_ignore_ascii_case("content-length") && !name.eq_ignore_ascii_case("transfer-encoding") {
                write!(to_client, "{name}: {value}\r\n")?;
            }
        }
        write!(to_client, "Content-Length: {}\r\n\r\n", if has_body { answer.len() } else { 0 })?;
        to_client.write_all(&answer)?;
    }
    Ok(())
}

/// A request's or answer's first line and headers; None at the end of
/// the connection.
fn read_head(from: &mut BufReader<TcpStream>) -> std::io::Result<Option<Head>> {
    let mut line = String::new();
    if from.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        from.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    Ok(Some((line.trim_end().to_string(), headers)))
}

/// A body by its length, its chunks, or (an answer only) to the end.
fn read_body(from: &mut BufReader<TcpStream>, headers: &[(String, String)], request: bool) -> std::io::Result<Vec<u8>> {
    let header = |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    if let Some(n) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        let mut body = vec![0; n];
        from.read_exact(&mut body)?;
        return Ok(body);
    }
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            from.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            from.read_exact(&mut chunk)?;
            if n == 0 {
                return Ok(body);
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let mut body = Vec::new();
    if !request {
        from.read_to_end(&mut body)?;
    }
    Ok(body)
}

/// The keys a DeleteObjects body names.
fn body_keys(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let Ok(doc) = roxmltree::Document::parse(&text) else { return vec!["<unreadable body>".into()] };
    let keys = doc.descendants().filter(|n| n.has_tag_name("Key"));
    keys.map(|n| n.text().unwrap_or_default().to_string()).collect()
}

/// A scripted S3 endpoint on loopback for the bad-input catalogue: one
/// dataset of export 0000abcd under `blobbench/t-0000abcd/` in bucket
/// `bkt`, whose listings also name `blobbench/t-0000abcd/../../victim`.
/// Anything but a GET is a 500, which the command must never send.
pub fn planted_store() -> String {
    const P: &str = "blobbench/t-0000abcd/";
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut from = BufReader::new(client.try_clone().unwrap());
                let mut to = client;
                while let Ok(Some((line, headers))) = read_head(&mut from) {
                    let _ = read_body(&mut from, &headers, true);
                    let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let (status, body) = match line.split_whitespace().next() {
                        Some("GET") if target.contains("versioning") => ("200 OK", "<VersioningConfiguration/>".into()),
                        Some("GET") if target.contains("uploads") => (
                            "200 OK",
                            "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>"
                                .into(),
                        ),
                        Some("GET") if target.contains("list-type=2") => {
                            let keys = [
                                format!("{P}blobbench-dataset.json"),
                                format!("{P}0000000001"),
                                format!("{P}../../victim"),
                            ];
                            let contents: String = keys
                                .iter()
                                .map(|k| format!("<Contents><Key>{k}</Key><Size>3</Size></Contents>"))
                                .collect();
                            let ns = r#"xmlns="http://s3.amazonaws.com/doc/2006-03-01/""#;
                            ("200 OK", format!("<ListBucketResult {ns}><IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"))
                        }
                        Some("GET") if target.contains("blobbench-dataset.json") => {
                            ("200 OK", format!(r#"{{"engine":"s3","bucket":"bkt","prefix":"{P}","id":"0000abcd"}}"#))
                        }
                        _ => ("500 Internal Server Error", "<Error><Code>InternalError</Code></Error>".into()),
                    };
                    if write!(to, "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    endpoint
}
