//! Traces: `run --trace FILE` with `--trace-events` and `--trace-window`
//! writes the model's events in the kernel's ftrace text format
//! ([`numalab_record::ftrace`]); `numalab trace FILE` reads a model trace
//! or a real kernel's (`real run --trace`) through the same parser and
//! prints the events per name and per task, optionally filtered.
//!
//! Left out: binary trace.dat (trace-cmd) files; Perfetto reads the text.

use numalab_record::ftrace::{self, FtraceEvent};
use numalab_sim::kernel::trace::{event_system, MODEL_EVENTS};
use numalab_sim::kernel::{TraceEvent, TraceFilter};
use std::collections::BTreeMap;

/// Parses `--trace-events a,b` (`None`: every event).
pub fn parse_events(s: Option<&str>) -> Option<Vec<String>> {
    s.map(|s| {
        s.split(',')
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            // Accept tracefs's system:event spelling too.
            .map(|e| e.rsplit(':').next().unwrap_or(e).to_string())
            .collect()
    })
}

/// Parses `--trace-window FROM..TO` in seconds (either side may be empty).
pub fn parse_window(s: Option<&str>) -> Result<(u64, Option<u64>), String> {
    let Some(s) = s else {
        return Ok((0, None));
    };
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--trace-window {s:?}: expected FROM..TO in seconds"))?;
    let secs = |x: &str| -> Result<Option<u64>, String> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(None);
        }
        match x.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some((v * 1e9).round() as u64)),
            _ => Err(format!(
                "--trace-window {s:?}: {x:?} is not a time in seconds"
            )),
        }
    };
    Ok((secs(a)?.unwrap_or(0), secs(b)?))
}

/// The filter of `--trace-events` and `--trace-window`, checked.
pub fn filter(events: Option<&str>, window: Option<&str>) -> Result<TraceFilter, String> {
    let (from_ns, to_ns) = parse_window(window)?;
    let f = TraceFilter {
        events: parse_events(events),
        from_ns,
        to_ns,
    };
    f.validate()?;
    Ok(f)
}

/// The model's events as ftrace lines (comm cut to the kernel's 15
/// characters, TASK_COMM_LEN less the NUL).
pub fn to_ftrace(events: &[TraceEvent]) -> Vec<FtraceEvent> {
    events
        .iter()
        .map(|e| FtraceEvent {
            comm: e.comm.chars().take(15).collect(),
            pid: e.pid,
            cpu: e.cpu,
            flags: ".....".into(),
            ts_ns: e.t,
            event: e.name.to_string(),
            fields: e.fields.clone(),
        })
        .collect()
}

/// The tracefs `events/SYSTEM/EVENT` paths of the events `real run
/// --trace` enables (the model's, less the model-only ones).
pub fn kernel_event_paths(events: Option<&[String]>) -> Vec<String> {
    MODEL_EVENTS
        .iter()
        .filter(|e| event_system(e) != "numalab")
        .filter(|e| events.is_none_or(|ev| ev.iter().any(|x| x == *e)))
        .map(|e| format!("{}/{}", event_system(e), e))
        .collect()
}

/// Tasks `numalab trace` lists (the busiest).
const TOP_TASKS: usize = 20;

/// `numalab trace FILE`: counts per event and per task of a trace file.
pub fn summary(path: &str, events: Option<&str>, window: Option<&str>) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{path}: {}", crate::out::io_text(&e)))?;
    let t = ftrace::parse(&text).map_err(|e| format!("{path}: {e}"))?;
    let keep = parse_events(events);
    let (from, to) = parse_window(window)?;
    let evs: Vec<&FtraceEvent> = t
        .events
        .iter()
        .filter(|e| keep.as_ref().is_none_or(|k| k.contains(&e.event)))
        .filter(|e| e.ts_ns >= from && to.is_none_or(|to| e.ts_ns < to))
        .collect();
    let mut by_event: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by_task: BTreeMap<(u64, &str), u64> = BTreeMap::new();
    for e in &evs {
        *by_event.entry(&e.event).or_default() += 1;
        *by_task.entry((e.pid, &e.comm)).or_default() += 1;
    }
    let span = match (evs.first(), evs.last()) {
        (Some(a), Some(b)) => format!(
            "{:.6} .. {:.6} s",
            a.ts_ns as f64 / 1e9,
            b.ts_ns as f64 / 1e9
        ),
        _ => "no events".into(),
    };
    let mut s = format!(
        "{path}: tracer {}, {} CPUs, {} events, {span}\n",
        t.tracer.as_deref().unwrap_or("?"),
        t.nr_cpus.map_or("?".to_string(), |n| n.to_string()),
        evs.len()
    );
    s.push_str(&format!("{:<24} {:>10}\n", "event", "count"));
    for (e, n) in &by_event {
        s.push_str(&format!("{e:<24} {n:>10}\n"));
    }
    s.push_str(&format!("{:<24} {:>10}\n", "task (comm-pid)", "events"));
    // The busiest tasks first; ties by pid.
    let mut tasks: Vec<_> = by_task.into_iter().collect();
    tasks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for ((pid, comm), n) in tasks.iter().take(TOP_TASKS) {
        s.push_str(&format!("{:<24} {n:>10}\n", format!("{comm}-{pid}")));
    }
    if tasks.len() > TOP_TASKS {
        s.push_str(&format!("({} more tasks)\n", tasks.len() - TOP_TASKS));
    }
    crate::out::print(&s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_events_parse_and_check() {
        assert_eq!(
            parse_window(Some("1.5..2")).unwrap(),
            (1_500_000_000, Some(2_000_000_000))
        );
        assert_eq!(parse_window(Some("..3")).unwrap(), (0, Some(3_000_000_000)));
        assert!(parse_window(Some("3")).is_err());
        assert!(parse_window(Some("a..b")).is_err());
        assert!(filter(None, Some("2..1")).is_err());
        let f = filter(Some("sched:sched_move_numa,mm_migrate_pages"), None).unwrap();
        assert_eq!(
            f.events.unwrap(),
            vec![
                "sched_move_numa".to_string(),
                "mm_migrate_pages".to_string()
            ]
        );
        let e = filter(Some("sched_bogus"), None).unwrap_err();
        assert!(e.contains("sched_bogus"), "{e}");
    }

    #[test]
    fn kernel_paths_leave_out_model_only_events() {
        let all = kernel_event_paths(None);
        assert!(all.contains(&"sched/sched_move_numa".to_string()));
        assert!(all.contains(&"migrate/mm_migrate_pages".to_string()));
        assert!(!all.iter().any(|p| p.contains("numalab")));
        let some = kernel_event_paths(Some(&["sched_switch".to_string()]));
        assert_eq!(some, vec!["sched/sched_switch".to_string()]);
    }
}
