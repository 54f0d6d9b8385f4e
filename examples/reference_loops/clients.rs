//! N clients at once over one window (issue 42's parity loops), in a
//! closed loop or (`open`, issue 49) an open loop at a rate:
//!
//!   reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]
//!   reference_loops open STORE PATH N WINDOW_MS RATE [threads|processes] [READ:WRITE]
//!
//! STORE: files (a flat kvtest directory), sqlite-per-conn,
//! sqlite-one-writer, lmdb, redb, fjall, and postgres (PATH a
//! `postgresql://` URL; table `kv`, or `PG_TABLE`); lmdb-size-first,
//! redb-size-first and fjall-size-first write after reading the old
//! value's length, as blobbench's overwrite does. sqlite-one-writer, redb
//! and fjall run as threads only. See
//! [`stores`] for what each client does.
//!
//! Every client opens first (outside the window): its own connection,
//! handle, statements, RNG and content. Threads then meet at one barrier;
//! the last to arrive reads CLOCK_MONOTONIC, and that instant is the start
//! for all. Processes (this binary re-run as `client ...`, one per client)
//! each say `ready` on stdout once open; the parent then reads the clock
//! and sends that start and the deadline (start + WINDOW_MS) to every
//! child: CLOCK_MONOTONIC is one clock for every process on the machine.
//!
//! In a closed loop each client runs until the deadline: it draws a key
//! uniformly over 1..=max from its own seeded RNG, then read or overwrite
//! by the mix (default 90:10); an overwrite writes the same size with new
//! content (random, and other than any earlier run's), its own durable
//! commit. An operation counts if it completed
//! before the deadline. One clock read per operation: the latency is the
//! time since the client's previous operation ended (its key and mix
//! draws included). The open loop paces the same draws and operations to
//! due times ([`open_loop`]), each latency from its due time, after one
//! untimed warm-up window (blobbench's `--warmup 1`).
//!
//! Output: `ops_per_s` (all clients' counted operations over the window),
//! the operations of the slowest and the median client (the (N/2+1)-th
//! smallest), and p50/p99 per class over every client's operations merged;
//! in an open loop also `p99_us` over both classes, the operations due and
//! not started, and the least share of its due operations a client started.

#[path = "client_stores.rs"]
mod stores;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Barrier, OnceLock};

use rand::{Rng, SeedableRng};

use self::stores::{Client, Kind, Process};
use crate::open_loop::{self, now_ns, Pace};
use crate::{Content, Res};

const USAGE: &str = "usage: reference_loops clients STORE PATH N WINDOW_MS [threads|processes] [READ:WRITE]\n       \
    reference_loops open STORE PATH N WINDOW_MS RATE [threads|processes] [READ:WRITE]";

/// Client i's keys and mix draws come from an RNG seeded with SEED + i.
const SEED: u64 = 0x5eed_0042;

/// Between an open loop's warm-up window and its timed one: time for a
/// client still in its last warm-up operation to reach the next start.
const WARM_UP_GAP: u64 = 200_000_000;

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

/// `clients ...`: a closed loop.
pub fn main(args: &[String]) -> Res<()> {
    let [store, path, n, window_ms, rest @ ..] = args else { return Err(USAGE.into()) };
    run_main(store, path, n, window_ms, None, rest)
}

/// `open ...`: an open loop at RATE operations per second over all clients.
pub fn main_open(args: &[String]) -> Res<()> {
    let [store, path, n, window_ms, rate, rest @ ..] = args else { return Err(USAGE.into()) };
    let rate: f64 = rate.parse().ok().filter(|r: &f64| r.is_finite() && *r > 0.0).ok_or("RATE: ops/s above 0")?;
    run_main(store, path, n, window_ms, Some(rate), rest)
}

fn run_main(store: &str, path: &str, n: &str, window_ms: &str, rate: Option<f64>, rest: &[String]) -> Res<()> {
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
        run_processes(kind, path, n, window_ns, mix, rate)?
    } else {
        run_threads(kind, path, n, window_ns, mix, rate)?
    };
    let how = if processes { "processes" } else { "threads" };
    let cores = std::thread::available_parallelism().map_or(0, |c| c.get());
    let pace = rate.map_or_else(|| "closed loop".to_string(), |r| format!("open loop at {r} ops/s"));
    println!("# {}: {n} clients as {how} on {cores} cores, window {window_ms} ms, mix {mix}, {pace}", kind.name());
    report(&tallies, window_ns, rate.is_some());
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

/// What one client did: each recorded operation's latency (ns) by class
/// (closed: the counted ones; open: see [`open_loop::Paced`]), the
/// operations it counted, and in an open loop those due and not started.
#[derive(Default)]
struct Tally {
    reads: Vec<u64>,
    writes: Vec<u64>,
    done: u64,
    due: u64,
    unstarted: u64,
}

impl Work {
    fn new(index: u32, mix: Mix) -> Work {
        let rng = rand::rngs::SmallRng::seed_from_u64(SEED + u64::from(index));
        Work { rng, content: Content::new(rand::random()), mix }
    }

    /// Runs the timed window from `start` to `deadline`; an open loop
    /// (at `pace`) first runs one untimed warm-up window of the same
    /// length, as blobbench's `--warmup 1`, and the timed one begins
    /// [`WARM_UP_GAP`] after its deadline.
    fn windows(
        &mut self,
        client: &mut dyn Client,
        p: &Process,
        start: u64,
        deadline: u64,
        pace: Option<Pace>,
    ) -> Res<Tally> {
        if pace.is_none() {
            return self.run(client, p, start, deadline, None);
        }
        self.run(client, p, start, deadline, pace)?;
        let shift = deadline - start + WARM_UP_GAP;
        open_loop::sleep_until(start + shift);
        self.run(client, p, start + shift, deadline + shift, pace)
    }

