//! The resolved machine: CPUs, nodes, distances and physics constants.
//!
//! Everything downstream (sched domains, the memory model, the fluid physics)
//! reads only this type. It is plain data; construction and validation live in
//! [`crate::spec`].

use crate::{CpuId, CpuSet, NodeId};
use serde::Serialize;

/// One logical CPU (a hardware thread).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cpu {
    /// CPU id (index into [`Machine::cpus`]).
    pub id: CpuId,
    /// Node the CPU belongs to.
    pub node: NodeId,
    /// Physical package (socket).
    pub package: usize,
    /// Machine-wide core id: CPUs with the same core are SMT siblings.
    pub core: usize,
    /// Machine-wide last-level-cache id.
    pub llc: usize,
    /// Hardware-thread index within the core (0 for the first sibling).
    pub smt: usize,
}

/// One NUMA node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    /// Node id (index into [`Machine::nodes`]).
    pub id: NodeId,
    /// Package the node lives in (sub-NUMA clusters share one).
    pub package: usize,
    /// CPUs of the node; empty for a CPU-less memory node.
    pub cpus: CpuSet,
    /// Memory capacity in bytes.
    pub mem_bytes: u64,
}

/// Bandwidth constants of the fluid model, in GB/s (1e9 bytes/s).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bandwidth {
    /// Memory-controller bandwidth per node (all channels of the node).
    pub node_gbps: Vec<f64>,
    /// Interconnect (UPI/xGMI) bandwidth from one package to another, per
    /// direction: the most one package can read from another.
    pub link_gbps: f64,
    /// On-die bandwidth between two nodes of the same package (sub-NUMA
    /// clustering), per direction.
    pub same_package_link_gbps: f64,
    /// Streaming bandwidth one core reaches on local memory when alone.
    /// Remote streams reach less: the model scales it by local/remote latency
    /// (Little's law with a fixed number of outstanding misses).
    pub core_gbps: f64,
    /// Throughput of a core with all SMT siblings busy, relative to one
    /// thread alone (e.g. 1.25 means two siblings each get 0.625).
    pub smt_throughput: f64,
}

/// A resolved, validated machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Machine {
    /// Preset or file name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// All CPUs, indexed by id.
    pub cpus: Vec<Cpu>,
    /// All nodes, indexed by id.
    pub nodes: Vec<Node>,
    /// SLIT distance matrix, `distance[from][to]`, 10 on the diagonal.
    pub distance: Vec<Vec<u32>>,
    /// Idle load-to-use latency in ns, `latency_ns[cpu_node][mem_node]`.
    pub latency_ns: Vec<Vec<f64>>,
    /// Bandwidth constants.
    pub bandwidth: Bandwidth,
    /// Where the constants came from, and any value filled from a default.
    pub sources: Vec<String>,
    /// Kernel-work speed and background activity (`[kernel]`).
    pub kernel: crate::KernelParams,
}

impl Machine {
    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Number of nodes.
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of physical cores.
    pub fn nr_cores(&self) -> usize {
        self.cpus.iter().map(|c| c.core).max().map_or(0, |m| m + 1)
    }

    /// Node of `cpu` (`cpu_to_node`).
    pub fn cpu_to_node(&self, cpu: CpuId) -> NodeId {
        self.cpus[cpu].node
    }

    /// All CPUs of the machine.
    pub fn all_cpus(&self) -> CpuSet {
        CpuSet::first_n(self.cpus.len())
    }

    /// Total memory of the machine in bytes.
    pub fn total_mem_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem_bytes).sum()
    }

    /// SLIT distance between two nodes (`node_distance`).
    pub fn node_distance(&self, a: NodeId, b: NodeId) -> u32 {
        self.distance[a][b]
    }
}
