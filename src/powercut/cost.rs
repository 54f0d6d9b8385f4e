//! What the layer itself adds: the median time of a 10 KB pwrite and of an
//! fsync through the layer, beside the same calls on the directory under
//! it. The layer's fsync copies the pending bytes into the backing file
//! and does not flush the real disk (the power cut is simulated), so it is
//! all layer cost; the direct fsync is the real disk's.
//!
//! The calls through the layer are made by a child process (the hidden
//! `layer-cost-probe` command of the blobbench binary): a process must never
//! wait on a FUSE mount that it serves itself, or a SIGKILL at that moment
//! would leave it stuck in the kernel for good.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{FaultPlan, Mounted};
use crate::{Error, Result};

const WRITE_BYTES: usize = 10_000;
const WRITES: usize = 300;
const FSYNCS: usize = 40;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerCost {
    /// Median of `writes` timed 10 KB pwrite calls, in ns.
    pub write_10k_layer_ns: u64,
    pub write_10k_direct_ns: u64,
    pub writes: u32,
    /// Median of `fsyncs` timed fsync calls, each after one 10 KB write, in ns.
    pub fsync_layer_ns: u64,
    pub fsync_direct_ns: u64,
    pub fsyncs: u32,
}

/// Measures in a scratch directory inside `dir` (removed afterwards);
/// `exe` is a blobbench binary, which has the hidden probe command.
pub fn measure(dir: &Path, exe: &Path) -> Result<LayerCost> {
    let scratch = tempfile::Builder::new()
        .prefix(".blobbench-layercost-")
        .tempdir_in(dir)
        .map_err(|e| Error::io(dir, "cannot create a directory here", e))?;
    let (backing, mnt, direct) =
        (scratch.path().join("disk"), scratch.path().join("mnt"), scratch.path().join("direct"));
    for d in [&backing, &mnt] {
        std::fs::create_dir(d).map_err(|e| Error::io(d, "cannot create directory", e))?;
    }
    let mounted = Mounted::mount(&backing, &mnt, FaultPlan::none())?;
    let through = probe_in_child(exe, &mnt.join("f"))?;
    drop(mounted);
    let plain = probe(&direct)?;
    Ok(LayerCost {
        write_10k_layer_ns: through.0,
        write_10k_direct_ns: plain.0,
        writes: WRITES as u32,
        fsync_layer_ns: through.1,
        fsync_direct_ns: plain.1,
        fsyncs: FSYNCS as u32,
    })
}

fn probe_in_child(exe: &Path, file: &Path) -> Result<(u64, u64)> {
    let out = std::process::Command::new(exe)
        .arg("layer-cost-probe")
        .arg(file)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::io(exe, "cannot start the layer-cost probe", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut nums = text.split_whitespace().filter_map(|w| w.parse::<u64>().ok());
    match (out.status.success(), nums.next(), nums.next()) {
        (true, Some(w), Some(f)) => Ok((w, f)),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            let said = err.lines().next().unwrap_or("no message").trim_start_matches("error: ");
            Err(Error::invalid(format!("layer-cost probe failed: {said}")))
        }
    }
}

/// (median write, median fsync) in ns on a new file at `path`.
pub fn probe(path: &Path) -> Result<(u64, u64)> {
    let err = |e| Error::io(path, "cannot time writes", e);
    let f: File = OpenOptions::new().read(true).write(true).create_new(true).open(path).map_err(err)?;
    let buf = vec![0x5au8; WRITE_BYTES];
    let mut writes = Vec::with_capacity(WRITES);
    for i in 0..WRITES {
        let t = Instant::now();
        f.write_all_at(&buf, (i % 8 * WRITE_BYTES) as u64).map_err(err)?;
        writes.push(t.elapsed().as_nanos() as u64);
    }
    let mut syncs = Vec::with_capacity(FSYNCS);
    for _ in 0..FSYNCS {
        f.write_all_at(&buf, 0).map_err(err)?;
        let t = Instant::now();
        f.sync_all().map_err(err)?;
        syncs.push(t.elapsed().as_nanos() as u64);
    }
    Ok((median(&mut writes), median(&mut syncs)))
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}
