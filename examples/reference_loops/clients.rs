//! N clients at once over one window (issue 42's parity loops):
//!
//!   reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]
//!
//! STORE: files (a flat kvtest directory), sqlite-per-conn,
//! sqlite-one-writer (threads only), lmdb, lmdb-size-first, postgres (PATH a
//! `postgresql://` URL; table `kv`, or `PG_TABLE`). See [`stores`] for
//! what each client does.
//!
//! Every client opens first (outside the window): its own connection,
//! handle, statements, RNG and content. Threads then meet at one barrier;
//! the last to arrive reads CLOCK_MONOTONIC, and that instant is the start
//! for all. Processes (this binary re-run as `client ...`, one per client)
//! each say `ready` on stdout once open; the parent then reads the clock
//! and sends that start and the deadline (start + WINDOW_MS) to every
//! child: CLOCK_MONOTONIC is one clock for every process on the machine.
//!
//! Each client runs closed loop until the deadline: it draws a key
//! uniformly over 1..=max from its own seeded RNG, then read or overwrite
//! by the mix (default 90:10); an overwrite writes the same size with new
//! content (random, and other than any earlier run's), its own durable
//! commit. An operation counts if it completed
//! before the deadline. One clock read per operation: the latency is the
//! time since the client's previous operation ended (its key and mix
//! draws included).
//!
//! Output: `ops_per_s` (all clients' counted operations over the window),
//! the operations of the slowest and the median client (the (N/2+1)-th
//! smallest), and p50/p99 per class over every client's operations merged.

#[path = "client_stores.rs"]
mod stores;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Barrier, OnceLock};

use rand::{Rng, SeedableRng};

use self::stores::{Client, Kind, Process};
use crate::{Content, Res};

const USAGE: &str = "usage: reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]";

/// Client i's keys and mix draws come from an RNG seeded with SEED + i.
const SEED: u64 = 0x5eed_0042;

/// Reads to overwrites, e.g. 90:10.
#[derive(Debug, Clone, Copy)]
struct Mix {
    read: u32,
    write: u32,
}

impl Mix {
    fn parse(s: &str) -> Res<Mix> {
        let bad = || format!("mix {s}: want READ:WRITE, e.g. 90:10");
        let (r, w) = s.split_once(':').ok_or_else(bad)?;
        let mix = Mix { read: r.parse().map_err(|_| bad())?, write: w.parse().map_err(|_| bad())? };
        if mix.read + mix.write == 0 {
            return Err(bad().into());
        }
        Ok(mix)
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.read, self.write)
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the one clock of every process here.
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn main(args: &[String]) -> Res<()> {
    let [store, path, n, window_ms, rest @ ..] = args else { return Err(USAGE.into()) };
    let kind = Kind::parse(store)?;
    let n: u32 = n.parse().ok().filter(|&n| n > 0).ok_or(USAGE)?;
    let window_ms: u64 = window_ms.parse().ok().filter(|&w| w > 0).ok_or(USAGE)?;
    let processes = match rest.first().map(String::as_str) {
        None | Some("threads") => false,
        Some("processes") => true,
        Some(_) => return Err(USAGE.into()),
    };
    let mix = rest.get(1).map_or(Ok(Mix { read: 90, write: 10 }), |m| Mix::parse(m))?;
    let window_ns = window_ms * 1_000_000;
    let path = Path::new(path);
    let tallies = if processes {
        if let Some(why) = kind.not_as_processes() {
            return Err(format!("{} cannot run as processes: {why}", kind.name()).into());
        }
        run_processes(kind, path, n, window_ns, mix)?
    } else {
        run_threads(kind, path, n, window_ns, mix)?
    };
    let how = if processes { "processes" } else { "threads" };
    let cores = std::thread::available_parallelism().map_or(0, |c| c.get());
    println!("# {}: {n} clients as {how} on {cores} cores, window {window_ms} ms, mix {mix}", kind.name());
    report(&tallies, window_ns);
    Ok(())
}

/// One client's state, made before the window: its RNG and content. The
/// content is seeded anew every run (from the OS): with the last run's
/// content, every overwrite of a key the last run wrote would set the
/// value the row holds, and SQLite commits that without writing or
/// syncing anything (`reference_loops flush` shows the cost).
struct Work {
    rng: rand::rngs::SmallRng,
    content: Content,
    mix: Mix,
}

/// What one client did: each counted operation's latency (ns) by class.
#[derive(Default)]
struct Tally {
    reads: Vec<u64>,
    writes: Vec<u64>,
}

impl Work {
    fn new(index: u32, mix: Mix) -> Work {
        let rng = rand::rngs::SmallRng::seed_from_u64(SEED + u64::from(index));
        Work { rng, content: Content::new(rand::random()), mix }
    }

