//! Running the machine-loss test's methods, one after the other or at
//! once, and the stores a caller asked to keep once their losses are done.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::run::Target;
use crate::engine::throwaway::hosts::Replicated;
use crate::engine::{Engine, OpenMode, Session};
use crate::records::ConfigId;
use crate::{Error, Result};

/// Runs `one` on each method, in turn or (`at_once`) each on a thread of
/// its own, the results in the methods' order. A method that fails is a
/// row of its own (`failed` words it) and the others still run: an error
/// in one layout's cluster says nothing of another's, and the finished
/// methods' losses are kept. Stops at Ctrl-C (whether it did is
/// returned); a method it interrupted has no row.
pub(super) fn each_method<T: Send>(
    methods: &[ConfigId],
    at_once: bool,
    one: &(dyn Fn(usize, ConfigId) -> Result<T> + Sync),
    failed: fn(ConfigId, &Error) -> T,
) -> (Vec<T>, bool) {
    let outcomes: Vec<Result<T>> = if at_once {
        std::thread::scope(|s| {
            let handles: Vec<_> =
                methods.iter().enumerate().map(|(i, &method)| s.spawn(move || one(i, method))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(Error::invalid("its loss run panicked"))))
                .collect()
        })
    } else {
        let mut outcomes = Vec::new();
        for (i, &method) in methods.iter().enumerate() {
            outcomes.push(one(i, method));
            if crate::measure::stop_requested() {
                break;
            }
        }
        outcomes
    };
    let mut interrupted = crate::measure::stop_requested();
    let mut results = Vec::new();
    for (outcome, &method) in outcomes.into_iter().zip(methods) {
        match outcome {
            Ok(r) => results.push(r),
            Err(Error::Interrupted) => interrupted = true,
            Err(e) => results.push(failed(method, &e)),
        }
    }
    (results, interrupted)
}

/// A replicated store opened through its engine: the loss test's target.
pub(super) struct EngineTarget {
    pub engine: Box<dyn Engine>,
    pub cluster: Arc<Mutex<dyn Replicated + Send>>,
}

impl Target for EngineTarget {
    fn cluster(&self) -> Arc<Mutex<dyn Replicated + Send>> {
        Arc::clone(&self.cluster)
    }

    fn session(&self, newest: bool) -> Result<Box<dyn Session>> {
        self.engine.open(if newest { OpenMode::NEWEST_READ } else { OpenMode::WRITE })
    }
}

/// The stores of the methods a caller asked to keep, open on their
/// clusters, each whole again after its last loss, and the test's work
/// directory holding them: dropped, the stores end (their servers and
/// hosts with them), then the directory is removed.
pub struct Kept {
    stores: Mutex<Vec<(ConfigId, Box<dyn Engine>)>>,
    /// Declared last: removed after the stores have ended.
    root: tempfile::TempDir,
}

impl Kept {
    pub(super) fn new(root: tempfile::TempDir) -> Kept {
        Kept { stores: Mutex::new(Vec::new()), root }
    }

    /// The directory the methods' stores are made in.
    pub(super) fn dir(&self) -> &Path {
        self.root.path()
    }

    /// Keeps `method`'s store when `keep` asks for it and its losses all
    /// `completed`, and says whether it did; else the store ends here.
    pub(super) fn offer(
        &self,
        keep: &[ConfigId],
        (method, completed): (ConfigId, bool),
        engine: Option<Box<dyn Engine>>,
    ) -> bool {
        match engine.filter(|_| completed && keep.contains(&method)) {
            Some(engine) => {
                self.stores.lock().unwrap_or_else(|e| e.into_inner()).push((method, engine));
                true
            }
            None => false,
        }
    }

    /// `method`'s store, when it was kept (its losses all completed).
    pub fn take(&self, method: ConfigId) -> Option<Box<dyn Engine>> {
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        let i = stores.iter().position(|(m, _)| *m == method)?;
        Some(stores.remove(i).1)
    }
}
