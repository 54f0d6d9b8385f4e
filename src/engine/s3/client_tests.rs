//! The client's errors, signing, bounds and rule of keys, against
//! loopback listeners (nothing answers, or nothing listens).

use super::*;

fn store(endpoint: &str) -> Client {
    let net = Net::for_url(&parse_endpoint(endpoint).unwrap(), None).unwrap();
    let credentials = Credentials::new("k", "s3cr3t");
    Client::new(Arc::new(Store::new(endpoint, "b", "us-east-1", credentials, false, net, Addressing::Path).unwrap()))
}

#[test]
fn endpoints_are_plain_http_urls_without_credentials() {
    assert!(parse_endpoint("http://127.0.0.1:9000").is_ok());
    assert!(parse_endpoint("https://s3.example.com/").is_ok());
    assert_eq!(parse_endpoint("http://h:9000/s3/gateway/").unwrap().path(), "/s3/gateway/", "a path is kept");
    let e = parse_endpoint("http://key:secret@h:9000").unwrap_err().to_string();
    assert!(e.contains("no credentials in the URL") && !e.contains("secret@"), "{e}");
    assert!(parse_endpoint("ftp://h").unwrap_err().to_string().contains("http://"));
    assert!(parse_endpoint("http://h:9000/?x=1").unwrap_err().to_string().contains("--s3-bucket"));
    assert!(parse_endpoint("not a url").unwrap_err().to_string().starts_with("--s3 not a url: not a URL"));
}

#[test]
fn an_endpoint_with_a_path_keeps_it_before_the_bucket() {
    let c = store("http://127.0.0.1:9/gw/s3");
    let url = c.store.bucket.get_object(Some(&c.store.credentials), "blobbench/k").sign(SIGNED_FOR);
    assert!(url.as_str().starts_with("http://127.0.0.1:9/gw/s3/b/blobbench/k?"), "{url}");
}

#[test]
fn urls_are_signed_for_a_minute() {
    assert_eq!(SIGNED_FOR, Duration::from_secs(60));
    let c = store("http://127.0.0.1:9");
    let signed = c.store.bucket.get_object(Some(&c.store.credentials), "k").sign(SIGNED_FOR);
    assert!(signed.query_pairs().any(|(k, v)| k == "X-Amz-Expires" && v == "60"), "{signed}");
}

#[test]
fn a_refused_endpoint_is_one_line_naming_it() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let e = store(&format!("http://127.0.0.1:{port}")).put("blobbench/x", b"y").unwrap_err().to_string();
    assert!(e.contains(&format!("cannot connect to 127.0.0.1:{port}: connection refused")), "{e}");
    assert!(!e.contains("s3cr3t") && !e.contains('\n'), "{e}");
}

/// A store that takes the connection and never answers: one line
/// naming the stall bound and how to wait longer, not a guess at what
/// listens there (the listener's backlog holds the request).
#[test]
fn a_silent_endpoint_is_one_line_naming_the_bound() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let net = Net::for_url(&parse_endpoint(&endpoint).unwrap(), None).unwrap().stalling(Duration::from_secs(1));
    let credentials = Credentials::new("k", "s3cr3t");
    let c = Client::new(Arc::new(
        Store::new(&endpoint, "b", "us-east-1", credentials, false, net, Addressing::Path).unwrap(),
    ));
    let e = c.any_under("p/").unwrap_err().to_string();
    assert!(e.contains("LIST p/: no answer within 1 s") && e.contains(STALL_ENV) && !e.contains('\n'), "{e}");
}