    /// Runs operations until `deadline`; the one that ends past it is not
    /// counted.
    fn run(&mut self, client: &mut dyn Client, p: &Process, deadline: u64) -> Res<Tally> {
        let mut t = Tally { reads: Vec::with_capacity(1 << 16), writes: Vec::with_capacity(1 << 14) };
        let all = self.mix.read + self.mix.write;
        let mut prev = now_ns();
        loop {
            let key = self.rng.gen_range(1..=p.max_key);
            let write = self.rng.gen_range(0..all) >= self.mix.read;
            if write {
                client.write(key, self.content.next(p.size(key)))?;
            } else {
                client.read(key)?;
            }
            let now = now_ns();
            if now > deadline {
                return Ok(t);
            }
            if write { &mut t.writes } else { &mut t.reads }.push(now - prev);
            prev = now;
        }
    }
}

/// N threads of this process, from one barrier.
fn run_threads(kind: Kind, path: &Path, n: u32, window_ns: u64, mix: Mix) -> Res<Vec<Tally>> {
    let p = Process::open(kind, path)?;
    let barrier = Barrier::new(n as usize);
    let start = OnceLock::new();
    // The last client to arrive reads the start for all.
    let go = || {
        if barrier.wait().is_leader() {
            let _ = start.set(now_ns());
        }
        *start.wait()
    };
    let results: Vec<Result<Tally, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (p, go) = (&p, &go);
                s.spawn(move || {
                    let mut went = false;
                    let tally = stores::with_client(p, i, |client| {
                        let mut work = Work::new(i, mix);
                        went = true;
                        let deadline = go() + window_ns;
                        work.run(client, p, deadline)
                    });
                    if !went {
                        // A client that failed to open still meets the others.
                        go();
                    }
                    tally.map_err(|e| format!("client {i}: {e}"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into()))).collect()
    });
    Ok(results.into_iter().collect::<Result<_, _>>()?)
}

/// N processes, each this binary as `client STORE PATH INDEX MIX`.
fn run_processes(kind: Kind, path: &Path, n: u32, window_ns: u64, mix: Mix) -> Res<Vec<Tally>> {
    let exe = std::env::current_exe()?;
    let mut children = Vec::with_capacity(n as usize);
    let mut spawned = Ok(());
    for i in 0..n {
        let child = Command::new(&exe)
            .args(["client", kind.name()])
            .arg(path)
            .args([i.to_string(), mix.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(e) => {
                spawned = Err(e);
                break;
            }
        }
    }
    let tallies = spawned.map_err(Into::into).and_then(|()| start_and_collect(&mut children, window_ns));
    for c in &mut children {
        if tallies.is_err() {
            let _ = c.kill();
        }
        let status = c.wait()?;
        if tallies.is_ok() && !status.success() {
            return Err(format!("a client process ended with {status}").into());
        }
    }
    tallies
}

/// Waits for every child's `ready`, sends them the start and the deadline,
/// then reads their tallies.
fn start_and_collect(children: &mut [Child], window_ns: u64) -> Res<Vec<Tally>> {
    let mut outs: Vec<BufReader<ChildStdout>> =
        children.iter_mut().map(|c| BufReader::new(c.stdout.take().expect("piped"))).collect();
    for (i, out) in outs.iter_mut().enumerate() {
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim_end() != "ready" {
            return Err(format!("client process {i} did not open (see its error above)").into());
        }
    }
    let start = now_ns();
    let deadline = start + window_ns;
    for c in children.iter_mut() {
        writeln!(c.stdin.as_mut().expect("piped"), "{start} {deadline}")?;
    }
    outs.into_iter().map(Tally::read_from).collect()
}

/// A client process: `client STORE PATH INDEX MIX` (run by
/// [`run_processes`]; prints `ready`, reads `START DEADLINE`, runs, then
/// prints its tally).
pub fn child(args: &[String]) -> Res<()> {
    let [store, path, index, mix] = args else {
        return Err("usage: reference_loops client STORE PATH INDEX MIX".into());
    };
    let (kind, index, mix) = (Kind::parse(store)?, index.parse::<u32>()?, Mix::parse(mix)?);
    let p = Process::open(kind, Path::new(path))?;
    let tally = stores::with_client(&p, index, |client| {
        let mut work = Work::new(index, mix);
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let deadline: u64 = line.split_whitespace().nth(1).ok_or("no deadline from the parent")?.parse()?;
        work.run(client, &p, deadline)
    })?;
    tally.write_to(&mut std::io::BufWriter::new(std::io::stdout().lock()))
}

impl Tally {
    fn ops(&self) -> u64 {
        (self.reads.len() + self.writes.len()) as u64
    }

    fn write_to(&self, out: &mut impl Write) -> Res<()> {
        for (name, v) in [("reads", &self.reads), ("writes", &self.writes)] {
            write!(out, "{name}")?;
            for ns in v {
                write!(out, " {ns}")?;
            }
            writeln!(out)?;
        }
        out.flush()?;
        Ok(())
    }

    fn read_from(out: BufReader<ChildStdout>) -> Res<Tally> {
        let mut t = Tally::default();
        for line in out.lines() {
            let line = line?;
            let mut words = line.split_whitespace();
            let class = match words.next() {
                Some("reads") => &mut t.reads,
                Some("writes") => &mut t.writes,
                _ => return Err(format!("unexpected line from a client: {line}").into()),
            };
            for w in words {
                class.push(w.parse()?);
            }
        }
        Ok(t)
    }
}

/// The nearest-rank quantile of sorted values, in microseconds.
fn quantile_us(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64 / 1e3
}

fn report(tallies: &[Tally], window_ns: u64) {
    let mut counts: Vec<u64> = tallies.iter().map(Tally::ops).collect();
    counts.sort_unstable();
    let ops: u64 = counts.iter().sum();
    println!("ops_per_s {:.0}", ops as f64 * 1e9 / window_ns as f64);
    println!("client_ops_min {}", counts[0]);
    println!("client_ops_median {}", counts[counts.len() / 2]);
    println!("client_ops_max {}", counts[counts.len() - 1]);
    for (class, pick) in [("read", 0), ("write", 1)] {
        let mut all: Vec<u64> =
            tallies.iter().flat_map(|t| if pick == 0 { &t.reads } else { &t.writes }).copied().collect();
        all.sort_unstable();
        println!("{class}s {}", all.len());
        if !all.is_empty() {
            println!("{class}_p50_us {:.1}", quantile_us(&all, 0.5));
            println!("{class}_p99_us {:.1}", quantile_us(&all, 0.99));
        }
    }
}
