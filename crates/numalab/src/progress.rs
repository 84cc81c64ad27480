//! A progress bar on a terminal, only for runs longer than a second, never
//! when stderr is not a terminal or the output is JSON on stdout.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Reports virtual time as a run goes.
pub struct Progress {
    enabled: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    label: String,
}

impl Progress {
    /// A progress reporter; `allowed` is false for JSON-on-stdout output.
    pub fn new(label: &str, allowed: bool) -> Progress {
        Progress {
            enabled: allowed && std::io::stderr().is_terminal(),
            started: Instant::now(),
            bar: None,
            label: label.to_string(),
        }
    }

    /// Called with virtual seconds elapsed.
    pub fn update(&mut self, virtual_s: f64) {
        if !self.enabled || self.started.elapsed() < Duration::from_secs(1) {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b
        });
        bar.set_message(format!(
            "{}: {:.1} s of virtual time",
            self.label, virtual_s
        ));
        bar.tick();
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}
