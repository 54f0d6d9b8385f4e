//! One CSV row per timed run, for spreadsheets and plotting scripts.

use std::fmt::Write;

use crate::results::ResultFile;

const HEADER: &str = "experiment,run,ops,misses,bytes,per_op_us,loop_per_op_us,mb_per_s,\
setup_ns,loop_ns,commit_ns,close_ns,checkpoint_ns,kvtest_total_ns,\
read_call_bytes,write_call_bytes,read_syscalls,write_syscalls,storage_read_bytes,storage_write_bytes,\
user_cpu_us,system_cpu_us,minor_faults,major_faults,peak_rss_kib,cold_resident_pct";

pub fn runs(results: &ResultFile) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for e in &results.experiments {
        for r in &e.runs {
            let (p, o) = (&r.phases, &r.os);
            let cold = r.cold.as_ref().map(|c| format!("{:.2}", c.resident_pct)).unwrap_or_default();
            let _ = writeln!(
                out,
                "{},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&e.id),
                r.index,
                r.ops,
                r.misses,
                r.bytes,
                r.per_op_us,
                r.loop_per_op_us,
                r.mb_per_s,
                p.setup_ns,
                p.loop_ns,
                p.commit_ns,
                p.close_ns,
                p.checkpoint_ns,
                p.kvtest_total_ns,
                o.read_call_bytes,
                o.write_call_bytes,
                o.read_syscalls,
                o.write_syscalls,
                o.storage_read_bytes,
                o.storage_write_bytes,
                o.user_cpu_us,
                o.system_cpu_us,
                o.minor_faults,
                o.major_faults,
                o.peak_rss_kib,
                cold
            );
        }
    }
    out
}

/// Quotes a field when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field("read/db-sql"), "read/db-sql");
    }
}
