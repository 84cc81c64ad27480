//! Hand-made machines for the workload tests (the topology crate's spec
//! parser is not used here, so these tests depend only on `Machine`).

#![allow(dead_code)]

use numalab_topology::{Bandwidth, Cpu, CpuSet, Machine, Node};

/// GiB in bytes.
pub const GIB: u64 = 1 << 30;

/// A machine with `nnodes` nodes of `cpus_per_node` CPUs, `smt` hardware
/// threads per core, `mem_gib` GiB per node. With `interleaved`, CPU ids go
/// round-robin over nodes (cpu c on node c % nnodes) as on many BIOSes;
/// otherwise node k holds a contiguous block.
pub fn machine(
    nnodes: usize,
    cpus_per_node: usize,
    smt: usize,
    mem_gib: u64,
    interleaved: bool,
) -> Machine {
    let ncpus = nnodes * cpus_per_node;
    let node_of = |c: usize| {
        if interleaved {
            c % nnodes
        } else {
            c / cpus_per_node
        }
    };
    let cpus: Vec<Cpu> = (0..ncpus)
        .map(|c| Cpu {
            id: c,
            node: node_of(c),
            package: node_of(c),
            core: c / smt,
            llc: node_of(c),
            smt: c % smt,
        })
        .collect();
    let nodes = (0..nnodes)
        .map(|n| Node {
            id: n,
            package: n,
            cpus: (0..ncpus).filter(|&c| node_of(c) == n).collect::<CpuSet>(),
            mem_bytes: mem_gib * GIB,
        })
        .collect();
    let distance = (0..nnodes)
        .map(|a| (0..nnodes).map(|b| if a == b { 10 } else { 21 }).collect())
        .collect();
    let latency_ns = (0..nnodes)
        .map(|a| {
            (0..nnodes)
                .map(|b| if a == b { 80.0 } else { 140.0 })
                .collect()
        })
        .collect();
    Machine {
        links: numalab_topology::default_links(&(0..nnodes).collect::<Vec<_>>(), 40.0, 80.0),
        coherence: Default::default(),
        name: format!("test-{nnodes}n{ncpus}c"),
        description: "hand-made test machine".into(),
        cpus,
        nodes,
        distance,
        latency_ns,
        bandwidth: Bandwidth {
            node_gbps: vec![100.0; nnodes],
            link_gbps: 40.0,
            same_package_link_gbps: 80.0,
            core_gbps: 15.0,
            smt_throughput: 1.25,
        },
        sources: vec![],
        kernel: Default::default(),
    }
}

/// 2 nodes x 2 CPUs, no SMT, 8 GiB per node.
pub fn small() -> Machine {
    machine(2, 2, 1, 8, false)
}

/// 4 nodes x 80 CPUs (2-way SMT), 256 GiB per node: the machine of the
/// interleave and per-cgroup postings.
pub fn big() -> Machine {
    machine(4, 80, 2, 256, false)
}
