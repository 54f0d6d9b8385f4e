//! A scripted S3 endpoint on loopback, for the faults a real server will
//! not make on demand: a truncated listing page with nothing on it, a
//! connection reset mid-upload, a 503 SlowDown, an answer slower than a
//! Ctrl-C check. Never a stand-in for the storage under test: every
//! request gets the answer its test's handler gives, on a keep-alive
//! connection as a store's (fewer loopback ports taken than one per
//! request).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusty_s3::Credentials;

use super::client::{parse_endpoint, Client, Store};
use super::net::Net;
use crate::records::Addressing;

/// One request as the endpoint read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path, percent-encoded as sent (`/b/blobbench/x-0000abcd/0000000001`).
    pub path: String,
    /// The query's pairs, decoded, the signature's left out.
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn has(&self, name: &str) -> bool {
        self.param(name).is_some()
    }

    /// The object key the path names in bucket `b` (path-style).
    pub fn key(&self) -> String {
        let raw = self.path.strip_prefix("/b/").unwrap_or("");
        percent_encoding::percent_decode_str(raw).decode_utf8_lossy().into_owned()
    }

    /// Every object a DeleteObjects body names, with its version.
    pub fn objects(&self) -> Vec<(String, Option<String>)> {
        let text = String::from_utf8_lossy(&self.body);
        let Ok(doc) = roxmltree::Document::parse(&text) else { return Vec::new() };
        let text_of = |node: roxmltree::Node, name: &str| {
            node.children().find(|n| n.has_tag_name(name)).and_then(|n| n.text()).map(str::to_string)
        };
        let objects = doc.descendants().filter(|n| n.has_tag_name("Object"));
        objects.map(|o| (text_of(o, "Key").unwrap_or_default(), text_of(o, "VersionId"))).collect()
    }

    /// The keys this request deletes: a DELETE's (an abort's is no
    /// object's), or every key of a DeleteObjects body.
    pub fn deleted_keys(&self) -> Vec<String> {
        match self.method.as_str() {
            "DELETE" if !self.has("uploadId") => vec![self.key()],
            "POST" if self.has("delete") => self.objects().into_iter().map(|(k, _)| k).collect(),
            _ => Vec::new(),
        }
    }

    /// "METHOD key" (or "METHOD ?param" for a bucket-level request).
    pub fn line(&self) -> String {
        let key = self.key();
        if key.is_empty() {
            let names: Vec<&str> = self.query.iter().map(|(k, _)| k.as_str()).collect();
            format!("{} ?{}", self.method, names.join("&"))
        } else {
            format!("{} {key}", self.method)
        }
    }
}

/// What the endpoint does with a request.
pub enum Reply {
    /// A status, headers and a body.
    Answer(u16, Vec<(&'static str, String)>, String),
    /// The connection reset (RST) without an answer.
    Reset,
    /// This reply after a pause.
    After(Duration, Box<Reply>),
}

impl Reply {
    pub fn ok(body: impl Into<String>) -> Reply {
        Reply::Answer(200, Vec::new(), body.into())
    }

    /// An S3 error document with `code`.
    pub fn error(status: u16, code: &str) -> Reply {
        Reply::Answer(status, Vec::new(), format!("<Error><Code>{code}</Code><Message>m</Message></Error>"))
    }
}

type Handler = Box<dyn FnMut(&Request) -> Reply + Send>;

/// A running endpoint; it stops taking connections when dropped.
pub struct Fake {
    port: u16,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Fake {
    pub fn start(handler: impl FnMut(&Request) -> Reply + Send + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Box::new(handler)));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, handler) = (log.clone(), handler.clone());
                std::thread::spawn(move || serve(stream, &log, &handler));
            }
        });
        Fake { port, seen }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client of bucket `b` at this endpoint (path-style, test credentials).
    pub fn client(&self) -> Client {
        Client::new(Arc::new(self.store()))
    }

    pub fn store(&self) -> Store {
        let endpoint = self.endpoint();
        let net = Net::for_url(&parse_endpoint(&endpoint).unwrap(), None).unwrap();
        Store::new(&endpoint, "b", "us-east-1", Credentials::new("k", "s3cr3t"), false, net, Addressing::Path).unwrap()
    }

    /// Every key deleted so far, by DELETE or DeleteObjects, in order.
    pub fn deleted(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().flat_map(Request::deleted_keys).collect()
    }

    /// Every request so far, as [`Request::line`]s, in the order answered.
    pub fn lines(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(Request::line).collect()
    }
}

/// Answers the requests of one connection until it closes or a reply
/// resets it.
fn serve(stream: TcpStream, log: &Mutex<Vec<Request>>, handler: &Mutex<Handler>) {
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader) {
        log.lock().unwrap().push(request.clone());
        let reply = (handler.lock().unwrap())(&request);
        if !answer(&mut writer, reply) {
            return;
        }
    }
}

/// Sends `reply`; false when it reset the connection.
fn answer(stream: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Answer(status, headers, body) => {
            let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            stream.write_all(format!("{head}\r\n{body}").as_bytes()).is_ok()
        }
        Reply::Reset => {
            reset(stream);
            false
        }
        Reply::After(pause, reply) => {
            std::thread::sleep(pause);
            answer(stream, *reply)
        }
    }
}

/// Makes `stream`'s close a RST (SO_LINGER of zero), as a crashed or
/// overloaded server's kernel sends; the connection closes when [`serve`]
/// returns.
fn reset(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt on an open socket with a correctly sized value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| !k.starts_with("X-Amz-"))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    Some(Request { method, path: path.to_string(), query, body })
}

/// A ListObjectsV2 page (`encoding-type=url`: keys as the store encodes them).
pub fn list_page(keys: &[&str], next: Option<&str>) -> Reply {
    let contents: String = keys.iter().map(|k| format!("<Contents><Key>{k}</Key><Size>3</Size></Contents>")).collect();
    let truncated = match next {
        Some(t) => format!("<IsTruncated>true</IsTruncated><NextContinuationToken>{t}</NextContinuationToken>"),
        None => "<IsTruncated>false</IsTruncated>".into(),
    };
    Reply::ok(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType>{truncated}{contents}</ListBucketResult>"#
    ))
}

/// A DeleteObjects answer: each of `deleted` deleted, each of `refused`
/// refused with its code.
pub fn delete_result(deleted: &[(String, Option<String>)], refused: &[(String, &str)]) -> Reply {
    let mut body = String::new();
    for (key, version) in deleted {
        let version = version.as_ref().map(|v| format!("<VersionId>{v}</VersionId>")).unwrap_or_default();
        body.push_str(&format!("<Deleted><Key>{key}</Key>{version}</Deleted>"));
    }
    for (key, code) in refused {
        body.push_str(&format!("<Error><Key>{key}</Key><Code>{code}</Code><Message>m</Message></Error>"));
    }
    Reply::ok(format!(r#"<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{body}</DeleteResult>"#))
}
