//! What a command says on stderr while its model runs go: progress and
//! warnings.
//!
//! Progress shows for a command that runs longer than [`FIRST_AFTER`]
//! (wall time), terminal or not: on a terminal one status line redrawn in
//! place, otherwise (a CI log, nohup, a pipe) a plain line every
//! [`LINE_EVERY`]. A line gives the modeled time of the runs in flight,
//! their total when the workload has a fixed duration, the runs done of
//! several, the wall time so far and the time left, estimated from the
//! share of the work done (runs done, plus the done part of runs whose
//! length is known). `--no-progress` turns it off; `--progress` (the
//! default) turns it back on. Warnings ([`Progress::warn`]) are printed
//! once each, whatever the progress setting. Standard output is never
//! touched, so `--json -` stays pure JSON.
//!
//! Left out: an estimate of a single run's length when the workload has
//! no fixed duration (how long a pass-based run takes is what the model
//! computes), and progress inside `sweep` (its own bar) and `bench`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `--no-progress`: no progress lines (warnings still show).
static HIDDEN: AtomicBool = AtomicBool::new(false);

/// Wall time before the first progress line: shorter commands say nothing.
pub const FIRST_AFTER: Duration = Duration::from_secs(2);

/// How often a plain progress line is printed (wall time).
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// Shows or hides progress for the rest of the command (the global
/// `--progress` / `--no-progress`, the last one given).
pub fn set_shown(shown: bool) {
    HIDDEN.store(!shown, Ordering::Relaxed);
}

/// Whether progress shows after command line `args`: the last of
/// `--progress` and `--no-progress` wins, wherever each stands (clap
/// resolves the pair only within one subcommand level, and an alias
/// `numalab --no-progress` followed by `run ... --progress` spans two).
/// Arguments after `--` are not flags.
pub fn shown_by_flags<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    args.iter()
        .map(|a| a.as_ref())
        .take_while(|a| *a != "--")
        .filter_map(|a| match a.to_str() {
            Some("--progress") => Some(true),
            Some("--no-progress") => Some(false),
            _ => None,
        })
        .last()
        .unwrap_or(true)
}

/// Writes `numalab: TEXT` on stderr (what a command did besides its
/// output, e.g. where it wrote a file).
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "numalab: {text}");
}

/// Writes `numalab: warning: TEXT` on stderr. Not eprintln!: a closed
/// stderr must not end the command.
pub fn warn(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "numalab: warning: {text}");
}

/// One run in flight.
#[derive(Clone, Debug, PartialEq)]
pub struct Running {
    /// Which run (the workload's name).
    pub label: String,
    /// Modeled seconds so far.
    pub modeled_s: f64,
    /// Modeled seconds it will run, when the workload has a fixed duration.
    pub total_s: Option<f64>,
}

impl Running {
    /// The done share of the run, when its length is known.
    fn fraction(&self) -> Option<f64> {
        self.total_s
            .filter(|t| *t > 0.0)
            .map(|t| (self.modeled_s / t).clamp(0.0, 1.0))
    }

    fn describe(&self) -> String {
        match self.total_s {
            Some(t) => format!(
                "{} at {:.1} of {:.1} s modeled",
                self.label, self.modeled_s, t
            ),
            None => format!("{} at {:.1} s modeled", self.label, self.modeled_s),
        }
    }
}

