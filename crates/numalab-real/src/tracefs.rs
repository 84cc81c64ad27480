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
//!
//! `--probe DEF` adds the kernel's dynamic events (kprobes, kretprobes,
//! fprobes: `Documentation/trace/kprobetrace.rst`, `fprobetrace.rst`) for
//! the run: each definition is appended to `dynamic_events`, enabled with
//! the rest, and removed again when the capture ends. That is how the
//! guest's scan schedule (`change_prot_numa` per VMA, `task_numa_work`)
//! is lined up with the model's, where the kernel has no tracepoint.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A dynamic event definition (`--probe`), as `dynamic_events` takes it,
/// with the `GROUP/EVENT` it creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The definition, as given.
    pub def: String,
    /// `GROUP/EVENT`, the event's path under `events/`.
    pub event: String,
}

impl Probe {
    /// Parses a definition that names its event: `p:[GROUP/]EVENT SYM...`
    /// (kprobe), `r:` (kretprobe) or `f:` (fprobe; `SYM%return` for the
    /// exit). The group defaults as the kernel's (`kprobes`, `fprobes`).
    /// The name is required, so the event can be enabled and removed.
    pub fn parse(def: &str) -> Result<Probe, String> {
        let def = def.trim();
        let head = def.split_whitespace().next().unwrap_or("");
        let (kind, name) = head.split_once(':').ok_or_else(|| {
            format!("--probe {def:?}: expected p:NAME, r:NAME or f:NAME, then the symbol")
        })?;
        let group = match kind {
            "p" | "r" => "kprobes",
            "f" => "fprobes",
            _ => {
                return Err(format!(
                    "--probe {def:?}: unknown kind {kind:?} (p, r or f: kprobe, kretprobe, fprobe)"
                ))
            }
        };
        let (group, event) = name.split_once('/').unwrap_or((group, name));
        let ok =
            |x: &str| !x.is_empty() && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok(group) || !ok(event) {
            return Err(format!(
                "--probe {def:?}: the event needs a name of letters, digits and _ ({kind}:[GROUP/]NAME)"
            ));
        }
        if def.split_whitespace().nth(1).is_none() {
            return Err(format!("--probe {def:?}: no symbol to probe"));
        }
        Ok(Probe {
            def: def.to_string(),
            event: format!("{group}/{event}"),
        })
    }
}

/// Appends `line` to tracefs's `dynamic_events` (opened for append, as
/// `echo >>` does: a plain write would clear every dynamic event).
fn append_dynamic_event(root: &Path, line: &str) -> io::Result<()> {
    use std::io::Write;
    let p = root.join("dynamic_events");
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {line:?}: {e}", p.display())))
}

/// Tracing started on a tracefs mount, with the events it enabled.
#[derive(Debug)]
pub struct TraceCapture {
    root: PathBuf,
    enabled: Vec<PathBuf>,
    /// Dynamic events it created (`GROUP/EVENT`), removed at the end.
    probes: Vec<String>,
    /// Events asked for that this kernel does not have.
    pub missing: Vec<String>,
}

fn write(p: &Path, v: &str) -> io::Result<()> {
    fs::write(p, v).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

impl TraceCapture {
    /// Starts tracing `events` (`system/event` paths under `events/`) and
    /// the dynamic events `probes` on the tracefs mounted at `root`. A probe
    /// the kernel refuses (unknown symbol, bad fetch argument) is an error:
    /// the kernel's reason is in tracefs's `error_log`.
    pub fn start(root: &Path, events: &[String], probes: &[Probe]) -> io::Result<TraceCapture> {
        write(&root.join("tracing_on"), "0")?;
        // Opening `trace` with O_TRUNC clears the buffer.
        write(&root.join("trace"), "")?;
        let mut c = TraceCapture {
            root: root.to_path_buf(),
            enabled: Vec::new(),
            probes: Vec::new(),
            missing: Vec::new(),
        };
        for p in probes {
            append_dynamic_event(root, &p.def).map_err(|e| {
                let log = fs::read_to_string(root.join("error_log")).unwrap_or_default();
                let last = log.lines().rev().take(3).collect::<Vec<_>>();
                let why: Vec<&str> = last.into_iter().rev().collect();
                io::Error::new(e.kind(), format!("{e} (error_log: {})", why.join(" / ")))
            })?;
            c.probes.push(p.event.clone());
            let en = root.join("events").join(&p.event).join("enable");
            write(&en, "1")?;
            c.enabled.push(en);
        }
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
        for e in std::mem::take(&mut self.probes) {
            let _ = append_dynamic_event(&self.root, &format!("-:{e}"));
        }
    }
}

impl Drop for TraceCapture {
    fn drop(&mut self) {
        if !self.enabled.is_empty() || !self.probes.is_empty() {
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
            &[],
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

    #[test]
    fn probe_definitions_need_a_kind_a_name_and_a_symbol() {
        let p = Probe::parse("f:numalab/cpn change_prot_numa vma->vm_start").unwrap();
        assert_eq!(p.event, "numalab/cpn");
        assert_eq!(
            Probe::parse("r:cpn_ret change_prot_numa $retval")
                .unwrap()
                .event,
            "kprobes/cpn_ret"
        );
        assert_eq!(
            Probe::parse("f:tnw task_numa_work").unwrap().event,
            "fprobes/tnw"
        );
        for bad in [
            "change_prot_numa",
            "p change_prot_numa",
            "x:a sym",
            "p: sym",
            "p:a/b-c sym",
            "p:name",
        ] {
            assert!(Probe::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn probes_are_added_enabled_and_removed_on_a_fake_tracefs() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::write(r.join("trace"), "").unwrap();
        fs::write(r.join("dynamic_events"), "").unwrap();
        // The fake kernel makes the event's directory at once.
        fs::create_dir_all(r.join("events/numalab/cpn")).unwrap();
        let p = Probe::parse("f:numalab/cpn change_prot_numa").unwrap();
        let c = TraceCapture::start(r, &[], std::slice::from_ref(&p)).unwrap();
        assert_eq!(
            fs::read_to_string(r.join("events/numalab/cpn/enable")).unwrap(),
            "1"
        );
        c.finish().unwrap();
        assert_eq!(
            fs::read_to_string(r.join("events/numalab/cpn/enable")).unwrap(),
            "0"
        );
        assert_eq!(
            fs::read_to_string(r.join("dynamic_events")).unwrap(),
            "f:numalab/cpn change_prot_numa\n-:numalab/cpn\n"
        );
    }
}
