//! `real run --trace`: the kernel's own ftrace text of a run, from tracefs
//! (`events/SYSTEM/EVENT/enable`, `trace`), in the format the model writes
//! (`numalab_record::ftrace`), so both go through one parser.
//!
//! [`TraceCapture::start`] stops tracing, clears the buffer, enables the
//! events and starts tracing; [`TraceCapture::finish`] stops it, reads the
//! `trace` file and disables the events it enabled (also on drop, so a
//! failed run leaves no event on). Left out: the buffer size (the kernel's
//! default `buffer_size_kb`; an overrun loses the oldest events, as the
//! header's entries-in-buffer/entries-written then says), instances, and
//! events this kernel lacks (skipped with a note).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Tracing started on a tracefs mount, with the events it enabled.
#[derive(Debug)]
pub struct TraceCapture {
    root: PathBuf,
    enabled: Vec<PathBuf>,
    /// Events asked for that this kernel does not have.
    pub missing: Vec<String>,
}

fn write(p: &Path, v: &str) -> io::Result<()> {
    fs::write(p, v).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

impl TraceCapture {
    /// Starts tracing `events` (`system/event` paths under `events/`) on
    /// the tracefs mounted at `root`.
    pub fn start(root: &Path, events: &[String]) -> io::Result<TraceCapture> {
        write(&root.join("tracing_on"), "0")?;
        // Opening `trace` with O_TRUNC clears the buffer.
        write(&root.join("trace"), "")?;
        let mut c = TraceCapture {
            root: root.to_path_buf(),
            enabled: Vec::new(),
            missing: Vec::new(),
        };
        for e in events {
            let p = root.join("events").join(e).join("enable");
            if !p.exists() {
                c.missing.push(e.clone());
                continue;
            }
            write(&p, "1")?;
            c.enabled.push(p);
        }
        write(&root.join("tracing_on"), "1")?;
        Ok(c)
    }

    /// Stops tracing and returns the `trace` file's text.
    pub fn finish(mut self) -> io::Result<String> {
        write(&self.root.join("tracing_on"), "0")?;
        let p = self.root.join("trace");
        let text = fs::read_to_string(&p)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        self.disable();
        Ok(text)
    }

    fn disable(&mut self) {
        for p in self.enabled.drain(..) {
            let _ = fs::write(&p, "0");
        }
    }
}

impl Drop for TraceCapture {
    fn drop(&mut self) {
        if !self.enabled.is_empty() {
            let _ = fs::write(self.root.join("tracing_on"), "0");
            self.disable();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enables_reads_and_disables_on_a_fake_tracefs() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("events/sched/sched_move_numa")).unwrap();
        fs::write(r.join("events/sched/sched_move_numa/enable"), "0").unwrap();
        fs::write(r.join("trace"), "old").unwrap();
        let c = TraceCapture::start(
            r,
            &["sched/sched_move_numa".into(), "sched/sched_bogus".into()],
        )
        .unwrap();
        assert_eq!(c.missing, vec!["sched/sched_bogus".to_string()]);
        assert_eq!(fs::read_to_string(r.join("tracing_on")).unwrap(), "1");
        assert_eq!(
            fs::read_to_string(r.join("events/sched/sched_move_numa/enable")).unwrap(),
            "1"
        );
        fs::write(r.join("trace"), "# tracer: nop\n").unwrap();
        assert_eq!(c.finish().unwrap(), "# tracer: nop\n");
        assert_eq!(fs::read_to_string(r.join("tracing_on")).unwrap(), "0");
        assert_eq!(
            fs::read_to_string(r.join("events/sched/sched_move_numa/enable")).unwrap(),
            "0"
        );
    }
}
