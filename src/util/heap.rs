//! The process heap between timed sessions. glibc keeps memory a program
//! has freed (it seldom shrinks the heap), so a session that follows a
//! big allocation (redb's survey reads every page through its in-heap
//! cache) would reuse pages already faulted in, while a fresh process, or
//! an engine whose survey allocated little, pays those faults. Releasing
//! the free memory before each session makes every engine's sessions start
//! from the same kind of state: no freed memory kept resident.

/// Returns the heap's free memory to the system (glibc's `malloc_trim`).
pub fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// This process's resident set, in bytes (Linux's /proc/self/statm), for
/// checks that the heap was released; None where it cannot be read.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}
