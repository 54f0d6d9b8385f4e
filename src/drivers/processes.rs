//! Clients as processes (`advise --clients-are processes`), as a pre-fork
//! server's workers: each client is a process of its own with its own
//! engine (its own SQLite connection, LMDB environment, PostgreSQL
//! connection), so the stores use their cross-process locks. The parent
//! starts them through a [`Launcher`] (the command line names it; the
//! library names no command) and talks to each over its standard input
//! and output, one line at a time:
//!
//! - parent: a [`ClientJob`] (JSON); the client opens and surveys its
//!   engine and answers `opened`;
//! - per run, parent: a [`ClientOrder`]; the client opens its session and
//!   answers `ready`; once every client is ready the parent sends each
//!   `go START DEADLINE` (the barrier across processes), the run's window
//!   on `CLOCK_MONOTONIC`; the client runs the timed session over it
//!   exactly as a thread client does ([`super::clients`]) and answers a
//!   [`ClientReport`] (JSON);
//! - the parent closes the client's input: it ends.
//!
//! A client stays single-threaded (a second thread would send every read
//! through glibc's slower cancellation path inside the timed loop). Its
//! phase times are on `CLOCK_MONOTONIC`, which every process on the
//! machine reads alike, so the parent joins them as it joins threads'.

use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::classes::Classes;
use super::client::{client_session, lead, ClientDone, ClientSpan, ClientTurn};
use crate::measure::pace::{clock_pair, monotonic_ns};
use crate::measure::Latency;
use crate::records::{EngineSettings, Mix};
use crate::{Error, Result};

/// How to start a client process: a program and its arguments (the
/// blobbench binary and its hidden client command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    pub exe: PathBuf,
    pub args: Vec<OsString>,
}

/// What a client process is for, over all its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientJob {
    /// The dataset, opened with `settings`.
    pub path: PathBuf,
    pub settings: EngineSettings,
    /// This client's index, and the clients in all.
    pub client: u32,
    pub clients: u32,
    pub mix: Mix,
    /// The largest blob and key, as the parent surveyed them.
    pub blob_max: u32,
    pub max_id: u32,
    /// The script's seed (the arm's, plus the client's index).
    pub seed: u64,
    /// `--rate`: operations per second over all clients; None: closed loop.
    pub rate: Option<f64>,
}

/// One run of a client process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientOrder {
    /// 0 for untimed runs, then 1, 2 ...: each timed run draws other keys.
    pub round: u32,
    /// Record each op's latency.
    pub timed: bool,
}

/// What a client process did in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientReport {
    /// Its phases on `CLOCK_MONOTONIC`.
    pub span: ClientSpan,
    pub busy_waits: u64,
    /// Each class's histogram ([`Latency::to_base64`]), by
    /// [`super::session::ScriptOp::class`]; empty for a class it holds
    /// none of (one its script does not run, or an untimed run).
    pub classes: Vec<String>,
}

impl ClientReport {
    fn done(self) -> Result<ClientDone> {
        let mut classes: [Option<Latency>; 4] = Default::default();
        if self.classes.len() != classes.len() {
            return Err(Error::invalid("a client process reported the wrong number of latency classes"));
        }
        for (mine, text) in classes.iter_mut().zip(&self.classes) {
            if !text.is_empty() {
                *mine = Some(
                    Latency::from_base64(text)
                        .map_err(|e| Error::invalid(format!("a client process's histogram is unreadable: {e}")))?,
                );
            }
        }
        Ok(ClientDone { span: self.span, busy_waits: self.busy_waits, classes: Classes::of(classes) })
    }
}

/// A client's histograms as its report carries them: each class's text,
/// empty for a class with none.
fn class_texts(classes: &Classes) -> Vec<String> {
    (0..4).map(|class| classes.get(class).map_or_else(String::new, Latency::to_base64)).collect()
}

const OPENED: &str = "opened";
const READY: &str = "ready";
const GO: &str = "go";

/// Reads one line; None at the end of the input.
fn read_line(input: &mut dyn BufRead) -> Result<Option<String>> {
    let mut line = String::new();
    let n = input.read_line(&mut line).map_err(|e| Error::invalid(format!("client: cannot read its orders: {e}")))?;
    Ok((n > 0).then(|| line.trim_end().to_string()))
}

