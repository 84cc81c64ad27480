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
//!
//! This crate owns the format: the types here, the names of time-series
//! columns and tasks ([`column`]), the counter lists ([`counters`]), the
//! `lab` figures ([`lab`]), the
//! score ([`Score::throughput`]) and the JSON Schema of both documents
//! ([`run_schema`], [`runset_schema`], printed by `numalab schema`),
//! generated from the types. `machine` and `workload` are the resolved
//! specs as JSON and stay "any" in the schema: their crates own them
//! (the few fields other crates read are read in [`specs`]).

pub mod atomic;
pub mod column;
pub mod counters;
pub mod ftrace;
pub mod lab;
pub mod specs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use atomic::{write_atomic, write_atomic_with};
pub use column::{task_name, Column};
pub use lab::{Lab, LabFamily, LabFigure, LabKey};

/// Version of the Run JSON format written by this build.
pub const FORMAT_VERSION: u32 = 1;
/// Value of the `format` field.
pub const FORMAT_NAME: &str = "numalab-run";

/// Where a run's figures came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// numalab's model of the kernel.
    Model,
    /// A real Linux kernel (host or QEMU guest).
    Real,
}

/// The workload's score, if it has one beyond elapsed time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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

impl Score {
    /// The score of a throughput workload: `requests` completed over
    /// `elapsed_s` seconds, in requests/s rounded to 1e-3 (0 when no time
    /// passed). Model and real runs both use it, so their values have the
    /// same precision.
    pub fn throughput(requests: u64, elapsed_s: f64) -> Score {
        Score {
            name: "throughput".into(),
            unit: "requests/s".into(),
            value: if elapsed_s > 0.0 {
                (requests as f64 / elapsed_s * 1e3).round() / 1e3
            } else {
                0.0
            },
            higher_is_better: true,
        }
    }
}

/// Figures of one cgroup (hierarchical: a parent includes its children).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CgroupFigures {
    /// User CPU seconds (cpu.stat user_usec / 1e6).
    pub user_s: f64,
    /// System CPU seconds (cpu.stat system_usec / 1e6).
    pub sys_s: f64,
    /// Number of tasks that ever ran in the cgroup.
    pub nr_tasks: u64,
    /// memory.stat counters (deltas over the run), e.g. `numa_hint_faults`.
    pub memory_stat: BTreeMap<String, u64>,
    /// Access latencies of the cgroup's tasks (and its descendants'), when
    /// recorded (proposal 2, `numalab.access_latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_latency: Option<AccessLatency>,
}

/// Per-access latencies as pmbench reports them (proposal 2): log2
/// histograms, reads and writes apart, and the accesses at or above a
/// threshold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AccessLatency {
    /// Reads per bin: bin `i` counts latencies in `[2^i, 2^(i+1))` ns
    /// (bin 0 also those below 1 ns); trailing empty bins are left out.
    pub reads: Vec<u64>,
    /// Writes per bin, as `reads`.
    pub writes: Vec<u64>,
    /// The outlier threshold, microseconds.
    pub threshold_us: u64,
    /// Reads at or above the threshold.
    pub reads_over: u64,
    /// Writes at or above the threshold.
    pub writes_over: u64,
    /// The slowest access, ns.
    pub max_ns: u64,
}

/// Per-node NUMA fault counts of a task, as /proc/PID/sched prints them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskFigures {
    /// Pid (thread id).
    pub pid: u64,
    /// Thread-group id (process pid).
    pub tgid: u64,
    /// `PROCESS/THREAD` ([`task_name`]): the workload's names.
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
    /// The task's access latencies, when recorded (proposal 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_latency: Option<AccessLatency>,
}

/// Figures of one process.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeSeries {
    /// Sampling interval in seconds.
    pub interval_s: f64,
    /// Column names; the first is always `t_s`.
    pub columns: Vec<String>,
    /// One row per sample.
    pub rows: Vec<Vec<f64>>,
}

/// One run of one workload on one machine with one seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// Always [`FORMAT_NAME`].
    #[schemars(extend("const" = FORMAT_NAME))]
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
    // Declared in [`lab`]; this doc is the schema's description.
    pub lab: Lab,
    /// Time series sampled during the run, if any.
    pub timeseries: Option<TimeSeries>,
}

