//! The Run record: what one run of a workload produced.
//!
//! Both the model (`numalab run`) and real-kernel runs (`numalab real run`)
//! write this format, so `numalab compare` and the reproductions treat them
//! alike. It is versioned by [`FORMAT_VERSION`]; readers refuse other
//! versions. Maps are `BTreeMap` so the JSON is byte-identical for the same
//! inputs.
//!
//! Field names follow the kernel where one exists: `vmstat` keys are
//! /proc/vmstat counter names, `memory_stat` keys are memory.stat names,
//! per-task NUMA fields follow /proc/PID/sched.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the Run JSON format written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// Value of the `format` field.
pub const FORMAT_NAME: &str = "numalab-run";

/// Where a run's figures came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// numalab's model of the kernel.
    Model,
    /// A real Linux kernel (host or QEMU guest).
    Real,
}

/// The workload's score, if it has one beyond elapsed time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Metric name, e.g. `throughput`.
    pub name: String,
    /// Unit, e.g. `requests/s`.
    pub unit: String,
    /// Value.
    pub value: f64,
    /// True when a larger value is better.
    pub higher_is_better: bool,
}

/// Figures of one cgroup (hierarchical: a parent includes its children).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupFigures {
    /// User CPU seconds (cpu.stat user_usec / 1e6).
    pub user_s: f64,
    /// System CPU seconds (cpu.stat system_usec / 1e6).
    pub sys_s: f64,
    /// Number of tasks that ever ran in the cgroup.
    pub nr_tasks: u64,
    /// memory.stat counters (deltas over the run), e.g. `numa_hint_faults`.
    pub memory_stat: BTreeMap<String, u64>,
}

/// Per-node NUMA fault counts of a task, as /proc/PID/sched prints them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeFaults {
    /// Node id.
    pub node: usize,
    /// Task memory faults, private.
    pub task_private: u64,
    /// Task memory faults, shared.
    pub task_shared: u64,
    /// Group memory faults, private.
    pub group_private: u64,
    /// Group memory faults, shared.
    pub group_shared: u64,
}

/// NUMA balancing state of a task at exit (from /proc/PID/sched).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskNuma {
    /// `numa_preferred_nid` (-1 for none).
    pub preferred_nid: i64,
    /// `numa_scan_seq`.
    pub scan_seq: u64,
    /// `numa_scan_period` in ms at exit.
    pub scan_period_ms: u64,
    /// NUMA group id (leader pid), if grouped.
    pub numa_group_id: Option<u64>,
    /// `numa_pages_migrated` attributed to the task.
    pub pages_migrated: u64,
    /// Decayed per-node faults.
    pub faults: Vec<NodeFaults>,
}

/// Figures of one task (thread).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskFigures {
    /// Pid (thread id).
    pub pid: u64,
    /// Thread-group id (process pid).
    pub tgid: u64,
    /// Name.
    pub name: String,
    /// Cgroup path.
    pub cgroup: String,
    /// Seconds from run start to the task's creation.
    pub start_s: f64,
    /// Seconds from run start to the task's exit (or the end of the run).
    pub exit_s: f64,
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Seconds runnable but waiting for a CPU.
    pub wait_s: f64,
    /// CPU at exit.
    pub last_cpu: usize,
    /// Node of that CPU.
    pub last_node: usize,
    /// `se.nr_migrations`: moves between CPUs.
    pub nr_migrations: u64,
    /// Bytes of the task's accesses that went to each node.
    pub bytes_by_node: Vec<u64>,
    /// NUMA balancing state, when balancing ran.
    pub numa: Option<TaskNuma>,
}

/// Figures of one process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessFigures {
    /// Pid.
    pub pid: u64,
    /// Name.
    pub name: String,
    /// Cgroup path.
    pub cgroup: String,
    /// Seconds from run start until its last thread exited.
    pub elapsed_s: f64,
    /// User CPU seconds, all threads.
    pub user_s: f64,
    /// System CPU seconds, all threads.
    pub sys_s: f64,
    /// Resident pages per node at the end of the run (numastat -p).
    pub pages_by_node: Vec<u64>,
}

/// Figures of one node at the end of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeFigures {
    /// Node id.
    pub node: usize,
    /// Capacity in bytes.
    pub mem_total_bytes: u64,
    /// Bytes in use by the workload at the end.
    pub mem_used_bytes: u64,
    /// Bytes read or written in this node's memory over the run.
    pub traffic_bytes: u64,
}

/// A sampled time series: `columns` name each value in `rows`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    /// Sampling interval in seconds.
    pub interval_s: f64,
    /// Column names; the first is always `t_s`.
    pub columns: Vec<String>,
    /// One row per sample.
    pub rows: Vec<Vec<f64>>,
}

