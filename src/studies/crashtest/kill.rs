//! Starting the writer process and killing it. The writer is the blobbench
//! binary itself (hidden `crash-writer` command), so what dies is the same
//! code that `run --update` measures, in a process of its own.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::writer::{Signal, WriterSpec};
use crate::engine::backend::ServerKill;
use crate::{Error, Result};

/// The hidden command line of the writer; the CLI parses it back.
fn writer_args(spec: &WriterSpec) -> Vec<OsString> {
    let mut args: Vec<OsString> =
        ["crash-writer", "--method", spec.method.name(), "--count"].into_iter().map(OsString::from).collect();
    args.push(spec.count.to_string().into());
    args.push("--seed".into());
    args.push(spec.seed.to_string().into());
    args.push("--base".into());
    args.push(spec.base.to_string().into());
    args.push("--commit-every".into());
    args.push(spec.commit_every.to_string().into());
    args.push("--settings".into());
    args.push(serde_json::to_string(&spec.settings).expect("settings serialise").into());
    if let Some(a) = &spec.acks {
        args.push("--acks".into());
        args.push(a.clone().into_os_string());
    }
    args.push("--".into());
    args.push(spec.path.clone().into_os_string());
    args
}

/// Kills the writer if the parent leaves early (an error, a panic).
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a writer, waits until its first write returned, lets it write for `delay`,
/// then sends SIGKILL and reaps it. A method whose writes a server makes
/// has that server killed first (the crash under test), then its client.
pub fn run_and_kill(exe: &Path, spec: &WriterSpec, delay: Duration) -> Result<()> {
    let outcome = run_for(exe, spec, delay, spec.method.server_kill());
    if let (Err(_) | Ok(Some(_)), Some(kill)) = (&outcome, spec.method.server_kill()) {
        // The writer's server must not outlive a failed round.
        let _ = kill(&spec.path);
    }
    match outcome? {
        None => Ok(()),
        Some(e) => Err(Error::invalid(format!("crash-test writer stopped by itself before the kill: {e}"))),
    }
}

/// Like [`run_and_kill`], but a writer that stops by itself within `delay`
/// or cannot even open its store (an injected I/O error; an engine fsyncs
/// as it opens) is not an error: its one-line message is returned.
/// `server`, when given, is killed at the deadline before the writer.
pub fn run_for(exe: &Path, spec: &WriterSpec, delay: Duration, server: Option<ServerKill>) -> Result<Option<String>> {
    let mut cmd = Command::new(exe);
    cmd.args(writer_args(spec)).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it makes the kernel kill the
    // writer should this process die first, so no writer outlives a test.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| Error::io(exe, "cannot start the writer process", e))?;
    let mut w = Writer(child);
    let mut lines = w.0.stdout.take().map(BufReader::new);
    let mut next_line = || {
        let mut line = String::new();
        if let Some(out) = lines.as_mut() {
            let _ = out.read_line(&mut line);
        }
        line.trim_end().to_string()
    };
    if next_line() != Signal::Opened.line() {
        let _ = w.0.wait();
        return Ok(Some(format!("could not open its store: {}", writer_message(&mut w))));
    }
    if next_line() != Signal::Writing.line() {
        let _ = w.0.wait();
        return Ok(Some(writer_message(&mut w)));
    }
    let deadline = std::time::Instant::now() + delay;
    loop {
        if let Ok(Some(_)) = w.0.try_wait() {
            return Ok(Some(writer_message(&mut w)));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(2)));
    }
    if let Some(kill) = server {
        kill(&spec.path)?;
    }
    w.0.kill().map_err(|e| Error::io(exe, "cannot kill the writer process", e))?;
    w.0.wait().map_err(|e| Error::io(exe, "cannot reap the writer process", e))?;
    Ok(None)
}

/// The writer's own one-line error, if it printed one.
fn writer_message(w: &mut Writer) -> String {
    let mut err = String::new();
    if let Some(mut e) = w.0.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let said = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim();
    said.strip_prefix("error: ").unwrap_or(said).to_string()
}
