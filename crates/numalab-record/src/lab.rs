//! The figures of a Run record's `lab` map, declared once: each one's key
//! (as written in the JSON), unit and meaning, as [`LabFigure`] constants;
//! families of keys (one per tracepoint) as [`LabFamily`] with a typed
//! constructor. Writers (the model, real runs, `numalab validate`) set
//! figures and readers (reproductions, validation, the runner) get them
//! through these handles only ([`Lab::set`], [`Lab::get`]), so a key is
//! spelled in one place.
//!
//! The map stays a plain JSON object of numbers ([`Lab`] is transparent):
//! records written before a figure was declared, or by a newer build, load
//! with their unknown keys kept, and reports list every key a record has.
//! Left out: which run kinds write which figure beyond the doc of each
//! (a figure is absent when its run did not measure it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One declared figure of the `lab` map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabFigure {
    /// Key in the record's `lab` object.
    pub key: &'static str,
    /// Unit (`count`, `s`, `ns`, `ms`, `share` for 0-1, `flag` for 0/1,
    /// `1/s`).
    pub unit: &'static str,
    /// What it measures.
    pub meaning: &'static str,
}

/// A family of `lab` figures: one key per member (`PREFIX` + member).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabFamily {
    /// Key prefix shared by the members.
    pub prefix: &'static str,
    /// Unit of every member.
    pub unit: &'static str,
    /// What each member measures.
    pub meaning: &'static str,
}

/// The key of one `lab` figure: a declared [`LabFigure`] or a member of a
/// [`LabFamily`]. Built only from a declaration.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LabKey(String);

impl LabKey {
    /// The key as written in the record.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&LabFigure> for LabKey {
    fn from(f: &LabFigure) -> LabKey {
        LabKey(f.key.to_string())
    }
}

impl From<LabFigure> for LabKey {
    fn from(f: LabFigure) -> LabKey {
        LabKey(f.key.to_string())
    }
}

impl LabFamily {
    /// The key of member `member` (e.g. a tracepoint name).
    pub fn key(&self, member: &str) -> LabKey {
        LabKey(format!("{}{member}", self.prefix))
    }
}

