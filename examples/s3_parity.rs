//! Parity of the S3 engine with a bare loop of its own client crates
//! (rusty-s3 signing, ureq sending, one keep-alive connection): GET and PUT
//! per op, alternated in ROUNDS rounds on the same throwaway Swift cluster,
//! the order of the two arms swapped every round. blobbench's figure is
//! its run's loop per op (the timed loop only, as the bare loop's); the
//! bare loop reads into a reused buffer and PUTs the same bytes, keys in
//! the same random order. Run by `bench/s3-parity.sh`:
//!
//!   cargo run --release --example s3_parity -- DATASET [ROUNDS] [COUNT]
//!
//! DATASET is an `export --engine s3` of 10 KiB blobs (the cluster is
//! started once here and shared by both arms).

use std::time::{Duration, Instant};

use blobbench::drivers::run::{run, RunOptions};
use blobbench::records::keys::{KeySequence, Order};
use blobbench::records::Plan;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

fn main() {
    if let Err(e) = parity() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn parity() -> blobbench::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = || blobbench::Error::invalid("usage: s3_parity DATASET [ROUNDS] [COUNT]");
    let path = args.next().ok_or_else(usage)?;
    let number = |a: Option<String>, default: u64| a.map_or(Ok(default), |s| s.parse().map_err(|_| usage()));
    let rounds = number(args.next(), 6)?;
    let count = number(args.next(), 300)?;
    // Held for the whole bench: both arms use this cluster.
    let mut engine = blobbench::engine::open(path.as_ref(), &Default::default())?;
    let max_key = engine.survey(true)?.max_key.ok_or_else(usage)?;
    let info = engine.server_info().ok_or_else(usage)?;
    let endpoint = info.setting("endpoint").ok_or_else(usage)?.to_string();
    let desc = blobbench::engine::s3::Descriptor::read(path.as_ref())?;
    let bare = Bare::new(&endpoint, &desc);
    println!(
        "{} {}, {}; {count} ops per arm and round, keys 1..={max_key} at random",
        info.product, info.version, info.blobs_in
    );
    let mut table = Vec::new();
    for update in [false, true] {
        let what = if update { "PUT" } else { "GET" };
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let seed = round + 1;
            let keys = keys(max_key, count);
            let ours_run = || -> blobbench::Result<f64> {
                let mut opts = RunOptions::new(&path);
                opts.count = count;
                opts.order = Order::Random;
                opts.update = update;
                opts.seed = seed;
                opts.plan = Plan { repeat: 1, warmup: 0, cold: false, latency: false };
                let report = run(&opts, what, what)?;
                Ok(report.median_run().loop_per_op_us)
            };
            let bare_run = || bare.run(&keys, update);
            let (a, b) = if round % 2 == 0 {
                let a = ours_run()?;
                (a, bare_run())
            } else {
                let b = bare_run();
                (ours_run()?, b)
            };
            println!(
                "{what} round {}: blobbench {a:8.0} us/op, bare loop {b:8.0} us/op, ratio {:.3}",
                round + 1,
                a / b
            );
            ours.push(a);
            theirs.push(b);
        }
        table.push((what, median(&mut ours), median(&mut theirs)));
    }
    println!("\n| op | blobbench us/op (median of {rounds}) | bare loop us/op | ratio | within 10% |");
    println!("|---|---|---|---|---|");
    for (what, a, b) in table {
        let within = if (a / b - 1.0).abs() <= 0.10 { "yes" } else { "no" };
        println!("| {what} | {a:.0} | {b:.0} | {:.3} | {within} |", a / b);
    }
    Ok(())
}

/// The keys a random-order run of `count` ops visits: the benchmark's own
/// key sequence (kvtest's generator, the same every run).
fn keys(max_key: u32, count: u64) -> Vec<u32> {
    let mut seq = KeySequence::new(Order::Random, 1, max_key);
    (0..count)
        .map(|_| {
            let k = seq.current();
            seq.advance();
            k
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The bare loop: the crates blobbench's client uses, nothing else.
struct Bare {
    agent: ureq::Agent,
    bucket: Bucket,
    credentials: Credentials,
    prefix: String,
    content: Vec<u8>,
}

impl Bare {
    fn new(endpoint: &str, desc: &blobbench::engine::s3::Descriptor) -> Bare {
        let bucket =
            Bucket::new(endpoint.parse().expect("an endpoint URL"), UrlStyle::Path, desc.bucket.clone(), "us-east-1")
                .expect("a bucket");
        let agent = ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into();
        let credentials = Credentials::new("test:tester", "testing");
        Bare { agent, bucket, credentials, prefix: desc.prefix.clone(), content: vec![0x5a; 1 << 20] }
    }

    /// Microseconds per op of GETs (or PUTs of the blob's size) of `keys`,
    /// after one untimed request that opens the connection.
    fn run(&self, keys: &[u32], update: bool) -> f64 {
        let sign = Duration::from_secs(3600);
        let mut buf = Vec::new();
        let mut size = std::collections::HashMap::new();
        let get = |key: &str, buf: &mut Vec<u8>| {
            let url = self.bucket.get_object(Some(&self.credentials), key).sign(sign);
            let mut resp = self.agent.get(url.as_str()).call().expect("GET");
            assert!(resp.status().is_success(), "GET {key}: {}", resp.status());
            buf.clear();
            std::io::Read::read_to_end(&mut resp.body_mut().as_reader(), buf).expect("body");
            buf.len()
        };
        if update {
            for &k in keys {
                size.entry(k).or_insert_with(|| get(&format!("{}{k:010}", self.prefix), &mut buf));
            }
        }
        get(&format!("{}{:010}", self.prefix, keys[0]), &mut buf);
        let started = Instant::now();
        for &k in keys {
            let name = format!("{}{k:010}", self.prefix);
            if update {
                let url = self.bucket.put_object(Some(&self.credentials), &name).sign(sign);
                let mut resp = self.agent.put(url.as_str()).send(&self.content[..size[&k]]).expect("PUT");
                assert!(resp.status().is_success(), "PUT {name}: {}", resp.status());
                std::io::copy(&mut resp.body_mut().as_reader(), &mut std::io::sink()).expect("body");
            } else {
                std::hint::black_box(get(&name, &mut buf));
            }
        }
        started.elapsed().as_secs_f64() * 1e6 / keys.len() as f64
    }
}
