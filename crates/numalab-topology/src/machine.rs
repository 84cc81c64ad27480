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
    /// direction: the most one package can read from another. With
    /// [`Machine::links`] it is what the lab switch `numalab.link_routes=0`
    /// gives every package pair (the model before links).
    pub link_gbps: f64,
    /// On-die bandwidth between two nodes of the same package (sub-NUMA
    /// clustering), per direction: of every node pair of a package whose
    /// on-die links are not given, and of every node pair under
    /// `numalab.link_routes=0`.
    pub same_package_link_gbps: f64,
    /// Streaming bandwidth one core reaches on local memory when alone.
    /// Remote streams reach less: the model scales it by local/remote latency
    /// (Little's law with a fixed number of outstanding misses).
    pub core_gbps: f64,
    /// Throughput of a core with all SMT siblings busy, relative to one
    /// thread alone (e.g. 1.25 means two siblings each get 0.625).
    pub smt_throughput: f64,
}

/// What a [`Link`] bundle joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkEnds {
    /// Two packages (sockets): UPI, QPI or xGMI links between them.
    Packages(usize, usize),
    /// Two nodes of one package: an on-die mesh segment or die-to-die
    /// bridge between sub-NUMA clusters (SNC, Cluster-on-Die, NPS).
    Nodes(NodeId, NodeId),
}

/// A bundle of identical physical links between two ends. Traffic is spread
/// over the bundle's links (by address), so the model treats a bundle as one
/// resource per direction of `count * gbps`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    /// The two ends.
    pub ends: LinkEnds,
    /// Physical links in the bundle.
    pub count: u32,
    /// Bandwidth of one link, per direction, GB/s (data as a remote read
    /// moves it, so protocol overhead of the read path is already inside).
    pub gbps: f64,
}

impl Link {
    /// Bandwidth of the whole bundle per direction, GB/s.
    pub fn bundle_gbps(&self) -> f64 {
        self.count as f64 * self.gbps
    }
}

/// How the machine keeps caches coherent across packages, as link traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Snoop {
    /// A directory at the home node knows a private line is cached nowhere
    /// else, so a remote access sends no snoops (UPI: directory only).
    Directory,
    /// The home node snoops every other package for each line it serves to
    /// another package (QPI home snoop without a directory).
    Broadcast,
}

/// Coherence overhead per remote cache line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coherence {
    /// Link bytes one header-only message (request, snoop, snoop response,
    /// completion) takes, in the same units as the links' data bandwidth.
    pub message_bytes: f64,
    /// Whether remote lines cost snoops of the other packages.
    pub snoop: Snoop,
}

/// Default link bytes of one header-only coherence message, in units of a
/// link's data bandwidth: 64/9. On QPI a flit is 80 bits carrying 64 data
/// bits, so a 64-byte line is 8 data flits behind one header flit, and a
/// request, snoop or completion is that header flit alone: 1/9 of what a
/// line costs. UPI packs messages more tightly (its overhead is not
/// published per message), so this is an upper bound there.
pub const DEFAULT_MESSAGE_BYTES: f64 = 64.0 / 9.0;

impl Default for Coherence {
    /// Directory coherence with [`DEFAULT_MESSAGE_BYTES`] per message.
    fn default() -> Coherence {
        Coherence {
            message_bytes: DEFAULT_MESSAGE_BYTES,
            snoop: Snoop::Directory,
        }
    }
}

/// The layout a machine gets when its spec gives no links (the meaning of a
/// spec from before links): one link between every two packages at
/// `link_gbps`, one on-die link between every two nodes of a package at
/// `same_package_link_gbps`. `packages[n]` is node `n`'s package.
pub fn default_links(packages: &[usize], link_gbps: f64, same_package_link_gbps: f64) -> Vec<Link> {
    let npk = packages.iter().map(|&p| p + 1).max().unwrap_or(0);
    let mut links = Vec::new();
    for a in 0..npk {
        for b in a + 1..npk {
            links.push(Link {
                ends: LinkEnds::Packages(a, b),
                count: 1,
                gbps: link_gbps,
            });
        }
    }
    for a in 0..packages.len() {
        for b in a + 1..packages.len() {
            if packages[a] == packages[b] {
                links.push(Link {
                    ends: LinkEnds::Nodes(a, b),
                    count: 1,
                    gbps: same_package_link_gbps,
                });
            }
        }
    }
    links
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
    /// The interconnect: every link bundle between packages and between
    /// nodes of one package. Package pairs without a bundle of their own
    /// talk through other packages (routes: numalab-sim `physics/links.rs`).
    pub links: Vec<Link>,
    /// Coherence traffic per remote line.
    pub coherence: Coherence,
    /// Where the constants came from, and any value filled from a default.
    pub sources: Vec<String>,
    /// Kernel-work speed and background activity (`[kernel]`).
    pub kernel: crate::KernelParams,
}

impl Machine {
    /// Number of CPUs.
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Number of nodes.
    #[inline]
    pub fn nr_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Number of physical cores.
    pub fn nr_cores(&self) -> usize {
        self.cpus.iter().map(|c| c.core).max().map_or(0, |m| m + 1)
    }

    /// Node of `cpu` (`cpu_to_node`).
    #[inline]
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

    /// Number of packages (package ids run from 0 without gaps).
    pub fn nr_packages(&self) -> usize {
        self.nodes.iter().map(|n| n.package + 1).max().unwrap_or(0)
    }

    /// SLIT distance between two nodes (`node_distance`).
    pub fn node_distance(&self, a: NodeId, b: NodeId) -> u32 {
        self.distance[a][b]
    }
}