/// Declares the [`LabFigure`] constants and [`ALL`], the list of them in
/// declaration order.
macro_rules! lab_figures {
    ($($(#[$doc:meta])* $name:ident = $key:literal, $unit:literal, $meaning:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: LabFigure = LabFigure { key: $key, unit: $unit, meaning: $meaning };
        )*
        /// Every declared figure, in declaration order.
        pub const ALL: &[LabFigure] = &[$($name),*];
    };
}

lab_figures! {
    // The load balancer (model; kernel/sched/balance.rs).
    /// Load-balance passes that got past `should_we_balance`.
    LB_COUNT = "lb_count", "count", "sched_balance_rq calls that got past should_we_balance (and the flag, on serialized domains)";
    /// Load-balance passes that found the domain balanced.
    LB_BALANCED = "lb_balanced", "count", "load-balance attempts that found the domain balanced";
    /// Load-balance passes that moved nothing.
    LB_FAILED = "lb_failed", "count", "load-balance attempts that found an imbalance but moved nothing";
    /// Tasks moved by the load balancer.
    LB_GAINED = "lb_gained", "count", "tasks moved by detach/attach";
    /// Load-balance redo passes.
    LB_REDO = "lb_redo", "count", "redo passes after all candidates were pinned";
    /// Tasks pushed by active balance.
    ALB_PUSHED = "alb_pushed", "count", "running tasks pushed by active balance";
    /// Newly-idle balances that pulled a task.
    NEWIDLE_PULLED = "newidle_pulled", "count", "newly-idle balances that pulled a task";
    /// SCHED_SOFTIRQ runs.
    SOFTIRQS = "softirqs", "count", "SCHED_SOFTIRQ runs (sched_balance_domains walks)";
    // SD_SERIALIZE: the sched_balance_running flag (kernel/sched/serialize.rs).
    /// cmpxchg attempts on sched_balance_running.
    SERIALIZE_ATTEMPTS = "serialize_attempts", "count", "cmpxchg attempts on sched_balance_running";
    /// Attempts that found the flag taken.
    SERIALIZE_CONTENDED = "serialize_contended", "count", "cmpxchg attempts that found sched_balance_running taken";
    /// Releases of the flag.
    SERIALIZE_RELEASES = "serialize_releases", "count", "releases (stores of 0) of sched_balance_running";
    /// Releases by a CPU that did not hold the flag.
    SERIALIZE_BAD_RELEASES = "serialize_bad_releases", "count", "releases by a CPU that did not hold the flag (invariant violation)";
    /// Acquisitions while another CPU held the flag.
    SERIALIZE_OVERLAPS = "serialize_overlaps", "count", "acquisitions while another CPU still believed it held the flag (invariant violation)";
    /// Transfers of the flag's cache line.
    SERIALIZE_LINE_TRANSFERS = "serialize_line_transfers", "count", "transfers of the flag's cache line between CPUs";
    /// Of those, between packages.
    SERIALIZE_LINE_TRANSFERS_REMOTE = "serialize_line_transfers_remote", "count", "transfers of the flag's cache line between packages";
    /// CPU time in the flag's cmpxchg.
    SCHED_BALANCE_RUNNING_CONTENTION_NS = "sched_balance_running_contention_ns", "ns", "CPU time spent in the flag's cmpxchg: waiting for the line and its transfer";
    /// The part of it spent queued behind other CPUs.
    SCHED_BALANCE_RUNNING_QUEUE_NS = "sched_balance_running_queue_ns", "ns", "the part of the cmpxchg time spent waiting behind other CPUs' requests";
    /// The longest single cmpxchg.
    SCHED_BALANCE_RUNNING_MAX_CMPXCHG_NS = "sched_balance_running_max_cmpxchg_ns", "ns", "the longest single cmpxchg on the flag";
    /// Of the cmpxchg time, paid by CPUs running a task.
    SCHED_BALANCE_RUNNING_BUSY_NS = "sched_balance_running_busy_ns", "ns", "the part of the cmpxchg time paid by CPUs running a task (taken from that task)";
    /// Of the cmpxchg time, paid by idle CPUs in their periodic balance.
    SCHED_BALANCE_RUNNING_IDLE_NS = "sched_balance_running_idle_ns", "ns", "the part of the cmpxchg time paid by CPUs with no task, in their periodic balance";
    /// Of the cmpxchg time, paid in newly-idle balance.
    SCHED_BALANCE_RUNNING_NEWIDLE_NS = "sched_balance_running_newidle_ns", "ns", "the part of the cmpxchg time paid in newly-idle balance";
    /// Share of the profiled cycles spent in the flag's cmpxchg.
    SCHED_BALANCE_RUNNING_CONTENTION_SHARE = "sched_balance_running_contention_share", "share", "share of the CPUs' cycles spent in the flag's cmpxchg: of unhalted cycles (task time + kernel time on idle CPUs, perf's cycles event) or of elapsed x CPUs, as numalab.profile_cycles says";
    // CPU time (model).
    /// Kernel time of idle CPUs.
    IDLE_KERNEL_S = "idle_kernel_s", "s", "kernel time spent on idle CPUs (balancing from idle)";
    /// Time woken tasks waited for an idle CPU's kernel work.
    IDLE_KERNEL_WAIT_S = "idle_kernel_wait_s", "s", "time tasks waited, runnable, on a CPU still in kernel work begun while it had no task (balancing), once per CPU";
    /// Share of CPU time busy.
    CPU_BUSY_SHARE = "cpu_busy_share", "share", "share of all CPUs' time (elapsed x CPUs) a task ran";
    // NUMA scanning and proposal 2 (kernel/numa/async_scan.rs); only
    // written when scans happened, the async ones when async is on.
    /// task_numa_work scans.
    NUMA_SCANS = "numa_scans", "count", "task_numa_work scan passes";
    /// Time spent scanning.
    NUMA_SCAN_S = "numa_scan_s", "s", "time spent in task_numa_work scan passes";
    /// Scans queued on a kworker.
    SCAN_ASYNC_QUEUED = "scan_async_queued", "count", "scans queued on a kworker (async scanning)";
    /// Queued scans that ran.
    SCAN_ASYNC_RUN = "scan_async_run", "count", "queued scans that ran on a kworker";
    /// Queued scans cancelled.
    SCAN_ASYNC_CANCELLED = "scan_async_cancelled", "count", "queued scans cancelled at the task's exit";
    /// Async scans that ran outside the task's cpuset.
    SCAN_ASYNC_OUTSIDE_CPUSET = "scan_async_outside_cpuset", "count", "async scans that ran on a CPU outside the scanned task's allowed CPUs (affinity and cpuset)";
    /// Share of async scans outside the cpuset.
    SCAN_ASYNC_OUTSIDE_CPUSET_SHARE = "scan_async_outside_cpuset_share", "share", "share of the async scans that ran outside the task's cpuset";
    /// kworker time scanning.
    SCAN_ASYNC_WORKER_S = "scan_async_worker_s", "s", "kworker time spent scanning";
    /// kworker scan time charged to another cgroup.
    SCAN_ASYNC_HIDDEN_S = "scan_async_hidden_s", "s", "kworker scan time charged to a cgroup other than the scanned task's";
    /// Longest queueing delay of an async scan.
    SCAN_ASYNC_DELAY_MAX_MS = "scan_async_delay_max_ms", "ms", "longest delay from queueing an async scan to its run";
    /// Mean queueing delay.
    SCAN_ASYNC_DELAY_MEAN_MS = "scan_async_delay_mean_ms", "ms", "mean delay from queueing an async scan to its run";
    // Access latency (model; engine/latency.rs): only with histograms.
    /// Memory accesses of the workload's tasks.
    ACCESSES = "accesses", "count", "memory accesses of the workload's tasks";
    /// Accesses at or above the latency threshold.
    ACCESS_LATENCY_OUTLIERS = "access_latency_outliers", "count", "accesses at or above the access-latency threshold (numalab.access_latency)";
    /// Accesses per second.
    ACCESSES_PER_S = "accesses_per_s", "1/s", "memory accesses of the workload's tasks per second of the run";
    // Real runs (numalab-real).
    /// Wall-clock seconds of the real run.
    REAL_WALL_S = "real.wall_s", "s", "wall-clock time of the real run, from the workload's release to the end of sampling";
    /// Samples taken.
    REAL_SAMPLES = "real.samples", "count", "time-series samples the real run took";
    /// Whether bytes_by_node is an estimate.
    REAL_BYTES_BY_NODE_ESTIMATED = "real.bytes_by_node_estimated", "flag", "1: the tasks' bytes_by_node are estimated from resident pages, not measured";
    /// CPU time of the kernel's kworker threads during the run.
    REAL_KWORKER_CPU_S = "real.kworker_cpu_s", "s", "CPU time of every kworker thread over the run (sum_exec_runtime deltas from /proc/PID/schedstat; a kworker that exited during the run is not counted): the workqueues' work, proposal 2's asynchronous scans among it";
    /// The coordinator's CPU per sample.
    REAL_SAMPLE_CPU_MS = "real.sample_cpu_ms", "ms", "median CPU time of one of the real run's samples (numa_maps, memory.stat, each thread's stat, counters), CLOCK_THREAD_CPUTIME_ID of the coordinator: in a QEMU guest it holds a vCPU for hundreds of ms (docs/real.md M3)";
    /// The coordinator's CPU per loop iteration besides samples.
    REAL_POLL_CPU_US = "real.poll_cpu_us", "us", "median CPU time of one iteration of the real run's loop besides its samples (draining the workers' reports, reaping, the 50 ms poll)";
    /// The coordinator's CPU over the run.
    REAL_COORDINATOR_CPU_S = "real.coordinator_cpu_s", "s", "CPU time of the real run's sampling loop from the workload's release to its end";
    // Real runs in a QEMU guest (numalab-real vm).
    /// Problems the guest printed on its console.
    VM_CONSOLE_PROBLEMS = "vm.console_problems", "count", "warnings, oopses and errors the guest kernel printed on its serial console";
    /// Guest boot time.
    VM_BOOT_S = "vm.boot_s", "s", "host seconds from QEMU start to the guest's /init";
    /// Boots a guest run took.
    VM_BOOTS = "vm.boots", "count", "guest boots the run took: 2 when the first produced no record for a reason outside the workload and the kernel (QEMU stopped or the guest hung with no kernel problem on its console, or its kernel died before /init) and was booted once more";
    /// QEMU's whole run.
    VM_QEMU_S = "vm.qemu_s", "s", "host seconds QEMU ran";
}

/// Count of each scheduler tracepoint over the run
/// ([`crate::counters::TRACE_EVENTS`]): `trace.EVENT`.
pub const TRACE: LabFamily = LabFamily {
    prefix: "trace.",
    unit: "count",
    meaning: "times the scheduler tracepoint fired over the run",
};

/// Every declared family.
pub const FAMILIES: &[LabFamily] = &[TRACE];

/// The declaration of `key`: the [`LabFigure`] of that key, or the
/// [`LabFamily`] it is a member of; None for an undeclared key (one an
/// older or newer build wrote).
pub fn declaration(key: &str) -> Option<(&'static str, &'static str)> {
    if let Some(f) = ALL.iter().find(|f| f.key == key) {
        return Some((f.unit, f.meaning));
    }
    FAMILIES
        .iter()
        .find(|f| key.starts_with(f.prefix))
        .map(|f| (f.unit, f.meaning))
}

/// A record's `lab` figures: a map from key to value, written and read
/// through declared keys ([`LabKey`]). Serialised as a plain JSON object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline)]
pub struct Lab(BTreeMap<String, f64>);

impl Lab {
    /// An empty map.
    pub fn new() -> Lab {
        Lab::default()
    }

    /// Sets figure `key` to `value`.
    pub fn set(&mut self, key: impl Into<LabKey>, value: f64) {
        self.0.insert(key.into().0, value);
    }

    /// Figure `key`, if the record has it.
    pub fn get(&self, key: impl Into<LabKey>) -> Option<f64> {
        self.0.get(key.into().as_str()).copied()
    }

    /// Whether the record has figure `key`.
    pub fn contains(&self, key: impl Into<LabKey>) -> bool {
        self.0.contains_key(key.into().as_str())
    }

    /// Every figure the record has (declared or not), by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Whether the record has no figure.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_documented() {
        let mut keys: Vec<&str> = ALL.iter().map(|f| f.key).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "a key declared twice");
        for f in ALL {
            assert!(!f.unit.is_empty() && !f.meaning.is_empty(), "{}", f.key);
            assert!(
                !FAMILIES.iter().any(|fam| f.key.starts_with(fam.prefix)),
                "{} is also a family member",
                f.key
            );
        }
    }

    #[test]
    fn a_family_member_is_its_prefix_and_the_member() {
        assert_eq!(
            TRACE.key("sched_swap_numa").as_str(),
            "trace.sched_swap_numa"
        );
        assert_eq!(
            declaration("trace.sched_move_numa").map(|d| d.0),
            Some("count")
        );
        assert_eq!(declaration(NUMA_SCAN_S.key).map(|d| d.0), Some("s"));
        assert_eq!(declaration("no_such_figure"), None);
    }

    #[test]
    fn the_map_is_a_plain_object_and_keeps_unknown_keys() {
        let mut lab = Lab::new();
        lab.set(NUMA_SCANS, 3.0);
        lab.set(TRACE.key("sched_stick_numa"), 1.0);
        let json = serde_json::to_string(&lab).unwrap();
        assert_eq!(json, r#"{"numa_scans":3.0,"trace.sched_stick_numa":1.0}"#);
        let back: Lab =
            serde_json::from_str(r#"{"from_the_future":2.5,"numa_scans":3.0}"#).unwrap();
        assert_eq!(back.get(NUMA_SCANS), Some(3.0));
        assert!(!back.contains(NUMA_SCAN_S));
        assert_eq!(back.iter().next(), Some(("from_the_future", 2.5)));
    }
}
