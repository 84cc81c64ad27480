//! The model's tracepoints: events recorded as the kernel's tracefs
//! `trace` file shows them (the task and CPU that hit the tracepoint, the
//! time, the event name, the fields as the event's `TP_printk` prints them),
//! with an event filter and a time window so a trace stays small.
//!
//! Nothing here runs when tracing is off: [`Kernel::trace`] tests one
//! `Option` and the fields are formatted by a closure only for an event
//! that passes the filter.
//!
//! Left out: the ring buffer (no overwrite, no lost events), the latency
//! flags column (always `.....`, printed by the writer), interrupts
//! (every event is in task context, on the CPU the model runs it on).

use super::{CpuId, Kernel, TaskId};
use crate::kernel::sched::TaskState;

/// Events the model emits, by tracefs name (`system:event` systems in
/// [`event_system`]). `numalab_scan` is the model's own: the kernel has no
/// tracepoint for a `task_numa_work` pass that marked pages (only
/// `sched_skip_vma_numa` for the VMAs it skipped).
pub const MODEL_EVENTS: &[&str] = &[
    "sched_switch",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_move_numa",
    "sched_swap_numa",
    "sched_stick_numa",
    "sched_skip_vma_numa",
    "mm_migrate_pages",
    "page_fault_user",
    "numalab_scan",
];

/// Events the model emits only when `--trace-events` names them: too
/// many for a default trace. `numalab_lb` is the model's own, one per
/// `sched_balance_rq` pass that got past `should_we_balance` (the kernel
/// has no tracepoint there; an fprobe on `sched_balance_rq` and on the
/// return of `sched_balance_find_src_group` gives its fields, docs/real.md
/// M3).
///
/// `numalab_can_migrate` is one per task `detach_tasks` considers, with
/// `can_migrate_task`'s answer (an fprobe on `can_migrate_task` and its
/// return gives the kernel's).
///
/// `numalab_fluid` is one per tick: the physics solve's load over capacity
/// of every memory controller and link direction, and per node the factor
/// by which its controller's load raises memory latency (no kernel
/// counterpart: uncore counters measure these on a machine).
///
/// `numalab_numa_find_cpu` is one per `task_numa_find_cpu` call: the
/// destination node's figures, the path taken, and whether it chose a
/// move or a swap (crates/numalab-sim/src/kernel/numa/migrate.rs).
///
/// `numalab_numa_fault` is one per hinting fault `task_numa_fault` takes:
/// the page's `last_cpupid`, its node, the pages and `TNF_*` flags (as an
/// fprobe on the kernel's `task_numa_fault` prints them), whether the
/// fault counted as private, and the task's numa group after it.
pub const OPT_IN_EVENTS: &[&str] = &[
    "numalab_lb",
    "numalab_can_migrate",
    "numalab_fluid",
    "numalab_numa_find_cpu",
    "numalab_numa_fault",
];

/// The tracefs system (events/SYSTEM/EVENT) of event `name`.
pub fn event_system(name: &str) -> &'static str {
    match name {
        "mm_migrate_pages" => "migrate",
        "page_fault_user" => "exceptions",
        "numalab_scan"
        | "numalab_lb"
        | "numalab_can_migrate"
        | "numalab_fluid"
        | "numalab_numa_find_cpu"
        | "numalab_numa_fault" => "numalab",
        _ => "sched",
    }
}

/// One traced kernel event (for `--trace`).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Time, ns.
    pub t: u64,
    /// Event name as in tracefs, e.g. `sched_move_numa`.
    pub name: &'static str,
    /// `comm` of the task that hit the tracepoint (`<idle>` for none).
    pub comm: String,
    /// Its pid (0 for idle).
    pub pid: u64,
    /// The CPU it ran on.
    pub cpu: u32,
    /// The fields as the event's `TP_printk` prints them.
    pub fields: String,
}

/// Which events to keep: by name, and inside a time window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceFilter {
    /// Event names to keep; `None` keeps every event.
    pub events: Option<Vec<String>>,
    /// Keep events at or after this time (ns).
    pub from_ns: u64,
    /// Keep events before this time (ns); `None` for no end.
    pub to_ns: Option<u64>,
}

impl TraceFilter {
    /// Checks the event names against [`MODEL_EVENTS`] and
    /// [`OPT_IN_EVENTS`].
    pub fn validate(&self) -> Result<(), String> {
        for e in self.events.iter().flatten() {
            if !MODEL_EVENTS.contains(&e.as_str()) && !OPT_IN_EVENTS.contains(&e.as_str()) {
                return Err(format!(
                    "--trace-events: unknown event {e:?} (known: {}; only when named: {})",
                    MODEL_EVENTS.join(", "),
                    OPT_IN_EVENTS.join(", ")
                ));
            }
        }
        if matches!(self.to_ns, Some(to) if to <= self.from_ns) {
            return Err("--trace-window: FROM must be before TO".into());
        }
        Ok(())
    }

