//! The Ctrl-C flag: the signal handler sets it; long work (timed runs,
//! dataset builds, studies) checks it between steps and stops cleanly.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks running work to stop after the current step (Ctrl-C). Only touches
/// an atomic, so a signal handler may call it.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}