    /// Runs operations from `start` until `deadline`, closed loop or at
    /// `pace`.
    fn run(
        &mut self,
        client: &mut dyn Client,
        p: &Process,
        start: u64,
        deadline: u64,
        pace: Option<Pace>,
    ) -> Res<Tally> {
        let Some(pace) = pace else { return self.run_closed(client, p, deadline) };
        open_loop::tight_timer_slack();
        let all = self.mix.read + self.mix.write;
        let paced = open_loop::run(pace, start, deadline, &open_loop::Monotonic, |go| {
            let write = self.rng.gen_range(0..all) >= self.mix.read;
            if go {
                let key = self.rng.gen_range(1..=p.max_key);
                if write {
                    client.write(key, self.content.next(p.size(key)))?;
                } else {
                    client.read(key)?;
                }
            }
            Ok(write)
        })?;
        let open_loop::Paced { reads, writes, done, due, unstarted } = paced;
        Ok(Tally { reads, writes, done, due, unstarted })
    }

    /// Runs operations until `deadline`; the one that ends past it is not
    /// counted.
    fn run_closed(&mut self, client: &mut dyn Client, p: &Process, deadline: u64) -> Res<Tally> {
        let mut t =
            Tally { reads: Vec::with_capacity(1 << 16), writes: Vec::with_capacity(1 << 14), ..Tally::default() };
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
            t.done += 1;
            if write { &mut t.writes } else { &mut t.reads }.push(now - prev);
            prev = now;
        }
    }
}

/// N threads of this process, from one barrier.
fn run_threads(kind: Kind, path: &Path, n: u32, window_ns: u64, mix: Mix, rate: Option<f64>) -> Res<Vec<Tally>> {
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
                        let start = go();
                        work.windows(client, p, start, start + window_ns, rate.map(|r| Pace::of(i, n, r)))
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

/// N processes, each this binary as `client STORE PATH INDEX MIX [N RATE]`.
fn run_processes(kind: Kind, path: &Path, n: u32, window_ns: u64, mix: Mix, rate: Option<f64>) -> Res<Vec<Tally>> {
    stores::prepare(kind, path)?;
    let exe = std::env::current_exe()?;
    let mut children = Vec::with_capacity(n as usize);
    let mut spawned = Ok(());
    for i in 0..n {
        let child = Command::new(&exe)
            .args(["client", kind.name()])
            .arg(path)
            .args([i.to_string(), mix.to_string()])
            .args(rate.map(|r| [n.to_string(), r.to_string()]).into_iter().flatten())
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

/// A client process: `client STORE PATH INDEX MIX [N RATE]` (run by
/// [`run_processes`]; prints `ready`, reads `START DEADLINE`, runs, then
/// prints its tally).
pub fn child(args: &[String]) -> Res<()> {
    let [store, path, index, mix, paced @ ..] = args else {
        return Err("usage: reference_loops client STORE PATH INDEX MIX [N RATE]".into());
    };
    let (kind, index, mix) = (Kind::parse(store)?, index.parse::<u32>()?, Mix::parse(mix)?);
    let pace = match paced {
        [] => None,
        [n, rate] => Some(Pace::of(index, n.parse()?, rate.parse()?)),
        _ => return Err("a client process's pace is N RATE".into()),
    };
    let p = Process::open(kind, Path::new(path))?;
    let tally = stores::with_client(&p, index, |client| {
        let mut work = Work::new(index, mix);
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let mut words = line.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(start)), Some(Ok(deadline))) = (words.next(), words.next()) else {
            return Err("no start and deadline from the parent".into());
        };
        work.windows(client, &p, start, deadline, pace)
    })?;
    tally.write_to(&mut std::io::BufWriter::new(std::io::stdout().lock()))
}

impl Tally {
    fn write_to(&self, out: &mut impl Write) -> Res<()> {
        writeln!(out, "counts {} {} {}", self.done, self.due, self.unstarted)?;
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
            if let Some(rest) = line.strip_prefix("counts ") {
                let n: Vec<u64> = rest.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
                let [done, due, unstarted] = n[..] else {
                    return Err(format!("bad counts from a client: {line}").into());
                };
                (t.done, t.due, t.unstarted) = (done, due, unstarted);
                continue;
            }
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

fn report(tallies: &[Tally], window_ns: u64, open: bool) {
    let mut counts: Vec<u64> = tallies.iter().map(|t| t.done).collect();
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
    if open {
        report_open(tallies);
    }
}

/// An open loop's figures beyond a closed one's: the p99 over both
/// classes (latency from due time), the due and unstarted operations, and
/// the least share of its due operations a client started.
fn report_open(tallies: &[Tally]) {
    let mut all: Vec<u64> = tallies.iter().flat_map(|t| t.reads.iter().chain(&t.writes)).copied().collect();
    all.sort_unstable();
    if !all.is_empty() {
        println!("p99_us {:.1}", quantile_us(&all, 0.99));
    }
    println!("due {}", tallies.iter().map(|t| t.due).sum::<u64>());
    println!("unstarted {}", tallies.iter().map(|t| t.unstarted).sum::<u64>());
    let started = |t: &Tally| if t.due == 0 { 1.0 } else { (t.due - t.unstarted) as f64 / t.due as f64 };
    let least = tallies.iter().map(started).fold(1.0, f64::min);
    println!("client_started_min_pct {:.1}", least * 100.0);
}
