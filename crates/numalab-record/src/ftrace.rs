//! The kernel's ftrace text format, written and read: the `trace` file of
//! tracefs with the nop tracer (`# tracer: nop`, the column header, one
//! line per event: `comm-pid [cpu] flags seconds.micros: event: fields`).
//!
//! The model writes it ([`write`]) and `numalab real run --trace` copies
//! the real kernel's; [`parse`] reads both, so a model trace and a kernel
//! trace of the same scenario go through one reader (`numalab trace`).
//! Perfetto's UI opens the same text.
//!
//! Left out: the `-o record-tgid` column (parsed when present, never
//! written), function-tracer lines, and `trace_pipe` (no header).

use std::collections::BTreeMap;

/// One event line.
#[derive(Clone, Debug, PartialEq)]
pub struct FtraceEvent {
    /// Task comm (`<idle>` for the idle task).
    pub comm: String,
    /// Task pid.
    pub pid: u64,
    /// CPU number.
    pub cpu: u32,
    /// The latency flags column (`d..2.`), as printed.
    pub flags: String,
    /// Timestamp, ns (the text has microseconds).
    pub ts_ns: u64,
    /// Event name (`sched_switch`).
    pub event: String,
    /// The fields, as `TP_printk` printed them.
    pub fields: String,
}

impl FtraceEvent {
    /// The `key=value` fields, in order (values up to the next space;
    /// `sched_switch`'s `==>` is skipped).
    pub fn field_map(&self) -> Vec<(&str, &str)> {
        self.fields
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .collect()
    }

    /// The value of field `key`.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.field_map()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

/// The header the kernel prints above the events (`print_trace_header`
/// with the nop tracer and `print_func_help_header_irq`).
pub fn header(entries: usize, nr_cpus: usize) -> String {
    format!(
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {entries}/{entries}   #P:{nr_cpus}\n#\n\
#                                _-----=> irqs-off/BH-disabled\n\
#                               / _----=> need-resched\n\
#                              | / _---=> hardirq/softirq\n\
#                              || / _--=> preempt-depth\n\
#                              ||| / _-=> migrate-disable\n\
#                              |||| /     delay\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
#              | |         |   |||||     |         |\n"
    )
}

/// One event line as `trace_print_context` and the event's output print
/// it (comm right-aligned in 16, pid left-aligned in 7, CPU in 3 digits).
pub fn line(e: &FtraceEvent) -> String {
    let us = e.ts_ns / 1_000;
    format!(
        "{:>16}-{:<7} [{:03}] {} {:>5}.{:06}: {}: {}\n",
        e.comm,
        e.pid,
        e.cpu,
        e.flags,
        us / 1_000_000,
        us % 1_000_000,
        e.event,
        e.fields
    )
}

/// A whole `trace` file: header and lines.
pub fn write(events: &[FtraceEvent], nr_cpus: usize) -> String {
    let mut s = header(events.len(), nr_cpus);
    for e in events {
        s.push_str(&line(e));
    }
    s
}

/// Parses one event line; `None` for a line that is not one.
pub fn parse_line(l: &str) -> Option<FtraceEvent> {
    // "comm-pid [cpu] flags ts: event: fields"; comm may hold '-' and
    // spaces, so split at the " [" of the CPU column and the last '-'
    // before it.
    let lb = l.find(" [")?;
    let (task, rest) = l.split_at(lb);
    let task = task.trim_start();
    // With record-tgid, "comm-pid (tgid)": drop the tgid.
    let task = match task.rfind(" (") {
        Some(i) if task.ends_with(')') => task[..i].trim_end(),
        _ => task.trim_end(),
    };
    let dash = task.rfind('-')?;
    let comm = task[..dash].to_string();
    let pid = task[dash + 1..].trim().parse().ok()?;
    let rest = rest.trim_start().strip_prefix('[')?;
    let rb = rest.find(']')?;
    let cpu = rest[..rb].trim().parse().ok()?;
    let rest = rest[rb + 1..].trim_start();
    let colon = rest.find(": ")?;
    let head = &rest[..colon];
    let (flags, ts) = match head.rsplit_once(' ') {
        Some((f, ts)) => (f.trim().to_string(), ts),
        None => (String::new(), head),
    };
    let (secs, frac) = ts.split_once('.')?;
    let secs: u64 = secs.trim().parse().ok()?;
    // Microseconds normally; nanoseconds with trace_clock=...ns: scale.
    let digits = frac.len().min(9) as u32;
    let frac_v: u64 = frac.get(..digits as usize)?.parse().ok()?;
    let ts_ns = secs * 1_000_000_000 + frac_v * 10u64.pow(9 - digits);
    let rest = &rest[colon + 2..];
    let (event, fields) = match rest.split_once(": ") {
        Some((e, f)) => (e, f),
        None => (rest.trim_end_matches(':'), ""),
    };
    Some(FtraceEvent {
        comm,
        pid,
        cpu,
        flags,
        ts_ns,
        event: event.trim().to_string(),
        fields: fields.trim_end().to_string(),
    })
}

/// A parsed trace: the header facts and the events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// `# tracer: NAME`.
    pub tracer: Option<String>,
    /// `#P:N`: CPUs.
    pub nr_cpus: Option<usize>,
    /// The events, in file order.
    pub events: Vec<FtraceEvent>,
}

