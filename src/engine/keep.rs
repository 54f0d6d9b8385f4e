//! What an engine keeps open between its sessions. A long-running reader
//! opens its database once and reads through it for hours: the engine's
//! own cache stays filled (redb's and fjall's in the heap, SQLite's page
//! cache), its maps and memory stay faulted in (LMDB's map). A session
//! opened with [`OpenMode::keep`](super::OpenMode) leaves its handle open
//! for the engine's next session (any session uses a kept handle, and it
//! stays kept), so the timed runs after a warm-up read from the state the
//! warm-up left; [`Engine::drop_own_caches`] (a cold run) and every write
//! session close what was kept. (A writer with a commit granularity keeps
//! its own handle between its sessions: SQLite's connection, see
//! `SqliteEngine`, and redb's database, see `RedbEngine`.)
//!
//! [`Engine::drop_own_caches`]: super::Engine::drop_own_caches

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::Result;

/// One handle shared by the sessions alive at the same time (LMDB's
/// environment, redb's and fjall's database: each engine allows one per
/// process and path). It closes when its last session closes, unless a
/// session kept it; then it stays open until [`Shared::release`].
pub(crate) struct Shared<T> {
    live: Mutex<Weak<T>>,
    kept: Mutex<Option<Arc<T>>>,
}

impl<T> Shared<T> {
    pub fn new() -> Self {
        Shared { live: Mutex::new(Weak::new()), kept: Mutex::new(None) }
    }

    /// The open handle, or a new one made by `open`, and whether this call
    /// opened it. With `keep` the handle stays open after its sessions.
    pub fn get_or_open(&self, keep: bool, open: impl FnOnce() -> Result<T>) -> Result<(Arc<T>, bool)> {
        let mut live = lock(&self.live);
        let (handle, opened) = match live.upgrade() {
            Some(h) => (h, false),
            None => {
                let h = Arc::new(open()?);
                *live = Arc::downgrade(&h);
                (h, true)
            }
        };
        if keep {
            *lock(&self.kept) = Some(Arc::clone(&handle));
        }
        Ok((handle, opened))
    }

    /// Stops keeping the handle: it closes now when no session has it
    /// open, else when the last one closes.
    pub fn release(&self) {
        let kept = lock(&self.kept).take();
        drop(kept);
    }

    /// [`Shared::release`], unless the kept handle is one that `stays`.
    pub fn release_unless(&self, stays: impl FnOnce(&T) -> bool) {
        let kept = {
            let mut kept = lock(&self.kept);
            if kept.as_deref().is_some_and(stays) {
                None
            } else {
                kept.take()
            }
        };
        drop(kept);
    }
}

/// Connections left open, idle, by sessions that kept them (SQLite's and
/// PostgreSQL's: each session has its own). Clones share the same pool.
pub(crate) struct Idle<T>(Arc<Mutex<Vec<T>>>);

impl<T> Clone for Idle<T> {
    fn clone(&self) -> Self {
        Idle(Arc::clone(&self.0))
    }
}

impl<T> Idle<T> {
    pub fn new() -> Self {
        Idle(Arc::new(Mutex::new(Vec::new())))
    }

    /// A connection for a session: one an earlier session kept, when
    /// there is one, else a new one from `open`. The lease gives it back
    /// at the session's close when it was kept, or with `keep`.
    pub fn lease(&self, keep: bool, open: impl FnOnce() -> Result<T>) -> Result<(T, Lease<T>)> {
        let kept = lock(&self.0).pop();
        let opened = kept.is_none();
        let conn = match kept {
            Some(c) => c,
            None => open()?,
        };
        Ok((conn, Lease { opened, back: (keep || !opened).then(|| self.clone()) }))
    }

    /// Closes every idle connection.
    pub fn clear(&self) {
        let idle = std::mem::take(&mut *lock(&self.0));
        drop(idle);
    }
}

/// Where a session's connection came from, and where it goes when the
/// session closes.
pub(crate) struct Lease<T> {
    /// The session opened the connection (none was idle).
    pub opened: bool,
    back: Option<Idle<T>>,
}

impl<T> Lease<T> {
    /// A connection opened for one session only.
    pub fn once() -> Self {
        Lease { opened: true, back: None }
    }

    /// The connection goes back to the pool when the session ends.
    pub fn keeps(&self) -> bool {
        self.back.is_some()
    }

    /// Ends the session's use of `conn`: gives it back to the pool when
    /// the session kept it and `reusable` (no transaction left open);
    /// else returns it, to be closed by the caller.
    pub fn end(self, conn: T, reusable: bool) -> Option<T> {
        match self.back {
            Some(idle) if reusable => {
                lock(&idle.0).push(conn);
                None
            }
            _ => Some(conn),
        }
    }
}

/// A lock that a panicked holder did not poison for good (the handles
/// themselves stay valid).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// An `open` that makes handles 1, 2, 3... counting in `opens`.
    fn counting(opens: &Cell<u32>) -> impl Fn() -> Result<u32> + Copy + '_ {
        move || {
            opens.set(opens.get() + 1);
            Ok(opens.get())
        }
    }

    #[test]
    fn a_shared_handle_closes_with_its_last_session_unless_kept() {
        let s = Shared::new();
        let opens = Cell::new(0);
        let open = counting(&opens);
        let (a, opened) = s.get_or_open(false, open).unwrap();
        assert!(opened);
        let (b, opened) = s.get_or_open(false, open).unwrap();
        assert!(!opened && Arc::ptr_eq(&a, &b), "sessions alive together share one handle");
        drop((a, b));
        assert!(s.get_or_open(false, open).unwrap().1, "closed with its last session, so opened again");
        let (kept, _) = s.get_or_open(true, open).unwrap();
        let weak = Arc::downgrade(&kept);
        drop(kept);
        let (again, opened) = s.get_or_open(false, open).unwrap();
        assert!(!opened, "a kept handle outlives its sessions");
        drop(again);
        s.release();
        assert!(weak.upgrade().is_none(), "released with no session open: closed now");
        assert_eq!(opens.get(), 3);
    }

    #[test]
    fn kept_connections_are_reused_then_cleared() {
        let idle = Idle::new();
        let opens = Cell::new(0);
        let open = counting(&opens);
        let (a, lease) = idle.lease(true, open).unwrap();
        assert!(lease.opened);
        assert_eq!(lease.end(a, true), None, "kept: back to the pool");
        let (b, lease) = idle.lease(true, open).unwrap();
        assert!(!lease.opened && b == a, "the kept connection is reused");
        assert_eq!(lease.end(b, false), Some(b), "a connection left in a transaction is not kept");
        let (c, lease) = idle.lease(false, open).unwrap();
        assert!(lease.opened && c == 2);
        assert_eq!(lease.end(c, true), Some(c), "a session that does not keep closes its new connection");
        let (d, lease) = idle.lease(true, open).unwrap();
        assert_eq!(lease.end(d, true), None);
        let (e, lease) = idle.lease(false, open).unwrap();
        assert!(!lease.opened && e == d, "any session uses a kept connection");
        assert_eq!(lease.end(e, true), None, "and it stays kept");
        idle.clear();
        assert!(idle.lease(true, open).unwrap().1.opened, "cleared: nothing idle");
        assert!(Lease::<u32>::once().opened);
    }
}