impl RunRecord {
    /// A record of `kind` with nothing in it (version "0", no machine,
    /// workload, figures or series, seed 1, scale 1): the start of one
    /// built field by field, `RunRecord { elapsed_s, ..RunRecord::empty(kind) }`
    /// (hand-made records in tests, the synthetic records of checks).
    pub fn empty(kind: RunKind) -> RunRecord {
        RunRecord {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            kind,
            numalab_version: "0".into(),
            kernel: None,
            machine: serde_json::Value::Null,
            workload: serde_json::Value::Null,
            settings: BTreeMap::new(),
            seed: 1,
            scale: 1.0,
            elapsed_s: 0.0,
            user_s: 0.0,
            sys_s: 0.0,
            score: None,
            vmstat: BTreeMap::new(),
            cgroups: BTreeMap::new(),
            processes: Vec::new(),
            tasks: Vec::new(),
            nodes: Vec::new(),
            lab: Lab::new(),
            timeseries: None,
        }
    }

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

    /// The task of thread `thread` of process `process`: the one named
    /// [`task_name`]`(process, thread)`. Real records written before tasks
    /// were named that way carry the bare thread name; for them the task
    /// named `thread` whose tgid is the pid of the process named `process`
    /// is taken.
    pub fn task(&self, process: &str, thread: &str) -> Option<&TaskFigures> {
        let name = task_name(process, thread);
        self.tasks.iter().find(|t| t.name == name).or_else(|| {
            let pid = self.processes.iter().find(|p| p.name == process)?.pid;
            self.tasks
                .iter()
                .find(|t| t.name == thread && t.tgid == pid)
        })
    }

    /// A vmstat counter, 0 when absent.
    pub fn vm(&self, name: &str) -> u64 {
        self.vmstat.get(name).copied().unwrap_or(0)
    }
}

/// Value of the `format` field of a [`RunSet`].
pub const RUNSET_FORMAT_NAME: &str = "numalab-runset";

/// Several runs of one configuration: iterations (seeds) of one or more
/// tests. One `RunSet` file is one column of `numalab compare`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSet {
    /// Always [`RUNSET_FORMAT_NAME`].
    #[schemars(extend("const" = RUNSET_FORMAT_NAME))]
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

    /// Compact JSON with a trailing newline (no indentation: a full-scale run's time series and
    /// tasks stay well under 1 MB a run); [`RunSet::to_json_pretty`] for
    /// the indented form.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Indented JSON, as `--json-pretty` writes it.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// JSON Schema (draft 2020-12) of a Run record, generated from
/// [`RunRecord`].
pub fn run_schema() -> serde_json::Value {
    schemars::schema_for!(RunRecord).to_value()
}

/// JSON Schema (draft 2020-12) of a RunSet document, generated from
/// [`RunSet`].
pub fn runset_schema() -> serde_json::Value {
    schemars::schema_for!(RunSet).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_rounded_to_a_thousandth() {
        let s = Score::throughput(1000, 3.0);
        assert_eq!(s.value, 333.333);
        assert_eq!(
            (s.name.as_str(), s.unit.as_str()),
            ("throughput", "requests/s")
        );
        assert!(s.higher_is_better);
        assert_eq!(Score::throughput(5, 0.0).value, 0.0);
    }

    fn record(tasks: Vec<TaskFigures>, processes: Vec<ProcessFigures>) -> RunRecord {
        RunRecord {
            elapsed_s: 1.0,
            processes,
            tasks,
            ..RunRecord::empty(RunKind::Real)
        }
    }

    fn task(name: &str, pid: u64, tgid: u64) -> TaskFigures {
        TaskFigures {
            name: name.into(),
            pid,
            tgid,
            ..Default::default()
        }
    }

    fn process(name: &str, pid: u64) -> ProcessFigures {
        ProcessFigures {
            name: name.into(),
            pid,
            ..Default::default()
        }
    }

    #[test]
    fn tasks_are_found_by_process_and_thread() {
        let r = record(
            vec![task("a/main", 11, 10), task("b/main", 21, 20)],
            vec![process("a", 10), process("b", 20)],
        );
        assert_eq!(r.task("b", "main").map(|t| t.pid), Some(21));
        assert!(r.task("c", "main").is_none());
        // Older real records: bare thread names, told apart by tgid.
        let old = record(
            vec![task("main", 11, 10), task("main", 21, 20)],
            vec![process("a", 10), process("b", 20)],
        );
        assert_eq!(old.task("b", "main").map(|t| t.pid), Some(21));
        assert!(old.task("b", "other").is_none());
    }

    #[test]
    fn schemas_name_the_formats_and_their_fields() {
        let run = run_schema();
        assert_eq!(run["title"], "RunRecord");
        let props = run["properties"].as_object().unwrap();
        for f in [
            "format",
            "version",
            "kind",
            "tasks",
            "timeseries",
            "machine",
        ] {
            assert!(props.contains_key(f), "{f}");
        }
        assert_eq!(props["format"]["const"], FORMAT_NAME);
        let set = runset_schema();
        assert_eq!(set["properties"]["format"]["const"], RUNSET_FORMAT_NAME);
        assert!(set["properties"]["runs"].is_object());
    }
}