impl Trace {
    /// Events per name, sorted by name.
    pub fn counts(&self) -> BTreeMap<&str, u64> {
        let mut m = BTreeMap::new();
        for e in &self.events {
            *m.entry(e.event.as_str()).or_insert(0) += 1;
        }
        m
    }
}

/// Parses a `trace` file (with or without its header). Comment lines and
/// blank lines are skipped; any other line that is not an event is an
/// error naming its line number.
pub fn parse(text: &str) -> Result<Trace, String> {
    let mut t = Trace::default();
    for (i, l) in text.lines().enumerate() {
        if let Some(c) = l.strip_prefix('#') {
            if let Some(name) = c.trim().strip_prefix("tracer:") {
                t.tracer = Some(name.trim().to_string());
            }
            if let Some(p) = c.split("#P:").nth(1) {
                t.nr_cpus = p.trim().parse().ok();
            }
            continue;
        }
        if l.trim().is_empty() || l.starts_with("CPU:") && l.contains("buffer started") {
            continue;
        }
        match parse_line(l) {
            Some(e) => t.events.push(e),
            None => return Err(format!("line {}: not an ftrace event line: {l:?}", i + 1)),
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(comm: &str, pid: u64, ts_ns: u64) -> FtraceEvent {
        FtraceEvent {
            comm: comm.into(),
            pid,
            cpu: 3,
            flags: ".....".into(),
            ts_ns,
            event: "sched_move_numa".into(),
            fields: "pid=7 tgid=7 ngid=0 src_cpu=3 src_nid=0 dst_cpu=9 dst_nid=1".into(),
        }
    }

    #[test]
    fn written_trace_reads_back() {
        let evs = vec![ev("numa01", 7, 1_234_567_000), ev("my-task x", 12, 5_000)];
        let text = write(&evs, 16);
        assert!(text.starts_with("# tracer: nop\n"));
        let t = parse(&text).unwrap();
        assert_eq!(t.events, evs);
        assert_eq!(t.nr_cpus, Some(16));
        assert_eq!(t.tracer.as_deref(), Some("nop"));
        assert_eq!(t.events[0].field("dst_nid"), Some("1"));
    }

    #[test]
    fn kernel_lines_parse() {
        let k = "          <idle>-0       [001] d..2.   143.524315: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=numa01 next_pid=1043 next_prio=120\n\
             numa01-1043    ( 1040) [002] .....   143.600001: mm_migrate_pages: nr_succeeded=512 nr_failed=0 nr_thp_succeeded=1 nr_thp_failed=0 nr_thp_split=0 nr_split=0 mode=MIGRATE_ASYNC reason=numa_misplaced\n";
        let t = parse(k).unwrap();
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.events[0].comm, "<idle>");
        assert_eq!(t.events[0].flags, "d..2.");
        assert_eq!(t.events[0].ts_ns, 143_524_315_000);
        assert_eq!(t.events[0].field("next_pid"), Some("1043"));
        assert_eq!(t.events[1].pid, 1043);
        assert_eq!(t.events[1].cpu, 2);
        assert_eq!(t.events[1].field("nr_succeeded"), Some("512"));
    }

    #[test]
    fn garbage_is_an_error_with_its_line() {
        let e = parse("# tracer: nop\nhello world\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
    }
}