    fn keeps(&self, name: &str, t: u64) -> bool {
        t >= self.from_ns
            && self.to_ns.is_none_or(|to| t < to)
            && match self.events.as_ref() {
                Some(ev) => ev.iter().any(|e| e == name),
                None => !OPT_IN_EVENTS.contains(&name),
            }
    }
}

/// The recorder: events so far, the filter, and per CPU the task that left
/// it last (the `prev` of the next `sched_switch`).
#[derive(Clone, Debug, Default)]
pub struct Tracer {
    /// Recorded events, in time order.
    pub events: Vec<TraceEvent>,
    /// What to keep.
    pub filter: TraceFilter,
    /// By CPU index: the task that last went off it, not yet switched from.
    prev: Vec<Option<TaskId>>,
}

impl Tracer {
    /// A recorder keeping what `filter` keeps.
    pub fn new(filter: TraceFilter) -> Tracer {
        Tracer {
            filter,
            ..Tracer::default()
        }
    }
}

impl Kernel {
    /// Records event `name` hit by task `ctx` (or the idle task) on `cpu`
    /// when tracing is on and the filter keeps it; `fields` runs only then.
    pub fn trace(
        &mut self,
        ctx: Option<TaskId>,
        cpu: CpuId,
        name: &'static str,
        fields: impl FnOnce() -> String,
    ) {
        let Some(tr) = self.trace.as_mut() else {
            return;
        };
        if !tr.filter.keeps(name, self.now) {
            return;
        }
        let (comm, pid) = match ctx {
            Some(t) => (self.tasks[t].name.clone(), self.tasks[t].pid),
            None => ("<idle>".to_string(), 0),
        };
        let ev = TraceEvent {
            t: self.now,
            name,
            comm,
            pid,
            cpu: cpu.index() as u32,
            fields: fields(),
        };
        if let Some(tr) = self.trace.as_mut() {
            tr.events.push(ev);
        }
    }

    /// Task `t` went off `cpu` (dequeued while running, or preempted): the
    /// `prev` of the CPU's next `sched_switch`.
    pub(crate) fn trace_off_cpu(&mut self, t: TaskId, cpu: CpuId) {
        if let Some(tr) = self.trace.as_mut() {
            if tr.prev.len() <= cpu.index() {
                tr.prev.resize(cpu.index() + 1, None);
            }
            tr.prev[cpu.index()] = Some(t);
        }
    }

    /// `sched_switch` on `cpu` from the task that left it last (or idle)
    /// to `next` (or idle). Nothing when the same task comes back.
    pub(crate) fn trace_sched_switch(&mut self, cpu: CpuId, next: Option<TaskId>) {
        let Some(tr) = self.trace.as_mut() else {
            return;
        };
        let prev = tr.prev.get_mut(cpu.index()).and_then(Option::take);
        if prev == next {
            return;
        }
        let who = |k: &Kernel, t: Option<TaskId>| match t {
            Some(t) => (k.tasks[t].name.clone(), k.tasks[t].pid, 120),
            None => (format!("swapper/{}", cpu.index()), 0, 120),
        };
        let (pc, pp, ppr) = who(self, prev);
        let (nc, np, npr) = who(self, next);
        // __trace_sched_switch_state: a preempted task reports R+.
        let state = match prev.map(|t| self.tasks[t].state) {
            None => "R",
            Some(TaskState::Sleeping) => "S",
            Some(TaskState::Dead) => "X",
            Some(_) => "R+",
        };
        self.trace(prev, cpu, "sched_switch", || {
            format!(
                "prev_comm={pc} prev_pid={pp} prev_prio={ppr} prev_state={state} ==> next_comm={nc} next_pid={np} next_prio={npr}"
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::TraceFilter;

    #[test]
    fn opt_in_events_are_kept_only_when_named() {
        let all = TraceFilter::default();
        assert!(all.keeps("sched_switch", 0) && !all.keeps("numalab_lb", 0));
        let named = TraceFilter {
            events: Some(vec!["numalab_lb".into()]),
            ..TraceFilter::default()
        };
        assert!(named.validate().is_ok());
        assert!(named.keeps("numalab_lb", 0) && !named.keeps("sched_switch", 0));
        let bogus = TraceFilter {
            events: Some(vec!["numalab_bogus".into()]),
            ..TraceFilter::default()
        };
        assert!(bogus
            .validate()
            .unwrap_err()
            .contains("only when named: numalab_lb"));
    }
}
