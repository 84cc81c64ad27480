//! Typed reads of a record's `machine` and `workload`, which the record
//! keeps as JSON (their crates, numalab-topology and numalab-workload, sit
//! beside or above this one and own the full types; a real run's machine is
//! a host description, not a model machine). Every crate that needs a
//! machine's name, its CPUs' nodes or a workload's name reads them here,
//! through small serde views of the few fields they need, instead of
//! digging into the JSON by key.
//!
//! Left out: the rest of both specs (readers that need them deserialize the
//! owning crate's type).

use crate::RunRecord;
use serde::Deserialize;

/// The fields of a record's `machine` read here.
#[derive(Deserialize, Default)]
struct MachineView<'a> {
    /// Machine name (model presets, real hosts).
    #[serde(borrow, default)]
    name: Option<&'a str>,
    /// CPUs with their node (model machines).
    #[serde(default)]
    cpus: Vec<CpuView>,
}

/// One CPU of a machine: its id and node.
#[derive(Deserialize)]
struct CpuView {
    /// CPU id.
    id: Option<u64>,
    /// Node id.
    node: Option<i64>,
}

/// The fields of a record's `workload` read here.
#[derive(Deserialize, Default)]
struct WorkloadView<'a> {
    /// Preset or spec name.
    #[serde(borrow, default)]
    name: Option<&'a str>,
    /// mmtests test name, when the workload gives one.
    #[serde(borrow, default)]
    test: Option<&'a str>,
}

impl RunRecord {
    fn machine_view(&self) -> MachineView<'_> {
        MachineView::deserialize(&self.machine).unwrap_or_default()
    }

    fn workload_view(&self) -> WorkloadView<'_> {
        WorkloadView::deserialize(&self.workload).unwrap_or_default()
    }

    /// The machine's name, if the record gives one.
    pub fn machine_name(&self) -> Option<&str> {
        self.machine_view().name
    }

    /// The node of each CPU by CPU id (-1 for an id the machine does not
    /// list); empty when the record lists no CPUs (real runs).
    pub fn cpu_nodes(&self) -> Vec<i64> {
        let mut v = Vec::new();
        for c in self.machine_view().cpus {
            let (Some(id), Some(node)) = (c.id, c.node) else {
                continue;
            };
            let id = id as usize;
            if v.len() <= id {
                v.resize(id + 1, -1);
            }
            v[id] = node;
        }
        v
    }

    /// The workload's name (its spec's `name`), if the record gives one.
    pub fn workload_name(&self) -> Option<&str> {
        self.workload_view().name
    }

    /// Name of the test this record measured, for mmtests rows
    /// (e.g. `NUMA01_THREADLOCAL`): the workload's `test`, else its `name`
    /// upper-cased ([`RunRecord::workload_test_name`]).
    pub fn test_name(&self) -> String {
        match self.workload_view().test {
            Some(t) => t.to_string(),
            None => self.workload_test_name(),
        }
    }

    /// The workload's name in test-name style: upper case, `-` as `_`
    /// (`UNKNOWN` without one).
    pub fn workload_test_name(&self) -> String {
        self.workload_name()
            .unwrap_or("UNKNOWN")
            .to_uppercase()
            .replace('-', "_")
    }
}

#[cfg(test)]
mod tests {
    use crate::RunRecord;
    use serde_json::json;

    fn record(machine: serde_json::Value, workload: serde_json::Value) -> RunRecord {
        let mut v = serde_json::from_str::<serde_json::Value>(
            r#"{"format":"numalab-run","version":1,"kind":"model","numalab_version":"0",
            "kernel":null,"machine":null,"workload":null,"settings":{},"seed":1,"scale":1.0,
            "elapsed_s":1.0,"user_s":0.0,"sys_s":0.0,"score":null,"vmstat":{},"cgroups":{},
            "processes":[],"tasks":[],"nodes":[],"lab":{},"timeseries":null}"#,
        )
        .unwrap();
        v["machine"] = machine;
        v["workload"] = workload;
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn names_and_cpu_nodes_are_read_from_the_specs() {
        let r = record(
            json!({"name": "tiny-2n", "cpus": [{"id": 0, "node": 0}, {"id": 2, "node": 1}]}),
            json!({"name": "numa01-threadlocal"}),
        );
        assert_eq!(r.machine_name(), Some("tiny-2n"));
        assert_eq!(r.cpu_nodes(), vec![0, -1, 1]);
        assert_eq!(r.workload_name(), Some("numa01-threadlocal"));
        assert_eq!(r.test_name(), "NUMA01_THREADLOCAL");
        let t = record(json!("host"), json!({"name": "x", "test": "NUMA02_SMT"}));
        assert_eq!((t.machine_name(), t.cpu_nodes()), (None, vec![]));
        assert_eq!(t.test_name(), "NUMA02_SMT");
        assert_eq!(t.workload_test_name(), "X");
    }
}
