//! Per-process OS counters around a timed run: I/O bytes and system calls
//! from `/proc/self/io`, CPU time, page faults and peak RSS from getrusage.
//! Read outside the timer; they describe what the run cost the kernel.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsCounters {
    /// Bytes passed to read()-like calls (rchar), cache hits included.
    pub read_call_bytes: u64,
    /// Bytes passed to write()-like calls (wchar).
    pub write_call_bytes: u64,
    pub read_syscalls: u64,
    pub write_syscalls: u64,
    /// Bytes fetched from the storage device (read_bytes).
    pub storage_read_bytes: u64,
    /// Bytes sent towards the storage device (write_bytes).
    pub storage_write_bytes: u64,
    pub cancelled_write_bytes: u64,
    pub user_cpu_us: u64,
    pub system_cpu_us: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Peak resident set size of the process so far, in KiB (not a delta).
    pub peak_rss_kib: u64,
}

impl OsCounters {
    /// The counters now. Missing sources (no /proc) read as zero.
    pub fn now() -> Self {
        let mut c = OsCounters::default();
        if let Ok(text) = std::fs::read_to_string("/proc/self/io") {
            for line in text.lines() {
                let Some((name, value)) = line.split_once(':') else {
                    continue;
                };
                let value: u64 = value.trim().parse().unwrap_or(0);
                match name {
                    "rchar" => c.read_call_bytes = value,
                    "wchar" => c.write_call_bytes = value,
                    "syscr" => c.read_syscalls = value,
                    "syscw" => c.write_syscalls = value,
                    "read_bytes" => c.storage_read_bytes = value,
                    "write_bytes" => c.storage_write_bytes = value,
                    "cancelled_write_bytes" => c.cancelled_write_bytes = value,
                    _ => {}
                }
            }
        }
        // SAFETY: getrusage only writes into the struct we hand it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
            c.user_cpu_us = us(ru.ru_utime);
            c.system_cpu_us = us(ru.ru_stime);
            c.minor_faults = ru.ru_minflt as u64;
            c.major_faults = ru.ru_majflt as u64;
            c.voluntary_switches = ru.ru_nvcsw as u64;
            c.involuntary_switches = ru.ru_nivcsw as u64;
            c.peak_rss_kib = ru.ru_maxrss as u64;
        }
        c
    }

    /// What happened between `earlier` and `self`; peak RSS stays absolute.
    pub fn since(&self, earlier: &Self) -> Self {
        OsCounters {
            read_call_bytes: self.read_call_bytes.saturating_sub(earlier.read_call_bytes),
            write_call_bytes: self.write_call_bytes.saturating_sub(earlier.write_call_bytes),
            read_syscalls: self.read_syscalls.saturating_sub(earlier.read_syscalls),
            write_syscalls: self.write_syscalls.saturating_sub(earlier.write_syscalls),
            storage_read_bytes: self.storage_read_bytes.saturating_sub(earlier.storage_read_bytes),
            storage_write_bytes: self.storage_write_bytes.saturating_sub(earlier.storage_write_bytes),
            cancelled_write_bytes: self.cancelled_write_bytes.saturating_sub(earlier.cancelled_write_bytes),
            user_cpu_us: self.user_cpu_us.saturating_sub(earlier.user_cpu_us),
            system_cpu_us: self.system_cpu_us.saturating_sub(earlier.system_cpu_us),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary_switches: self.voluntary_switches.saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self.involuntary_switches.saturating_sub(earlier.involuntary_switches),
            peak_rss_kib: self.peak_rss_kib,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn reading_a_file_shows_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 64 * 1024]).unwrap();
        let before = OsCounters::now();
        let mut buf = Vec::new();
        std::fs::File::open(&path).unwrap().read_to_end(&mut buf).unwrap();
        let d = OsCounters::now().since(&before);
        if std::path::Path::new("/proc/self/io").exists() {
            assert!(d.read_call_bytes >= 64 * 1024, "{d:?}");
            assert!(d.read_syscalls >= 1);
        }
        assert!(d.peak_rss_kib > 0);
    }
}
