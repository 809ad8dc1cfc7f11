//! Progress of long one-shot jobs (`compact`, `vacuum`, `write`, `changes`, `demo`): a bar on
//! a terminal (the `indicatif` crate), otherwise one plain line on stderr every
//! [`LINE_EVERY`] — none at all for jobs shorter than that, so scripts see nothing new.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a non-terminal run prints a progress line.
pub(crate) const LINE_EVERY: Duration = Duration::from_secs(10);

/// One job's progress.
#[derive(Debug)]
pub(crate) struct Progress {
    what: String,
    unit: &'static str,
    total: Option<u64>,
    done: AtomicU64,
    bar: Option<ProgressBar>,
    /// When the last plain line was printed (or the job started).
    last_line: Mutex<Instant>,
    quiet: bool,
}

impl Progress {
    /// Progress of `what`, counted in `unit`s, out of `total` when known.
    pub(crate) fn new(what: &str, unit: &'static str, total: Option<u64>) -> Progress {
        use std::io::IsTerminal as _;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = match total {
                Some(t) => ProgressBar::new(t),
                None => ProgressBar::new_spinner(),
            };
            let template = if total.is_some() {
                "{msg} [{bar:30}] {pos}/{len} {prefix} ({rate}, {eta} left)"
            } else {
                "{spinner} {msg}: {pos} {prefix} ({rate})"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                // Whole units a second: indicatif's own {per_sec} prints four decimals.
                let style = style.with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}/s", state.per_sec());
                });
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(what.to_string());
            bar.set_prefix(unit);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            what: what.to_string(),
            unit,
            total,
            done: AtomicU64::new(0),
            bar,
            last_line: Mutex::new(Instant::now()),
            quiet: false,
        }
    }

    /// Progress that shows nothing (library callers, tests).
    pub(crate) fn hidden() -> Progress {
        Progress { quiet: true, bar: None, ..Progress::new("", "", None) }
    }

    /// Counts `n` more units.
    pub(crate) fn inc(&self, n: u64) {
        let done = self.done.fetch_add(n, Relaxed) + n;
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        let mut last = self.last_line.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.elapsed() >= LINE_EVERY {
            *last = Instant::now();
            match self.total {
                // A closed stderr must not end the command: write, and ignore a failure.
                Some(t) => crate::common::say(&format!("{}: {done}/{t} {}", self.what, self.unit)),
                None => crate::common::say(&format!("{}: {done} {}", self.what, self.unit)),
            }
        }
    }

    /// Units counted so far.
    pub(crate) fn done(&self) -> u64 {
        self.done.load(Relaxed)
    }

    /// Ends the bar (a plain run prints nothing more).
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_whether_shown_or_not() {
        let p = Progress::new("vacuum", "files", Some(3));
        p.inc(2);
        p.inc(1);
        assert_eq!(p.done(), 3);
        p.finish();
        let h = Progress::hidden();
        h.inc(5);
        assert_eq!(h.done(), 5);
    }
}