/// One run of one workload on one machine with one seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] when written by this build.
    pub version: u32,
    /// Model or real kernel.
    pub kind: RunKind,
    /// numalab version that wrote the record.
    pub numalab_version: String,
    /// Kernel release, for real runs.
    pub kernel: Option<String>,
    /// The resolved machine (model) or a description of the host (real).
    pub machine: serde_json::Value,
    /// The resolved workload.
    pub workload: serde_json::Value,
    /// Every knob in force, by its real name, including defaults.
    pub settings: BTreeMap<String, String>,
    /// PRNG seed.
    pub seed: u64,
    /// `--scale` factor (1.0 = full size).
    pub scale: f64,
    /// Wall-clock seconds from first task creation to last exit.
    pub elapsed_s: f64,
    /// User CPU seconds of all tasks.
    pub user_s: f64,
    /// System CPU seconds of all tasks and of kernel workers acting for them.
    pub sys_s: f64,
    /// Score beyond elapsed time (throughput workloads).
    pub score: Option<Score>,
    /// /proc/vmstat deltas.
    pub vmstat: BTreeMap<String, u64>,
    /// Per-cgroup figures by path ("/" is the root).
    pub cgroups: BTreeMap<String, CgroupFigures>,
    /// Per-process figures.
    pub processes: Vec<ProcessFigures>,
    /// Per-task figures.
    pub tasks: Vec<TaskFigures>,
    /// Per-node figures.
    pub nodes: Vec<NodeFigures>,
    /// Scheduler and lab figures that have no /proc name (e.g. the share of
    /// cycles spent contending for `sched_balance_running`).
    pub lab: BTreeMap<String, f64>,
    /// Time series sampled during the run, if any.
    pub timeseries: Option<TimeSeries>,
}

impl RunRecord {
    /// Parses a Run JSON document, refusing other formats and versions.
    pub fn from_json(text: &str, origin: &str) -> Result<RunRecord, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}: not JSON: {e}"))?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT_NAME) => {}
            _ => {
                return Err(format!(
                    "{origin}: not a numalab Run record (field `format`)"
                ))
            }
        }
        match v.get("version").and_then(|f| f.as_u64()) {
            Some(x) if x == FORMAT_VERSION as u64 => {}
            Some(x) => {
                return Err(format!(
                    "{origin}: Run format version {x}, this build reads version {FORMAT_VERSION}"
                ))
            }
            None => return Err(format!("{origin}: field `version` is missing")),
        }
        serde_json::from_value(v).map_err(|e| format!("{origin}: {e}"))
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// A vmstat counter, 0 when absent.
    pub fn vm(&self, name: &str) -> u64 {
        self.vmstat.get(name).copied().unwrap_or(0)
    }

    /// Name of the test this record measured, for mmtests rows
    /// (e.g. `NUMA01_THREADLOCAL`): the workload's `test`, else its `name`
    /// upper-cased.
    pub fn test_name(&self) -> String {
        if let Some(t) = self.workload.get("test").and_then(|t| t.as_str()) {
            return t.to_string();
        }
        self.workload
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("UNKNOWN")
            .to_uppercase()
            .replace('-', "_")
    }
}

/// Value of the `format` field of a [`RunSet`].
pub const RUNSET_FORMAT_NAME: &str = "numalab-runset";

/// Several runs of one configuration: iterations (seeds) of one or more
/// tests. One `RunSet` file is one column of `numalab compare`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSet {
    /// Always [`RUNSET_FORMAT_NAME`].
    pub format: String,
    /// Always [`FORMAT_VERSION`] when written by this build.
    pub version: u32,
    /// Column label, e.g. `balancing-off`.
    pub name: String,
    /// The runs, in the order they were made.
    pub runs: Vec<RunRecord>,
}

impl RunSet {
    /// A new set with the given label.
    pub fn new(name: impl Into<String>, runs: Vec<RunRecord>) -> RunSet {
        RunSet {
            format: RUNSET_FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            name: name.into(),
            runs,
        }
    }

    /// Reads either a single Run record (a set of one, labelled `label`) or a
    /// RunSet document.
    pub fn from_json(text: &str, origin: &str, label: &str) -> Result<RunSet, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}: not JSON: {e}"))?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT_NAME) => Ok(RunSet::new(
                label,
                vec![RunRecord::from_json(text, origin)?],
            )),
            Some(RUNSET_FORMAT_NAME) => {
                match v.get("version").and_then(|f| f.as_u64()) {
                    Some(x) if x == FORMAT_VERSION as u64 => {}
                    other => {
                        return Err(format!(
                            "{origin}: RunSet format version {other:?}, this build reads version {FORMAT_VERSION}"
                        ))
                    }
                }
                serde_json::from_value(v).map_err(|e| format!("{origin}: {e}"))
            }
            _ => Err(format!(
                "{origin}: neither a numalab Run record nor a RunSet (field `format`)"
            )),
        }
    }

    /// Serialises to pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}