/// A store on loopback that answers every request, each on a connection
/// of its own, after `delay`, with `status`, `headers` (each ending in
/// CRLF) and `body` (XML).
fn answering(status: &'static str, headers: String, body: &'static str, delay: Duration) -> Client {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            std::thread::sleep(delay);
            let answer = format!(
                "HTTP/1.1 {status}\r\n{headers}Content-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    store(&endpoint)
}

const EMPTY_LISTING: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix>p/</Prefix>\
<KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>";

/// A loaded store, or one with a large bucket index, may take seconds to
/// list: the first contact waits for it as for any answer (the stall
/// bound, 30 s), and is not told "is it an S3 endpoint?" after 3 s.
#[test]
fn a_slow_first_listing_is_waited_for() {
    let slow = answering("200 OK", String::new(), EMPTY_LISTING, Duration::from_secs(4));
    assert!(!slow.any_under("p/").unwrap(), "an empty listing, four seconds late");
}

/// A bucket that exists already (SeaweedFS makes its own at start) is no
/// error when blobbench makes it; another's bucket of that name is.
#[test]
fn making_a_bucket_that_is_already_ours_is_no_error() {
    let ours = "<Error><Code>BucketAlreadyOwnedByYou</Code><Message>you already own it</Message></Error>";
    answering("409 Conflict", String::new(), ours, Duration::ZERO).create_bucket().unwrap();
    let theirs = "<Error><Code>BucketAlreadyExists</Code><Message>taken</Message></Error>";
    let e = answering("409 Conflict", String::new(), theirs, Duration::ZERO).create_bucket().unwrap_err().to_string();
    assert!(e.contains("409") && e.contains("BucketAlreadyExists"), "{e}");
}

/// A throwaway server just started on a loaded machine may answer its
/// bucket's creation 503: it is tried again, as a build's PUTs are.
#[test]
fn making_a_bucket_is_tried_again_when_the_store_is_busy() {
    let tries = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = tries.clone();
    let fake = super::super::fake::Fake::start(move |_| match seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
        0 => super::super::fake::Reply::error(503, "ServiceUnavailable"),
        _ => super::super::fake::Reply::ok(""),
    });
    fake.client().create_bucket().unwrap();
    assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 2, "one 503, then made");
}

/// MinIO answers a URL signed in its future with AccessDenied "Request is
/// not valid yet": a clock three hours behind is said to be, with how far
/// (from the answer's Date), not taken for a missing permission.
#[test]
fn a_clock_behind_the_stores_is_named_with_its_skew() {
    let ahead = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(3);
    let date = jiff::fmt::rfc2822::DateTimePrinter::new().timestamp_to_rfc9110_string(&ahead).unwrap();
    let minio = "<Error><Code>AccessDenied</Code><Message>Request is not valid yet</Message></Error>";
    let e = answering("403 Forbidden", format!("Date: {date}\r\n"), minio, Duration::ZERO).any_under("p/");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("LIST p/ failed (AccessDenied): this machine's clock is 3 h behind the store's"), "{e}");
    assert!(e.contains("valid for 60 s") && e.contains("set this machine's clock") && !e.contains("lacks"), "{e}");
}

/// Issue 43, item 14: a timed request the store answers busy (503
/// SlowDown) ends the run saying it was not tried again and what may
/// help; the export's patient requests say how often they tried instead.
#[test]
fn a_busy_answer_to_a_timed_request_says_it_is_never_tried_again() {
    let fake = super::super::fake::Fake::start(|_| super::super::fake::Reply::error(503, "SlowDown"));
    let c = fake.client();
    let get = c.get_into("blobbench/k", false, &mut Vec::new()).unwrap_err().to_string();
    let put = c.put("blobbench/k", b"v").unwrap_err().to_string();
    for e in [&get, &put] {
        assert!(e.contains("503 Service Unavailable, SlowDown: timed requests are never tried again"), "{e}");
        assert!(e.contains("fewer clients at once") && !e.contains('\n'), "{e}");
    }
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = store(&format!("http://127.0.0.1:{gone}")).put("blobbench/k", b"v").unwrap_err().to_string();
    assert!(!refused.contains("never tried again"), "only a busy answer: {refused}");
}

/// Issue 50: a request naming a key outside the store's scope, or with a
/// segment a URL path would resolve (rusty-s3's `Url::set_path` turns
/// `P/../../victim` into `/b/victim`), is refused before anything is sent.
#[test]
fn a_key_a_url_would_resolve_elsewhere_is_never_sent() {
    let fake = super::super::fake::Fake::start(|_| super::super::fake::Reply::ok(""));
    let c = Client::new(Arc::new(fake.store().within("blobbench/t-0000abcd/")));
    for key in ["blobbench/t-0000abcd/../../victim", "blobbench/t-0000abcd/./x", "victim", "blobbench/other/1"] {
        let e = c.delete(key).unwrap_err().to_string();
        assert!(e.contains("DELETE not sent: key") && e.contains(&format!("{key:?}")), "{e}");
        assert!(c.put(key, b"x").is_err() && c.get_into(key, false, &mut Vec::new()).is_err() && c.head(key).is_err());
        assert!(c.put_sized_patiently(key, b"x", 1).is_err() && c.abort_once(key, "u").is_err());
    }
    assert!(fake.lines().is_empty(), "nothing sent: {:?}", fake.lines());
    c.delete("blobbench/t-0000abcd/0000000001").unwrap();
    assert_eq!(fake.lines(), ["DELETE blobbench/t-0000abcd/0000000001"]);
}