/// A duration as a person reads it: `42 s`, `3 min 05 s`.
fn wall(d: f64) -> String {
    let s = d.max(0.0).round() as u64;
    if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// The status text of `runs` runs of which `done` finished and `running`
/// are in flight, `elapsed` seconds of wall time after the start; the
/// counts and modeled times are as of `reported` seconds (the model
/// reports once per modeled second), which the time left is counted from.
pub fn status(
    label: &str,
    runs: usize,
    done: usize,
    running: &[Running],
    (elapsed, reported): (f64, f64),
) -> String {
    let done_share = done as f64 + running.iter().filter_map(Running::fraction).sum::<f64>();
    let left = if done_share > 0.0 {
        let rest = (runs as f64 - done_share).max(0.0);
        let left = reported * rest / done_share - (elapsed - reported);
        if left >= 0.5 {
            format!("about {} left", wall(left))
        } else {
            "nearly done".to_string()
        }
    } else if running.iter().any(|r| r.total_s.is_some()) {
        "time left not known yet".to_string()
    } else if runs == 1 {
        "time left not known before the run ends (no fixed duration)".to_string()
    } else {
        "time left not known before a run ends".to_string()
    };
    if runs == 1 {
        if let [r] = running {
            return format!("{}, {} elapsed, {left}", r.describe(), wall(elapsed));
        }
    }
    let mut shown: Vec<String> = running.iter().take(2).map(Running::describe).collect();
    if running.len() > 2 {
        shown.push(format!("{} more", running.len() - 2));
    }
    let flight = if shown.is_empty() {
        String::new()
    } else {
        format!(" ({})", shown.join("; "))
    };
    format!(
        "{label}: {done} of {runs} runs done, {} running{flight}, {} elapsed, {left}",
        running.len(),
        wall(elapsed)
    )
}

struct State {
    done: usize,
    running: Vec<(usize, Running)>,
    next_id: usize,
    last_line: Option<Instant>,
    /// Wall seconds after the start of the last report of a run's
    /// modeled time, or of a run's end.
    reported: f64,
    bar: Option<ProgressBar>,
    warned: BTreeSet<String>,
}

/// What the command's threads and the ticker share.
struct Shared {
    label: String,
    runs: usize,
    shown: bool,
    warnings: bool,
    tty: bool,
    started: Instant,
    state: Mutex<State>,
    /// Set when the command is done; the ticker waits on it.
    stop: (Mutex<bool>, Condvar),
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A thread that panicked holding the lock left counts only.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows the status, if it is time: after [`FIRST_AFTER`], redrawn on
    /// a terminal, a line every [`LINE_EVERY`] otherwise.
    fn show(&self, st: &mut State) {
        let elapsed = self.started.elapsed();
        if !self.shown || elapsed < FIRST_AFTER {
            return;
        }
        let due = st.last_line.is_none_or(|t| t.elapsed() >= LINE_EVERY);
        if !self.tty && !due {
            return;
        }
        let running: Vec<Running> = st.running.iter().map(|(_, r)| r.clone()).collect();
        let text = status(
            &self.label,
            self.runs,
            st.done,
            &running,
            (elapsed.as_secs_f64(), st.reported),
        );
        if self.tty {
            let bar = st.bar.get_or_insert_with(|| {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b
            });
            bar.set_message(text);
            bar.tick();
        } else {
            st.last_line = Some(Instant::now());
            let _ = writeln!(std::io::stderr().lock(), "numalab: {text}");
        }
    }
}

/// How often the ticker looks at the clock: the model reports its time
/// once per modeled second, which can be many seconds of wall time.
const TICK: Duration = Duration::from_millis(250);

/// The progress and warnings of one command's model runs (one, or many in
/// parallel: it is shared between threads). While progress shows, a
/// ticker thread keeps the status going between the model's reports.
pub struct Progress {
    shared: Arc<Shared>,
    ticker: Mutex<Option<JoinHandle<()>>>,
}

impl Progress {
    /// Progress of `runs` runs called `label` (a workload, a reproduction),
    /// shown unless `--no-progress`; warnings shown.
    pub fn new(label: &str, runs: usize) -> Progress {
        Progress::with(label, runs, !HIDDEN.load(Ordering::Relaxed), true)
    }

    /// Nothing on stderr: for callers that report on their own (`sweep`,
    /// `bench`, the Python package).
    pub fn silent() -> Progress {
        Progress::with("", 1, false, false)
    }

    fn with(label: &str, runs: usize, shown: bool, warnings: bool) -> Progress {
        let shared = Arc::new(Shared {
            label: label.to_string(),
            runs: runs.max(1),
            shown,
            warnings,
            tty: std::io::stderr().is_terminal(),
            started: Instant::now(),
            state: Mutex::new(State {
                done: 0,
                running: Vec::new(),
                next_id: 0,
                last_line: None,
                reported: 0.0,
                bar: None,
                warned: BTreeSet::new(),
            }),
            stop: (Mutex::new(false), Condvar::new()),
        });
        let ticker = shown.then(|| {
            let s = Arc::clone(&shared);
            std::thread::spawn(move || {
                let (lock, cv) = &s.stop;
                let mut stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped {
                    stopped = cv
                        .wait_timeout(stopped, TICK)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    if !*stopped {
                        s.show(&mut s.lock());
                    }
                }
            })
        });
        Progress {
            shared,
            ticker: Mutex::new(ticker),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// A run starts: `label`, and its modeled length when it is fixed.
    pub fn start(&self, label: &str, total_s: Option<f64>) -> Run<'_> {
        let mut st = self.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.running.push((
            id,
            Running {
                label: label.to_string(),
                modeled_s: 0.0,
                total_s,
            },
        ));
        Run { progress: self, id }
    }

    /// Prints `numalab: warning: TEXT` once per text (unless silent),
    /// above the status line on a terminal.
    pub fn warn(&self, text: &str) {
        self.warn_once(text, text);
    }

    /// Prints `numalab: warning: TEXT` unless something was already said
    /// under `key` (one warning per subject: what a run will not do, said
    /// before it, is not said again after it).
    pub fn warn_once(&self, key: &str, text: &str) {
        self.say_once(key, &format!("warning: {text}"));
    }

    /// Prints `numalab: note: TEXT` unless something was already said
    /// under `key`.
    pub fn note_once(&self, key: &str, text: &str) {
        self.say_once(key, &format!("note: {text}"));
    }

    fn say_once(&self, key: &str, text: &str) {
        if !self.shared.warnings {
            return;
        }
        let mut st = self.lock();
        if !st.warned.insert(key.to_string()) {
            return;
        }
        match &st.bar {
            Some(b) => b.suspend(|| note(text)),
            None => note(text),
        }
    }

    fn update(&self, id: usize, modeled_s: f64) {
        if !self.shared.shown {
            return;
        }
        let mut st = self.lock();
        if let Some((_, r)) = st.running.iter_mut().find(|(i, _)| *i == id) {
            r.modeled_s = modeled_s;
        }
        st.reported = self.shared.started.elapsed().as_secs_f64();
        self.shared.show(&mut st);
    }

    fn done(&self, id: usize) {
        let mut st = self.lock();
        st.running.retain(|(i, _)| *i != id);
        st.done += 1;
        st.reported = self.shared.started.elapsed().as_secs_f64();
    }

    /// Stops the ticker and clears the status line (a terminal's); plain
    /// lines stay.
    pub fn finish(&self) {
        {
            let (lock, cv) = &self.shared.stop;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        let ticker = self.ticker.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = ticker {
            let _ = t.join();
        }
        if let Some(b) = self.lock().bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    /// An early return (an error) finishes too: no ticker outlives it.
    fn drop(&mut self) {
        self.finish();
    }
}

/// A run in flight; it counts as done when dropped.
pub struct Run<'a> {
    progress: &'a Progress,
    id: usize,
}

impl Run<'_> {
    /// Called with the run's modeled seconds so far.
    pub fn update(&self, modeled_s: f64) {
        self.progress.update(self.id, modeled_s);
    }
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        self.progress.done(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, modeled_s: f64, total_s: Option<f64>) -> Running {
        Running {
            label: label.into(),
            modeled_s,
            total_s,
        }
    }

    #[test]
    fn a_run_of_fixed_length_gives_its_total_and_time_left() {
        let oltp = |m| [run("oltp", m, Some(4.0))];
        let s = status("oltp", 1, 0, &oltp(1.0), (10.0, 10.0));
        assert_eq!(
            s,
            "oltp at 1.0 of 4.0 s modeled, 10 s elapsed, about 30 s left"
        );
        // Counted from the last report: 4 s later, 4 s less to go.
        let s = status("oltp", 1, 0, &oltp(1.0), (14.0, 10.0));
        assert!(s.ends_with("14 s elapsed, about 26 s left"), "{s}");
        let s = status("oltp", 1, 0, &oltp(1.0), (99.0, 10.0));
        assert!(s.ends_with("nearly done"), "{s}");
        let s = status("oltp", 1, 0, &oltp(0.0), (2.0, 0.0));
        assert!(s.ends_with("2 s elapsed, time left not known yet"), "{s}");
    }

    #[test]
    fn a_run_without_fixed_length_says_so() {
        let s = status("numa01", 1, 0, &[run("numa01", 12.5, None)], (7.0, 7.0));
        assert_eq!(
            s,
            "numa01 at 12.5 s modeled, 7 s elapsed, time left not known before the run ends (no fixed duration)"
        );
    }

    #[test]
    fn several_runs_count_done_runs_toward_the_time_left() {
        let flight = [
            run("numa01", 3.0, None),
            run("oltp", 1.5, Some(3.0)),
            run("numa02", 1.0, None),
        ];
        // 2 done and half of oltp: 2.5 of 8 in 100 s, 5.5 to go.
        let s = status("reproduce all", 8, 2, &flight, (100.0, 100.0));
        assert_eq!(
            s,
            "reproduce all: 2 of 8 runs done, 3 running (numa01 at 3.0 s modeled; oltp at 1.5 of 3.0 s modeled; 1 more), 100 s elapsed, about 3 min 40 s left"
        );
        let s = status("run", 4, 0, &flight[..1], (3.0, 3.0));
        assert!(s.ends_with("time left not known before a run ends"), "{s}");
    }

    #[test]
    fn the_last_progress_flag_wins() {
        assert!(shown_by_flags(&["numalab", "list", "knobs"]));
        assert!(!shown_by_flags(&["numalab", "run", "--no-progress"]));
        assert!(!shown_by_flags(&[
            "numalab",
            "--progress",
            "run",
            "--no-progress"
        ]));
        assert!(shown_by_flags(&[
            "numalab",
            "--no-progress",
            "run",
            "--progress"
        ]));
        assert!(shown_by_flags(&["numalab", "run", "--", "--no-progress"]));
    }

    #[test]
    fn runs_count_as_done_when_they_end() {
        let p = Progress::silent();
        let a = p.start("a", None);
        let b = p.start("b", Some(2.0));
        drop(a);
        let st = p.lock();
        assert_eq!(st.done, 1);
        assert_eq!(st.running.len(), 1);
        assert_eq!(st.running[0].1.label, "b");
        drop(st);
        drop(b);
        assert_eq!(p.lock().done, 2);
    }
}
