//! The library's progress trait drawn as an indicatif bar, on a terminal only.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};

use blobbench::studies::context::{Observer, Quiet};

pub struct Bar {
    bar: Mutex<Option<ProgressBar>>,
}

/// A bar for `len` units labelled `what`, drawn with `template`.
pub fn bar(what: &str, len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len).with_message(what.to_string());
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "),
    );
    bar
}

impl Observer for Bar {
    fn begin(&self, what: &str, total: u64) {
        let bar = bar(what, total, "{msg:>12} [{bar:40}] {pos}/{len} ({per_sec}, ETA {eta})");
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, done: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.set_position(done);
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

/// A bar (drawn on stderr) when stdout is a terminal, silence otherwise
/// (pipes, CI, tests).
pub fn for_terminal() -> Arc<dyn Observer> {
    if std::io::stdout().is_terminal() {
        Arc::new(Bar { bar: Mutex::new(None) })
    } else {
        Arc::new(Quiet)
    }
}