fn say(output: &mut dyn Write, line: &str) -> Result<()> {
    writeln!(output, "{line}")
        .and_then(|()| output.flush())
        .map_err(|e| Error::invalid(format!("client: cannot answer its parent: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(line: &str, what: &str) -> Result<T> {
    serde_json::from_str(line).map_err(|e| Error::invalid(format!("client: not a {what}: {e}")))
}

/// `go START DEADLINE`: the run's window on `CLOCK_MONOTONIC`, in ns.
fn parse_go(line: &str) -> Result<(u64, u64)> {
    let mut words = line.split_whitespace();
    let bad = || Error::invalid(format!("client: expected \"{GO} START DEADLINE\", got {line:?}"));
    if words.next() != Some(GO) {
        return Err(bad());
    }
    let mut number = || words.next().and_then(|w| w.parse::<u64>().ok()).ok_or_else(bad);
    let (start, deadline) = (number()?, number()?);
    if deadline <= start {
        return Err(bad());
    }
    Ok((start, deadline))
}

/// The client process: reads its job from `input`, opens its engine, and
/// runs each order it is given until `input` ends (see the module's
/// protocol). Its errors end it; the parent reports them.
pub fn serve(input: &mut dyn BufRead, output: &mut dyn Write) -> Result<()> {
    let Some(line) = read_line(input)? else { return Err(Error::invalid("client: no job given")) };
    let job: ClientJob = parse(&line, "client job")?;
    let mut engine = crate::engine::open(&job.path, &job.settings)?;
    engine.survey(job.mix.write > 0)?;
    let script = super::mix::mix_script(job.mix, job.blob_max, job.seed)?;
    say(output, OPENED)?;
    let (input, output) = (RefCell::new(input), RefCell::new(output));
    loop {
        let line = read_line(&mut **input.borrow_mut())?;
        let Some(line) = line else { break };
        let order: ClientOrder = parse(&line, "client order")?;
        let turn = ClientTurn {
            client: job.client,
            clients: job.clients,
            max_id: job.max_id,
            round: order.round,
            timed: order.timed,
            rate: job.rate,
        };
        let go: RefCell<Result<(u64, u64)>> = RefCell::new(Err(Error::invalid("client: no window given")));
        // Outside the timed loop: the session is open, the others too.
        let ready = || {
            let heard = say(&mut **output.borrow_mut(), READY).and_then(|()| read_line(&mut **input.borrow_mut()));
            *go.borrow_mut() = match heard {
                Ok(Some(l)) => parse_go(&l),
                Ok(None) => Err(Error::invalid(format!("client: expected {GO:?}, got the end of its orders"))),
                Err(e) => Err(e),
            };
        };
        let window = || {
            let (start_ns, deadline_ns) =
                go.borrow().as_ref().map(|w| *w).map_err(|e| Error::invalid(e.to_string()))?;
            let (now, now_ns) = clock_pair();
            let at = |ns: u64| match ns.checked_sub(now_ns) {
                Some(ahead) => now + Duration::from_nanos(ahead),
                None => now.checked_sub(Duration::from_nanos(now_ns - ns)).unwrap_or(now),
            };
            Ok((at(start_ns), at(deadline_ns)))
        };
        let origin = clock_pair();
        let (run, busy_waits) = client_session(engine.as_ref(), &script, turn, &ready, &window)?;
        let classes = class_texts(&script.take_classes());
        let report = ClientReport { span: ClientSpan::of(&run, origin), busy_waits, classes };
        let text = serde_json::to_string(&report).map_err(|e| Error::invalid(e.to_string()))?;
        say(&mut **output.borrow_mut(), &text)?;
    }
    Ok(())
}

/// How long a client may take to open and survey its store, and to open
/// its session; a run's report may take longer (its operations).
const OPEN_WAIT: Duration = Duration::from_secs(120);
const RUN_WAIT: Duration = Duration::from_secs(600);
/// How long a client may take to end once its input is closed.
const END_WAIT: Duration = Duration::from_secs(10);

/// One client process: its input, and its error output (a file, read when
/// it fails: a pipe could be held open by a server it started).
struct ClientProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: std::fs::File,
}

/// A line a client printed, or the end of its output.
type Heard = (usize, Option<String>);

/// The client processes of one arm, started once and given each run.
pub(crate) struct ClientProcesses {
    procs: Vec<ClientProcess>,
    heard: mpsc::Receiver<Heard>,
    what: String,
}

impl ClientProcesses {
    /// Starts a client process per job, one at a time, each once the one
    /// before has opened and surveyed its store (an engine may refuse a
    /// store another process is surveying).
    pub fn start(launcher: &Launcher, jobs: Vec<ClientJob>) -> Result<ClientProcesses> {
        let what = jobs.first().map_or_else(String::new, |j| j.path.display().to_string());
        let (tx, heard) = mpsc::channel();
        let mut all = ClientProcesses { procs: Vec::with_capacity(jobs.len()), heard, what };
        for (i, job) in jobs.iter().enumerate() {
            let p = spawn(launcher, i, tx.clone())?;
            all.procs.push(p);
            let line = serde_json::to_string(job).map_err(|e| Error::invalid(e.to_string()))?;
            all.send(i, &line)?;
            all.expect(&[i], OPEN_WAIT, "while opening its store", |l| (l == OPENED).then_some(()))?;
        }
        Ok(all)
    }

    /// One run over a window `window` long: every client opens its
    /// session; once all are ready, each is sent the window (from a start
    /// [`lead`] ahead, on `CLOCK_MONOTONIC`) and runs over it; each
    /// reports what it did. Returns the reports and the window.
    pub fn run(&mut self, order: ClientOrder, window: Duration) -> Result<(Vec<ClientDone>, (u64, u64))> {
        let line = serde_json::to_string(&order).map_err(|e| Error::invalid(e.to_string()))?;
        let all: Vec<usize> = (0..self.procs.len()).collect();
        for &i in &all {
            self.send(i, &line)?;
        }
        self.expect(&all, OPEN_WAIT, "while opening its session", |l| (l == READY).then_some(()))?;
        let start = monotonic_ns() + lead(all.len() as u32).as_nanos() as u64;
        let deadline = start + window.as_nanos() as u64;
        for &i in &all {
            self.send(i, &format!("{GO} {start} {deadline}"))?;
        }
        let reports =
            self.expect(&all, RUN_WAIT, "during its run", |l| serde_json::from_str::<ClientReport>(l).ok())?;
        let done = reports.into_iter().map(ClientReport::done).collect::<Result<Vec<_>>>()?;
        Ok((done, (start, deadline)))
    }

    fn send(&mut self, i: usize, line: &str) -> Result<()> {
        let sent = match self.procs[i].stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{line}").and_then(|()| stdin.flush()).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.failed(i, "took no orders"))
        }
    }

    /// One answer from each of `clients`, as `parse` reads it, within
    /// `bound`; a client that ends, answers otherwise or is silent past it
    /// is an error naming it (all clients are then stopped).
    fn expect<T>(
        &mut self,
        clients: &[usize],
        bound: Duration,
        doing: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>> {
        let deadline = Instant::now() + bound;
        let mut got: Vec<Option<T>> = clients.iter().map(|_| None).collect();
        while got.iter().any(Option::is_none) {
            let waiting: Vec<usize> = clients.iter().zip(&got).filter(|(_, g)| g.is_none()).map(|(&i, _)| i).collect();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let i = waiting[0];
                return Err(self.failed(i, &format!("gave no answer within {} s {doing}", bound.as_secs())));
            }
            match self.heard.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok((i, Some(line))) => {
                    let Some(slot) = clients.iter().position(|&c| c == i) else { continue };
                    match parse(&line) {
                        Some(v) if got[slot].is_none() => got[slot] = Some(v),
                        _ => return Err(self.failed(i, &format!("said {line:?} {doing}"))),
                    }
                }
                Ok((i, None)) => return Err(self.failed(i, &format!("ended {doing}"))),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // A client that died while a server it started holds its
                    // output open sends no end: look for it.
                    if let Some(&i) = waiting.iter().find(|&&i| self.procs[i].child.try_wait().ok().flatten().is_some())
                    {
                        return Err(self.failed(i, &format!("ended {doing}")));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.failed(waiting[0], &format!("ended {doing}")));
                }
            }
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// Stops every client and names client `i`'s failure, with its own
    /// one-line error when it printed one.
    fn failed(&mut self, i: usize, how: &str) -> Error {
        self.stop_all(Duration::ZERO);
        let said = self.procs.get_mut(i).map(|p| first_error_line(&mut p.stderr)).unwrap_or_default();
        let n = self.procs.len();
        let why = if said.is_empty() { String::new() } else { format!(": {said}") };
        Error::invalid(format!("client process {} of {n} on {} {how}{why}", i + 1, self.what))
    }

    /// Closes every client's input, waits up to `grace` for each to end,
    /// then kills and reaps what is left.
    fn stop_all(&mut self, grace: Duration) {
        for p in &mut self.procs {
            p.stdin = None;
        }
        let deadline = Instant::now() + grace;
        for p in &mut self.procs {
            while Instant::now() < deadline && matches!(p.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if matches!(p.child.try_wait(), Ok(None)) {
                let _ = p.child.kill();
            }
            let _ = p.child.wait();
        }
    }
}

impl Drop for ClientProcesses {
    fn drop(&mut self) {
        self.stop_all(END_WAIT);
    }
}

/// Starts client `i`, its output read line by line into `tx` by a thread
/// of the parent (the client itself has none).
fn spawn(launcher: &Launcher, i: usize, tx: mpsc::Sender<Heard>) -> Result<ClientProcess> {
    let stderr = tempfile::tempfile().map_err(|e| Error::io(&std::env::temp_dir(), "cannot make a file", e))?;
    let err_out = stderr.try_clone().map_err(|e| Error::io(&std::env::temp_dir(), "cannot share a file", e))?;
    let mut cmd = Command::new(&launcher.exe);
    cmd.args(&launcher.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(err_out);
    // SAFETY: prctl is async-signal-safe; it makes the kernel kill the
    // client should this process die first, so no client outlives it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| Error::io(&launcher.exe, "cannot start a client process", e))?;
    let stdin = child.stdin.take();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send((i, Some(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, None));
        });
    }
    Ok(ClientProcess { child, stdin, stderr })
}

/// The first line a client wrote to its error output, without its
/// `error: ` prefix; empty when it wrote none.
fn first_error_line(file: &mut std::fs::File) -> String {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.take(64 * 1024).read_to_string(&mut text));
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

#[cfg(test)]
#[path = "processes_tests.rs"]
mod tests;
