//! A bucket of a SeaweedFS the tests start, seen as its owner sees it:
//! made, versioned, written and listed with rusty-s3 and ureq directly
//! (never through blobbench), with every version and incomplete upload
//! under a prefix counted; and a loopback relay that slows a store's
//! answers down.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
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
