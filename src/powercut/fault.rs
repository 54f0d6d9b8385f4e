//! Injected I/O faults: the n-th read, write or fsync through the layer
//! fails with a chosen errno, as a failing disk or a full one would.

use super::reply::{Counters, Res};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Fsync,
}

/// Every fault: name, operation, errno.
pub const FAULTS: [(&str, Op, i32); 4] = [
    ("read-eio", Op::Read, libc::EIO),
    ("write-eio", Op::Write, libc::EIO),
    ("write-enospc", Op::Write, libc::ENOSPC),
    ("fsync-eio", Op::Fsync, libc::EIO),
];

/// Which operation fails, from which occurrence on. A failed write or read
/// keeps failing (a bad sector, a full disk); a failed fsync fails once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    fault: Option<(Op, i32)>,
    /// The 1-based occurrence of the operation that fails first.
    at: u64,
    seen: u64,
}

impl FaultPlan {
    pub fn none() -> Self {
        FaultPlan { fault: None, at: 0, seen: 0 }
    }

    /// `name` (one of [`FAULTS`]) from its `at`-th occurrence.
    pub fn parse(name: &str, at: u64) -> Result<Self, String> {
        let t = name.trim().to_ascii_lowercase();
        let found = FAULTS.iter().find(|f| f.0 == t).ok_or_else(|| {
            let names: Vec<&str> = FAULTS.iter().map(|f| f.0).collect();
            format!("unknown fault {name:?} (one of: {})", names.join(", "))
        })?;
        Ok(FaultPlan { fault: Some((found.1, found.2)), at: at.max(1), seen: 0 })
    }

    pub fn check(&mut self, op: Op, counters: &mut Counters) -> Res<()> {
        let Some((fault_op, errno)) = self.fault else { return Ok(()) };
        if op != fault_op {
            return Ok(());
        }
        self.seen += 1;
        let fails = if op == Op::Fsync { self.seen == self.at } else { self.seen >= self.at };
        if fails {
            counters.faults_injected += 1;
            return Err(errno);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_fire_from_their_occurrence() {
        let mut c = Counters::default();
        let mut w = FaultPlan::parse("write-enospc", 2).unwrap();
        assert_eq!(w.check(Op::Read, &mut c), Ok(()));
        assert_eq!(w.check(Op::Write, &mut c), Ok(()));
        assert_eq!(w.check(Op::Write, &mut c), Err(libc::ENOSPC));
        assert_eq!(w.check(Op::Write, &mut c), Err(libc::ENOSPC), "a full disk stays full");
        let mut f = FaultPlan::parse("fsync-eio", 1).unwrap();
        assert_eq!(f.check(Op::Fsync, &mut c), Err(libc::EIO));
        assert_eq!(f.check(Op::Fsync, &mut c), Ok(()), "Linux reports a writeback error once");
        assert_eq!(c.faults_injected, 3);
        assert!(FaultPlan::parse("eio", 1).unwrap_err().contains("read-eio"));
    }
}
