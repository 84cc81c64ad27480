//! A progress bar on a terminal, only for runs longer than a second, never
//! when stderr is not a terminal or the output is JSON on stdout. With
//! `--progress` and no terminal (a CI log, nohup), a plain line on stderr
//! every [`LINE_EVERY`] instead.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `--progress`: plain progress lines when stderr is not a terminal.
static LINES: AtomicBool = AtomicBool::new(false);

/// How often a plain progress line is printed (wall time).
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// Turns plain progress lines on (the global `--progress`).
pub fn set_lines(on: bool) {
    LINES.store(on, Ordering::Relaxed);
}

/// Reports virtual time as a run goes.
pub struct Progress {
    enabled: bool,
    started: Instant,
    bar: Option<ProgressBar>,
    label: String,
    /// Plain lines instead of a bar; when the last one was printed.
    lines: Option<Instant>,
}

impl Progress {
    /// A progress reporter; `allowed` is false for JSON-on-stdout output.
    pub fn new(label: &str, allowed: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let now = Instant::now();
        Progress {
            enabled: allowed && tty,
            started: now,
            bar: None,
            label: label.to_string(),
            lines: (!tty && LINES.load(Ordering::Relaxed)).then_some(now),
        }
    }

    /// Called with virtual seconds elapsed.
    pub fn update(&mut self, virtual_s: f64) {
        if let Some(last) = self.lines {
            if last.elapsed() >= LINE_EVERY {
                self.lines = Some(Instant::now());
                // Not eprintln!: a closed stderr must not end the run.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "numalab: {}: {:.1} s of virtual time after {:.0} s",
                    self.label,
                    virtual_s,
                    self.started.elapsed().as_secs_f64()
                );
            }
            return;
        }
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
